"""A slide's layout, apart from what it says: the presets (a screen's 1920×1080 px, print's 6 in × 3.375 in
with no text under 7 pt), the text views, the app's chart fitted to the room they leave (lanes sharing the
height, lane labels sized to their lane, type and guides at the preset's sizes), and `fit`, which draws a
slide's spec and corrects it until it is exactly its preset's size.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field

import vl_convert as vlc

from app.present.shown import room_spec


@dataclass(frozen=True)
class Preset:
    """A slide's size and type. The screen: 1920×1080 px. Print: 6 in wide at 16:9, in points (a PDF's and an
    SVG's unit), every text at least MIN_PT."""

    name: str
    size: tuple[int, int]
    pad: int
    text: dict[str, float]  # title, numbers, caption, settings
    chart: float  # the chart's axis and legend text
    chart_title: float
    y_axis: int  # room left of the plot for the y axis's labels and title
    chrome: int  # room a chart needs around its plot: its title, legend and time axis
    spacing: int
    png_scale: float  # a PNG's pixels per unit: 2× for a deck; 300 dpi in print
    caption: bool = True  # the narration on the slide (print: in the notes, for the book to set as caption)
    guides: dict = field(default_factory=dict)  # axis, legend, title spacing where Vega's (px) are too big


SCREEN = Preset("screen", (1920, 1080), pad=48,
                text={"title": 52, "numbers": 30, "caption": 30, "settings": 21}, chart=17, chart_title=22,
                y_axis=140, chrome=150, spacing=18, png_scale=2)
PRINT = Preset("print", (432, 243), pad=12, text={"title": 11, "numbers": 8, "caption": 8, "settings": 7},
               chart=7, chart_title=8, y_axis=34, chrome=46, spacing=4, png_scale=300 / 72, caption=False,
               guides={"axis": {"tickSize": 3, "labelPadding": 2, "titlePadding": 3},
                       "legend": {"symbolSize": 30, "columnPadding": 6, "rowPadding": 1, "titlePadding": 2,
                                  "labelOffset": 2, "offset": 6, "columns": 8},
                       "title": {"offset": 4, "subtitlePadding": 2}})
PRESETS = {p.name: p for p in (SCREEN, PRINT)}
SIZE = SCREEN.size
MIN_PT = 7  # the smallest text a print slide (or a lane label on screen) may carry
LINE = 1.3  # line height, in font sizes
CHARS_PER_EM = 1.95  # a line of text holds about this many characters per font size of width (sans-serif)


def chart_config(config: dict, preset: Preset) -> dict:
    """The chart's config as a browser draws it (legends never cut an entry), its text at the preset's
    sizes and its guides' spacing the preset's."""
    config = room_spec({"config": config})["config"]
    fonts = {"labelFontSize": preset.chart, "titleFontSize": preset.chart}
    guides = preset.guides
    return {**config, "axis": {**config["axis"], **fonts, "labelOverlap": "greedy", **guides.get("axis", {})},
            "axisY": {"labelOverlap": "greedy"},
            "legend": {**config["legend"], **fonts, **guides.get("legend", {})},
            "title": {"fontSize": preset.chart_title, **guides.get("title", {})},
            "text": {"fontSize": preset.chart}, "view": {"stroke": None},
            "aria": False}  # an image: no ARIA text per mark


def text_view(text: str, role: str, width: int, preset: Preset, bold: bool = False) -> dict:
    size = preset.text[role]
    text = re.sub(r" (?=\(unchanged\))", "\u00a0", text)  # "7 → 7 (unchanged)" never parts,
    text = re.sub(r"(\d) (?=(?:ms|s|tok/s|MB)\b)", "\\1\u00a0", text)  # nor "7.0 s"
    lines = textwrap.wrap(text, max(20, int(width / size * CHARS_PER_EM))) or [""]
    mark = {"type": "text", "align": "left", "baseline": "top", "fontSize": size, "lineHeight": size * LINE,
            "color": "#222222" if role != "settings" else "#555555"}
    if bold:
        mark["fontWeight"] = "bold"
    return {"data": {"values": [{}]}, "mark": mark, "width": width, "height": round(len(lines) * size * LINE),
            "encoding": {"text": {"value": lines}, "x": {"value": 0}, "y": {"value": 0}}}


def fit_chart(chart: dict, width: int, height: int, preset: Preset) -> dict:
    """The chart at the slide's width and the height left; a chart of lanes gives each lane its share."""
    out = dict(chart)
    if "hconcat" in out:
        spacing = out.get("spacing", 36) * preset.size[0] / SCREEN.size[0]
        out["spacing"] = round(spacing)
        part = (width - out["spacing"] * (len(out["hconcat"]) - 1)) // len(out["hconcat"])
        out["hconcat"] = [fit_chart(v, part, height, preset) for v in out["hconcat"]]
        return out
    if "vconcat" in out:
        out["vconcat"] = [fit_chart(v, width, height // len(out["vconcat"]), preset) for v in out["vconcat"]]
        return out
    out["width"] = width - preset.y_axis  # the y axis, its labels and title sit to the left of the plot
    if isinstance(out.get("height"), dict) and "step" in out["height"]:
        lanes = max(1, int(out.get("lanes", 1)))
        step = round(max(0.2, min(out["height"]["step"] * 3, height / lanes)), 2)
        out["height"] = {"step": step}
        out = _thin_strokes(_lane_labels(out, step, preset), step)
    else:
        out["height"] = max(20, height)
    out.pop("lanes", None)
    return out


def _lane_labels(node, step: int, preset: Preset):
    """Lane labels that fit their lane: smaller type, down to MIN_PT, or none when a lane is too thin."""
    if isinstance(node, list):
        return [_lane_labels(v, step, preset) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _lane_labels(v, step, preset) for k, v in node.items() if k not in ("datasets", "data")}
    out.update({k: node[k] for k in ("datasets", "data") if k in node})
    axis = out.get("encoding", {}).get("y", {}).get("axis")
    if isinstance(axis, dict) and axis.get("labels", True):
        size = min(preset.chart, step - 2)
        fitted = ({**axis, "labelFontSize": size} if size >= MIN_PT
                  else {**axis, "labels": False, "ticks": False})
        out["encoding"] = {**out["encoding"], "y": {**out["encoding"]["y"], "axis": fitted}}
    return out


FONT_KEYS = ("fontSize", "labelFontSize", "titleFontSize", "subtitleFontSize")


def sized_text(node, preset: Preset):
    """Every text size the chart sets for itself (an axis's labels, a mark's text) at the preset's chart size,
    its title at the preset's chart title size; data is not walked."""
    if isinstance(node, list):
        return [sized_text(v, preset) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: (v if k in ("data", "datasets") else
               preset.chart if k in FONT_KEYS and isinstance(v, int | float) else sized_text(v, preset))
           for k, v in node.items()}
    if isinstance(out.get("title"), dict):
        title = {k: v for k, v in out["title"].items() if v != []}  # an empty subtitle takes a line
        out["title"] = {**title, "fontSize": preset.chart_title, **preset.guides.get("title", {})}
    return out


def opaque(node):
    """A mark of one colour drawn see-through (the token ticks at 0.8) as the opaque colour it
    makes on white: a PDF gives every see-through mark a graphics state of its own (a megabyte a slide)."""
    if isinstance(node, list):
        return [opaque(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: (v if k in ("data", "datasets") else opaque(v)) for k, v in node.items()}
    mark = out.get("mark")
    colour = str(mark.get("color")) if isinstance(mark, dict) else ""
    if re.fullmatch(r"#[0-9a-fA-F]{6}", colour) and mark.get("opacity", 1) < 1:
        alpha = mark["opacity"]
        rgb = [round(int(colour[i:i + 2], 16) * alpha + 255 * (1 - alpha)) for i in (1, 3, 5)]
        out["mark"] = {**mark, "opacity": 1, "color": "#" + "".join(f"{c:02x}" for c in rgb)}
    return out


def _thin_strokes(node, step: float):
    """Outlines no wider than a fifth of a lane, so a thin lane keeps its colour (a stall's shade)."""
    if isinstance(node, list):
        return [_thin_strokes(v, step) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: (v if k in ("data", "datasets") else _thin_strokes(v, step)) for k, v in node.items()}
    mark = out.get("mark")
    if isinstance(mark, dict) and mark.get("strokeWidth", 0) > step / 5:
        out["mark"] = {**mark, "strokeWidth": round(step / 5, 2)}
    return out


def with_lanes(spec: dict, count: int) -> dict:
    """Remember how many lanes a chart of lanes has, so `fit_chart` can share the height among them."""
    return {**spec, "lanes": count} if isinstance(spec.get("height"), dict) else spec


def fit(spec_of: Callable[[tuple[int, int]], dict], preset: Preset, name: str = "slide") -> tuple[dict, str]:
    """`spec_of(slack)`'s spec at exactly the preset's size, and its SVG. Vega sizes a chart's axes and
    legends only when it draws them, so: draw, give the chart what the estimate missed (or what it left
    over: `slack`), draw again; padding takes what a chart of lanes cannot."""
    slack = (0, 0)
    for _ in range(4):
        spec = spec_of(slack)
        svg = vlc.vegalite_to_svg(spec)
        miss = _miss(svg, preset)
        if miss == (0, 0):
            return spec, svg
        if min(miss) < 0 or slack == (0, 0):
            slack = (slack[0] + miss[0], slack[1] + miss[1])
            continue
        pad = preset.pad
        spec["padding"] = {"left": pad, "top": pad, "right": pad + miss[0], "bottom": pad + miss[1]}
        svg = vlc.vegalite_to_svg(spec)
        if _miss(svg, preset) == (0, 0):
            return spec, svg
    raise ValueError(f"{name}: the slide does not fit {preset.size[0]}x{preset.size[1]} "
                     f"({_miss(svg, preset)} off); update app.present.layout.PRINT / SCREEN")


def _miss(svg: str, preset: Preset) -> tuple[int, int]:
    """(width, height) the preset has beyond what `svg` takes: negative where the slide is too large."""
    w, h = (float(v) for v in re.search(r'width="([\d.]+)" height="([\d.]+)"', svg).groups())
    return preset.size[0] - round(w), preset.size[1] - round(h)
