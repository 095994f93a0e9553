"""The top of every story page: title, guided tour, settings, what they resolve to, and the headline
numbers against SGLang's defaults. `story_ui` draws it all and returns the control values and the run."""

from __future__ import annotations

import hashlib

import streamlit as st

from app import compute, state
from app.charts.frames import RunFrames
from app.story.cost_panel import cost_panel_ui
from app.story.exports import remember_note
from app.story.headline import headline_ui
from app.story.tour import narration_ui, tour_ui
from app.ui.controls import control_ui
from app.ui.resolved import cut_off_ui, resolved_ui
from engine_model import InputError, Story


def story_ui(story: Story) -> tuple[dict, RunFrames]:
    """The top of every story page: title, guided tour, settings, what they resolve to, and the headline
    numbers against SGLang's defaults (the baseline run). Returns the control values and the current run."""
    page_header(story)
    narration = tour_ui(story)
    values = settings_ui(story)
    cost_panel_ui(story)
    current, baseline = runs_or_stop(story, values)
    narration_ui(story, narration, current, baseline)
    resolved_ui(current)
    headline_ui(story, current, baseline, values)
    remember_note(story, values, current, baseline)
    return values, current


def page_header(story: Story) -> None:
    """Title, teaser and any notes about the link that opened the page (bad or unknown URL parameters)."""
    state.seed_widgets(story.key, story.controls, state.EXTRA_PARAMS.get(story.key, ()))
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
        st.markdown("**Settings** — flags marked ⚑ are SGLang server flags; \"before\" is this row at its defaults.")
        cols = st.columns([0.9 if c.widget == "toggle" else 1.1 for c in main])
        for col, control in zip(cols, main, strict=True):
            with col:
                control_ui(story.key, control)
        with st.expander("GPU, model and seed"):
            cols = st.columns(len(more))
            for col, control in zip(cols, more, strict=True):
                with col:
                    control_ui(story.key, control)
    return state.values(story.key, story.controls)


def runs_or_stop(story: Story, values: dict) -> tuple[RunFrames, RunFrames]:
    """The current run and the baseline (the story as it opened, same GPU, model and seed); stops the page on
    bad input."""
    try:
        scenario = story.scenario(values)
        baseline = story.scenario(story.baseline_values(values))
        current, base = compute.run_scenario(scenario), compute.run_scenario(baseline)
    except InputError as err:
        st.error(f"**This combination cannot run.** `{err.where}`: {err.problem}", icon=":material/block:")
        st.stop()
    st.session_state[state.keys(story.key).scenario] = scenario
    cut_off_ui(current)
    rejected = current.summary.rejected
    if rejected:
        first = next(iter(rejected.items()))
        st.warning(f"{len(rejected)} request(s) rejected, e.g. `{first[0]}`: {first[1]}")
    return current, base


def run_key(page: str) -> str:
    """A short key for the run a page shows (its validated scenario): charts cache their specs under it."""
    scenario = st.session_state.get(state.keys(page).scenario)
    return "" if scenario is None else hashlib.sha1(scenario.model_dump_json().encode()).hexdigest()
