"""UI pieces shared by the story pages. `*_ui()` functions draw widgets and return plain values."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pandas as pd
import streamlit as st

from app import charts, compute, cursor, diagnosis, state
from app.frames import RunFrames
from app.stories import Headline, Story
from engine_model import InputError

REPO = Path(__file__).resolve().parents[1]
DESIGN_DOC = REPO / "docs" / "design.md"


# -- page frame --------------------------------------------------------------------------------------
def page_header(story: Story) -> None:
    """Title, teaser and any notes about the link that opened the page (bad or unknown URL parameters)."""
    state.seed_widgets(story.key, story.controls, story.extra_params)
    st.title(f"{story.icon} {story.title}")
    st.markdown(story.teaser)
    for note in state.notes(story.key):
        st.warning(note, icon=":material/link:")


def settings_ui(story: Story) -> dict:
    """The story's controls (main row, then GPU / model / seed in an expander). Returns {key: value}."""
    state.seed_widgets(story.key, story.controls)
    main = [c for c in story.controls if c.where == "main"]
    more = [c for c in story.controls if c.where == "more"]
    with st.container(border=True):
        st.markdown("**Settings** — flags marked ⚑ are SGLang server flags; the baseline keeps their defaults.")
        cols = st.columns([0.9 if c.widget == "toggle" else 1.1 for c in main])
        for col, control in zip(cols, main, strict=True):
            with col:
                _control_widget(story.key, control)
        with st.expander("GPU, model and seed"):
            cols = st.columns(len(more))
            for col, control in zip(cols, more, strict=True):
                with col:
                    _control_widget(story.key, control)
    return state.values(story.key, story.controls)


def _control_widget(page: str, control) -> None:
    key = state.widget_key(page, control.key)
    label = ("⚑ " if control.is_flag else "") + control.label
    if control.widget == "toggle":
        st.toggle(label, key=key, help=control.help)
    elif control.widget == "select":
        st.selectbox(label, control.options, key=key, format_func=control.fmt, help=control.help)
    else:
        low, high, step = control.options
        st.slider(label, low, high, step=step, key=key, help=control.help)


def story_ui(story: Story) -> tuple[dict, RunFrames]:
    """The top of every story page: title, guided tour, settings, what they resolve to, and the headline
    numbers against SGLang's defaults (the baseline run). Returns the control values and the current run."""
    page_header(story)
    tour_ui(story)
    values = settings_ui(story)
    current, baseline = runs_or_stop(story, values)
    resolved_ui(current)
    headline_ui(story, current, baseline)
    return values, current


def runs_or_stop(story: Story, values: dict) -> tuple[RunFrames, RunFrames]:
    """The current run and the baseline (SGLang defaults, same workload and seed); stops the page on bad input."""
    try:
        scenario = story.scenario(values)
        baseline = story.scenario(story.baseline_values(values))
        current, base = compute.run_scenario(scenario), compute.run_scenario(baseline)
    except InputError as err:
        st.error(f"**This combination cannot run.** `{err.where}`: {err.problem}", icon=":material/block:")
        st.stop()
    st.session_state[f"{story.key}.scenario"] = scenario
    if current.summary["cut_off"]:
        st.warning(f"The run stopped early: {current.summary['cut_off']}. The numbers cover what ran.")
    rejected = current.summary["rejected"]
    if rejected:
        first = next(iter(rejected.items()))
        st.warning(f"{len(rejected)} request(s) rejected, e.g. `{first[0]}`: {first[1]}")
    return current, base


def resolved_ui(run: RunFrames) -> None:
    """What moves the figures: model, GPU, precision, parallelism, version, flags — as resolved."""
    config = run.summary["config"]
    res = config["resolved"]
    chunk = res["chunked_prefill_size"]
    chunk_text = "off" if chunk is None else f"{chunk:,}"
    st.caption(
        f"**{config['model']['name']}** ({config['model']['weight_dtype']} weights, {config['model']['kv_dtype']} KV) on "
        f"**{config['hardware']['gpu']}** × TP{res['tp_size']} · SGLang {res['version']} emulated · "
        f"chunk size **{chunk_text}** ({res['chunked_prefill_size_source']}) · mixed chunk "
        f"**{'on' if res['is_mixed_chunk'] else 'off'}** · KV pool {res['max_total_tokens']:,} tokens "
        f"({res['max_total_tokens_source']}) · max running {res['max_running_requests']:,} · "
        f"pass cost: {run.summary['cost_model']}"
    )


# -- tour --------------------------------------------------------------------------------------------
def tour_ui(story: Story) -> int | None:
    """Numbered step buttons; a click sets the controls and the cursor. Returns the active step (0-based) or None."""
    active_key = f"{story.key}.tour_step"
    with st.container(border=True):
        cols = st.columns([0.8] + [1] * len(story.tour), vertical_alignment="center")
        cols[0].markdown("**Guided tour**  \nclick a step")
        for i, (col, step) in enumerate(zip(cols[1:], story.tour, strict=True)):
            col.button(f"{i + 1}. {step.title}", key=f"{story.key}.tour.{i}", on_click=_apply_step, args=(story, i),
                       width="stretch", wrap=True, type="primary" if st.session_state.get(active_key) == i else "secondary")
        active = st.session_state.get(active_key)
        if active is not None:
            step = story.tour[active]
            st.info(f"**Step {active + 1} of {len(story.tour)} — {step.title}.** {step.say}", icon=":material/record_voice_over:")
    return active


def _apply_step(story: Story, i: int) -> None:
    step = story.tour[i]
    for control in story.controls:
        if control.is_flag or control.key in step.settings or control.where == "main":
            value = step.settings.get(control.key, control.default)
            st.session_state[state.widget_key(story.key, control.key)] = value
    st.session_state[f"{story.key}.tour_step"] = i
    st.session_state[f"{story.key}.pending_cursor"] = step.cursor
    st.session_state[f"{story.key}.focus"] = step.focus
    st.session_state[f"{story.key}.playing"] = False


def focus_marker(story: Story, chart_id: str) -> None:
    """The tour's pointer: a callout above the chart the current step is about."""
    if st.session_state.get(f"{story.key}.focus") == chart_id and st.session_state.get(f"{story.key}.tour_step") is not None:
        step = story.tour[st.session_state[f"{story.key}.tour_step"]]
        st.markdown(f":orange-background[:material/arrow_downward: **Look here** — {step.title}]")


# -- headline numbers --------------------------------------------------------------------------------
def fmt_seconds(value: float | None) -> str:
    if value is None:
        return "—"
    if value < 1:
        return f"{value * 1000:.0f} ms" if value >= 0.01 else f"{value * 1000:.1f} ms"
    return f"{value:.1f} s" if value < 100 else f"{value:.0f} s"


def headline_value(run: RunFrames, headline: Headline):
    metrics = run.summary["metrics"]
    block = metrics["overall"] if headline.group is None else metrics["groups"].get(headline.group)
    if block is None:
        return None
    value = block[headline.metric]
    return value.get(headline.stat) if isinstance(value, dict) else value


def headline_label(headline: Headline, run: RunFrames) -> str:
    count = run.summary["metrics"]["groups"].get(headline.group or "", {}).get("num_requests", "")
    return headline.label.format(group_count=count)


def headline_ui(story: Story, current: RunFrames, base: RunFrames) -> list[dict]:
    """Cards: 'before -> after' against SGLang defaults on the same seed. Returns the numbers shown."""
    shown = []
    same = current.summary["config"] == base.summary["config"]
    st.markdown("#### Your settings vs SGLang defaults" + (" (you are on the defaults)" if same else ""))
    cols = st.columns(len(story.headlines))
    for col, headline in zip(cols, story.headlines, strict=True):
        now, before = headline_value(current, headline), headline_value(base, headline)
        fmt = fmt_seconds if headline.unit == "s" else (lambda v: "—" if v is None else f"{v:,}")
        if same or now is None or before is None or abs(now - before) < 1e-9:
            value, delta = fmt(now), None
        else:
            value = f"{fmt(before)} → {fmt(now)}"
            diff = now - before
            pct = f" ({diff / before:+.1%})" if before and abs(diff / before) < 0.1 else (
                f" ({diff / before:+.0%})" if before else "")
            delta = (f"{'-' if diff < 0 else '+'}{fmt(abs(diff))}{pct}" if headline.unit == "s"
                     else f"{diff:+,}")
        col.metric(headline_label(headline, current), value, delta, delta_color="inverse", border=True,
                   help=headline.help or None)
        shown.append({"label": headline_label(headline, current), "before": before, "after": now})
    with st.expander("p50 / p95 / p99 per group, before → after"):
        st.dataframe(group_table(current, base), hide_index=True, width="stretch")
    return shown


def group_table(current: RunFrames, base: RunFrames) -> pd.DataFrame:
    rows = []
    names = {"ttft_s": "first token (TTFT)", "itl_s": "gap between tokens (ITL)", "max_itl_s": "longest pause per request"}
    for group, metrics in current.summary["metrics"]["groups"].items():
        before = base.summary["metrics"]["groups"].get(group, {})
        for metric, title in names.items():
            for stat in ("p50", "p95", "p99", "max"):
                now, was = metrics[metric][stat], before.get(metric, {}).get(stat)
                if now is None and was is None:
                    continue
                rows.append({"group": group, "metric": title, "stat": stat, "SGLang defaults": fmt_seconds(was),
                             "your settings": fmt_seconds(now),
                             "change": "" if now is None or was is None else f"{now - was:+.3f} s"})
    return pd.DataFrame(rows)


# -- charts ------------------------------------------------------------------------------------------
SPEC_CACHE_SIZE = 48


def chart_spec(chart, cache_key=None) -> dict:
    """The Vega-Lite spec of a chart (or of a zero-argument builder), kept per session under cache_key.

    Builders are validated against the schema by the tests (tests/test_charts.py), so the app serialises
    without validating again, and a flip back to a view already drawn reuses its spec.
    """
    cache = st.session_state.setdefault("_specs", {})
    if cache_key is not None and cache_key in cache:
        cache[cache_key] = cache.pop(cache_key)  # most recently used last
        return cache[cache_key]
    spec = (chart() if callable(chart) else chart).to_dict(validate=False)
    if cache_key is not None:
        cache[cache_key] = spec
        while len(cache) > SPEC_CACHE_SIZE:
            cache.pop(next(iter(cache)))
    return spec


def chart_ui(story_key: str, chart_id: str, title: str, caption: str, chart, story: Story | None = None,
             cache_key=None, on_pick=None) -> None:
    """A chart with its plain-language caption and PNG / SVG export (rendered only when clicked).

    `on_pick(point)`: called with the clicked mark's fields when the chart has a `charts.PICK` selection."""
    head, export = st.columns([6, 1])
    head.markdown(f"##### {title}")
    if story is not None:
        focus_marker(story, chart_id)
    spec = chart_spec(chart, None if cache_key is None else (story_key, chart_id, cache_key))
    with export.popover("Export", width="stretch"):
        st.download_button("PNG", lambda: compute.chart_image(json.dumps(spec), "png"), file_name=f"{story_key}-{chart_id}.png",
                           mime="image/png", key=f"{story_key}.{chart_id}.png", on_click="ignore")
        st.download_button("SVG", lambda: compute.chart_image(json.dumps(spec), "svg"), file_name=f"{story_key}-{chart_id}.svg",
                           mime="image/svg+xml", key=f"{story_key}.{chart_id}.svg", on_click="ignore")
    if on_pick is None:
        st.vega_lite_chart(spec, width="stretch")
    else:
        # one widget per view: a chart redrawn for a new cursor starts with no selection, so each click counts once
        view = hashlib.sha1(repr(cache_key).encode()).hexdigest()[:12]
        event = st.vega_lite_chart(spec, width="stretch", key=f"{story_key}.{chart_id}.pick.{view}", on_select="rerun",
                                   selection_mode=[charts.PICK])
        points = (event.selection or {}).get(charts.PICK) or []
        if points:
            on_pick(points[0])
    st.caption(caption)


def run_key(story_key: str) -> str:
    """A short key for the run a page shows (its validated scenario)."""
    scenario = st.session_state.get(f"{story_key}.scenario")
    return "" if scenario is None else hashlib.sha1(scenario.model_dump_json().encode()).hexdigest()


def itl_ui(story: Story, run: RunFrames) -> None:
    groups = list(run.summary["metrics"]["groups"])
    chart_ui(story.key, "itl", "Gaps between tokens, per group",
             "How long readers waited between two tokens. Most gaps are one decode pass; a stall shows up as a "
             "lonely bar far to the right. Dashed lines: p50, p95, p99. Note the log scale.",
             lambda: charts.itl_distribution(run.itl_hist, run.itl_stats, groups), story, cache_key=run_key(story.key))


# -- exports and notes -------------------------------------------------------------------------------
def export_ui(story: Story, run: RunFrames) -> None:
    scenario = st.session_state.get(f"{story.key}.scenario")
    with st.expander("Export this run: CSV and scenario TOML"):
        cols = st.columns(4)
        cols[0].download_button("Per-request metrics (CSV)", lambda: compute.csv_bytes(run.requests),
                                file_name=f"{story.key}-requests.csv", mime="text/csv", on_click="ignore")
        cols[1].download_button("Per-iteration trace (CSV)", lambda: compute.csv_bytes(run.iterations),
                                file_name=f"{story.key}-iterations.csv", mime="text/csv", on_click="ignore")
        if scenario is not None:
            cols[2].download_button("Scenario (TOML)", lambda: compute.scenario_toml(scenario),
                                    file_name=f"{story.key}.toml", mime="application/toml", on_click="ignore")
        cols[3].download_button("Retractions (CSV)", lambda: compute.csv_bytes(run.retractions),
                                file_name=f"{story.key}-retractions.csv", mime="text/csv", on_click="ignore")
        st.caption("Run it yourself: `python -m engine_model run " + f"{story.key}.toml` (the same model, no app).")


def share_ui(story: Story, values: dict, extra: dict | None = None) -> None:
    st.caption(":material/link: Link to this view: copy the address bar — every setting and the cursor are in it (`"
               + state.url_for(story.key, story.controls, values, extra) + "`).")


def simplifications_text() -> str | None:
    """The 'Simplifications' section of docs/design.md, read at run time (None if missing)."""
    try:
        text = DESIGN_DOC.read_text(encoding="utf-8")
    except OSError:
        return None
    match = re.search(r"^(#+)\s*Simplifications\b.*?$", text, flags=re.MULTILINE | re.IGNORECASE)
    if not match:
        return None
    level = len(match.group(1))
    rest = text[match.end():]
    end = re.search(rf"^#{{1,{level}}}\s", rest, flags=re.MULTILINE)
    return rest[: end.start() if end else len(rest)].strip() or None


def simplifications_ui() -> None:
    with st.expander("What the model simplifies"):
        text = simplifications_text()
        if text is None:
            st.caption("The list of simplifications (docs/design.md, section “Simplifications”) is not available in "
                       "this build. The model follows SGLang's scheduler as described in sglang-scheduler-facts.md.")
        else:
            st.markdown(text)


# -- presenter mode ----------------------------------------------------------------------------------
PRESENTER_CSS = """
<style>
html { font-size: 21px !important; }
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"], [data-testid="collapsedControl"] { display: none; }
[data-testid="stMetricValue"] { font-size: 2.1rem !important; }
[data-testid="stMainBlockContainer"] { max-width: 100% !important; padding-left: 2rem; padding-right: 2rem; }
</style>
"""


def presenter_ui() -> bool:
    """Sidebar switch (and ?present=1). In presenter mode: large type, no sidebar, a way back on the page."""
    presenting = state.is_presenting()
    if presenting:
        st.html(PRESENTER_CSS)
        if st.button("Leave presenter mode", key="leave_present"):
            st.session_state["present"] = False
            st.rerun()
    else:
        st.sidebar.toggle("Presenter mode", key="present_toggle", on_change=_enter_presenter,
                          help="Large type, no sidebar. Or add ?present=1 to a link.")
    return presenting


def _enter_presenter() -> None:
    st.session_state["present"] = True
    st.session_state["present_toggle"] = False


def cursor_spec_default(story: Story, run: RunFrames) -> int:
    return cursor.resolve(run.iterations, story.default_cursor)


def stalls_apart_ui(run: RunFrames, expanded: bool = False) -> None:
    """The two stalls side by side: where to look, what each looks like, and what this run shows."""
    found = diagnosis.diagnose(run)
    with st.expander(f"How to tell the two stalls apart — {diagnosis.verdict(found, run.stall_threshold_s)}",
                     expanded=expanded):
        st.table(diagnosis.apart_table(found).set_index("look at"))


def url_state(story: Story, values: dict, more: dict | None = None) -> None:
    """Put this view into the address bar so a copied link reopens it."""
    extra = {**(more or {}), "t": (f"{st.session_state[f'{story.key}.cursor_t']:.3f}" if f"{story.key}.cursor_t" in st.session_state
                   else None),
             "present": "1" if st.session_state.get("present") else None}
    state.write_url(story.controls, values, extra)
    share_ui(story, values, extra)
