"""The sections below a story's step-through: gaps between tokens per group, and how to tell the two
stalls apart in this run."""

from __future__ import annotations

import streamlit as st

from app.charts import latency
from app.charts.frames import RunFrames
from app.story import diagnosis, tour
from app.story.top import run_key
from app.ui.chart import chart_ui
from engine_model import Story


def itl_chart(run: RunFrames):
    """The gaps histogram of a run, one panel per group (app.warm builds it at start-up too)."""
    return latency.itl_distribution(run.itl_hist, run.itl_stats, list(run.summary.metrics.groups))


def itl_ui(story: Story, run: RunFrames) -> None:
    chart_ui(story.key, "itl", "Gaps between tokens, per group",
             "How long readers waited between two tokens. Most gaps are one decode pass; a stall shows up as a "
             "lonely bar far to the right. Dashed lines: p50, p95, p99. Note the log scale.",
             lambda: itl_chart(run), tour.pointer(story, "itl"), cache_key=run_key(story.key))


def stalls_apart_ui(run: RunFrames, expanded: bool = False) -> None:
    """The two stalls side by side: where to look, what each looks like, and what this run shows."""
    found = diagnosis.diagnose(run)
    with st.expander(f"How to tell the two stalls apart — {diagnosis.verdict(found, run.stall_threshold_s)}",
                     expanded=expanded):
        st.table(diagnosis.apart_table(found).set_index("look at"))
