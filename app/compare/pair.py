"""Compare two configurations of a story on the same seed: A's and B's server flags, the shared workload,
headline A -> B, a delta table per group and both runs' timelines, A above B on one time axis."""

from __future__ import annotations

import dataclasses
import json

import pandas as pd
import streamlit as st

from app import compute, state
from app.charts.frames import RunFrames
from app.charts.views import View
from app.charts.words import never_got_a_token
from app.compare.charts import pair_views
from app.present.fmt import fmt_count, seconds_cell, shown_value, signed_seconds
from app.present.numbers import headline_fmt, headline_label, headline_value, percentile_trap
from app.present.settings import settings_words
from app.story.headline import headline_cards, price_ui
from app.ui.cards import cards_ui
from app.ui.chart import chart_ui, page_spec
from app.ui.controls import Control, control_ui
from app.ui.deployment import DEPLOYMENT_WHERE, deployment_title, deployment_ui
from app.ui.exports import charts_image, set_export_note
from app.ui.fold import folded
from app.ui.mix import mix_builder_ui, mix_fold_title
from engine_model import MIX, STORIES, InputError, Story, ranged

PAGE = state.COMPARE_PAGE
DEFAULT_STORY = "forty_replies"
B_DEFAULTS = {"mixed": True}  # B starts as "the one flag flipped"
SIDES = ("a", "b")


def side_controls(story: Story, side: str) -> tuple[Control, ...]:
    """The story's server flags, once per side, with URL keys a_<key> / b_<key>."""
    out = []
    for control in story.controls:
        if control.is_flag:
            default = B_DEFAULTS.get(control.key, control.default) if side == "b" else control.default
            out.append(dataclasses.replace(control, key=state.side_param(side, control.key), default=default))
    return tuple(out)


def shared_controls(story: Story) -> tuple[Control, ...]:
    return tuple(c for c in story.controls if not c.is_flag)


def all_controls(story: Story) -> tuple[Control, ...]:
    return (*side_controls(story, "a"), *side_controls(story, "b"), *shared_controls(story))


def _story(text: str) -> str:
    if text not in STORIES:
        raise ValueError(f"expected one of {', '.join(STORIES)}")
    return text


def story_ui() -> Story:
    note = state.seed_param(state.keys(PAGE).widget(state.STORY), state.STORY, DEFAULT_STORY, _story)
    if note is not None:
        st.warning(note)
    key = st.segmented_control("Story", list(STORIES), key=state.keys(PAGE).widget(state.STORY),
                               format_func=lambda k: STORIES[k].title, required=True)
    return STORIES[key]


def configurations_ui(story: Story) -> tuple[dict, dict, dict]:
    """A's flags, B's flags, and the shared workload and deployment (GPU, TP, model, precision, figures,
    seed). Returns three {key: value} dicts."""
    page = _story_page(story)
    controls = all_controls(story)
    state.seed_widgets(page, controls, extra=(state.STORY, state.SWEEP))
    for note in state.notes(page):
        st.warning(note, icon=":material/link:")
    values = state.values(page, controls)
    for col, side in zip(st.columns(2), SIDES, strict=True):
        with col.container(border=True):
            st.markdown(f"**Configuration {side.upper()}**"
                        + (" — starts at SGLang defaults" if side == "a" else ""))
            switch, *rest = side_controls(story, side)  # the rest built only while their fold is open
            control_ui(page, switch)
            with folded(f"More flags: {settings_words(rest, values, marked=True)}",
                        state.keys(page).widget(f"{side}.flags")) as is_open:
                if is_open:
                    for control in rest:
                        control_ui(page, control)
    mixed = bool(values.get(MIX))  # the story's own workload controls do nothing on a mix: not shown
    workload = [c for c in shared_controls(story)
                if c.where not in DEPLOYMENT_WHERE and c.key != MIX and not (mixed and c.where == "main")]
    title = "Shared by A and B: the workload" + (f" ({mix_fold_title(page)})" if mixed else "")
    with folded(title, state.keys(page).widget("workload")) as is_open:
        if is_open:
            cols = st.columns(3)
            for i, control in enumerate(workload):
                with cols[i % 3]:
                    control_ui(page, control)
            if any(c.key == MIX for c in story.controls):
                mix_builder_ui(page)
    values = state.values(page, controls)
    title = "Shared by A and B: " + deployment_title(shared_controls(story), values)
    with folded(title, state.keys(page).widget("deployment"), icon=":material/memory:") as is_open:
        if is_open:
            deployment_ui(page, shared_controls(story), values)
    values = state.values(page, controls)
    flags = [c.key for c in story.controls if c.is_flag]
    a, b = ({key: values[state.side_param(side, key)] for key in flags} for side in SIDES)
    return a, b, {c.key: values[c.key] for c in shared_controls(story)}


def on_mix(story: Story, shared: dict) -> Story:
    """The story on A's and B's shared request mix (Story.with_mix), for the cards and words; its runs are
    the same either way (the mix control is applied last)."""
    try:
        return story.with_mix(shared.get(MIX))
    except ValueError:
        return story


def _story_page(story: Story) -> str:
    """Each story keeps its own A / B settings on this page."""
    return f"{PAGE}.{story.key}"


def run_pair(story: Story, a: dict, b: dict, shared: dict) -> tuple[RunFrames, RunFrames, tuple]:
    """A's and B's runs, and the key their charts share their specs under (both runs: one time axis)."""
    try:
        sa, sb = story.scenario({**shared, **a}), story.scenario({**shared, **b})
        return compute.run_scenario(sa), compute.run_scenario(sb), (compute.run_key(sa), compute.run_key(sb))
    except InputError as err:
        st.error(f"**This combination cannot run.** `{err.where}`: {err.problem}", icon=":material/block:")
        url_ui(story, a, b, shared)  # the link keeps what was asked for
        st.stop()


def headline_pair_ui(story: Story, ra: RunFrames, rb: RunFrames, b: dict, shared: dict) -> None:
    """The story's cards A → B (B's range where the evidence is thin, as a story page's cards carry it), the
    percentile trap if p99 hides a stall, and what B costs against A."""
    ranges = ranged(story.scenario({**shared, **b}))  # B ran, so its scenario builds
    cards_ui(headline_cards(story, ra, rb, both=True, ranges=ranges), "#### A → B")
    if ranges is not None:
        st.caption(ranges.band.words())
    trap = percentile_trap(story.stream_group, ra, rb)
    if trap:
        st.info(trap, icon=":material/troubleshoot:")
    price_ui(story, ra, rb, title="##### What B costs against A")


def delta_ui(ra: RunFrames, rb: RunFrames) -> None:
    with folded("Every group, p50 / p95 / p99 / max, A vs B", state.keys(PAGE).widget("groups")) as is_open:
        if not is_open:
            return
        st.dataframe(delta_table(ra, rb), hide_index=True, width="stretch")
        for sentence in dict.fromkeys(never_got_a_token(ra.requests) + never_got_a_token(rb.requests)):
            st.caption(sentence)


def delta_table(ra: RunFrames, rb: RunFrames) -> pd.DataFrame:
    """Every group's statistics A and B in words and units; a value a run lacks reads 'no token'."""
    rows = []
    for group, mb in rb.summary.metrics.groups.items():
        for metric, title in (("ttft_s", "first token"), ("itl_s", "gap between tokens"),
                              ("max_itl_s", "longest pause")):
            for stat in ("p50", "p95", "p99", "max"):
                a, b = ra.summary.metrics.value(group, metric, stat), mb.value(metric, stat)
                if a is None and b is None:
                    continue
                rows.append({"group": group, "measure": title, "statistic": stat,
                             "A": seconds_cell(a), "B": seconds_cell(b),
                             "B − A": "" if a is None or b is None else signed_seconds(b - a),
                             "change": "" if not a or b is None else f"{(b - a) / a:+.0%}"})
        was = ra.summary.metrics.value(group, "num_retracted")
        rows.append({"group": group, "measure": "requests retracted", "statistic": "count",
                     "A": fmt_count(was or 0), "B": fmt_count(mb.num_retracted),
                     "B − A": f"{mb.num_retracted - (was or 0):+,}", "change": ""})
    return pd.DataFrame(rows)


def side_by_side_ui(story: Story, ra: RunFrames, rb: RunFrames, a: dict, b: dict, shared: dict,
                    key: tuple) -> None:
    """A's and B's token streams as one chart, A's lanes above B's on one time axis; their pass timelines
    (one chart too) and the image of both in a fold. `key` (run_pair's) shares their specs across reruns and
    sessions."""
    note = pair_note(story, ra, rb, a, b, shared)
    set_export_note(PAGE, note)
    passes, tokens = pair_views(ra, rb, side_words(story, a, b))
    chart_ui(PAGE, tokens.chart_id, tokens.title, tokens.caption, tokens.build, cache_key=key)
    with folded("Pass timelines, A and B: what the GPU ran, and both charts as one image",
                state.keys(PAGE).widget("passes"), icon=":material/view_timeline:") as is_open:
        if is_open:  # the image holds the pass timelines too: its button is built with them
            chart_ui(PAGE, passes.chart_id, passes.title, passes.caption, passes.build, cache_key=key)
            pair_export_ui(story, (passes, tokens), key, f"{story.title}: A against B", note)


def side_words(story: Story, a: dict, b: dict) -> tuple[str, str]:
    """Each side's server flags in words, naming only those that differ ("mixed chunk off" / "mixed chunk
    on"); a side on every SGLang default says so."""
    def words(side: dict) -> str:
        differ = [c for c in story.controls if c.is_flag and a[c.key] != b[c.key]]
        said = ", ".join(f"{c.label.lower()} {shown_value(c, side[c.key])}" for c in differ)
        said = said or "the same flags"
        is_default = all(side[c.key] == c.default for c in story.controls if c.is_flag)
        return f"SGLang defaults ({said})" if is_default else said
    return words(a), words(b)


def pair_note(story: Story, ra: RunFrames, rb: RunFrames, a: dict, b: dict, shared: dict) -> tuple[str, ...]:
    """What an exported chart of A and B says under its title: which flags each side ran, the headline
    A -> B and the shared workload."""
    words_a, words_b = side_words(story, a, b)
    head = story.headlines[0]
    fmt = headline_fmt(head)
    workload = settings_words(shared_controls(story), shared)
    va, vb = fmt(headline_value(ra, head)), fmt(headline_value(rb, head))
    return (f"A: {words_a}; B: {words_b}", f"{headline_label(head, rb)}: {va} (A) → {vb} (B)",
            f"Same requests and seed on both sides; workload: {workload}")


def pair_export_ui(story: Story, views: tuple[View, View], key: tuple, title: str,
                   lines: tuple[str, ...]) -> None:
    """One image to paste: the pass timelines over the token streams, A above B in each, under the headline
    A -> B: the page's own two charts."""
    def image() -> bytes:
        specs = tuple((json.dumps(page_spec(PAGE, view.chart_id, view.build, key)), view.title)
                      for view in views)
        return charts_image(specs, title, lines, "png")
    st.download_button("Export A and B as one image (PNG)", icon=":material/download:", on_click="ignore",
                       data=image, file_name=f"{story.key}-a-vs-b.png", mime="image/png",
                       key=state.keys(PAGE).widget("pair_png"),
                       help="One image for an email or a slide: both pass timelines and token streams, the "
                            "headline number A → B, and what differs between A and B.")


def url_ui(story: Story, a: dict, b: dict, shared: dict) -> None:
    """Both configurations, the story and the sweep into the address bar."""
    values = {**{state.side_param("a", k): v for k, v in a.items()},
              **{state.side_param("b", k): v for k, v in b.items()}, **shared}
    sweep = st.session_state.get(state.keys(PAGE).widget(state.SWEEP))
    state.write_url(all_controls(story), values, {
        state.STORY: story.key if story.key != DEFAULT_STORY else None,
        state.SWEEP: sweep if sweep != "chunk size" else None,
        **state.present_param()})
