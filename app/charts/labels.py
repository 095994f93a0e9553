"""Point labels that never meet: each label takes the first place around its point where it overlaps no
other label, no point and stays inside the plot, judged at the narrowest plot the chart is drawn at. Wider
plots only pull points apart sideways (labels keep their pixel size and offset), so a layout that is clear
at the narrowest width is clear at every wider one. A label with no free place is left off the chart (its
point keeps its tooltip; the page's table names every point). No `st.*` calls here."""

from __future__ import annotations

from dataclasses import dataclass

CHAR_PX = {"normal": 6.6, "bold": 7.2}  # an 11 px sans-serif label's widest average advance (digits, a-z)
LINE_PX = 14  # one line of an 11 px label, descenders included
MIN_PLOT_PX = (300, 320)  # plot width (a 390 px phone, its y axis taken off) and height, px
GAP_PX = 3  # between a point's edge and its label


@dataclass(frozen=True)
class Place:
    """Where a label stands from its point: Vega's dx/dy, align and baseline."""
    dx: int
    dy: int
    align: str
    baseline: str


# Directions in the order a label tries them: above right, below left, below right, above left, above, below.
DIRECTIONS = ((1, -1, "left", "bottom"), (-1, 1, "right", "top"), (1, 1, "left", "top"),
              (-1, -1, "right", "bottom"), (0, -1, "center", "bottom"), (0, 1, "center", "top"))


# A label tries every direction close to its point; a bold one (the current setting, a reference point) then
# farther out too: a plain label far from its point could be read as a neighbour's.
RINGS = {"normal": (1,), "bold": (1, 2.5)}


def places(radius: float, weight: str) -> list[Place]:
    return [Place(round(sx * step), round(sy * step), align, baseline) for step in
            (ring * (radius + GAP_PX) for ring in RINGS[weight]) for sx, sy, align, baseline in DIRECTIONS]


def box(x: float, y: float, lines: list[str], place: Place, weight: str) -> tuple[float, float, float, float]:
    """The label's box (left, top, right, bottom) in pixels, y growing downwards as on screen."""
    width = max(len(line) for line in lines) * CHAR_PX[weight]
    height = LINE_PX * len(lines)
    left = {"left": x + place.dx, "right": x + place.dx - width, "center": x - width / 2}[place.align]
    top = y + place.dy if place.baseline == "top" else y + place.dy - height
    return left, top, left + width, top + height


def _meets(a, b) -> bool:
    return min(a[2], b[2]) > max(a[0], b[0]) and min(a[3], b[3]) > max(a[1], b[1])


def place_labels(points: list[tuple[float, float, float]], labels: list[tuple[int, str, str]],
                 domain: tuple[float, float], plot: tuple[int, int] = MIN_PLOT_PX) -> dict[int, Place]:
    """`points`: every point's (x, y, radius in px), x and y in data units from 0 to `domain`; `labels`:
    (point index, text, weight) in the order they choose (the first gets the best place). Returns {point
    index: its place}; a label missing from it has no free place. A label's lines are split on '\\n'."""
    (width, height), (x_max, y_max) = plot, domain
    pixels = [(x / x_max * width, height - y / y_max * height, r) for x, y, r in points]
    taken = [(px - r, py - r, px + r, py + r) for px, py, r in pixels]
    out: dict[int, Place] = {}
    for index, text, weight in labels:
        x, y, radius = pixels[index]
        for place in places(radius, weight):
            b = box(x, y, text.split("\n"), place, weight)
            inside = b[0] >= 0 and b[1] >= 0 and b[2] <= width and b[3] <= height
            if inside and not any(_meets(b, other) for other in taken):
                out[index] = place
                taken.append(b)
                break
    return out
