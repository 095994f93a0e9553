"""Gaps between tokens, per group: a histogram on log-spaced bins with p50 / p95 / p99 marked. No `st.*`.

One chart per group (not a vertical concatenation: only a single view can take its column's width, so a
concatenation overflows it and cuts off the longest gaps). Every group's chart shares one x domain that
runs past the longest gap, so the same gap stands at the same place in each.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from app.charts.scales import COUNT_LABEL, WIDTH, group_scale

BARS = 0.62  # the share of the plot's height the bars may take; the percentiles' labels sit over them
ROW = 0.12  # a label's row, in the plot's height (a 7 pt label on a print slide's ~90 pt plot, 11 px on 200)
HEADROOM = 1.8  # the x axis runs this factor past the last bin, so the longest gap's bar and label show


def gap_domain(hist: pd.DataFrame) -> list[float]:
    """The x domain every group's histogram shares: from the shortest gap's bin to past the longest one's."""
    if hist.empty:
        return [1e-3, 1.0]
    return [float(hist["bin_start"].min()), float(hist["bin_end"].max()) * HEADROOM]


def itl_distribution(hist: pd.DataFrame, stats: pd.DataFrame, group: str, groups: list[str] | None = None,
                     domain: list[float] | None = None) -> alt.Chart:
    """One group: how many gaps between tokens fell in each (log-spaced) bin, with p50/p95/p99 marked.
    `groups` fixes the colour of each group; `domain` the shared x domain (see `gap_domain`)."""
    groups = groups or list(dict.fromkeys(hist["group"]))
    x_scale = alt.Scale(type="log", domain=domain or gap_domain(hist), nice=False)
    part = hist[hist["group"] == group]
    marks = stats[(stats["group"] == group) & (stats["stat"] != "max")]
    # the bars keep to the lower part of the plot; over them each percentile's label has a row of its own,
    # p50 on top, and its rule stops at its label's row: a label reads rightwards over the rules of the
    # percentiles right of it, which stop lower, so no label meets a bar, a rule or another label
    bars = alt.Chart(part).mark_bar(opacity=0.85).encode(
        x=alt.X("bin_start:Q", title="gap between two tokens (s, log scale)", scale=x_scale),
        x2="bin_end:Q",
        y=alt.Y("count:Q", title="gaps (count, log scale)",
                scale=alt.Scale(type="symlog", range=[alt.ExprRef("height"),
                                                      alt.ExprRef(f"height * {1 - BARS:g}")]),
                axis=alt.Axis(values=[1, 10, 100, 1_000, 10_000, 100_000], labelExpr=COUNT_LABEL)),
        y2=alt.datum(0),
        color=alt.Color("group:N", scale=group_scale(groups), legend=None),
        tooltip=[alt.Tooltip("group:N"), alt.Tooltip("bin_start:Q", title="from (s)", format=".3f"),
                 alt.Tooltip("bin_end:Q", title="to (s)", format=".3f"),
                 alt.Tooltip("count:Q", title="gaps")],
    )
    row = alt.Y("row:Q", scale=alt.Scale(domain=[0, 1]), axis=None)
    rows = " : ".join(f"datum.stat == '{stat}' ? {1 - i * ROW:g}" for i, stat in enumerate(("p50", "p95")))
    rules = alt.Chart(marks).mark_rule(color="#000000", strokeDash=[4, 2]).encode(
        x="gap_s:Q", y=row, y2=alt.datum(0),
        tooltip=[alt.Tooltip("stat:N"), alt.Tooltip("gap_s:Q", title="gap (s)", format=".3f")]
    ).transform_calculate(row=f"{rows} : {1 - 2 * ROW:g}")
    labels = alt.Chart(marks).mark_text(align="left", dx=3, baseline="top", fontSize=11).encode(
        x="gap_s:Q", y=row, text=alt.Text("label:N")
    ).transform_calculate(
        label="datum.stat + ' ' + format(datum.gap_s, '.3~f') + ' s'", row=f"{rows} : {1 - 2 * ROW:g}")
    chart = alt.layer(bars, rules, labels).resolve_scale(y="independent")
    return chart.properties(width=WIDTH, height=200)
