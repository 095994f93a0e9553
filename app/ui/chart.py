"""A chart on a page: its title, an optional "Look here" pointer, PNG / SVG export and its caption.

Specs are kept per session (most recently used last), so a flip back to a view already drawn reuses its
spec instead of building and serialising the chart again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable

import streamlit as st

from app import state
from app.charts.timelines import PICK
from app.ui.exports import chart_image, export_note

SPEC_CACHE_SIZE = 48


def chart_spec(chart, cache_key=None) -> dict:
    """The Vega-Lite spec of a chart (or of a zero-argument builder), kept per session under cache_key.

    Builders are validated against the schema by the tests (tests/test_charts.py), so the app serialises
    without validating again, and a flip back to a view already drawn reuses its spec.
    """
    cache = st.session_state.setdefault(state.SPECS, {})
    if cache_key is not None and cache_key in cache:
        cache[cache_key] = cache.pop(cache_key)  # most recently used last
        return cache[cache_key]
    spec = (chart() if callable(chart) else chart).to_dict(validate=False)
    if cache_key is not None:
        cache[cache_key] = spec
        while len(cache) > SPEC_CACHE_SIZE:
            cache.pop(next(iter(cache)))
    return spec


def look_here(title: str) -> None:
    """The guided tour's pointer: a callout above the chart (or section) a step is about."""
    st.markdown(f":orange-background[:material/arrow_downward: **Look here** — {title}]")


def chart_ui(page: str, chart_id: str, title: str, caption: str, chart, pointer: str | None = None,
             cache_key=None, on_pick: Callable[[dict], None] | None = None) -> None:
    """A chart with its plain-language caption and PNG / SVG export (rendered only when clicked).

    `pointer`: a tour step's title, shown as "Look here" above the chart.
    `on_pick(point)`: called with the clicked mark's fields when the chart has a `PICK` selection."""
    head, export = st.columns([6, 1])
    head.markdown(f"##### {title}")
    if pointer is not None:
        look_here(pointer)
    spec = chart_spec(chart, None if cache_key is None else (page, chart_id, cache_key))
    _export_ui(export, page, chart_id, spec, title)
    if on_pick is None:
        st.vega_lite_chart(spec, width="stretch")
    else:
        # one widget per view: a chart redrawn for a new cursor starts with no selection, so each click counts once
        view = hashlib.sha1(repr(cache_key).encode()).hexdigest()[:12]
        key = state.keys(page).chart_widget(chart_id, f"pick.{view}")
        event = st.vega_lite_chart(spec, width="stretch", key=key, on_select="rerun", selection_mode=[PICK])
        points = (event.selection or {}).get(PICK) or []
        if points:
            on_pick(points[0])
    st.caption(caption)


def _export_ui(where, page: str, chart_id: str, spec: dict, title: str) -> None:
    """PNG / SVG of the chart as it is pasted: its title, the page's settings and headline, no cursor."""
    keys, note = state.keys(page), export_note(page)
    with where.popover("Export", width="stretch"):
        st.download_button("PNG", lambda: chart_image(json.dumps(spec), "png", title, note),
                           file_name=f"{page}-{chart_id}.png", mime="image/png",
                           key=keys.chart_widget(chart_id, "png"), on_click="ignore")
        st.download_button("SVG", lambda: chart_image(json.dumps(spec), "svg", title, note),
                           file_name=f"{page}-{chart_id}.svg", mime="image/svg+xml",
                           key=keys.chart_widget(chart_id, "svg"), on_click="ignore")
