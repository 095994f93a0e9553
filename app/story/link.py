"""The address bar carries the view: every setting, the cursor, the tour step and presenter mode. A copied
address reopens exactly what is on screen; the copy-link button copies it."""

from __future__ import annotations

import streamlit as st

from app import state
from app.story.tour import step_values
from engine_model import Story


def view_params(story: Story, more: dict | None = None) -> dict:
    """The URL parameters beside the controls: the section's (`more`), cursor, tour step, presenter mode."""
    keys = state.keys(story.key)
    cursor_t = st.session_state.get(keys.cursor_t)
    step = st.session_state.get(keys.tour_step)
    return {**(more or {}), state.CURSOR_T: None if cursor_t is None else f"{cursor_t:.3f}",
            state.STEP: None if step is None else step + 1, **state.present_param()}


def url_state(story: Story, values: dict, more: dict | None = None) -> None:
    """Put this view into the address bar so a copied link reopens it (the copy-link button sits at the top
    of the page: app.story.top.page_header)."""
    step = st.session_state.get(state.keys(story.key).tour_step)
    state.write_url(story.controls, values, view_params(story, more),
                    None if step is None else step_values(story, step))
