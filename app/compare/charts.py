"""Compare's chart builders: A's and B's runs in one chart each for the passes and the token streams, a
sweep's metrics per setting, and the trade-off curve. No `st.*` calls here."""

from __future__ import annotations

import altair as alt
import pandas as pd

from app.charts import timelines
from app.charts.frames import RunFrames
from app.charts.labels import MIN_PLOT_PX, place_labels
from app.charts.request_frames import shaded_alike, shared_threshold
from app.charts.scales import CURSOR_COLOUR, SERIES_COLOURS, WIDTH
from app.charts.views import TOKENS_TITLE, View, tokens_caption

SIDE_NAMES = ("A", "B")


# -- A and B in one chart ----------------------------------------------------------------------------
def pair_views(ra: RunFrames, rb: RunFrames, words: tuple[str, str]) -> list[View]:
    """A's and B's pass timelines as one chart, and their token streams as one: A's lanes above B's on one
    time axis, so a freeze and a trickle at the same moment sit one above the other. `words`: each side's
    flags in words (pair.side_words)."""
    sides = "; ".join(f"{name}: {said}" for name, said in zip(SIDE_NAMES, words, strict=True))
    threshold = shared_threshold(pair_thresholds(ra, rb))
    return [
        View("passes", "Pass timeline, A and B: what the GPU ran",
             f"One lane per GPU worker and side ({sides}). One bar per forward pass (runs of identical "
             "decode passes merged), width = how long it took. Orange: a prefill chunk; blue: decode; "
             "green: a mixed pass.",
             lambda: timelines.pass_timeline(_joined(ra, rb, "passes", "lane"), None, pair_end(ra, rb))),
        View("tokens", TOKENS_TITLE.replace("Token streams", "Token streams, A above B"),
             f"{sides}. Same requests and seed on both sides. "
             + tokens_caption(threshold, pair_chunk_pass(ra, rb)),
             lambda: pair_tokens(ra, rb)),
    ]


def pair_tokens(ra: RunFrames, rb: RunFrames) -> alt.Chart:
    """A's request lanes, then B's, in one token-streams chart. A stall is shaded on the bands of the lower
    of the two runs' thresholds, so one shade means one length on both sides."""
    stalls, threshold = shaded_alike(_joined(ra, rb, "stalls", "rid"), pair_thresholds(ra, rb))
    order = [lane for name, run in zip(SIDE_NAMES, (ra, rb), strict=True)
             for lane in side_lanes(name, run.request_order)]
    firsts = {side_lanes(name, run.request_order[:1])[0]: name
              for name, run in zip(SIDE_NAMES, (ra, rb), strict=True) if run.request_order}
    return timelines.token_streams(
        _joined(ra, rb, "tokens", "rid"), stalls, _joined(ra, rb, "chunks", "rid"),
        _joined(ra, rb, "waits", "rid"), order, None, pair_end(ra, rb), threshold, pair_chunk_pass(ra, rb),
        sides=firsts)


def side_lanes(name: str, lanes) -> list[str]:
    return [f"{name} · {lane}" for lane in lanes]


def _joined(ra: RunFrames, rb: RunFrames, frame: str, lane: str) -> pd.DataFrame:
    """One of the runs' frames, A's rows then B's, each lane named after its side and each row tagged with it
    (`side`: marks joined across lanes never cross from A to B, timelines.across_lanes)."""
    parts = [getattr(run, frame) for run in (ra, rb)]
    return pd.concat([part.assign(**{lane: side_lanes(name, part[lane]), "side": name})
                      for name, part in zip(SIDE_NAMES, parts, strict=True)], ignore_index=True)


def pair_thresholds(ra: RunFrames, rb: RunFrames) -> list[float]:
    """Each run's stall threshold; a chart of both shades on the lower (request_frames.shaded_alike)."""
    return [ra.stall_threshold_s, rb.stall_threshold_s]


def pair_end(ra: RunFrames, rb: RunFrames) -> float:
    return max(ra.end_at, rb.end_at)


def pair_chunk_pass(ra: RunFrames, rb: RunFrames) -> tuple[float, float] | None:
    """The shortest and longest full chunk pass of either run (None: neither ran a full chunk)."""
    ranges = [r.chunk_pass_s for r in (ra, rb) if r.chunk_pass_s is not None]
    return (min(lo for lo, _ in ranges), max(hi for _, hi in ranges)) if ranges else None


# -- a sweep -----------------------------------------------------------------------------------------

SECONDS_LABEL = ("datum.value < 1 ? format(datum.value * 1000, '~g') + ' ms' : "
                 "format(datum.value, '~g') + ' s'")  # a log axis of waits: 200 ms, 2 s, 20 s (never 0)


ROUND = (1, 2, 5)  # round ticks: 100 ms, 200 ms, 500 ms, 1 s, 2 s, 5 s ...


def round_ticks(lo: float, hi: float, most: int = 6) -> list[float]:
    """Round values (1, 2 or 5 times a power of ten) from the one at or below `lo` to the one at or above
    `hi`; only the powers of ten (and their neighbours at the ends) where that would be more than `most`."""
    if not (lo > 0 and hi >= lo):
        return []
    steps = [m * 10.0 ** e for e in range(-6, 7) for m in ROUND]
    below = max((v for v in steps if v <= lo * (1 + 1e-9)), default=steps[0])
    above = min((v for v in steps if v >= hi * (1 - 1e-9)), default=steps[-1])
    ticks = [v for v in steps if below <= v <= above]
    if len(ticks) > most:
        ticks = [v for v in ticks if v in (below, above) or f"{v:.0e}".startswith("1")]
    return [float(f"{v:.6g}") for v in ticks]


def sweep_lines(sweep: pd.DataFrame, x_title: str, current: float | None = None,
                log_x: bool = True) -> alt.Chart:
    """A metric per setting (long form: setting, metric, seconds); the current setting as a rule. The
    seconds axis is logarithmic with round ticks (200 ms, 1 s, 10 s: never 70 s, 8 s, 900 ms) and ends on
    one."""
    ticks = round_ticks(float(sweep["seconds"].min()), float(sweep["seconds"].max())) if len(sweep) else []
    x = alt.X("setting:Q", title=x_title,
              scale=alt.Scale(type="log", base=2) if log_x else alt.Scale(zero=False),
              axis=alt.Axis(values=sorted(sweep["setting"].unique().tolist()) if len(sweep) else None,
                            labelExpr="format(datum.value, ',')"))
    base = alt.Chart(sweep).encode(
        x=x, y=alt.Y("seconds:Q", title="seconds (log scale)",
                     scale=alt.Scale(type="log", domain=[ticks[0], ticks[-1]], nice=False) if ticks
                     else alt.Scale(type="log"),
                     axis=alt.Axis(labelExpr=SECONDS_LABEL, values=ticks or None, grid=True)),
        color=alt.Color("metric:N", title="", scale=alt.Scale(range=list(SERIES_COLOURS)),
                        legend=alt.Legend(orient="top", columns=1)),  # one per line: never cut at 1280 px
        tooltip=[alt.Tooltip("setting:Q", title=x_title, format=","), alt.Tooltip("metric:N"),
                 alt.Tooltip("seconds:Q", format=".3f")])
    layers = [base.mark_line(point=True)]
    if current is not None:
        mark = pd.DataFrame({"setting": [current], "label": ["current setting"]})
        layers.append(alt.Chart(mark).mark_rule(color=CURSOR_COLOUR, strokeDash=[6, 3]).encode(x="setting:Q"))
        late = len(sweep) and current > sweep["setting"].median()  # its label reads leftwards, never cut off
        layers.append(alt.Chart(mark).mark_text(align="right" if late else "left", dx=-4 if late else 4, dy=4,
                                                baseline="top").encode(
            x="setting:Q", y=alt.value(0), text="label:N"))
    # the page fits the whole chart, legend and axes included, into the height: its three legend lines and
    # the axis titles take ~150 px of it, so the plot keeps ~240 px for its round ticks
    return alt.layer(*layers).properties(width=WIDTH, height=390)


def tradeoff_curve(curve: pd.DataFrame, x_title: str, y_title: str,
                   defaults: pd.DataFrame | None = None) -> alt.Chart:
    """Each setting is a point (x: what the streams feel, y: what the long prompt feels), joined in order.
    `defaults` (x_s, y_s, label): SGLang's defaults on the same requests, drawn apart for contrast. Each axis
    starts at 0 (a 1 s change looks its size) unless its values sit in a narrow band high above 0, where it
    starts at a round number its title names (`axis_range`); labels are placed where they meet nothing
    (app/charts/labels), the current setting's and the defaults' first; a setting whose label finds no room
    keeps its tooltip."""
    defaults = defaults if defaults is not None else pd.DataFrame(columns=["x_s", "y_s", "label"])
    ranges = (axis_range(curve["x_s"], defaults["x_s"]), axis_range(curve["y_s"], defaults["y_s"]))
    titles = [title if lo == 0 else [title, f"(the axis starts at {_seconds(lo)}, not 0)"]
              for title, (lo, _) in zip((x_title, y_title), ranges, strict=True)]
    tooltip = [alt.Tooltip("label:N", title="setting"), alt.Tooltip("x_s:Q", title=x_title, format=".3f"),
               alt.Tooltip("y_s:Q", title=y_title, format=".3f")]
    base = alt.Chart(curve).encode(
        x=alt.X("x_s:Q", title=titles[0], scale=alt.Scale(zero=ranges[0][0] == 0, domain=list(ranges[0]),
                                                              nice=False)),
        y=alt.Y("y_s:Q", title=titles[1], scale=alt.Scale(zero=ranges[1][0] == 0, domain=list(ranges[1]),
                                                              nice=False)),
        tooltip=tooltip)
    line = base.mark_line(color="#888888").encode(order="order:Q")
    points = base.mark_point(filled=True, size=70, color=SERIES_COLOURS[0])
    current = base.transform_filter("datum.is_current").mark_point(size=380, color=CURSOR_COLOUR,
                                                                   strokeWidth=2.5)
    layers = [line, points, current]
    if len(defaults):
        layers.append(alt.Chart(defaults).mark_point(shape="diamond", filled=True, size=160,
                                                     color=SERIES_COLOURS[1]).encode(
            x="x_s:Q", y="y_s:Q", tooltip=tooltip))
    labels = _point_labels(curve, defaults, ranges)
    for (place, weight, colour), rows in labels.groupby(["place", "weight", "colour"], sort=False):
        layers.append(alt.Chart(rows[["x_s", "y_s", "text"]]).mark_text(
            dx=place.dx, dy=place.dy, align=place.align, baseline=place.baseline, fontWeight=weight,
            color=colour, lineBreak="\n").encode(x="x_s:Q", y="y_s:Q", text="text:N"))
    return alt.layer(*layers).properties(width=WIDTH, height=MIN_PLOT_PX[1])


SQUEEZED = 0.25  # values spread over less than this share of their largest: the axis need not start at 0


def axis_range(*columns: pd.Series) -> tuple[float, float]:
    """An axis's (start, end): from 0 to a little past the largest value, so a 1 s change looks its size;
    where every value sits high above 0 in a narrow band (12.6–13.6 s), from a round number below the
    smallest, so the differences can be seen (the axis title then says where it starts)."""
    values = [float(v) for c in columns for v in c.dropna()]
    top = max(values, default=1.0)
    end = top * 1.1 if top > 0 else 1.0
    low = min(values, default=0.0)
    if top <= 0 or top - low >= SQUEEZED * top:
        return 0.0, end
    spread = top - low or top * 0.05
    step = min((m * 10.0 ** e for e in range(-6, 7) for m in ROUND if m * 10.0 ** e >= spread / 4),
               default=1.0)
    start = max(0.0, (low - spread * 0.2) // step * step)
    return start, top + spread * 0.2


def _seconds(value: float) -> str:
    return f"{value * 1000:g} ms" if value < 1 else f"{value:g} s"


POINT_RADIUS_PX = {"point": 5, "current": 12, "defaults": 8}  # sizes 70, 380 (+ stroke) and 160 above


def _point_labels(curve: pd.DataFrame, defaults: pd.DataFrame, ranges) -> pd.DataFrame:
    """Every label that has room: (x_s, y_s, text, place, weight, colour). The current setting and the
    defaults choose first, then the curve's two ends, then the settings between, in order."""
    rows = [(r.x_s, r.y_s, POINT_RADIUS_PX["current" if r.is_current else "point"],
             f"{r.label} · current" if r.is_current else r.label, "bold" if r.is_current else "normal",
             CURSOR_COLOUR) for r in curve.itertuples()]
    rows += [(r.x_s, r.y_s, POINT_RADIUS_PX["defaults"], _lines(r.label), "bold", SERIES_COLOURS[1])
             for r in defaults.itertuples()]
    ends = {0, len(curve) - 1}
    order = sorted(range(len(rows)), key=lambda i: (
        0 if rows[i][4] == "bold" else 1 if i in ends else 2, i))
    (x0, x1), (y0, y1) = ranges  # place_labels reads each axis from 0
    placed = place_labels([(x - x0, y - y0, r) for x, y, r, *_ in rows],
                          [(i, rows[i][3], rows[i][4]) for i in order], (x1 - x0, y1 - y0))
    return pd.DataFrame([{"x_s": rows[i][0], "y_s": rows[i][1], "text": rows[i][3], "place": place,
                          "weight": rows[i][4], "colour": rows[i][5]} for i, place in placed.items()],
                        columns=["x_s", "y_s", "text", "place", "weight", "colour"])


def _lines(label: str) -> str:
    """'SGLang defaults: pause 12.6 s, first token 12.6 s' on three short lines, to fit beside a cluster."""
    return label.replace(": ", ":\n", 1).replace(", ", "\n")
