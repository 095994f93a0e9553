"""The guided tour: numbered steps that set the controls, move the cursor and point at one chart."""

from __future__ import annotations

import streamlit as st

from app import state
from app.ui.chart import look_here
from engine_model import Story


def tour_ui(story: Story) -> int | None:
    """Numbered step buttons; a click sets the controls and the cursor. Returns the active step (0-based) or None."""
    keys = state.keys(story.key)
    with st.container(border=True):
        cols = st.columns([0.8] + [1] * len(story.tour), vertical_alignment="center")
        cols[0].markdown("**Guided tour**  \nclick a step")
        for i, (col, step) in enumerate(zip(cols[1:], story.tour, strict=True)):
            col.button(f"{i + 1}. {step.title}", key=keys.tour_button(i), on_click=_apply_step,
                       args=(story, i), width="stretch", wrap=True,
                       type="primary" if st.session_state.get(keys.tour_step) == i else "secondary")
        active = st.session_state.get(keys.tour_step)
        if active is not None:
            step = story.tour[active]
            st.info(f"**Step {active + 1} of {len(story.tour)} — {step.title}.** {step.say}",
                    icon=":material/record_voice_over:")
    return active


def _apply_step(story: Story, i: int) -> None:
    step, keys = story.tour[i], state.keys(story.key)
    for control in story.controls:
        if control.is_flag or control.key in step.settings or control.where == "main":
            value = step.settings.get(control.key, control.default)
            st.session_state[keys.widget(control.key)] = value
    st.session_state[keys.tour_step] = i
    st.session_state[keys.pending_cursor] = step.cursor
    st.session_state[keys.focus] = step.focus
    st.session_state[keys.playing] = False


def pointer(story: Story, chart_id: str) -> str | None:
    """The active step's title when it is about this chart (or section), else None."""
    keys = state.keys(story.key)
    active = st.session_state.get(keys.tour_step)
    if st.session_state.get(keys.focus) == chart_id and active is not None:
        return story.tour[active].title
    return None


def focus_marker(story: Story, chart_id: str) -> None:
    """The tour's pointer above a section that is not a single chart (e.g. the PD section)."""
    title = pointer(story, chart_id)
    if title is not None:
        look_here(title)
