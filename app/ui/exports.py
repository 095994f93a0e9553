"""Bytes behind the download buttons: a frame as CSV, a scenario as TOML, a chart as PNG or SVG.

Pages pass these to `st.download_button` as callables, so nothing is rendered until a button is clicked.
"""

from __future__ import annotations

import io
import json

import pandas as pd
import streamlit as st
import tomli_w
import vl_convert as vlc

from engine_model import Scenario

EXPORT_WIDTH = 960


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


def _fixed_width(spec):
    """vl-convert has no container: give every 'container' width a fixed size."""
    if isinstance(spec, dict):
        return {k: (EXPORT_WIDTH if k == "width" and v == "container" else _fixed_width(v)) for k, v in spec.items()}
    if isinstance(spec, list):
        return [_fixed_width(v) for v in spec]
    return spec


@st.cache_data(max_entries=64, show_spinner="Rendering the image…")
def chart_image(spec_json: str, fmt: str) -> bytes:
    spec = _fixed_width(json.loads(spec_json))
    spec.setdefault("background", "white")
    if fmt == "png":
        return vlc.vegalite_to_png(spec, scale=2)
    return vlc.vegalite_to_svg(spec).encode()
