"""The sections below a story's step-through: gaps between tokens per group, and how to tell the two
stalls apart in this run."""

from __future__ import annotations

import streamlit as st
import streamlit.components.v1 as components

from app import state
from app.charts import views
from app.charts.frames import RunFrames
from app.present import playback
from app.present.fmt import markdown_table
from app.story import diagnosis, tour
from app.story.top import run_key
from app.ui.chart import chart_ui
from app.ui.fold import folded
from engine_model import Story


def itl_ui(story: Story, run: RunFrames) -> None:
    """One histogram per group, on one shared x axis, each fitting the column; in a fold built when opened."""
    with folded("Gaps between tokens, per group: how long readers waited between two tokens", tour.GAPS,
                icon=":material/bar_chart:") as is_open:
        if not is_open:
            return
        charts = list(views.itl_views(run).values())
        for i, view in enumerate(charts):
            last = i == len(charts) - 1
            chart_ui(story.key, view.chart_id, view.title, view.caption if last else "", view.build,
                     tour.pointer(story, "itl") if i == 0 else None, cache_key=run_key(story.key))


def playback_ui(story: Story, run: RunFrames) -> None:
    """What a reader sees: a few replies played back as text at the model's token times, from the cursor."""
    with folded("What a reader sees: the replies played back as text, from the cursor", "playback.open",
                icon=":material/play_circle:") as is_open:
        if not is_open:
            return
        start = float(st.session_state.get(state.keys(story.key).cursor_t) or 0.0)
        panes = playback.panes(run, story.stream_group, story.long_group)
        components.html(playback.app_frame([panes], start, run.stall_threshold_s), height=340,
                        scrolling=False)
        st.caption("Each pane is one reply, a word per token at the model's token times (the words are a "
                   "stand-in); it starts at the cursor. A pane that turns pink has had no token for "
                   f"{run.stall_threshold_s:g} s or more, and counts the wait.")


def stalls_apart_ui(run: RunFrames, expanded: bool = False, story: Story | None = None) -> None:
    """The two stalls side by side: where to look, what each looks like, and what this run shows."""
    if story is not None:
        tour.focus_marker(story, "why")
    found = diagnosis.diagnose(run)
    with folded(f"How to tell the two stalls apart — {diagnosis.verdict(found, run.stall_threshold_s)}",
                tour.STALLS, expanded=expanded) as is_open:
        if not is_open:
            return
        st.markdown(markdown_table(diagnosis.apart_table(found).set_index("look at")))
