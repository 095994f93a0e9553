"""The sections below a story's step-through: gaps between tokens per group, and how to tell the two
stalls apart in this run."""

from __future__ import annotations

import streamlit as st

from app.charts import latency
from app.charts.frames import RunFrames
from app.story import diagnosis, tour
from app.story.top import run_key
from app.ui.chart import chart_ui
from app.ui.fold import folded
from engine_model import Story


def itl_charts(run: RunFrames) -> dict[str, object]:
    """Chart id -> a builder of one group's gaps histogram, every group on one shared x axis (app.warm builds
    them at start-up too)."""
    groups = [g for g in run.summary.metrics.groups if g in set(run.itl_hist.get("group", []))]
    domain = latency.gap_domain(run.itl_hist)
    return {f"itl-{group}": (lambda group=group: latency.itl_distribution(run.itl_hist, run.itl_stats, group,
                                                                        groups, domain))
            for group in groups}


def itl_ui(story: Story, run: RunFrames) -> None:
    """One histogram per group, on one shared x axis, each fitting the column."""
    charts = itl_charts(run)
    for i, (chart_id, build) in enumerate(charts.items()):
        last = i == len(charts) - 1
        chart_ui(story.key, chart_id, f"Gaps between tokens: {chart_id.removeprefix('itl-')}",
                 "How long readers waited between two tokens. Most gaps are one decode pass; a stall shows "
                 "up as a lonely bar far to the right. Dashed lines: p50, p95, p99. Both axes are "
                 "logarithmic; every group's chart shares one time axis." if last else "",
                 build, tour.pointer(story, "itl") if i == 0 else None, cache_key=run_key(story.key))


def stalls_apart_ui(run: RunFrames, expanded: bool = False) -> None:
    """The two stalls side by side: where to look, what each looks like, and what this run shows."""
    found = diagnosis.diagnose(run)
    with folded(f"How to tell the two stalls apart — {diagnosis.verdict(found, run.stall_threshold_s)}",
                "stalls.open", expanded=expanded) as is_open:
        if not is_open:
            return
        st.table(diagnosis.apart_table(found).set_index("look at"))
