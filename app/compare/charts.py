"""Compare's chart builders: a sweep's metrics per setting, and the trade-off curve. No `st.*` calls here."""

from __future__ import annotations

import altair as alt
import pandas as pd

from app.charts.scales import CURSOR_COLOUR, SERIES_COLOURS, WIDTH

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
    `defaults` (x_s, y_s, label): SGLang's defaults on the same requests, drawn apart for contrast."""
    base = alt.Chart(curve).encode(
        # from 0 on both axes (a 1 s change looks its size); padding: room inside the axes for a label left of
        # the first point (it must not meet a tick label); the ticks it adds below zero go unlabelled
        x=alt.X("x_s:Q", title=x_title, scale=alt.Scale(zero=True, padding=40),
                axis=alt.Axis(labelExpr="datum.value < 0 ? '' : datum.label")),
        y=alt.Y("y_s:Q", title=y_title, scale=alt.Scale(zero=True)),
        tooltip=[alt.Tooltip("label:N", title="setting"), alt.Tooltip("x_s:Q", title=x_title, format=".3f"),
                 alt.Tooltip("y_s:Q", title=y_title, format=".3f")])
    line = base.mark_line(color="#888888").encode(order="order:Q")
    points = base.mark_point(filled=True, size=70, color=SERIES_COLOURS[0])
    current = base.transform_filter("datum.is_current").mark_point(size=380, color=CURSOR_COLOUR,
                                                                   strokeWidth=2.5)
    labels = alt.layer(_labels(base, "!datum.is_current"), _labels(base, "datum.is_current", "bold"))
    layers = [line, points, labels, current]
    if defaults is not None and len(defaults):
        mark = alt.Chart(defaults).encode(x="x_s:Q", y="y_s:Q", tooltip=[
            alt.Tooltip("label:N", title="setting"), alt.Tooltip("x_s:Q", title=x_title, format=".3f"),
            alt.Tooltip("y_s:Q", title=y_title, format=".3f")])
        layers += [mark.mark_point(shape="diamond", filled=True, size=160, color=SERIES_COLOURS[1]),
                   mark.mark_text(align="right", dx=-10, dy=-8, fontWeight="bold",
                                  color=SERIES_COLOURS[1]).encode(text="label:N")]
    return alt.layer(*layers).properties(width=WIDTH, height=320)


def _labels(base: alt.Chart, which: str, weight: str = "normal") -> alt.LayerChart:
    """Each point's setting (the current one reads "… · current"); neighbours' labels on opposite sides
    (above right, below left), so close points keep theirs apart."""
    chosen = base.transform_filter(which).transform_calculate(
        shown="datum.is_current ? datum.label + ' · current' : datum.label")
    even, odd = (chosen.transform_filter(f"datum.order % 2 == {parity}") for parity in (0, 1))
    return alt.layer(even.mark_text(align="left", dx=7, dy=-7, fontWeight=weight),
                     odd.mark_text(align="right", dx=-7, dy=9, fontWeight=weight)).encode(text="shown:N")
