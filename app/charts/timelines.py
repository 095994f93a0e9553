"""Timeline builders: a tidy frame in (app.charts.frames), an Altair chart out. No `st.*` calls here.

The pass timeline, token streams, KV slots and queue depth share the time axis and the cursor, so
step-through moves them together. Every axis names its unit.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from app.charts.scales import (
    COUNT_LABEL,
    CURSOR_COLOUR,
    CURSOR_NAME,
    KV_COLOURS,
    KV_SERIES,
    QUEUE_COLOURS,
    QUEUE_SERIES,
    QUEUED,
    STALL,
    WIDTH,
    cursor_layer,
    phase_scale,
    timeline_scale,
    with_cursor,
    x_domain,
)

# -- pass timeline -----------------------------------------------------------------------------------
PICK = "pick"  # the pass timeline's click selection: a clicked bar moves the cursor there


def pass_timeline(passes: pd.DataFrame, cursor_at: float | None = None, end_at: float | None = None,
                  cursor_index: int | None = None) -> alt.Chart:
    """Gantt: one lane per GPU worker, a bar per forward pass (or run of identical decode passes)."""
    lanes = list(dict.fromkeys(passes["lane"])) if len(passes) else ["engine"]
    height = alt.Step(60 if len(lanes) == 1 else 34)  # a discrete y axis sizes by step, not by height
    base = alt.Chart(passes).encode(
        x=alt.X("start_at:Q", title="time (s)", scale=x_domain(end_at)),
        x2="end_at:Q",
        y=alt.Y("lane:N", title="GPU worker", sort=lanes),
    )
    bars = base.mark_bar(stroke="white", strokeWidth=0.3).encode(
        color=alt.Color("kind:N", title="pass", scale=phase_scale(), legend=alt.Legend(orient="top")),
        tooltip=[
            alt.Tooltip("label:N", title="pass"),
            alt.Tooltip("first_index:Q", title="iteration"),
            alt.Tooltip("start_at:Q", title="start (s)", format=".3f"),
            alt.Tooltip("duration_s:Q", title="duration (s)", format=".3f"),
            alt.Tooltip("num_new_tokens:Q", title="tokens computed", format=","),
            alt.Tooltip("num_prefill_rows:Q", title="requests prefilled"),
            alt.Tooltip("max_batch:Q", title="decode rows"),
            alt.Tooltip("reason:N", title="why"),
            alt.Tooltip("mirrors:N", title="SGLang rule"),
        ],
    ).add_params(alt.selection_point(name=PICK, fields=["lane", "first_index"], on="click", clear="dblclick"))
    layers = [bars]
    if cursor_index is not None and len(passes):
        hit = passes[(passes["first_index"] <= cursor_index) & (passes["last_index"] >= cursor_index)]
        if len(hit):
            layers.append(alt.Chart(hit).mark_bar(fill=None, stroke=CURSOR_COLOUR, strokeWidth=2.5).encode(
                x="start_at:Q", x2="end_at:Q", y=alt.Y("lane:N", sort=lanes)
            ).properties(name=f"{CURSOR_NAME}_pass"))
    cursor = cursor_layer(cursor_at)
    if cursor is not None:
        layers.append(cursor)
    return alt.layer(*layers).properties(width=WIDTH, height=height)


# -- token streams -----------------------------------------------------------------------------------
def token_streams(tokens: pd.DataFrame, stalls: pd.DataFrame, chunks: pd.DataFrame, waits: pd.DataFrame,
                  request_order: list[str], cursor_at: float | None = None, end_at: float | None = None,
                  stall_threshold_s: float = 0.25) -> alt.Chart:
    """One lane per request: a tick per token, prefill chunks as coloured blocks, stalls and queue waits as bands."""
    num = len(request_order)
    show_labels = num <= 60
    height = alt.Step(12 if show_labels else max(2, min(6, 600 // max(num, 1))))  # px per request lane
    y = alt.Y("rid:N", sort=request_order, title="request" if show_labels else f"{num} requests (one lane each)",
              axis=alt.Axis(labels=show_labels, ticks=show_labels, labelFontSize=9), scale=alt.Scale(domain=request_order))
    x_scale = x_domain(end_at)
    colour = alt.Color("state:N", title=None, scale=timeline_scale(), legend=alt.Legend(orient="top"))
    layers = []
    if len(waits):
        layers.append(alt.Chart(waits.assign(state=QUEUED[0])).mark_bar(opacity=0.45).encode(
            x=alt.X("start_at:Q", title="time (s)", scale=x_scale), x2="end_at:Q", y=y, color=colour,
            tooltip=[alt.Tooltip("rid:N", title="request"), alt.Tooltip("why:N", title="state"),
                     alt.Tooltip("wait_s:Q", title="waited (s)", format=".3f")]))
    if len(stalls):
        layers.append(alt.Chart(stalls.assign(state=STALL[0])).mark_bar(stroke="white", strokeWidth=1).encode(
            x=alt.X("start_at:Q", title="time (s)", scale=x_scale), x2="end_at:Q", y=y, color=colour,
            opacity=alt.Opacity("gap_s:Q", scale=alt.Scale(domain=[stall_threshold_s, 4.0], range=[0.25, 0.8], clamp=True),
                                legend=None),
            tooltip=[alt.Tooltip("rid:N", title="request"), alt.Tooltip("group:N"),
                     alt.Tooltip("gap_s:Q", title=f"no token for (s) [>= {stall_threshold_s:g} s]", format=".3f"),
                     alt.Tooltip("start_at:Q", title="from (s)", format=".3f")]))
    if len(tokens):
        layers.append(alt.Chart(tokens).mark_tick(color="#222222", thickness=1, opacity=0.8).encode(
            x=alt.X("at:Q", title="time (s)", scale=x_scale), y=y,
            tooltip=[alt.Tooltip("rid:N", title="request"), alt.Tooltip("at:Q", title="token at (s)", format=".3f"),
                     alt.Tooltip("gap_before_s:Q", title="gap before (s)", format=".3f")]))
    if len(chunks):
        layers.append(alt.Chart(chunks.rename(columns={"kind": "state"})).mark_bar(stroke="white", strokeWidth=0.5).encode(
            x=alt.X("start_at:Q", title="time (s)", scale=x_scale), x2="end_at:Q", y=y, color=colour,
            tooltip=[alt.Tooltip("rid:N", title="request"), alt.Tooltip("state:N", title="pass"),
                     alt.Tooltip("index:Q", title="iteration"),
                     alt.Tooltip("extend:Q", title="prompt tokens in this chunk", format=","),
                     alt.Tooltip("past_kv:Q", title="already in KV", format=","),
                     alt.Tooltip("start_at:Q", title="start (s)", format=".3f")]))
    if not layers:
        layers.append(alt.Chart(pd.DataFrame({"rid": [], "at": []})).mark_tick().encode(x="at:Q", y=y))
    cursor = cursor_layer(cursor_at)
    if cursor is not None:
        layers.append(cursor)
    return alt.layer(*layers).properties(width=WIDTH, height=height)


# -- KV and queue ------------------------------------------------------------------------------------
def kv_occupancy(kv: pd.DataFrame, retractions: pd.DataFrame | None = None, cursor_at: float | None = None,
                 end_at: float | None = None) -> alt.Chart:
    """KV slots used / reserved-not-yet-used / free, stacked to the pool size; retractions as rules."""
    charts = []
    lanes = list(dict.fromkeys(kv["lane"])) if len(kv) else ["engine"]
    for lane in lanes:
        part = kv[kv["lane"] == lane] if len(kv) else kv
        area = alt.Chart(part).mark_area(interpolate="step-after").encode(
            x=alt.X("at:Q", title="time (s)", scale=x_domain(end_at)),
            y=alt.Y("slots:Q", title="KV slots (tokens)", stack="zero", axis=alt.Axis(labelExpr=COUNT_LABEL)),
            color=alt.Color("series:N", title="KV cache", scale=alt.Scale(domain=list(KV_SERIES), range=list(KV_COLOURS)),
                            legend=alt.Legend(orient="top")),
            order=alt.Order("order:Q"),
            tooltip=[alt.Tooltip("at:Q", title="time (s)", format=".3f"), alt.Tooltip("series:N"),
                     alt.Tooltip("slots:Q", title="slots", format=","), alt.Tooltip("capacity:Q", title="pool", format=",")],
        ).transform_calculate(order=f"indexof({list(KV_SERIES)}, datum.series)")
        layers = [area]
        if retractions is not None and len(retractions) and lane == lanes[0]:
            layers.append(alt.Chart(retractions).mark_rule(color=STALL[1], strokeWidth=2).encode(
                x="at:Q", tooltip=[alt.Tooltip("at:Q", title="retraction at (s)", format=".3f"),
                                   alt.Tooltip("rids:N", title="retracted"),
                                   alt.Tooltip("kv_free_before:Q", title="free slots before", format=","),
                                   alt.Tooltip("kv_free_after:Q", title="free slots after", format=",")]))
        cursor = cursor_layer(cursor_at, label=False)
        if cursor is not None:
            layers.append(cursor)
        title = f"{lane}" if len(lanes) > 1 else ""
        charts.append(alt.layer(*layers).properties(width=WIDTH, height=280, title=title))
    return charts[0] if len(charts) == 1 else alt.vconcat(*charts)


def queue_depth(queue: pd.DataFrame, cursor_at: float | None = None, end_at: float | None = None) -> alt.Chart:
    lanes = list(dict.fromkeys(queue["lane"])) if len(queue) else ["engine"]
    dash = alt.StrokeDash("lane:N", title="worker", legend=None if len(lanes) == 1 else alt.Legend(orient="top"))
    lines = alt.Chart(queue).mark_line(interpolate="step-after").encode(
        x=alt.X("at:Q", title="time (s)", scale=x_domain(end_at)),
        y=alt.Y("requests:Q", title="requests"),
        color=alt.Color("series:N", title="queue", scale=alt.Scale(domain=list(QUEUE_SERIES), range=list(QUEUE_COLOURS)),
                        legend=alt.Legend(orient="top")),
        strokeDash=dash,
        tooltip=[alt.Tooltip("at:Q", title="time (s)", format=".3f"), alt.Tooltip("series:N"),
                 alt.Tooltip("requests:Q"), alt.Tooltip("lane:N", title="worker")],
    )
    return with_cursor(lines, cursor_at).properties(width=WIDTH, height=230)
