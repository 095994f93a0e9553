"""A figure's key switch both ways, for a reader without scripts (most e-readers): the two settings of the
switch the story turns on (the forty replies: mixed chunk off and on), the numbers with a column for each
(filled from the two runs by the page's own number builder), and each chart of the page as a still of each
setting, drawn by the page's own chart builder at 2× with the app's presenter-mode type, so its text reads
on a phone-sized page.

An EPUB carries them (app.present.epub); the interactive page keeps its one image per chart.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.charts import views
from app.present.export import export_spec, render
from app.present.grid import Grid
from app.present.numbers import headline_rows
from app.present.shown import room_spec

KEY = {"other_stall": "pool"}  # story -> the switch its point turns on, where it is not the page's first axis
STILL_WIDTH = 480  # px of a still's plot: narrower than the page's 720, so its type is larger beside it
STILL_SCALE = 2  # pixels per px: sharp on a high-density screen


@dataclass
class Pair:
    """The key switch both ways: two settings of the page (their keys in Figure.cells), how each reads
    ("mixed chunk off"), and the numbers with a column for each."""

    label: str  # the switch: "Mixed chunk"
    names: tuple[str, str]  # each setting in words: ("mixed chunk off", "mixed chunk on")
    keys: tuple[str, str]
    tables: list[dict]  # as Shown.tables: {"head", "rows", "bold"}


def story_pair(grid: Grid) -> Pair | None:
    """The story's key switch (KEY, else the page's first axis) from its default to the value the story's
    tour turns it to, every other axis where the page opens; where the page opens off the default, that
    setting is the second. None when the switch has one value on the page."""
    story = grid.story
    wanted = KEY.get(story.key)
    k = next((i for i, a in enumerate(grid.axes) if a.control.key == wanted), 0)
    axis = grid.axes[k]
    if len(axis.values) < 2:
        return None
    control = axis.control
    default = control.default if control.default in axis.values else axis.values[0]
    before = axis.values.index(default)
    toured = [s.settings[control.key] for s in story.tour if s.settings.get(control.key, default) != default]
    after = grid.start[k]
    if after == before:
        after = (axis.values.index(toured[0]) if toured and toured[0] in axis.values
                 else (before + 1) % len(axis.values))
    cells = []
    for i in (before, after):
        index = grid.start[:k] + (i,) + grid.start[k + 1:]
        cells.append(next(c for c in grid.cells if c.index == index))
    names = tuple(f"{in_text(control.label)} {axis.label(axis.values[i])}" for i in (before, after))
    rows = headline_rows(story, cells[1].run, cells[0].run, cells[1].ranges)
    table = {"head": ["Number", *(n[:1].upper() + n[1:] for n in names)], "bold": 2,
             "rows": [[h.label, h.before, h.now_banded] for h in rows]}
    return Pair(control.label, names, (cells[0].key, cells[1].key), [table])


def in_text(label: str) -> str:
    """A control's label inside a sentence: "Mixed chunk" -> "mixed chunk", "KV pool" stays."""
    return label if label[1:2].isupper() else label[:1].lower() + label[1:]


def still_spec(view: views.View, fit=None) -> dict:
    """A chart of the page as a still: the page's own spec for it (`fit`: what the page does to it, such as
    zooming), as an export draws it less its title, STILL_WIDTH wide, every text at presenter size
    (app.present.shown), its lanes as tall as the page's."""
    built = view.build().to_dict(validate=False)
    spec = export_spec(fit(built) if fit else built, view.title, (), STILL_WIDTH)
    spec.pop("title")  # the page names the chart above its still, and the setting on it
    out = room_spec(spec, presenting=True)
    if isinstance(spec.get("height"), dict):  # lanes keep their height: a lane label fits its lane
        out["height"] = spec["height"]
    return out


def still_png(view: views.View, fit=None) -> bytes:
    return render(still_spec(view, fit), "png", scale=STILL_SCALE)
