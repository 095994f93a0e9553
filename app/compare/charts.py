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


def sweep_lines(sweep: pd.DataFrame, x_title: str, current: float | None = None,
                log_x: bool = True) -> alt.Chart:
    """A metric per setting (long form: setting, metric, seconds); the current setting as a rule."""
    x = alt.X("setting:Q", title=x_title,
              scale=alt.Scale(type="log", base=2) if log_x else alt.Scale(zero=False),
              axis=alt.Axis(values=sorted(sweep["setting"].unique().tolist()) if len(sweep) else None,
                            labelExpr="format(datum.value, ',')"))
    base = alt.Chart(sweep).encode(
        x=x, y=alt.Y("seconds:Q", title="seconds (log scale)", scale=alt.Scale(type="log"),
                     axis=alt.Axis(labelExpr=SECONDS_LABEL)),
        color=alt.Color("metric:N", title="", scale=alt.Scale(range=list(SERIES_COLOURS)),
                        legend=alt.Legend(orient="top")),  # columns: app.present.shown.room_spec
        tooltip=[alt.Tooltip("setting:Q", title=x_title, format=","), alt.Tooltip("metric:N"),
                 alt.Tooltip("seconds:Q", format=".3f")])
    layers = [base.mark_line(point=True)]
    if current is not None:
        mark = pd.DataFrame({"setting": [current], "label": ["current setting"]})
        layers.append(alt.Chart(mark).mark_rule(color=CURSOR_COLOUR, strokeDash=[6, 3]).encode(x="setting:Q"))
        layers.append(alt.Chart(mark).mark_text(align="left", dx=4, dy=4, baseline="top").encode(
            x="setting:Q", y=alt.value(0), text="label:N"))
    return alt.layer(*layers).properties(width=WIDTH, height=260)


def tradeoff_curve(curve: pd.DataFrame, x_title: str, y_title: str,
                   defaults: pd.DataFrame | None = None) -> alt.Chart:
    """Each setting is a point (x: what the streams feel, y: what the long prompt feels), joined in order.
    `defaults` (x_s, y_s, label): SGLang's defaults on the same requests, drawn apart for contrast. Both axes
    start at 0 (a 1 s change looks its size); labels are placed where they meet nothing (app/charts/labels),
    the current setting's and the defaults' first; a setting whose label finds no room keeps its tooltip."""
    defaults = defaults if defaults is not None else pd.DataFrame(columns=["x_s", "y_s", "label"])
    domain = (_edge(curve["x_s"], defaults["x_s"]), _edge(curve["y_s"], defaults["y_s"]))
    tooltip = [alt.Tooltip("label:N", title="setting"), alt.Tooltip("x_s:Q", title=x_title, format=".3f"),
               alt.Tooltip("y_s:Q", title=y_title, format=".3f")]
    base = alt.Chart(curve).encode(
        x=alt.X("x_s:Q", title=x_title, scale=alt.Scale(zero=True, domain=[0, domain[0]], nice=False)),
        y=alt.Y("y_s:Q", title=y_title, scale=alt.Scale(zero=True, domain=[0, domain[1]], nice=False)),
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
    labels = _point_labels(curve, defaults, domain)
    for (place, weight, colour), rows in labels.groupby(["place", "weight", "colour"], sort=False):
        layers.append(alt.Chart(rows[["x_s", "y_s", "text"]]).mark_text(
            dx=place.dx, dy=place.dy, align=place.align, baseline=place.baseline, fontWeight=weight,
            color=colour, lineBreak="\n").encode(x="x_s:Q", y="y_s:Q", text="text:N"))
    return alt.layer(*layers).properties(width=WIDTH, height=MIN_PLOT_PX[1])


def _edge(*columns: pd.Series) -> float:
    """An axis's end: a little past its largest value, so no point sits on the frame."""
    top = max((float(c.max()) for c in columns if len(c)), default=1.0)
    return top * 1.1 if top > 0 else 1.0


POINT_RADIUS_PX = {"point": 5, "current": 12, "defaults": 8}  # sizes 70, 380 (+ stroke) and 160 above


def _point_labels(curve: pd.DataFrame, defaults: pd.DataFrame, domain) -> pd.DataFrame:
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
    placed = place_labels([(x, y, r) for x, y, r, *_ in rows], [(i, rows[i][3], rows[i][4]) for i in order],
                          domain)
    return pd.DataFrame([{"x_s": rows[i][0], "y_s": rows[i][1], "text": rows[i][3], "place": place,
                          "weight": rows[i][4], "colour": rows[i][5]} for i, place in placed.items()],
                        columns=["x_s", "y_s", "text", "place", "weight", "colour"])


def _lines(label: str) -> str:
    """'SGLang defaults: pause 12.6 s, first token 12.6 s' on three short lines, to fit beside a cluster."""
    return label.replace(": ", ":\n", 1).replace(", ", "\n")
