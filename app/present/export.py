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


def scenario_toml(scenario: Scenario) -> str:
    """The scenario as TOML (None values dropped; TOML has no null)."""
    return tomli_w.dumps(_drop_none(scenario.model_dump(mode="json")))


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


def export_spec(spec: dict, title: str, lines: tuple[str, ...] = (), width: int = EXPORT_WIDTH) -> dict:
    """The spec as a downloaded image shows it: a title with the settings and headline under it, a fixed
    width, white background; no cursor and no click selection (`params`)."""
    out = _fixed_width(_without_cursor(copy.deepcopy(spec)), width)
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


def small_png(data: bytes) -> bytes:
    """A chart's PNG in 256 colours (no dithering): it looks the same and is ~15x smaller to attach."""
    image = Image.open(io.BytesIO(data)).convert("RGB")
    out = io.BytesIO()
    image.quantize(colors=256, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE).save(
        out, "PNG", optimize=True)
    return out.getvalue()
