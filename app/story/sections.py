"""The sections below a story's step-through: gaps between tokens per group, and how to tell the two
stalls apart in this run."""

from __future__ import annotations

import streamlit as st

from app.charts import views
from app.charts.frames import RunFrames
from app.story import diagnosis, tour
from app.story.top import run_key
from app.ui.chart import chart_ui
from app.ui.fold import folded
from engine_model import Story


def itl_ui(story: Story, run: RunFrames) -> None:
    """One histogram per group, on one shared x axis, each fitting the column."""
    charts = list(views.itl_views(run).values())
    for i, view in enumerate(charts):
        last = i == len(charts) - 1
        chart_ui(story.key, view.chart_id, view.title, view.caption if last else "", view.build,
                 tour.pointer(story, "itl") if i == 0 else None, cache_key=run_key(story.key))


def stalls_apart_ui(run: RunFrames, expanded: bool = False) -> None:
    """The two stalls side by side: where to look, what each looks like, and what this run shows."""
    found = diagnosis.diagnose(run)
    with folded(f"How to tell the two stalls apart — {diagnosis.verdict(found, run.stall_threshold_s)}",
                "stalls.open", expanded=expanded) as is_open:
        if not is_open:
            return
        st.table(diagnosis.apart_table(found).set_index("look at"))
