"""Chart builders: a tidy frame in, an Altair chart out. No `st.*` calls here.

One shared colour scale for pass kinds (Okabe-Ito, colour-blind safe): prefill chunk vermillion,
decode blue, mixed bluish green, idle grey. Every axis names its unit. A cursor (a time in seconds)
draws the same dashed rule on every timeline so step-through moves them together.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from app.frames import PHASES

# Okabe-Ito
PHASE_COLOURS = ("#D55E00", "#0072B2", "#009E73", "#BBBBBB")
STALL = ("no token (stall)", "#CC79A7")
QUEUED = ("waiting in queue", "#A0A0A0")
KV_SERIES = ("used", "reserved, not yet used", "free")
KV_COLOURS = ("#0072B2", "#E69F00", "#E6E6E6")
QUEUE_SERIES = ("waiting", "running")
QUEUE_COLOURS = ("#CC79A7", "#0072B2")
GROUP_COLOURS = ("#56B4E9", "#E69F00", "#CC79A7", "#009E73", "#F0E442", "#000000", "#D55E00", "#0072B2")
CURSOR_COLOUR = "#000000"
WIDTH = "container"


# Axis labels 0, 500, 2k, 20k: Vega's "~s" format prints a shared prefix ("0k") on some axes.
COUNT_LABEL = "datum.value >= 1000 ? format(datum.value / 1000, '~g') + 'k' : format(datum.value, '~g')"


def phase_scale() -> alt.Scale:
    return alt.Scale(domain=list(PHASES), range=list(PHASE_COLOURS))


def timeline_scale() -> alt.Scale:
    """What a request lane shows: its own prefill/mixed chunks (the phase colours), stalls and queue waits."""
    return alt.Scale(domain=[PHASES[0], PHASES[2], STALL[0], QUEUED[0]],
                     range=[PHASE_COLOURS[0], PHASE_COLOURS[2], STALL[1], QUEUED[1]])


def group_scale(groups: list[str]) -> alt.Scale:
    return alt.Scale(domain=list(groups), range=[GROUP_COLOURS[i % len(GROUP_COLOURS)] for i in range(len(groups))])


def seconds_axis(title: str = "time (s)") -> alt.X:
    return alt.X("start_at:Q", title=title)


def cursor_layer(cursor_at: float | None, label: bool = True) -> alt.Chart | None:
    if cursor_at is None:
        return None
    frame = pd.DataFrame({"at": [cursor_at], "label": [f"cursor {cursor_at:.2f} s"]})
    rule = alt.Chart(frame).mark_rule(color=CURSOR_COLOUR, strokeDash=[6, 3], strokeWidth=2).encode(
        x="at:Q", tooltip=[alt.Tooltip("at:Q", title="cursor (s)", format=".3f")])
    if not label:
        return rule
    text = alt.Chart(frame).mark_text(align="left", dx=4, dy=-4, baseline="bottom", fontWeight="bold").encode(
        x="at:Q", y=alt.value(0), text="label:N")
    return rule + text


def _with_cursor(chart: alt.Chart, cursor_at: float | None) -> alt.Chart:
    layer = cursor_layer(cursor_at)
    return chart if layer is None else alt.layer(chart, layer)


def _x_domain(end_at: float | None):
    return alt.Scale(domain=[0, end_at], nice=False) if end_at else alt.Scale(nice=False)


# -- pass timeline -----------------------------------------------------------------------------------
PICK = "pick"  # the pass timeline's click selection: a clicked bar moves the cursor there


def pass_timeline(passes: pd.DataFrame, cursor_at: float | None = None, end_at: float | None = None,
                  cursor_index: int | None = None) -> alt.Chart:
    """Gantt: one lane per GPU worker, a bar per forward pass (or run of identical decode passes)."""
    lanes = list(dict.fromkeys(passes["lane"])) if len(passes) else ["engine"]
    height = alt.Step(60 if len(lanes) == 1 else 34)  # a discrete y axis sizes by step, not by height
    base = alt.Chart(passes).encode(
        x=alt.X("start_at:Q", title="time (s)", scale=_x_domain(end_at)),
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
                x="start_at:Q", x2="end_at:Q", y=alt.Y("lane:N", sort=lanes)))
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
    x_scale = _x_domain(end_at)
    colour = alt.Color("state:N", title="on the lane", scale=timeline_scale(), legend=alt.Legend(orient="top"))
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
            x=alt.X("at:Q", title="time (s)", scale=_x_domain(end_at)),
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
        x=alt.X("at:Q", title="time (s)", scale=_x_domain(end_at)),
        y=alt.Y("requests:Q", title="requests"),
        color=alt.Color("series:N", title="queue", scale=alt.Scale(domain=list(QUEUE_SERIES), range=list(QUEUE_COLOURS)),
                        legend=alt.Legend(orient="top")),
        strokeDash=dash,
        tooltip=[alt.Tooltip("at:Q", title="time (s)", format=".3f"), alt.Tooltip("series:N"),
                 alt.Tooltip("requests:Q"), alt.Tooltip("lane:N", title="worker")],
    )
    return _with_cursor(lines, cursor_at).properties(width=WIDTH, height=230)


# -- inter-token latency -----------------------------------------------------------------------------
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
            y=alt.Y("count:Q", title="gaps (count)", scale=alt.Scale(type="symlog"),
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


# -- sweeps and trade-offs ---------------------------------------------------------------------------
def sweep_lines(sweep: pd.DataFrame, x_title: str, current: float | None = None, log_x: bool = True) -> alt.Chart:
    """A metric per setting (long form: setting, metric, seconds); the current setting as a rule."""
    x = alt.X("setting:Q", title=x_title, scale=alt.Scale(type="log", base=2) if log_x else alt.Scale(zero=False),
              axis=alt.Axis(values=sorted(sweep["setting"].unique().tolist()) if len(sweep) else None, format="~s"))
    base = alt.Chart(sweep).encode(
        x=x, y=alt.Y("seconds:Q", title="seconds", scale=alt.Scale(type="symlog")),
        color=alt.Color("metric:N", title="", scale=alt.Scale(range=list(GROUP_COLOURS)), legend=alt.Legend(orient="top")),
        tooltip=[alt.Tooltip("setting:Q", title=x_title, format=","), alt.Tooltip("metric:N"),
                 alt.Tooltip("seconds:Q", format=".3f")])
    layers = [base.mark_line(point=True)]
    if current is not None:
        mark = pd.DataFrame({"setting": [current], "label": ["current setting"]})
        layers.append(alt.Chart(mark).mark_rule(color=CURSOR_COLOUR, strokeDash=[6, 3]).encode(x="setting:Q"))
        layers.append(alt.Chart(mark).mark_text(align="left", dx=4, dy=4, baseline="top").encode(
            x="setting:Q", y=alt.value(0), text="label:N"))
    return alt.layer(*layers).properties(width=WIDTH, height=260)


def tradeoff_curve(curve: pd.DataFrame, x_title: str, y_title: str) -> alt.Chart:
    """Each setting is a point (x: what the streams feel, y: what the long prompt feels), joined in order."""
    base = alt.Chart(curve).encode(
        x=alt.X("x_s:Q", title=x_title, scale=alt.Scale(zero=False)),
        y=alt.Y("y_s:Q", title=y_title, scale=alt.Scale(zero=False)),
        tooltip=[alt.Tooltip("label:N", title="setting"), alt.Tooltip("x_s:Q", title=x_title, format=".3f"),
                 alt.Tooltip("y_s:Q", title=y_title, format=".3f")])
    line = base.mark_line(color="#888888").encode(order="order:Q")
    points = base.mark_point(filled=True, size=70, color=PHASE_COLOURS[2])
    labels = base.mark_text(align="left", dx=7, dy=-7).encode(text="label:N")
    current = base.transform_filter("datum.is_current").mark_point(size=380, color=CURSOR_COLOUR, strokeWidth=2.5)
    current_label = base.transform_filter("datum.is_current").mark_text(
        align="left", dx=10, dy=10, fontWeight="bold").encode(text=alt.value("current"))
    return alt.layer(line, points, labels, current, current_label).properties(width=WIDTH, height=320)


# -- PD: where each request's time went -----------------------------------------------------------------
SPAN_COLOURS = {"waiting": "#BBBBBB", "waiting_for_decode_kv": "#CC79A7", "prefill": PHASE_COLOURS[0],
                "transfer": "#56B4E9", "decode": PHASE_COLOURS[1], "retracted": "#000000"}
SPAN_LABELS = {"waiting": "waiting at prefill", "waiting_for_decode_kv": "waiting for decode KV",
               "prefill": "prefill chunks", "transfer": "KV transfer", "decode": "decoding", "retracted": "retracted"}


def request_phases(spans: pd.DataFrame, end_at: float | None = None) -> alt.Chart:
    """One lane per request, a bar per phase: where its time went. Transfers draw thin, over the chunks they
    overlap (under `early` each chunk's KV leaves as soon as it is computed)."""
    frame = spans.assign(label=spans["phase"].map(SPAN_LABELS))
    order = list(dict.fromkeys(frame["rid"]))
    scale = alt.Scale(domain=[SPAN_LABELS[p] for p in SPAN_COLOURS], range=list(SPAN_COLOURS.values()))
    base = alt.Chart(frame).encode(
        x=alt.X("start_at:Q", title="time (s)", scale=_x_domain(end_at)), x2="end_at:Q",
        y=alt.Y("rid:N", sort=order, title=f"{len(order)} requests (sampled per group)",
                axis=alt.Axis(labels=len(order) <= 24)),
        color=alt.Color("label:N", scale=scale, title="phase", legend=alt.Legend(orient="top")),
        tooltip=[alt.Tooltip("rid:N", title="request"), alt.Tooltip("group:N"), alt.Tooltip("label:N", title="phase"),
                 alt.Tooltip("start_at:Q", title="from (s)", format=".3f"),
                 alt.Tooltip("duration_s:Q", title="for (s)", format=".3f")])
    main = base.transform_filter("datum.phase != 'transfer'").mark_bar(height={"band": 0.8})
    thin = base.transform_filter("datum.phase == 'transfer'").mark_bar(height={"band": 0.3})
    return alt.layer(main, thin).properties(width=WIDTH, height=max(120, 9 * len(order)))
