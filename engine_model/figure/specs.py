"""Vega-Lite specs as plain dicts: the standalone figure (every precomputed run, switched by parameters bound
to radio buttons) and the single charts a slide shows. No Altair: the engine builds them for the CLI too.

The data of every run rides inline as CSV (a few times smaller than JSON rows), each row tagged with its
setting `s` ("1|2|0": the index on each axis); the views keep the rows whose `s` the parameters spell.
"""

from __future__ import annotations

import csv
import io

from engine_model.figure.grid import Axis, Cell
from engine_model.figure.rows import (
    KIND_NAMES,
    PARTS,
    fmt_value,
    headline_label,
    headline_value,
    pass_rows,
    stall_threshold,
    stream_rows,
)
from engine_model.stories import Story

SCHEMA = "https://vega.github.io/schema/vega-lite/v6.json"  # a name only: nothing is fetched
WIDTH = 760
PHASE_COLOURS = ("#D55E00", "#0072B2", "#009E73", "#BBBBBB")  # Okabe-Ito, as the app's phase scale
PART_COLOURS = ("#A0A0A0", "#333333", "#CC79A7", "#D55E00", "#009E73")  # in PARTS order
KIND_CODES = {"prefill chunk": "p", "decode": "d", "mixed": "m", "idle": "i"}
TIME_AXIS = {"title": "time (s)", "grid": False, "tickCount": 12, "labelOverlap": True}


def csv_text(header: list[str], rows) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buf.getvalue()


def inline(header: list[str], rows, **parse) -> dict:
    return {"values": csv_text(header, rows), "format": {"type": "csv", "parse": parse}}


def t(value: float) -> float:
    return round(value, 3)


def lookup(mapping: dict, field: str) -> str:
    """A Vega expression mapping a code in `field` to its words."""
    return "{" + ", ".join(f"'{k}': '{v}'" for k, v in mapping.items()) + "}[datum." + field + "]"


# -- the views ---------------------------------------------------------------------------------------
def streams_view(data: dict, lanes: list[str], title: str, transform: list | None = None) -> dict:
    """One lane per request: waiting (grey), tokens arriving (dark), stalls (purple), its prompt's chunks."""
    step = max(2, min(10, 440 // max(len(lanes), 1)))
    labels = len(lanes) <= 60
    names = "[" + ", ".join(f"'{name}'" for name in lanes) + "]"
    y_axis = {"title": "request" if labels else f"{len(lanes)} requests, one lane each", "labels": labels,
              "ticks": labels, "labelExpr": f"{names}[datum.value]"}
    return {
        "title": {"text": title, "anchor": "start"},
        "data": data,
        "transform": [*(transform or []), {"calculate": lookup(PARTS, "p"), "as": "state"},
                      {"calculate": "datum.e - datum.b", "as": "seconds"}],
        "layer": [{"transform": [{"filter": "datum.p != 't'"}], "mark": {"type": "bar"}},
                  {"transform": [{"filter": "datum.p == 't'"}],  # tokens arriving: a thinner bar
                   "mark": {"type": "bar", "height": {"band": 0.4}}}],
        "encoding": {
            "x": {"field": "b", "type": "quantitative", "axis": TIME_AXIS, "scale": {"nice": False}},
            "x2": {"field": "e"},
            "y": {"field": "o", "type": "ordinal", "axis": y_axis,
                  "scale": {"domain": list(range(len(lanes)))}},
            "color": {"field": "state", "type": "nominal", "title": None,
                      "scale": {"domain": list(PARTS.values()), "range": list(PART_COLOURS)},
                      "legend": {"orient": "top"}},
            "tooltip": [{"field": "state", "title": "what"},
                        {"field": "b", "title": "from (s)", "format": ".3f"},
                        {"field": "seconds", "title": "for (s)", "format": ".3f"}],
        },
        "width": WIDTH, "height": {"step": step},
    }


def passes_view(data: dict, title: str, transform: list | None = None) -> dict:
    """The GPU's forward passes: one bar each (back-to-back decode passes as one)."""
    names = {code: kind for kind, code in KIND_CODES.items()}
    return {
        "title": {"text": title, "anchor": "start"},
        "data": data,
        "transform": [*(transform or []), {"calculate": lookup(names, "k"), "as": "pass"}],
        "mark": {"type": "bar"},
        "encoding": {
            "x": {"field": "b", "type": "quantitative", "axis": TIME_AXIS, "scale": {"nice": False}},
            "x2": {"field": "e"},
            "color": {"field": "pass", "type": "nominal", "title": "forward pass",
                      "scale": {"domain": list(KIND_NAMES.values()), "range": list(PHASE_COLOURS)},
                      "legend": {"orient": "top"}},
            "tooltip": [{"field": "pass"}, {"field": "b", "title": "start (s)", "format": ".3f"}],
        },
        "width": WIDTH, "height": 40,
    }


def headline_view(data: dict, transform: list, num: int) -> dict:
    """The story's headline numbers for the chosen setting beside SGLang's defaults, as a small table."""
    def column(field: str, x: int, **mark) -> dict:
        return {"mark": {"type": "text", "align": "left", "baseline": "middle", "fontSize": 14, **mark},
                "encoding": {"text": {"field": field}, "x": {"value": x},
                             "y": {"field": "i", "type": "ordinal", "axis": None}}}

    header = {"data": {"values": [{"a": "SGLang defaults", "b": "this setting"}]},
              "layer": [{"mark": {"type": "text", "align": "left", "fontWeight": "bold", "color": "#555555"},
                         "encoding": {"text": {"field": f}, "x": {"value": x}, "y": {"value": -14}}}
                        for f, x in (("a", 430), ("b", 590))]}
    return {
        "layer": [
            {"data": data, "transform": transform,
             "layer": [column("label", 0), column("before", 430, color="#555555"),
                       column("now", 590, fontWeight="bold", fontSize=16)]},
            header,
        ],
        "width": WIDTH, "height": 28 * num,
    }


# -- the figure --------------------------------------------------------------------------------------
def figure_spec(story: Story, axes: tuple[Axis, ...], cells: list[Cell], initial: tuple[int, ...]) -> dict:
    """Every cell's headline, token streams and passes in one spec; radio buttons pick the cell."""
    chosen = {"filter": "datum.s == '' + " + " + '|' + ".join(a.control.key for a in axes)}
    first = cells[0].result
    lanes = [r.rid for r in first.requests]
    streams, passes, heads = [], [], []
    for cell in cells:
        threshold = stall_threshold(cell.result)
        streams += [(cell.key, o, p, t(b), t(e)) for o, p, b, e in stream_rows(cell.result, threshold)]
        passes += [(cell.key, KIND_CODES[k], t(b), t(e)) for k, b, e in pass_rows(cell.result)]
        metrics, base = cell.summary.metrics, cell.baseline.metrics
        heads += [(cell.key, i, headline_label(metrics, h), fmt_value(headline_value(base, h), h.unit),
                   fmt_value(headline_value(metrics, h), h.unit)) for i, h in enumerate(story.headlines)]
    return {
        "$schema": SCHEMA,
        "params": [_param(axis, initial[i]) for i, axis in enumerate(axes)],
        "vconcat": [
            headline_view(inline(["s", "i", "label", "before", "now"], heads, s="string", i="number"),
                          [chosen], len(story.headlines)),
            {"vconcat": [
                streams_view(inline(["s", "o", "p", "b", "e"], streams, s="string", o="number", b="number",
                                    e="number"), lanes, "Token streams: who got a token, and when", [chosen]),
                passes_view(inline(["s", "k", "b", "e"], passes, s="string", b="number", e="number"),
                            "Pass timeline: what the GPU ran", [chosen]),
            ], "resolve": {"scale": {"x": "shared", "color": "independent"}}},
        ],
        "resolve": {"scale": {"color": "independent"}},
        "config": {"view": {"stroke": None}, "font": "sans-serif", "axisY": {"labelFontSize": 9}},
    }


def _param(axis: Axis, initial: int) -> dict:
    return {"name": axis.control.key, "value": initial,
            "bind": {"input": "radio", "options": list(range(len(axis.values))),
                     "labels": [axis.label(v) for v in axis.values], "name": f"{axis.control.label}: "}}


def series_view(data: dict, title: str, y_title: str, colours: dict, rules: list[float] = ()) -> dict:
    """A step line per series over time (KV slots, queue depth); `rules`: retraction times as purple rules."""
    lines = {"mark": {"type": "line", "interpolate": "step-after", "strokeWidth": 2},
             "encoding": {
                 "x": {"field": "at", "type": "quantitative", "axis": TIME_AXIS, "scale": {"nice": False}},
                 "y": {"field": "v", "type": "quantitative", "title": y_title},
                 "color": {"field": "series", "type": "nominal", "title": None, "legend": {"orient": "top"},
                           "scale": {"domain": list(colours), "range": list(colours.values())}}}}
    layers = [{"data": data, **lines}]
    if rules:
        layers.append({"data": {"values": [{"at": t(r)} for r in rules]},
                       "mark": {"type": "rule", "color": PART_COLOURS[2], "strokeWidth": 1.5},
                       "encoding": {"x": {"field": "at", "type": "quantitative"}}})
    return {"title": {"text": title, "anchor": "start"}, "layer": layers, "width": WIDTH, "height": 300}
