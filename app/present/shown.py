"""A spec as a browser draws it, on the page and in the standalone figure alike: legends that wrap to the
chart's width and never cut an entry, and in presenter mode every text larger. Pure functions."""

from __future__ import annotations

LEGEND_COLUMN_PX = 170  # a legend entry's room: symbol and the longest label ("waiting for decode KV")
AXIS_PX = 80  # the y axis to the legend's left
PRESENTER_FONT = 1.45  # chart text grows with presenter mode's type
PRESENTER_LANE = 0.68  # ...and lanes shrink, so the token streams fit one 1080p screen under the cards


def room_spec(spec: dict, presenting: bool = False) -> dict:
    """The spec as sent to the browser: legends never cut an entry (labels unlimited, as many columns as the
    chart's width holds) and, in presenter mode, every text larger. A shallow copy; `spec` is unchanged.
    Streamlit draws it as SVG, or on a canvas past 2,000 rows (forcing SVG there made first views about a
    third slower here)."""
    scale = PRESENTER_FONT if presenting else 1.0
    columns = f"max(1, floor(((containerSize()[0] || 900) - {AXIS_PX}) / {LEGEND_COLUMN_PX * scale:.0f}))"
    legend = {"labelLimit": 0, "titleLimit": 0, "columns": {"expr": columns}}
    config = dict(spec.get("config", {}))
    config["legend"] = {**config.get("legend", {}), **legend}
    config["axis"] = {**config.get("axis", {}), "labelLimit": 0, "titleLimit": 0}
    out = {**spec, "config": config}
    if presenting:
        out = _larger_text(out, scale)
        if isinstance(out.get("height"), dict) and "step" in out["height"]:  # lanes: a discrete y axis
            step = out["height"]["step"]  # a chart of hundreds of thin lanes keeps them thin: one screen
            out["height"] = {"step": max(min(6, step), round(step * PRESENTER_LANE))}
        elif isinstance(out.get("height"), int | float):  # the chart's height includes its larger axis text
            out["height"] = round(out["height"] * scale)
    return out


FONT_KEYS = ("fontSize", "labelFontSize", "titleFontSize")
DEFAULT_FONTS = {  # Streamlit's chart theme, in px
    "axis": {"labelFontSize": 12, "titleFontSize": 14}, "legend": {"labelFontSize": 12, "titleFontSize": 14},
    "title": {"fontSize": 16}, "text": {"fontSize": 11}}


def _larger_text(spec: dict, scale: float) -> dict:
    """Every font size in the spec (config defaults and sizes set on an axis, a legend or a text mark) times
    `scale`. Data is not walked: only the chart's structure."""
    config = dict(spec["config"])
    for part, sizes in DEFAULT_FONTS.items():
        config[part] = {**config.get(part, {}), **{k: round(v * scale, 1) for k, v in sizes.items()}}
    return {**_scaled_fonts({k: v for k, v in spec.items() if k not in ("datasets", "config")}, scale),
            "config": config, **({"datasets": spec["datasets"]} if "datasets" in spec else {})}


def _scaled_fonts(node, scale: float):
    if isinstance(node, dict):
        return {k: (round(v * scale, 1) if k in FONT_KEYS and isinstance(v, int | float) else
                    node[k] if k in ("values", "data") else _scaled_fonts(v, scale)) for k, v in node.items()}
    if isinstance(node, list):
        return [_scaled_fonts(v, scale) for v in node]
    return node
