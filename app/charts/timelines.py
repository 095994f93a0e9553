"""Timeline builders: a tidy frame in (app.charts.frames), an Altair chart out. No `st.*` calls here.

The pass timeline, token streams, KV slots and queue depth share the time axis and the cursor, so
step-through moves them together. Every axis names its unit.
"""

from __future__ import annotations

import json

import altair as alt
import numpy as np
import pandas as pd

from app.charts.request_frames import gap_bands
from app.charts.scales import (
    COUNT_LABEL,
    CURSOR_COLOUR,
    CURSOR_NAME,
    DIVIDER_COLOUR,
    GAP_SHADES,
    KV_COLOURS,
    KV_SERIES,
    QUEUE_COLOURS,
    QUEUE_SERIES,
    QUEUED,
    RETRACTED,
    WIDTH,
    colour,
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
    cursor = cursor_layer(cursor_at, end_at=end_at)
    if cursor is not None:
        layers.append(cursor)
    return alt.layer(*layers).properties(width=WIDTH, height=height)


# -- token streams -----------------------------------------------------------------------------------
def chunk_pass_words(chunk_pass_s: tuple[float, float] | None) -> str:
    """'one chunk pass: 0.26-1.6 s', the yardstick for a stall's length, or '' when no full chunk ran."""
    if chunk_pass_s is None:
        return ""
    lo, hi = chunk_pass_s
    return f"one chunk pass: {lo:.2g} s" if hi < 1.2 * lo else f"one chunk pass: {lo:.2g}–{hi:.2g} s"


def stall_stretches(stalls: pd.DataFrame) -> pd.DataFrame:
    """A lane's gaps that follow one another in one shade, a single token between each (a trickle under
    mixed chunk: a gap a chunk pass), as one bar with its number of gaps and the longest. The token ticks
    drawn over it still show every token; one bar instead of dozens keeps a many-lane chart quick to draw
    (docs/performance.md, 2026-12-04). Rows that differ in anything but their times (another request,
    shade, or run of a standalone page's grid) never join."""
    keys = [c for c in stalls.columns if c not in ("start_at", "end_at", "gap_s")]
    if stalls.empty:
        return stalls.assign(gaps=pd.Series(dtype=int))
    ordered = stalls.sort_values([*keys, "start_at"], kind="stable")
    starts, ends = ordered["start_at"].to_numpy(), ordered["end_at"].to_numpy()
    new = np.abs(starts[1:] - ends[:-1]) > 1e-9
    for key in keys:
        values = ordered[key].to_numpy()
        new |= values[1:] != values[:-1]
    stretch = np.cumsum(np.concatenate([[True], new]))
    return ordered.groupby(stretch, sort=False).agg(
        **{key: (key, "first") for key in keys}, start_at=("start_at", "min"), end_at=("end_at", "max"),
        gap_s=("gap_s", "max"), gaps=("gap_s", "size")).reset_index(drop=True)


def _stall_colour(stall_threshold_s: float, chunk_pass_s: tuple[float, float] | None) -> alt.Color:
    """Stalls shaded by length on fixed bands (light: a short gap, dark: a long one), so a setting that turns
    one long stall into many short gaps visibly changes the lanes. The legend names one chunk pass."""
    bands = gap_bands(stall_threshold_s)
    title = ["no token for", f"({chunk_pass_words(chunk_pass_s)})"] if chunk_pass_s else "no token for"
    return alt.Color("band:N", title=title, legend=alt.Legend(orient="top"),
                     scale=alt.Scale(domain=[label for *_, label in bands],
                                     range=list(GAP_SHADES[-len(bands):])))


def token_streams(tokens: pd.DataFrame, stalls: pd.DataFrame, chunks: pd.DataFrame, waits: pd.DataFrame,
                  request_order: list[str], cursor_at: float | None = None, end_at: float | None = None,
                  stall_threshold_s: float = 0.25,
                  chunk_pass_s: tuple[float, float] | None = None,
                  sides: dict[str, str] | None = None, marked: pd.DataFrame | None = None,
                  veil_from: float | None = None) -> alt.Chart:
    """One lane per request: a bar for a steady run of tokens, a tick for a token on its own, prefill chunks
    as coloured blocks, stalls shaded by length, and queue waits (first wait, and after a retraction) drawn
    over the stall they cause. `sides` (two runs in one chart, app.compare.charts): each side's first lane
    -> its name; the axis names the sides instead of the requests, and a rule divides them. `marked` (rid,
    how, label): the lanes the pass under the cursor touched (app.story.cursor.touched), a diamond on each at
    the cursor and, where `label` is set, the request and what happened to it beside it. `veil_from`: the
    lanes from that time to the run's end are veiled, still to come (a tour step that shows what happens
    before it: TourStep.veiled)."""
    num = len(request_order)
    show_labels = num <= 60 and not sides
    thinnest = 1 if sides else 2  # px: two runs of hundreds of lanes stay one screen tall
    height = alt.Step(12 if num <= 60 else max(thinnest, min(6, 600 // max(num, 1))))  # px per request lane
    # the scale's domain orders the lanes (a `sort` list would compile to a nested formula run per row)
    scale = alt.Scale(domain=request_order)
    y = alt.Y("rid:N", title="request" if show_labels else f"{num} requests (one lane each)",
              axis=_side_axis(sides) if sides else alt.Axis(labels=show_labels, ticks=show_labels,
                                                            labelFontSize=9),
              scale=scale)
    x = alt.X("start_at:Q", title="time (s)", scale=x_domain(end_at))
    wait_state = waits["why"].map(lambda why: RETRACTED[0] if why.startswith(("retracted", "preempted"))
                                  else QUEUED[0])
    present = set(chunks["kind"]) | set(wait_state)
    state_colour = alt.Color("state:N", title=None, scale=timeline_scale(present),
                             legend=alt.Legend(orient="top", labelLimit=260, columns=1))
    lane_layers = []
    if len(waits):  # opaque: the legend's own grey, never the stall's shade showing through it
        lane_layers.append(alt.Chart(waits.assign(state=wait_state)).mark_bar().encode(
            x=x, x2="end_at:Q", y=y, color=state_colour,
            tooltip=[alt.Tooltip("rid:N", title="request"), alt.Tooltip("why:N", title="state"),
                     alt.Tooltip("wait_s:Q", title="waited (s)", format=".3f")]))
    if len(tokens):
        lane_layers += _token_marks(tokens, y, alt.X("at:Q", title="time (s)", scale=x_domain(end_at)),
                                    request_order)
    if len(chunks):
        lane_layers.append(alt.Chart(chunk_blocks(chunks, request_order).rename(columns={"kind": "state"}))
                           .mark_bar(stroke="white", strokeWidth=0.5).encode(
            x=x, x2="end_at:Q", **_spanning(y), color=state_colour,
            tooltip=[*first_last("requests in this pass"),
                     alt.Tooltip("state:N", title="pass"), alt.Tooltip("index:Q", title="iteration"),
                     alt.Tooltip("extend:Q", title="prompt tokens (these requests)", format=","),
                     alt.Tooltip("past_kv:Q", title="already in KV (these requests)", format=","),
                     alt.Tooltip("start_at:Q", title="start (s)", format=".3f")]))
    if not lane_layers:
        lane_layers.append(alt.Chart(pd.DataFrame({"rid": [], "at": []})).mark_tick().encode(x="at:Q", y=y))
    layers = [alt.layer(*lane_layers)]
    if len(stalls):  # its own colour scale, under the lane's other marks
        bars = alt.Chart(stall_blocks(stalls, request_order)).mark_bar(stroke="white",
                                                                       strokeWidth=int(show_labels))
        layers.insert(0, bars.encode(
            x=x, x2="end_at:Q", **_spanning(y), color=_stall_colour(stall_threshold_s, chunk_pass_s),
            tooltip=[*first_last("requests, each without a token"),
                     alt.Tooltip("group:N"),
                     alt.Tooltip("gap_s:Q", title="no token for (s), the longest", format=".3f"),
                     alt.Tooltip("gaps:Q", title="gaps in a row, a token between each"),
                     alt.Tooltip("start_at:Q", title="from (s)", format=".3f"),
                     alt.Tooltip("end_at:Q", title="to (s)", format=".3f")]))
    if sides:  # a rule above each side but the first, on its first lane's top edge
        layers.append(alt.Chart(pd.DataFrame({"rid": list(sides)[1:]})).mark_rule(
            color=DIVIDER_COLOUR, strokeWidth=1.5).encode(y=alt.Y("rid:N", scale=scale, bandPosition=0)))
    if veil_from is not None and end_at is not None and veil_from < end_at:
        layers.append(veil_layer(veil_from, end_at))
    if cursor_at is not None and marked is not None and len(marked):
        top = set(request_order[:CURSOR_LABEL_LANES])  # the cursor's own label sits over these lanes
        layers += _marked_lanes(marked.assign(at=cursor_at), y, cursor_at, end_at, show_labels, top)
    cursor = cursor_layer(cursor_at, end_at=end_at)
    if cursor is not None:
        layers.append(cursor)
    chart = alt.layer(*layers).properties(width=WIDTH, height=height)
    return chart.resolve_scale(color="independent") if len(stalls) else chart


def _marked_lanes(marked: pd.DataFrame, y: alt.Y, cursor_at: float, end_at: float | None,
                  show_labels: bool, top: set[str] = frozenset()) -> list[alt.Chart]:
    """A diamond at the cursor on each lane the decision touched, and its label where it has one (the
    retracted request, the prompt prefilled), reading away from the cursor as the cursor's own label does;
    no label on the `top` lanes, which the cursor's own label covers (the caption names them). Named as
    the cursor is, so an exported image leaves them out with it."""
    tooltip = [alt.Tooltip("rid:N", title="request"), alt.Tooltip("how:N", title="in this pass")]
    points = alt.Chart(marked).mark_point(shape="diamond", filled=True, color=CURSOR_COLOUR, opacity=1,
                                          size=70 if show_labels else 25).encode(
        x="at:Q", y=y, tooltip=tooltip).properties(name=f"{CURSOR_NAME}_marked")
    named = marked[(marked["label"] != "") & ~marked["rid"].isin(top)]
    if not len(named):
        return [points]
    late = isinstance(end_at, int | float) and cursor_at > 0.6 * end_at
    text = alt.Chart(named).mark_text(align="right" if late else "left", dx=-9 if late else 9,
                                      fontWeight="bold", color=CURSOR_COLOUR).encode(
        x="at:Q", y=y, text="label:N", tooltip=tooltip).properties(name=f"{CURSOR_NAME}_marked_label")
    return [points, text]


CURSOR_LABEL_LANES = 2  # the lanes at the top that the cursor's "cursor 1.2 s" label covers


VEIL = "#FFFFFF"  # what is still to come: the page's own white, nearly opaque


def veil_layer(start: float, end: float) -> alt.Chart:
    """A white sheet over the lanes from `start` to `end`, with 'still to come' at its top left."""
    frame = pd.DataFrame({"start_at": [start], "end_at": [end], "label": ["still to come →"]})
    sheet = alt.Chart(frame).mark_rect(color=VEIL, opacity=0.96).encode(x="start_at:Q", x2="end_at:Q")
    text = alt.Chart(frame).mark_text(align="left", baseline="top", dx=8, dy=6, fontStyle="italic",
                                      color="#555555").encode(x="start_at:Q", y=alt.value(0), text="label:N")
    return sheet + text


def _side_axis(sides: dict[str, str]) -> alt.Axis:
    """A y axis that names each side at its first lane ("A", "B") and no request."""
    expr = " : ".join(f"datum.value === {json.dumps(lane)} ? {json.dumps(name)}"
                      for lane, name in sides.items())
    return alt.Axis(labels=True, ticks=False, labelExpr=f"{expr} : ''", labelFontSize=14,
                    labelFontWeight="bold", labelBaseline="top", labelPadding=6)


# a lone token's tick, px: a trickle's tokens stay visible lines between its pink gaps on a projector (1 px
# ticks read as one solid band at 1080p); ticks under JOIN_PX apart are one bar already (request_frames)
TICK_PX = 3


def _token_marks(tokens: pd.DataFrame, y: alt.Y, x: alt.X, request_order: list[str]) -> list[alt.Chart]:
    """A run of tokens too close to draw apart as one bar from its first to its last, a token on its own as a
    tick (request_frames.token_frames): a steady stream reads solid, a trickle as spaced ticks. Lone tokens
    at one instant in adjacent lanes (one pass gave each of them a token) are one tick across those lanes
    (`token_columns`)."""
    who = alt.Tooltip("rid:N", title="request")
    runs = alt.Chart(tokens[tokens["count"] > 1]).mark_bar(
        color=colour("decode"), height=alt.RelativeBandSize(0.75)).encode(
        x=x, x2="until:Q", y=y,
        tooltip=[who, alt.Tooltip("count:Q", title="tokens", format=","),
                 alt.Tooltip("at:Q", title="first at (s)", format=".3f"),
                 alt.Tooltip("until:Q", title="last at (s)", format=".3f"),
                 alt.Tooltip("gap_before_s:Q", title="gap before (s)", format=".3f")])
    ticks = alt.Chart(token_columns(tokens, request_order)).mark_rule(
        color=colour("decode"), strokeWidth=TICK_PX).encode(
        x=x, **_spanning(y),
        tooltip=[*first_last("requests, one token each"),
                 alt.Tooltip("at:Q", title="token at (s)", format=".3f"),
                 alt.Tooltip("gap_before_s:Q", title="gap before (s), the longest", format=".3f")])
    return [runs, ticks]


def first_last(how_many: str) -> list[alt.Tooltip]:
    """The tooltip lines of an `across_lanes` row: its first and last request, and how many (`how_many`)."""
    return [alt.Tooltip("rid:N", title="request (first)"), alt.Tooltip("last:N", title="request (last)"),
            alt.Tooltip("lanes:Q", title=how_many)]


def _spanning(y: alt.Y) -> dict:
    """A row of `across_lanes` from its first lane's top to its last lane's bottom; the lanes' axis keeps its
    labels at the lanes' middles (Vega-Lite would otherwise move them to the band's edge with the marks)."""
    lane = y.to_dict()
    axis = {**lane.get("axis", {}), "bandPosition": 0.5}
    return {"y": alt.Y(**(lane | {"bandPosition": 0, "axis": axis})), "y2": alt.Y2("last:N", bandPosition=1)}


def token_columns(tokens: pd.DataFrame, request_order: list[str]) -> pd.DataFrame:
    """Lone tokens (`count` 1) at the same instant in lanes next to one another, as one row (`across_lanes`)
    with the longest gap before. Under mixed chunk a pass gives every running stream a token at once, so a
    trickle of 40 streams is a dozen such columns instead of 480 ticks (docs/performance.md, 2026-12-04,
    fourth session); each lane still shows a tick where it got a token."""
    return across_lanes(tokens[tokens["count"] == 1], request_order, ["at"],
                        {"gap_before_s": ("gap_before_s", "max")}, drop=("group", "until", "n", "count"))


def stall_blocks(stalls: pd.DataFrame, request_order: list[str]) -> pd.DataFrame:
    """A lane's stretches of stalls (`stall_stretches`), and then the stretches that adjacent lanes of one
    group share exactly (same start, end and shade: one pass froze them all) as one bar across them: the
    forty replies' 40 frozen streams are one block, as they froze together."""
    return across_lanes(stall_stretches(stalls), request_order, ["start_at", "end_at"],
                        {"gap_s": ("gap_s", "max"), "gaps": ("gaps", "max")})


def chunk_blocks(chunks: pd.DataFrame, request_order: list[str]) -> pd.DataFrame:
    """Prefill chunks (request_frames.chunks_frame), and then those of one pass in adjacent lanes of one group
    as one block across them, its prompt tokens and KV summed: a pass that prefilled eight arriving questions
    at once is one block, as the scheduler took them together (ten o'clock's 364 chunks are 163 blocks)."""
    return across_lanes(chunks, request_order, ["start_at", "end_at"],
                        {"extend": ("extend", "sum"), "past_kv": ("past_kv", "sum")})


def across_lanes(rows: pd.DataFrame, request_order: list[str], same: list[str], agg: dict,
                 drop: tuple[str, ...] = ()) -> pd.DataFrame:
    """Rows in lanes next to one another (in `request_order`) that agree on `same` as one: `rid` the first
    lane, `last` the last, `lanes` how many, `agg` ({column: (column, how)}) over them. Rows that differ in
    any other column not dropped (a shade, a group, a standalone page's run, Compare's side) never join."""
    keys = [c for c in rows.columns if c not in {"rid", *same, *agg, *drop}]
    columns = ["rid", "last", "lanes", *same, *agg, *keys]
    if rows.empty:
        return pd.DataFrame(columns=columns)
    place = {rid: i for i, rid in enumerate(request_order)}
    ordered = rows.assign(place=rows["rid"].map(place)).sort_values([*keys, *same, "place"], kind="stable")
    new = np.diff(ordered["place"].to_numpy()) != 1
    for key in (*keys, *same):
        values = ordered[key].to_numpy()
        new |= values[1:] != values[:-1]
    block = np.cumsum(np.concatenate([[True], new]))
    out = ordered.groupby(block, sort=False).agg(
        rid=("rid", "first"), last=("rid", "last"), lanes=("rid", "size"),
        **{c: (c, "first") for c in (*same, *keys)}, **agg).reset_index(drop=True)
    return out[columns]


def next_token_wait(pauses: pd.DataFrame, cursor_at: float | None = None,
                    end_at: float | None = None) -> alt.Chart:
    """How long each reply has waited for its next token (app.charts.request_frames.pauses_frame): a tall
    ramp is a freeze, small teeth a trickle, a flat line at 0 full speed. One line per request, all in the
    colour of "no token"."""
    top = float(pauses["wait_s"].max()) if len(pauses) else 0.0  # over every run a page switches between
    lines = alt.Chart(pauses).mark_line(strokeWidth=1.3, opacity=0.6, color=GAP_SHADES[2]).encode(
        x=alt.X("at:Q", title="time (s)", scale=x_domain(end_at)),
        y=alt.Y("wait_s:Q", title="no token for (s)",
                scale=alt.Scale(domain=[0, max(top, 1.0)], nice=True)),
        detail="rid:N", order=alt.Order("order:Q"),
        tooltip=[alt.Tooltip("rid:N", title="request"), alt.Tooltip("group:N"),
                 alt.Tooltip("wait_s:Q", title="waited (s)", format=".3f"),
                 alt.Tooltip("at:Q", title="at (s)", format=".3f")])
    return with_cursor(lines, cursor_at, end_at).properties(width=WIDTH, height=180)


def stacked_ramp(stalls: pd.DataFrame) -> tuple[int, float]:
    """(how many replies, how long) of the stall most replies share to the millisecond: their ramps in
    `next_token_wait` lie one on another and read as one line. (0, 0.0) with no stall."""
    if not len(stalls):
        return 0, 0.0
    same = stalls.assign(a=stalls["start_at"].round(3), b=stalls["end_at"].round(3)).groupby(["a", "b"])
    sizes = same["rid"].nunique()
    top = sizes.max()
    longest = max(float(stalls.loc[same.groups[key], "gap_s"].max()) for key in sizes.index[sizes == top])
    return int(top), longest


# -- KV and queue ------------------------------------------------------------------------------------
ZOOM_BELOW = 0.25  # a lane whose use never reaches this share of its pool gets an axis that fits its use


def kv_lanes(kv: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(kv["lane"])) if len(kv) else ["engine"]


def pool_words(part: pd.DataFrame) -> tuple[str, bool]:
    """A lane's pool in words, and whether its axis should zoom to the part in use (use under ZOOM_BELOW)."""
    if part.empty:
        return "", False
    pool = int(part["capacity"].max())
    in_use = part[part["series"] != "free"].groupby("at")["slots"].sum()
    peak = int(in_use.max()) if len(in_use) else 0
    zoom = pool > 1 and peak < ZOOM_BELOW * pool
    words = f"pool {pool:,} tokens; at most {peak:,} in use ({peak / pool:.0%})" if pool > 1 else ""
    return words + ("; the axis shows the part in use" if zoom else ""), zoom


def shared_y_max(kvs: list[pd.DataFrame]) -> dict[str, float]:
    """Per worker, one axis top for charts drawn side by side: the part in use when the worker's pool is
    barely used in every run (`pool_words`), else the pool."""
    out = {}
    for lane in dict.fromkeys(lane for kv in kvs for lane in kv_lanes(kv)):
        parts = [kv[kv["lane"] == lane] for kv in kvs if len(kv)]
        parts = [part for part in parts if not part.empty]
        if not parts:
            continue
        if all(pool_words(part)[1] for part in parts):
            out[lane] = float(max(part[part["series"] != "free"].groupby("at")["slots"].sum().max()
                                  for part in parts)) or 1.0
        else:
            out[lane] = float(max(part["capacity"].max() for part in parts))
    return out


def kv_panel(part: pd.DataFrame, retractions: pd.DataFrame | None = None, cursor_at: float | None = None,
             end_at: float | None = None, zoom: bool = False, height: int = 280,
             y_max: float | None = None) -> alt.Chart:
    """One worker's KV slots: used / reserved-not-yet-used / free, stacked to the pool size; retractions as
    rules. `zoom`: a pool barely used (see `pool_words`) drops the free area, so the axis fits what is
    used. `y_max`: the axis top (charts side by side share it); below the pool, the free area is left out."""
    if y_max is not None:
        zoom = bool(len(part)) and y_max < part["capacity"].max()
    drawn = part[part["series"] != "free"] if zoom and (y_max is not None or pool_words(part)[1]) else part
    scale = alt.Scale(domain=[0, y_max], nice=False) if y_max is not None else alt.Undefined
    area = alt.Chart(drawn).mark_area(interpolate="step-after").encode(
        x=alt.X("at:Q", title="time (s)", scale=x_domain(end_at)),
        y=alt.Y("slots:Q", title="KV slots (tokens)", stack="zero", axis=alt.Axis(labelExpr=COUNT_LABEL),
                scale=scale),
        color=alt.Color("series:N", title="KV cache", legend=alt.Legend(orient="top"),
                        scale=alt.Scale(domain=list(KV_SERIES), range=list(KV_COLOURS))),
        order=alt.Order("order:Q"),
        tooltip=[alt.Tooltip("at:Q", title="time (s)", format=".3f"), alt.Tooltip("series:N"),
                 alt.Tooltip("slots:Q", title="slots", format=","),
                 alt.Tooltip("capacity:Q", title="pool", format=",")],
    ).transform_calculate(order=f"indexof({list(KV_SERIES)}, datum.series)")
    layers = [area]
    if retractions is not None and len(retractions):
        layers.append(alt.Chart(retractions).mark_rule(color=RETRACTED[1], strokeWidth=2).encode(
            x="at:Q", tooltip=[alt.Tooltip("at:Q", title="retraction at (s)", format=".3f"),
                               alt.Tooltip("rids:N", title="retracted"),
                               alt.Tooltip("kv_free_before:Q", title="free slots before", format=","),
                               alt.Tooltip("kv_free_after:Q", title="free slots after", format=",")]))
    cursor = cursor_layer(cursor_at, label=False, end_at=end_at)
    if cursor is not None:
        layers.append(cursor)
    return alt.layer(*layers).properties(width=WIDTH, height=height)


def kv_panels(kv: pd.DataFrame, retractions: pd.DataFrame | None = None, cursor_at: float | None = None,
              end_at: float | None = None, y_max: dict[str, float] | None = None
              ) -> list[tuple[str, alt.Chart, str]]:
    """(worker, its chart, its pool in words) per worker, each a chart of its own (so each fits its column),
    on one time axis; a pool barely used gets an axis that shows its use. Retractions (which name no worker)
    are drawn on the first decode worker's panel: only decode retracts. `y_max`: a worker's axis top, shared
    with the charts beside it (`shared_y_max`)."""
    lanes = kv_lanes(kv)
    retracting = next((lane for lane in lanes if lane.startswith("decode")), lanes[0])
    out = []
    for lane in lanes:
        part = kv[kv["lane"] == lane] if len(kv) else kv
        chart = kv_panel(part, retractions if lane == retracting else None, cursor_at, end_at, zoom=True,
                         height=240, y_max=(y_max or {}).get(lane))
        out.append((lane, chart, pool_words(part)[0]))
    return out


def kv_occupancy(kv: pd.DataFrame, retractions: pd.DataFrame | None = None, cursor_at: float | None = None,
                 end_at: float | None = None) -> alt.Chart:
    """One engine's KV slots (a single panel); for several workers see `kv_panels`."""
    if len(kv_lanes(kv)) == 1:
        return kv_panel(kv, retractions, cursor_at, end_at)
    return alt.vconcat(*(chart for _, chart, _ in kv_panels(kv, retractions, cursor_at, end_at)))


def step_changes(frame: pd.DataFrame, value: str, by: tuple[str, ...] = ("lane", "series")) -> pd.DataFrame:
    """The rows of a step line (interpolate "step-after") that draw it: each line's first point, every point
    where its value changes and its last point. A point that repeats the value before it adds nothing to
    the picture, only marks for the browser to draw (a queue sits still for most passes)."""
    if len(frame) < 3:
        return frame
    groups = frame.groupby(list(by), sort=False)[value]
    last = groups.cumcount(ascending=False) == 0
    return frame[(groups.shift(1) != frame[value]) | last]


def queue_depth(queue: pd.DataFrame, cursor_at: float | None = None,
                end_at: float | None = None) -> alt.Chart:
    lanes = list(dict.fromkeys(queue["lane"])) if len(queue) else ["engine"]
    queue = step_changes(queue, "requests")
    dash = alt.StrokeDash("lane:N", title="worker",
                          legend=None if len(lanes) == 1 else alt.Legend(orient="top"))
    lines = alt.Chart(queue).mark_line(interpolate="step-after").encode(
        x=alt.X("at:Q", title="time (s)", scale=x_domain(end_at)),
        y=alt.Y("requests:Q", title="requests"),
        color=alt.Color("series:N", title="queue",
                        scale=alt.Scale(domain=list(QUEUE_SERIES), range=list(QUEUE_COLOURS)),
                        legend=alt.Legend(orient="top")),
        strokeDash=dash,
        tooltip=[alt.Tooltip("at:Q", title="time (s)", format=".3f"), alt.Tooltip("series:N"),
                 alt.Tooltip("requests:Q"), alt.Tooltip("lane:N", title="worker")],
    )
    return with_cursor(lines, cursor_at, end_at).properties(width=WIDTH, height=230)
