"""Files a person takes away, built from the same specs and frames the page draws: a chart as PNG, SVG or PDF
(titled, with the settings and headline under the title, no cursor), charts stacked in one image, a frame as
CSV, a scenario as TOML. No Streamlit: the page's download buttons, the standalone page and the slides all
call these.
"""

from __future__ import annotations

import copy
import io
import re

import pandas as pd
import tomli_w
import vl_convert as vlc
from PIL import Image

from app.charts.scales import CURSOR_NAME
from engine_model import Scenario

EXPORT_WIDTH = 960
LINE_CHARS = 150  # a subtitle line's characters at 12 px: about an export's width


def scenario_toml(scenario: Scenario, about: str = "") -> str:
    """The scenario as TOML (None values dropped; TOML has no null), `about` on top as comment lines (what
    runs, in words, and how to run it)."""
    head = "".join(f"# {line}\n" for line in about.splitlines())
    return head + ("\n" if head else "") + tomli_w.dumps(_drop_none(scenario.model_dump(mode="json")))


def _drop_none(value):
    if isinstance(value, dict):
        return {k: _drop_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_none(v) for v in value]
    return value


def csv_bytes(frame: pd.DataFrame) -> bytes:
    buf = io.StringIO()
    frame.to_csv(buf, index=False)
    return buf.getvalue().encode()


# -- a chart as an image -----------------------------------------------------------------------------
def _fixed_width(spec, width: int = EXPORT_WIDTH):
    """vl-convert has no container: give every 'container' width a fixed size."""
    if isinstance(spec, dict):
        return {k: (width if k == "width" and v == "container" else _fixed_width(v, width))
                for k, v in spec.items()}
    if isinstance(spec, list):
        return [_fixed_width(v, width) for v in spec]
    return spec


def _without_cursor(spec):
    """Every layer named "cursor…" (the step-through cursor and its outline) taken out, at any depth."""
    if isinstance(spec, dict):
        out = {k: _without_cursor(v) for k, v in spec.items()}
        if isinstance(out.get("layer"), list):
            out["layer"] = [v for v in out["layer"] if not str(v.get("name", "")).startswith(CURSOR_NAME)]
        return out
    if isinstance(spec, list):
        return [_without_cursor(v) for v in spec]
    return spec


def title_block(title: str, lines: tuple[str, ...]) -> dict:
    return {"text": title, "subtitle": [part for line in lines for part in wrapped(line)], "anchor": "start",
            "fontSize": 17, "subtitleFontSize": 12,
            "subtitleColor": "#444444", "subtitlePadding": 6, "offset": 14}


def wrapped(line: str, limit: int = LINE_CHARS) -> list[str]:
    """A subtitle line as lines of at most `limit` characters, broken after a " · " or "; " (a list of
    settings), else at a space."""
    out = [""]
    for word in re.split(r"(?<=·) |(?<=;) ", line) if len(line) > limit else [line]:
        if out[-1] and len(out[-1]) + 1 + len(word) > limit:
            out.append(word)
        else:
            out[-1] = f"{out[-1]} {word}" if out[-1] else word
    return out


def export_spec(spec: dict, title: str, lines: tuple[str, ...] = (), width: int = EXPORT_WIDTH,
                cursor: bool = False) -> dict:
    """The spec as a downloaded image shows it: a title with the settings and headline under it, a fixed
    width, white background; no click selection (`params`), and no cursor unless `cursor` (a tour step's
    still shows its step's cursor, as the app's tour does)."""
    spec = copy.deepcopy(spec)
    out = _fixed_width(spec if cursor else _without_cursor(spec), width)
    out.pop("params", None)
    out["title"] = title_block(title, lines)
    out["background"] = "white"
    out["padding"] = 16
    return out


def stacked_spec(parts: list[tuple[dict, str]], title: str, lines: tuple[str, ...] = ()) -> dict:
    """Charts in one image, one under the other on one time axis, each under its own title, sharing the
    image's title and lines."""
    out = joined(parts, EXPORT_WIDTH, how="vconcat")
    return {**out, "title": title_block(title, lines), "background": "white", "padding": 16}


# -- tables as an image -------------------------------------------------------------------------------
ROW_PX, CHAR_PX, COLUMN_GAP_PX = 20, 6.8, 18  # a table row, a character at 12 px, the room between columns


Block = tuple[str, list[str], list[list[str]]]  # a table's heading, its head and its rows


def tables_spec(title: str, lines: tuple[str, ...], blocks: list[Block]) -> dict:
    """Tables as one image, titled as an exported chart is (`title_block`): each block (heading, head,
    rows) a grid of text, its head bold over a rule, each column as wide as its longest text."""
    views = [_table_view(*block) for block in blocks]
    return {"vconcat": views, "spacing": 24, "title": title_block(title, lines), "background": "white",
            "padding": 16,
            "config": {"view": {"stroke": None}, "text": {"fontSize": 12}}}


def _table_view(heading: str, head: list[str], rows: list[list[str]]) -> dict:
    widths = [round(max(len(str(r[i])) for r in [head, *rows]) * CHAR_PX) + COLUMN_GAP_PX
              for i in range(len(head))]
    lefts = [sum(widths[:i]) for i in range(len(widths))]
    cells = [{"x": lefts[c], "y": r * ROW_PX + (4 if r else 0), "text": str(v), "head": r == 0}
             for r, row in enumerate([head, *rows]) for c, v in enumerate(row)]
    at = {"x": {"field": "x", "type": "quantitative", "scale": None, "axis": None},
          "y": {"field": "y", "type": "quantitative", "scale": None, "axis": None},
          "text": {"field": "text"}}
    mark = {"type": "text", "align": "left", "baseline": "top", "color": "#222222"}
    return {"title": {"text": heading, "anchor": "start", "fontSize": 13}, "data": {"values": cells},
            "width": sum(widths), "height": ROW_PX * (len(rows) + 1) + 4,
            "layer": [{"transform": [{"filter": "datum.head"}], "mark": {**mark, "fontWeight": "bold"},
                       "encoding": at},
                      {"transform": [{"filter": "!datum.head"}], "mark": mark, "encoding": at},
                      {"data": {"values": [{"y": ROW_PX - 2}]},
                       "mark": {"type": "rule", "color": "#999999"},
                       "encoding": {"y": at["y"], "x": {"value": 0}, "x2": {"value": sum(widths)}}}]}


def joined(parts: list[tuple[dict, str]], width: int, how: str = "hconcat") -> dict:
    """Charts in one spec, each under its own title, their datasets and config hoisted to the top (a
    concatenated view may not carry them)."""
    views = []
    for spec, sub in parts:
        view = export_spec(spec, sub, (), width)
        for key in ("$schema", "config", "datasets", "background", "padding"):
            view.pop(key, None)
        views.append(view)
    first = parts[0][0]
    datasets = {k: v for spec, _ in parts for k, v in spec.get("datasets", {}).items()}
    return {"$schema": first.get("$schema"), "config": first.get("config", {}), "datasets": datasets,
            how: views, "spacing": 36, "resolve": {"scale": {"color": "independent"}}}


FORMATS = ("png", "svg", "pdf")


def render(spec: dict, fmt: str, scale: float = 2) -> bytes:
    """A Vega-Lite spec as an image: PNG at `scale` (256 colours), SVG or PDF (text stays text)."""
    if fmt == "png":
        return small_png(vlc.vegalite_to_png(spec, scale=scale))
    if fmt == "pdf":
        return vlc.vegalite_to_pdf(spec)
    if fmt == "svg":
        return vlc.vegalite_to_svg(spec).encode()
    raise ValueError(f"unknown image format {fmt!r}; expected one of {', '.join(FORMATS)}")


def small_png(data: bytes, dpi: float = 0) -> bytes:
    """A chart's PNG in 256 colours (no dithering): it looks the same and is ~15x smaller to attach; `dpi`
    written in its pHYs chunk (0: none)."""
    image = Image.open(io.BytesIO(data)).convert("RGB")
    out = io.BytesIO()
    image.quantize(colors=256, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE).save(
        out, "PNG", optimize=True, **({"dpi": (dpi, dpi)} if dpi else {}))
    return out.getvalue()
