"""What a Vega-Lite chart draws, as boxes: vl-convert's scenegraph (every item Vega placed, with its group's
offsets) and each text's extent measured in the face vl-convert draws with (Pillow over the font file), so
a test can say which label overlaps which mark or rule without a browser."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from pathlib import Path

import vl_convert as vlc
from PIL import ImageFont

FACES = Path("/usr/share/fonts/truetype/liberation")  # what vl-convert draws sans-serif with


@dataclass(frozen=True)
class Box:
    kind: str  # text, rect, rule, symbol, area, line
    role: str  # Vega's: mark, axis-label, legend-label, title-text, ...
    name: str  # the mark's name ("layer_0_marks", "cursor_…")
    text: str
    fill: str
    x1: float
    y1: float
    x2: float
    y2: float

    def overlaps(self, other: Box, tolerance: float = 0.5) -> bool:
        return (min(self.x2, other.x2) - max(self.x1, other.x1) > tolerance
                and min(self.y2, other.y2) - max(self.y1, other.y1) > tolerance)

    def inside(self, other: Box, tolerance: float = 1.5) -> bool:
        """Within `other`, give or take a stroke's half width."""
        return (self.x1 >= other.x1 - tolerance and self.x2 <= other.x2 + tolerance
                and self.y1 >= other.y1 - tolerance and self.y2 <= other.y2 + tolerance)


@functools.lru_cache
def _font(size: float, bold: bool):
    face = FACES / ("LiberationSans-Bold.ttf" if bold else "LiberationSans-Regular.ttf")
    return ImageFont.truetype(str(face), max(1, round(size * 10))) if face.exists() else None


def text_width(text: str, size: float, bold: bool = False) -> float:
    font = _font(size, bold)
    return font.getlength(text) / 10 if font else len(text) * size * 0.55


def boxes(spec: dict) -> list[Box]:
    """Every item a Vega-Lite spec draws, as a box in its drawing's units (origin: the plot's group)."""
    scene = vlc.vegalite_to_scenegraph(spec)
    out: list[Box] = []
    _walk(scene["scenegraph"], 0.0, 0.0, out)
    return out


def _walk(mark: dict, ox: float, oy: float, out: list[Box]) -> None:
    kind, role, name = mark.get("marktype"), mark.get("role", ""), mark.get("name", "") or ""
    items = mark.get("items", [])
    if kind == "group":
        for group in items:
            gx, gy = ox + group.get("x", 0), oy + group.get("y", 0)
            for child in group.get("items", []):
                _walk(child, gx, gy, out)
        return
    if kind in ("area", "line"):
        out += _path_boxes(kind, role, name, items, ox, oy)
        return
    for item in items:
        if item.get("opacity", 1) == 0 or item.get("fillOpacity", 1) == 0 and not item.get("stroke"):
            continue
        box = _item_box(kind, item, ox, oy)
        if box is not None:
            text = item.get("text", "")
            text = " ".join(text) if isinstance(text, list) else str(text)
            out.append(Box(kind, role, name, text, str(item.get("fill", "")), *box))


def _item_box(kind: str, item: dict, ox: float, oy: float):
    x, y = ox + item.get("x", 0), oy + item.get("y", 0)
    if kind == "rect":
        x2 = ox + item["x2"] if "x2" in item else x + item.get("width", 0)
        y2 = oy + item["y2"] if "y2" in item else y + item.get("height", 0)
        return min(x, x2), min(y, y2), max(x, x2), max(y, y2)
    if kind == "rule":
        x2, y2 = ox + item.get("x2", item.get("x", 0)), oy + item.get("y2", item.get("y", 0))
        half = item.get("strokeWidth", 1) / 2
        return min(x, x2) - half, min(y, y2) - half, max(x, x2) + half, max(y, y2) + half
    if kind == "symbol":
        r = math.sqrt(item.get("size", 64)) / 2
        return x - r, y - r, x + r, y + r
    if kind == "text":
        return _text_box(item, x, y)
    return None


def _text_box(item: dict, x: float, y: float):
    text = item.get("text", "")
    lines = text if isinstance(text, list) else [str(text)]
    if not any(str(line).strip() for line in lines):
        return None
    size = item.get("fontSize", 11)
    bold = str(item.get("fontWeight", "")) in ("bold", "700")
    width = max(text_width(str(line), size, bold) for line in lines)
    height = size * (1 + (len(lines) - 1) * item.get("lineHeight", size) / size)
    x, y = x + item.get("dx", 0), y + item.get("dy", 0)
    align, baseline = item.get("align", "left"), item.get("baseline", "alphabetic")
    left = {"left": 0, "center": -width / 2, "right": -width}.get(align, 0)
    top = {"top": 0, "line-top": 0, "middle": -height / 2, "bottom": -height,
           "line-bottom": -height}.get(baseline, -0.8 * size)
    box = (left, top + 0.05 * size, left + width, top + height - 0.05 * size)  # the ink, not the em box
    angle = item.get("angle", 0) % 360
    if angle in (90, 270):  # a y title: the box turned about its anchor
        (a, b, c, d) = box
        box = (-d, a, -b, c) if angle == 90 else (b, -c, d, -a)
    return x + box[0], y + box[1], x + box[2], y + box[3]


def _path_boxes(kind: str, role: str, name: str, items: list, ox: float, oy: float) -> list[Box]:
    """An area or line as the boxes of its segments (a stepped area is exact)."""
    out = []
    for a, b in zip(items, items[1:], strict=False):
        if kind == "area":
            ys = [a.get("y", 0), a.get("y2", a.get("y", 0)), b.get("y", 0), b.get("y2", b.get("y", 0))]
        else:
            ys = [a.get("y", 0), b.get("y", 0)]
        out.append(Box(kind, role, name, "", str(a.get("fill", a.get("stroke", ""))),
                       ox + min(a.get("x", 0), b.get("x", 0)), oy + min(ys),
                       ox + max(a.get("x", 0), b.get("x", 0)), oy + max(ys)))
    return out


LABELS = ("mark",)  # texts a chart places among its marks (not its axes', legend's or title's)
SHAPES = ("rect", "rule", "symbol", "area", "line")


def collisions(spec: dict) -> list[tuple[str, str]]:
    """Labels drawn over a mark or a rule, and texts over one another: (label, what it meets). A mark under
    a veil (a white sheet) does not count: it is not seen."""
    found = boxes(spec)
    veils = [b for b in found
             if b.kind == "rect" and b.role == "mark" and b.fill.upper() in ("#FFFFFF", "WHITE")]
    marks = [b for b in found if b.kind in SHAPES and b.role == "mark" and b not in veils
             and not any(b.inside(v) for v in veils) and b.x2 - b.x1 + b.y2 - b.y1 > 0]
    texts = [b for b in found if b.kind == "text"]
    out = [(t.text, f"{m.kind} {m.name}") for t in texts if t.role in LABELS for m in marks if t.overlaps(m)]
    out += [(a.text, b.text) for i, a in enumerate(texts) for b in texts[i + 1:] if a.overlaps(b)]
    return out
