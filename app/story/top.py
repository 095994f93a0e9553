"""The top of every story page: title, guided tour, settings, what they resolve to, and the headline
numbers against SGLang's defaults. `story_ui` draws it all and returns the control values and the run."""

from __future__ import annotations

import streamlit as st

from app import compute, state
from app.charts.frames import RunFrames
from app.charts.words import kept_words
from app.pd.section import today_cards_ui
from app.present.fmt import shown_value
from app.present.settings import settings_words
from app.story.cost_panel import cost_panel_ui
from app.story.exports import remember_note
from app.story.headline import headline_ui, pd_headline_ui
from app.story.link import url_state
from app.story.tour import (
    active_step,
    apply_step,
    focus_marker,
    narration_ui,
    settings_fold,
    switch_and_rest,
    tour_ui,
)
from app.ui.controls import control_ui
from app.ui.deployment import DEPLOYMENT_WHERE, deployment_title, deployment_ui, deployment_words
from app.ui.fold import folded
from app.ui.link import copy_link_ui
from app.ui.mix import mix_builder_ui, mix_fold_title, mix_summary_ui
from app.ui.resolved import cut_off_ui, resolved_ui
from engine_model import MIX, InputError, Story


def story_ui(story: Story) -> tuple[dict, RunFrames]:
    """The top of every story page: title, guided tour, settings, what they resolve to, and the headline
    numbers against SGLang's defaults (the baseline run). Returns the control values and the current run."""
    page_header(story)
    narration = tour_ui(story)
    values, row = settings_ui(story)
    mix_summary_ui(story.key, _scenario_of(story, values))
    cost_panel_ui(story, row if state.is_presenting() else None)
    current, baseline = runs_or_stop(story, values)
    trace_kept_ui(story)
    narration_ui(story, narration, current, baseline, values)
    if state.is_presenting():  # one screen: what runs is one click away, beside the settings
        with row, st.popover("What runs", icon=":material/memory:"):
            resolved_ui(current)
    else:
        resolved_ui(current)
    step = active_step(story)
    focus_marker(story, "headline", words=False)  # the narration stands just above
    with st.container(key=state.HEADLINE):  # presenter mode's CSS keeps only the cards of it
        if step is not None and step.focus == "pd" and step.section.get("preset", "rush") != "rush":
            pd_headline_ui(step.section["preset"], values)
        elif not (state.EXTRA_PARAMS.get(story.key) == state.PD_PARAMS and today_cards_ui(values, current)):
            headline_ui(story, current, baseline, values)
    remember_note(story, values, current, baseline)
    return values, current


def page_header(story: Story) -> None:
    """Title, teaser and any notes about the link that opened the page (bad or unknown URL parameters)."""
    state.seed_widgets(story.key, story.controls, state.EXTRA_PARAMS.get(story.key, ()))
    _tour_step_from_url(story)
    if not state.is_presenting():  # presenter mode's bar names the page already (and holds the link)
        st.title(f"{story.icon} {story.title}")
        copy_link_ui()  # at the top: the address bar carries the view (app.story.link)
    st.markdown(story.teaser)
    for note in state.notes(story.key):
        st.warning(note, icon=":material/link:")


def _tour_step_from_url(story: Story) -> None:
    """A link's `step` opens the page as a click on that step would (once per session): the step's settings
    where the link does not give its own, its section, its folds open, its pointer scrolled to and, when the
    link has no cursor time, its cursor. A link is the view (`step=4` alone is step 4 with mixed chunk on)."""
    keys = state.keys(story.key)
    if keys.step_seeded in st.session_state:
        return
    st.session_state[keys.step_seeded] = True
    step, note = state.step_param(len(story.tour))
    if note is not None:
        st.session_state[keys.notes] = [*state.notes(story.key), note]
    if step is not None:
        apply_step(story, step, link=True)


CONTROL_WIDTH = {"toggle": 190, "select": 230, "slider": 230}  # px: each label and value whole; rows wrap


def settings_ui(story: Story):
    """The story's controls: its switch (the first control: mixed chunk), then the rest of the main row and
    the deployment (GPU, tensor parallel, model, precision, seed and the figures behind them) in folds whose
    titles say what is set. A fold is built only while open (a first view draws one toggle and two folds
    instead of six widgets: docs/performance.md), and a tour step that sets a folded control opens it. In
    presenter mode they all sit in a popover behind one line that says what is set (the tour sets them), so
    the cards and the key chart fit the first screen. Controls sit in rows that wrap, each wide enough for
    its label and value.
    Returns ({key: value}, the row that later takes the "What runs" popover)."""
    state.seed_widgets(story.key, story.controls)
    main = [c for c in story.controls if c.where == "main"]
    values = state.values(story.key, story.controls)
    if state.is_presenting():
        row = st.container(horizontal=True, vertical_alignment="center", gap="medium")
        with row.popover("Settings", icon=":material/tune:"):
            _controls_row(story, main)
            deployment_ui(story.key, story.controls, values)
            if any(c.key == MIX for c in story.controls):
                mix_builder_ui(story.key)
        # the cost model's and "What runs" popovers go here, before the line, so a long line wraps beside
        # them instead of pushing them onto a row of their own (the token streams stay on the first screen)
        tools = row.container(horizontal=True, vertical_alignment="center", gap="medium", width="content")
        values = state.values(story.key, story.controls)
        # the deployment joins the line once it differs from the story's own (the buyer's 8 GPUs); at the
        # story's it is one click away in "What runs", and the line stays one line beside the popovers
        moved = any(values[c.key] != c.default for c in story.controls if c.where in DEPLOYMENT_WHERE)
        # the switch, and every other setting that differs from the story's own: a control at its default
        # is counted, not named, so the line stays beside the popovers however many controls a story has
        named = [c for i, c in enumerate(main) if i == 0 or values[c.key] != c.default]
        rest = len(main) - len(named)
        row.container(width="stretch").markdown(
            " · ".join(f"{c.label} **{shown_value(c, values[c.key])}**" for c in named)
            + (f" · {rest} more at the story's defaults" if rest else "")
            + (f" · {deployment_words(values)}" if moved else "")
            + (f" · {mix_fold_title(story.key)}" if values.get(MIX) else ""))
        return values, tools
    switch, rest = switch_and_rest(story)
    with st.container(border=True):
        row = st.container(horizontal=True, gap="medium", vertical_alignment="center")
        with row:
            control_ui(story.key, switch, width=CONTROL_WIDTH[switch.widget])
            st.caption("**Settings** — flags marked ⚑ are SGLang server flags; \"before\" is these settings "
                       "at their defaults.")
        with folded(f"More settings: {settings_words(rest, values, marked=True)}", settings_fold(story.key),
                    icon=":material/tune:") as is_open:
            if is_open:
                _controls_row(story, rest)
        if any(c.key == MIX for c in story.controls):
            with folded(mix_fold_title(story.key), state.keys(story.key).mix_open,
                        icon=":material/group_work:") as is_open:
                if is_open:
                    mix_builder_ui(story.key)
        with folded(deployment_title(story.controls, values), state.keys(story.key).widget("deployment"),
                    icon=":material/memory:") as is_open:
            if is_open:
                deployment_ui(story.key, story.controls, values)
    return state.values(story.key, story.controls), row


def _scenario_of(story: Story, values: dict):
    """The page's scenario on a mix's text (the builder's sustain sentence)."""
    return lambda text: story.scenario({**values, MIX: text})


def _controls_row(story: Story, controls: list):
    row = st.container(horizontal=True, gap="medium", vertical_alignment="bottom")
    with row:
        for control in controls:  # its own width: no container block around each
            control_ui(story.key, control, width=CONTROL_WIDTH[control.widget])
    return row


def runs_or_stop(story: Story, values: dict) -> tuple[RunFrames, RunFrames]:
    """The current run and the baseline (the story as it opened, same deployment and seed; while a tour step
    that compares with another step is on screen, that step's settings: Story.compared_with); stops the page
    on bad input."""
    try:
        scenario = story.scenario(values)
        versus = story.compared_with(st.session_state.get(state.keys(story.key).tour_step), values)
        baseline = story.scenario(story.baseline_values(values, versus))
        current, base = compute.run_scenario(scenario), compute.run_scenario(baseline)
    except InputError as err:
        st.error(f"**This combination cannot run.** `{err.where}`: {err.problem}", icon=":material/block:")
        # the link keeps what was asked for (the sections' parameters too), so it says the same when shared
        url_state(story, values, {p: st.query_params.get(p) for p in state.EXTRA_PARAMS.get(story.key, ())})
        st.stop()
    st.session_state[state.keys(story.key).scenario] = scenario
    cut_off_ui(current)
    note = current.summary.config["resolved"].get("startup_note")
    if note:  # speculative decoding changed a flag at start-up (engine_model/speculative.py)
        st.info(f"**SGLang changed your settings at start-up:** {note}.", icon=":material/info:")
    rejected = current.summary.rejected
    if rejected:
        first = next(iter(rejected.items()))
        st.warning(f"{len(rejected)} request(s) rejected, e.g. `{first[0]}`: {first[1]}")
    return current, base


def trace_kept_ui(story: Story) -> None:
    """A story on a trace: how many of its rows the run keeps, every other one by why, and the setting that
    keeps more (the story's `requests` control), in the words of Your server's upload."""
    scenario = st.session_state[state.keys(story.key).scenario]
    trace_cfg = scenario.workload.trace
    if trace_cfg is None:
        return
    trace = compute.trace_of(scenario)
    control = next(c for c in story.controls if c.key == "requests")
    total, most = len(trace.requests) + trace.num_not_kept, max(control.options)
    words, _ = kept_words(trace, trace_cfg.max_requests, control.label,
                          f"up to {most:,}" + (": every row of the trace" if most >= total else ""))
    st.caption(words)


def run_key(page: str) -> str:
    """A short key for the run a page shows (its validated scenario): charts cache their specs under it."""
    return compute.run_key(st.session_state.get(state.keys(page).scenario))
