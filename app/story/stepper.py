"""The stepper: start / previous event / step / play / step / next event / end, and the scrub slider.

The cursor is a row of `RunFrames.iterations`, kept under `state.keys(page).position` (the slider's key).
"""

from __future__ import annotations

import streamlit as st

from app import state
from app.charts.frames import RunFrames
from app.story import cursor
from engine_model import Story

BUTTONS = (("Start", "start", ":material/first_page:"), ("Event", "prev_event", ":material/fast_rewind:"),
           ("Step", "prev", ":material/chevron_left:"), None, ("Step", "next", ":material/chevron_right:"),
           ("Event", "next_event", ":material/fast_forward:"), ("End", "end", ":material/last_page:"))
HELP = {"prev_event": "back to the previous prefill, mixed pass or retraction",
        "next_event": "on to the next prefill, mixed pass or retraction"}


def stepper_ui(story: Story, run: RunFrames) -> None:
    its, keys = run.iterations, state.keys(story.key)
    cols = st.columns([1, 1, 1, 1.4, 1, 1, 1])
    for col, spec in zip(cols, BUTTONS, strict=True):
        if spec is None:
            continue
        label, how, icon = spec
        col.button(label, key=keys.move_button(how), on_click=_move, args=(story, run, how), width="stretch",
                   icon=icon, icon_position="right" if how in ("next", "next_event", "end") else "left",
                   help=HELP.get(how))
    playing = st.session_state.get(keys.playing, False)
    if cols[3].button("Pause" if playing else "Play", key=keys.play_button, type="primary", width="stretch",
                      icon=":material/pause:" if playing else ":material/play_arrow:"):
        st.session_state[keys.playing] = not playing
        st.rerun(scope="app")
    row = its.iloc[st.session_state[keys.position]]
    st.slider(f"Iteration (t = {row['start_at']:.3f} s)", 0, len(its) - 1, key=keys.position,
              label_visibility="collapsed")


def _move(story: Story, run: RunFrames, how: str) -> None:
    its, key = run.iterations, state.keys(story.key).position
    pos = st.session_state.get(key, 0)
    st.session_state[key] = {
        "start": 0, "end": len(its) - 1, "prev": max(pos - 1, 0), "next": min(pos + 1, len(its) - 1),
        "prev_event": cursor.prev_event(its, pos), "next_event": cursor.next_event(its, pos),
    }[how]
