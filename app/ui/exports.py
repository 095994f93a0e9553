"""Bytes behind the download buttons: a frame as CSV, a scenario as TOML, a chart as PNG or SVG, two charts
side by side, and a story as a standalone page or its tour as slides.

Pages pass these to `st.download_button` as callables, so nothing is rendered until a button is clicked.
An exported chart is made to be pasted as is (an email, a slide): it carries its title, the settings that
produced it and its headline number under the title, and leaves out what only makes sense in the app —
the step-through cursor and the click selection.
"""

from __future__ import annotations

import copy
import io
import json

import pandas as pd
import streamlit as st
import tomli_w
import vl_convert as vlc
from PIL import Image

from app import state
from app.charts.scales import CURSOR_NAME
from engine_model import Scenario, figure_html, slides_zip

EXPORT_WIDTH = 960
SIDE_WIDTH = 620  # each half of a side-by-side image


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
    return {"text": title, "subtitle": list(lines), "anchor": "start", "fontSize": 17, "subtitleFontSize": 12,
            "subtitleColor": "#444444", "subtitlePadding": 6, "offset": 14}


def export_spec(spec: dict, title: str, lines: tuple[str, ...] = (), width: int = EXPORT_WIDTH) -> dict:
    """The spec as a downloaded image shows it: a title with the settings and headline under it, a fixed
    width, white background; no cursor and no click selection (`params`)."""
    out = _fixed_width(_without_cursor(copy.deepcopy(spec)), width)
    out.pop("params", None)
    out["title"] = title_block(title, lines)
    out["background"] = "white"
    out["padding"] = 16
    return out


def side_by_side_spec(left: dict, right: dict, titles: tuple[str, str], title: str,
                      lines: tuple[str, ...] = ()) -> dict:
    """Two charts in one image (before | after), each under its own title, sharing the page title."""
    halves = []
    for spec, sub in zip((left, right), titles, strict=True):
        half = export_spec(spec, sub, (), SIDE_WIDTH)
        for key in ("$schema", "config", "datasets", "background", "padding"):
            half.pop(key, None)
        halves.append(half)
    return {"$schema": left.get("$schema"), "config": left.get("config", {}),
            "datasets": {**left.get("datasets", {}), **right.get("datasets", {})},
            "hconcat": halves, "spacing": 36, "resolve": {"scale": {"color": "independent"}},
            "title": title_block(title, lines), "background": "white",
            "padding": 16}


def render(spec: dict, fmt: str) -> bytes:
    if fmt == "png":
        return small_png(vlc.vegalite_to_png(spec, scale=2))
    return vlc.vegalite_to_svg(spec).encode()


def small_png(data: bytes) -> bytes:
    """A chart's PNG in 256 colours (no dithering): it looks the same and is ~15x smaller to attach."""
    image = Image.open(io.BytesIO(data)).convert("RGB")
    out = io.BytesIO()
    image.quantize(colors=256, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE).save(
        out, "PNG", optimize=True)
    return out.getvalue()


@st.cache_data(max_entries=64, show_spinner="Rendering the image…")
def chart_image(spec_json: str, fmt: str, title: str = "", lines: tuple[str, ...] = ()) -> bytes:
    return render(export_spec(json.loads(spec_json), title, lines), fmt)


@st.cache_data(max_entries=16, show_spinner="Rendering the image…")
def pair_image(left_json: str, right_json: str, titles: tuple[str, str], title: str,
               lines: tuple[str, ...], fmt: str) -> bytes:
    return render(side_by_side_spec(json.loads(left_json), json.loads(right_json), titles, title, lines), fmt)


def export_note(page: str) -> tuple[str, ...]:
    """The lines a page asked its exported charts to carry (settings, headline); none if it set none."""
    return tuple(st.session_state.get(state.keys(page).export_note, ()))


def set_export_note(page: str, lines: tuple[str, ...]) -> None:
    st.session_state[state.keys(page).export_note] = tuple(lines)


# -- a story outside the app -------------------------------------------------------------------------
@st.cache_data(max_entries=4, show_spinner="Simulating every setting the page carries (about 10–30 s)…")
def standalone_page(story_key: str) -> bytes:
    return figure_html(story_key).encode("utf-8")


@st.cache_data(max_entries=4, show_spinner="Drawing one slide per tour step…")
def tour_slides(story_key: str) -> bytes:
    return slides_zip(story_key)
