"""A slide's layout, apart from what it says: the presets (a screen's 1920×1080 px, print's 6 in × 3.375 in
with no text under 7 pt), the text views, the app's chart fitted to the room they leave (lanes sharing the
height, lane labels sized to their lane, type and guides at the preset's sizes), and `fit`, which draws a
slide's spec and corrects it until it is exactly its preset's size.
"""

from __future__ import annotations

import html
import json
import math
import re
import textwrap
from dataclasses import dataclass, field

from app.charts.scales import CURSOR_NAME, colour
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
    dpi: int = 0  # print: the PNG's resolution, written in the file (0: a screen's pixels, no stated size)
    caption: bool = True  # the narration on the slide (print: in the notes, for the book to set as caption)
    guides: dict = field(default_factory=dict)  # axis, legend, title spacing where Vega's (px) are too big


SCREEN = Preset("screen", (1920, 1080), pad=48,
                text={"title": 52, "numbers": 30, "caption": 30, "settings": 21}, chart=17, chart_title=22,
                y_axis=140, chrome=150, spacing=18, png_scale=2)
PRINT = Preset("print", (432, 243), pad=12, text={"title": 11, "numbers": 8, "caption": 8, "settings": 7},
               chart=7, chart_title=8, y_axis=34, chrome=46, spacing=4, png_scale=300 / 72, dpi=300,
               caption=False,
               guides={"axis": {"tickSize": 3, "labelPadding": 2, "titlePadding": 3},
                       "legend": {"symbolSize": 30, "columnPadding": 6, "rowPadding": 1, "titlePadding": 2,
                                  "labelOffset": 2, "offset": 6, "columns": 8},
                       "title": {"offset": 4, "subtitlePadding": 2}})
# Print is often read in grey: the pass kinds' colours at three lightness steps (grey levels about 57, 119
# and 185 of 255, where the screen's are 87, 106 and 119), each keeping its hue. The screen keeps the app's.
GREY_SAFE = {colour("decode"): "#004A7A", colour("mixed"): "#1FA37A", colour("prefill"): "#F7A872"}
MIN_PLOT = {"screen": 100, "print": 40}  # the least plot height a slide's text may leave its chart
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
            "legend": {**config["legend"], **fonts, **guides.get("legend", {}),
                       "offset": round(preset.chart * 1.4 + 4)},  # a cursor's label between it and the plot
            "title": {"fontSize": preset.chart_title, **guides.get("title", {})},
            "text": {"fontSize": preset.chart}, "view": {"stroke": None},
            "font": FONT, "aria": False}  # an image: no ARIA text per mark


FONT = "Liberation Sans, Arimo, Arial, Helvetica, sans-serif"  # the face vl-convert draws and embeds first
MARKED_LABEL = f"{CURSOR_NAME}_marked_label"  # app.charts.timelines._marked_lanes: a diamond's words
GAP = 36  # px between two charts side by side on a screen slide (scaled to the preset)


@dataclass(frozen=True)
class Text:
    """A block of text laid out by hand: its wrapped lines, at the preset's size for its role."""

    lines: tuple[str, ...]
    size: float
    colour: str
    bold: bool = False

    @property
    def height(self) -> float:
        return len(self.lines) * self.size * LINE

    def svg(self, x: float, y: float) -> str:
        """Each line as an SVG <text>, its baseline one font size under the top of its line box (the half
        leading and the face's ascent, about 0.1 + 0.9 of a size)."""
        weight = ' font-weight="bold"' if self.bold else ""
        return "".join(
            f'<text x="{x:g}" y="{y + self.size * (i * LINE + 1):.2f}" font-family="{FONT}" '
            f'font-size="{self.size:g}" fill="{self.colour}"{weight}>{html.escape(line)}</text>'
            for i, line in enumerate(self.lines))


def text_block(text: str, role: str, width: float, preset: Preset, bold: bool = False) -> Text:
    """`text` wrapped to `width` at the preset's size for `role`; a number never parts from its unit."""
    size = preset.text[role]
    text = re.sub(r" (?=\(unchanged\))", "\u00a0", text)  # "7 → 7 (unchanged)" never parts,
    text = re.sub(r"(\d) (?=(?:ms|s|tok/s|MB)\b)", "\\1\u00a0", text)  # nor "7.0 s"
    per_line = max(20, int(width / size * CHARS_PER_EM * (0.93 if bold else 1)))
    lines = textwrap.wrap(text, per_line) or [""]
    return Text(tuple(lines), size, "#222222" if role != "settings" else "#555555", bold)


Panel = tuple[float, float, float, float, dict]  # x, y, width, height (the box it fills) and its spec


def fit_chart(chart: dict, width: float, height: float, preset: Preset) -> list[Panel]:
    """The chart as panels filling the box `width` × `height` exactly: one spec per view, each drawn by Vega
    with `autosize: fit`, so its axes, legend and title are inside its box by construction and its plot takes
    the rest (no second draw). Views side by side (hconcat) share the width; stacked ones the height. A chart
    of lanes shares its plot's height among them, its lane labels sized to the lane."""
    shared = {k: chart[k] for k in ("$schema", "datasets", "config") if k in chart}
    own = {k: v for k, v in chart.items() if k not in shared}
    for how, along in (("hconcat", 0), ("vconcat", 1)):
        if how in own:
            views, gap = own[how], round(own.get("spacing", GAP) * preset.size[0] / SCREEN.size[0])
            share = ((width, height)[along] - gap * (len(views) - 1)) / len(views)
            panels = []
            for i, view in enumerate(views):
                x, y = (i * (share + gap), 0) if along == 0 else (0, i * (share + gap))
                w, h = (share, height) if along == 0 else (width, share)
                panels += [(x + px, y + py, pw, ph, spec)
                           for px, py, pw, ph, spec in fit_chart({**shared, **view}, w, h, preset)]
            return panels
    edge = round(preset.chart / 3)  # Vega's bounds stop at a text's baseline box: room for descenders
    out = {**shared, **own, "width": round(width), "height": round(height), "autosize": {"type": "fit",
           "contains": "padding"}, "padding": {"left": 0, "top": 0, "right": edge, "bottom": edge}}
    if isinstance(own.get("height"), dict) and "step" in own["height"]:
        lanes = max(1, int(own.get("lanes", 1)))
        plot = plot_height(out, height, preset)
        step = plot / lanes  # each lane's share of the plot
        out = _thin_strokes(_lane_labels(out, step, preset, plot), max(0.2, step))
    out.pop("lanes", None)
    return [(0, 0, round(width), round(height), out)]


def plot_height(spec: dict, height: float, preset: Preset) -> float:
    """The plot's height in a box `height` tall, from what Vega will put above and below it: the title, the
    tallest top legend (its title's lines and its rows of entries), the cursor's label, the time axis."""
    size, guides = preset.chart, preset.guides.get("legend", {})
    row = size * 1.25 + guides.get("rowPadding", 2)
    legends = [0.0]
    for enc in _encodings(spec):
        for channel in ("color", "fill"):
            field = enc.get(channel) or {}
            legend, scale = field.get("legend", {}), field.get("scale", {})
            if legend is None or not isinstance(scale, dict) or not isinstance(scale.get("domain"), list):
                continue
            title = legend.get("title", field.get("title"))
            lines = len(title) if isinstance(title, list) else int(bool(title))
            columns = legend.get("columns", guides.get("columns", 8))
            rows = math.ceil(len(scale["domain"]) / (columns if isinstance(columns, int) else 1))
            legends.append(lines * size * 1.25 + guides.get("titlePadding", 5) + rows * row)
    names = json.dumps([v.get("name", "") for v in spec.get("layer", [])])
    cursor = size * 1.3 if CURSOR_NAME in names else 0
    title = preset.chart_title * 1.15 + preset.guides.get("title", {}).get("offset", 8)
    axis = size * 2.3 + sum(preset.guides.get("axis", {}).get(k, 4) for k in ("tickSize", "labelPadding",
                                                                             "titlePadding"))
    top = max(legends) + round(size * 1.4 + 4) if max(legends) else cursor  # its offset holds the label
    return max(preset.chart, height - title - top - axis - round(size / 3))


def _encodings(node):
    if isinstance(node, list):
        for v in node:
            yield from _encodings(v)
    elif isinstance(node, dict):
        if isinstance(node.get("encoding"), dict):
            yield node["encoding"]
        for k, v in node.items():
            if k not in ("data", "datasets", "encoding"):
                yield from _encodings(v)


def _lane_labels(node, step: float, preset: Preset, plot: float = 0):
    """Lane labels that fit their lane: smaller type, down to MIN_PT; where lanes are thinner than that, the
    labels that fit at MIN_PT with room between them (`kept_lanes`: each group's first and last lane first,
    "log" and "questions-239" say where a group sits). A y title longer than the plot (`plot`, its height)
    breaks into two lines."""
    if isinstance(node, list):
        return [_lane_labels(v, step, preset, plot) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _lane_labels(v, step, preset, plot) for k, v in node.items() if k not in ("datasets", "data")}
    out.update({k: node[k] for k in ("datasets", "data") if k in node})
    y = out.get("encoding", {}).get("y", {})
    axis = y.get("axis")
    if isinstance(axis, dict) and "labelExpr" not in axis:
        size = min(preset.chart, step - 2)
        domain = (y.get("scale") or {}).get("domain")
        if size >= MIN_PT:
            fitted = {**axis, "labels": True, "ticks": True, "labelFontSize": size}
        elif isinstance(domain, list) and domain:
            fitted = {**axis, "labels": True, "ticks": True, "labelFontSize": MIN_PT,
                      "values": kept_lanes(domain, MIN_PT * 1.15 / step), "labelOverlap": False}
        else:
            fitted = {**axis, "labels": False, "ticks": False}
        y = {**y, "axis": fitted}
    title = y.get("title")
    if isinstance(title, str) and plot and len(title) * preset.chart * 0.55 > plot and " " in title:
        cut = min((i for i, c in enumerate(title) if c == " "), key=lambda i: abs(i - len(title) / 2))
        y = {**y, "title": [title[:cut], title[cut + 1:]]}
    if y:
        out["encoding"] = {**out["encoding"], "y": y}
    return out


def kept_lanes(lanes: list[str], apart: float) -> list[str]:
    """The lanes whose labels fit `apart` lanes from one another: each group's first and last lane (a group:
    the lane's name before its number), the smallest group's first ("log", "contracts-00"), then lanes
    evenly between."""
    group = [str(lane).rsplit("-", 1)[0] for lane in lanes]
    size = {g: group.count(g) for g in set(group)}
    first = [group.index(g) for g in sorted(size, key=lambda g: (size[g], group.index(g)))]
    last = [len(group) - 1 - group[::-1].index(g) for g in sorted(size, key=lambda g: (size[g], g))]
    edges = [i for pair in zip(first, last, strict=True) for i in pair]
    every = [round(k * apart) for k in range(int(len(lanes) / apart) + 1)]
    kept: list[int] = []
    for i in [*edges, *every]:
        if i < len(lanes) and all(abs(i - j) >= apart for j in kept):
            kept.append(i)
    return [lanes[i] for i in sorted(kept)]


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


def recoloured(node, colours: dict[str, str]):
    """Every colour the chart names (a mark's, a scale's range) swapped as `colours` says; data is not
    walked."""
    if isinstance(node, list):
        return [recoloured(v, colours) for v in node]
    if isinstance(node, str):
        return colours.get(node.upper(), node)
    if not isinstance(node, dict):
        return node
    return {k: (v if k in ("data", "datasets") else recoloured(v, colours)) for k, v in node.items()}


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
    """Outlines no wider than a fifth of a lane, so a thin lane keeps its colour (a stall's shade); a marker
    (the cursor's diamonds) no taller than two lanes; and on lanes too thin for a label beside a diamond, no
    such label (the lane labels and the notes name the lane: on a thin lane it would cover its neighbours)."""
    if isinstance(node, list):
        return [_thin_strokes(v, step) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: (v if k in ("data", "datasets") else _thin_strokes(v, step)) for k, v in node.items()}
    if isinstance(out.get("layer"), list) and step < MIN_PT + 2:
        out["layer"] = [v for v in out["layer"] if v.get("name") != MARKED_LABEL]
    mark = out.get("mark")
    if isinstance(mark, dict) and mark.get("strokeWidth", 0) > step / 5:
        mark = out["mark"] = {**mark, "strokeWidth": round(step / 5, 2)}
    if isinstance(mark, dict) and mark.get("type") == "point" and mark.get("size", 0) > (2 * step) ** 2:
        out["mark"] = {**mark, "size": round(max(6.0, (2 * step) ** 2), 1)}
    return out


def with_lanes(spec: dict, count: int) -> dict:
    """Remember how many lanes a chart of lanes has, so `fit_chart` can share the height among them."""
    return {**spec, "lanes": count} if isinstance(spec.get("height"), dict) else spec


def compose(size: tuple[int, int], texts: list[tuple[float, float, Text]],
            panels: list[tuple[float, float, str]]) -> str:
    """One SVG page of `size`: the texts at their places and each panel's SVG (drawn at its box's size) nested
    at its place, every id a panel defines made its own (two panels' clip paths never clash)."""
    body = [t.svg(x, y) for x, y, t in texts]
    for n, (x, y, svg) in enumerate(panels):
        inner = re.sub(r"^.*?<svg[^>]*>|</svg>\s*$", "", svg, flags=re.S)
        for name in set(re.findall(r'id="([^"]+)"', inner)):
            inner = re.sub(rf'(id="|#){re.escape(name)}(?=["\)])', rf"\g<1>p{n}-{name}", inner)
        w, h = re.search(r'<svg[^>]* width="([\d.]+)" height="([\d.]+)"', svg).groups()
        body.append(f'<svg x="{x:g}" y="{y:g}" width="{w}" height="{h}" viewBox="0 0 {w} {h}">{inner}</svg>')
    width, height = size
    return (f'<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" '
            f'version="1.1" width="{width}" height="{height}" viewBox="0 0 {width} {height}">'
            f'<rect width="{width}" height="{height}" fill="white"/>{"".join(body)}</svg>')
