"""Gaps between tokens, per group: a histogram on log-spaced bins with p50 / p95 / p99 marked. No `st.*`."""

from __future__ import annotations

import altair as alt
import pandas as pd

from app.charts.scales import COUNT_LABEL, WIDTH, group_scale


def itl_distribution(hist: pd.DataFrame, stats: pd.DataFrame, groups: list[str] | None = None) -> alt.Chart:
    """Per group: how many gaps between tokens fell in each (log-spaced) bin, with p50/p95/p99 marked."""
    groups = groups or list(dict.fromkeys(hist["group"]))
    scale = group_scale(groups)
    lo = float(hist["bin_start"].min()) if len(hist) else 1e-3
    hi = float(hist["bin_end"].max()) if len(hist) else 1.0
    x_scale = alt.Scale(type="log", domain=[lo, hi], nice=False)
    charts = []
    for group in groups:
        part = hist[hist["group"] == group]
        marks = stats[(stats["group"] == group) & (stats["stat"] != "max")]
        bars = alt.Chart(part).mark_bar(opacity=0.85).encode(
            x=alt.X("bin_start:Q", title="gap between two tokens (s, log scale)", scale=x_scale),
            x2="bin_end:Q",
            y=alt.Y("count:Q", title="gaps (count, log scale)", scale=alt.Scale(type="symlog"),
                    axis=alt.Axis(values=[0, 1, 10, 100, 1_000, 10_000, 100_000], labelExpr=COUNT_LABEL)),
            y2=alt.datum(0),
            color=alt.Color("group:N", scale=scale, legend=None),
            tooltip=[alt.Tooltip("group:N"), alt.Tooltip("bin_start:Q", title="from (s)", format=".3f"),
                     alt.Tooltip("bin_end:Q", title="to (s)", format=".3f"), alt.Tooltip("count:Q", title="gaps")],
        )
        rules = alt.Chart(marks).mark_rule(color="#000000", strokeDash=[4, 2]).encode(
            x="gap_s:Q", tooltip=[alt.Tooltip("stat:N"), alt.Tooltip("gap_s:Q", title="gap (s)", format=".3f")])
        labels = alt.Chart(marks).mark_text(align="left", dx=3, baseline="top", fontSize=11).encode(
            x="gap_s:Q", y=alt.Y("row:Q", scale=alt.Scale(domain=[0, 1]), axis=None), text=alt.Text("label:N")
        ).transform_calculate(
            label="datum.stat + ' ' + format(datum.gap_s, '.3~f') + ' s'",
            row="datum.stat == 'p50' ? 0.98 : datum.stat == 'p95' ? 0.82 : 0.66")
        chart = alt.layer(bars, rules, labels).resolve_scale(y="independent")
        charts.append(chart.properties(width=WIDTH, height=190, title=f"{group}"))
    if not charts:
        return alt.Chart(pd.DataFrame({"x": []})).mark_bar().encode(x=alt.X("x:Q", title="gap (s)"))
    return alt.vconcat(*charts).resolve_scale(x="shared")
