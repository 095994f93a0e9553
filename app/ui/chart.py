"""A chart on a page: its title, an optional "Look here" pointer, PNG / SVG export and its caption.

Specs are kept for the whole server, not per session: a chart keyed by (page, chart, run, cursor) is the
same for every person who views it, so the second person, a flip back and a shared link reuse the spec
instead of building and serialising the chart again (building is most of a warm page view's server time;
docs/performance.md). app/warm.py builds the stories' first views at start-up.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable

import altair as alt
import pandas as pd
import streamlit as st
from streamlit import dataframe_util

from app import state
from app.charts.timelines import PICK
from app.present.shown import room_spec
from app.ui.exports import chart_image, export_note

SPEC_CACHE_SIZE = 192  # specs of a story page run 30-300 KB each
# A run's frames keep their own row budgets (MAX_CHART_ROWS, MAX_TOKEN_MARKS); a chart of two runs (Compare's
# A above B) holds up to twice one run's, so Altair's own 5,000-row stop is off for the specs pages send.
alt.data_transformers.disable_max_rows()


def chart_spec(chart, cache_key=None) -> dict:
    """The Vega-Lite spec of a chart (or of a zero-argument builder), shared by every session under
    cache_key. Never mutate the result: other sessions hold the same dict.

    Builders are validated against the schema by the tests (tests/test_charts.py), so the app serialises
    without validating again.
    """
    if cache_key is None:
        return _build(chart)
    return _shared_spec(cache_key, chart)


@st.cache_resource(max_entries=SPEC_CACHE_SIZE, show_spinner=False)
def _shared_spec(cache_key, _chart) -> dict:
    """One spec per key for the whole server (`_chart` is not hashed: the key names the chart)."""
    return _build(_chart)


def _build(chart) -> dict:
    return (chart() if callable(chart) else chart).to_dict(validate=False)


def spec_key(page: str, chart_id: str, cache_key=None):
    """What a page's chart is shared under: (page, chart_id, cache_key), or None (not shared)."""
    return None if cache_key is None else (page, chart_id, cache_key)


def page_spec(page: str, chart_id: str, chart, cache_key=None) -> dict:
    """A page's chart spec as chart_ui draws it, for a button that exports the same chart elsewhere."""
    return chart_spec(chart, spec_key(page, chart_id, cache_key))


def warm_spec(page: str, chart_id: str, chart, cache_key) -> None:
    """Build a page chart's spec and what the browser gets of it, under the keys chart_ui reads them by,
    ahead of the first person (app/warm.py)."""
    key = spec_key(page, chart_id, cache_key)
    sent_spec(chart_spec(chart, key), key)


def sent_spec(spec: dict, cache_key=None, presenting: bool = False) -> dict:
    """What the browser gets (`room_spec`), its datasets already Arrow: shared under cache_key like the
    spec, so a page view neither converts rows nor copies specs again."""
    if cache_key is None:
        return packed(unlabelled_marks(room_spec(spec, presenting)))
    return _shared_sent(cache_key, presenting, spec)


@st.cache_resource(max_entries=SPEC_CACHE_SIZE * 2, show_spinner=False)
def _shared_sent(cache_key, presenting: bool, _spec: dict) -> dict:
    return packed(unlabelled_marks(room_spec(_spec, presenting)))


def unlabelled_marks(spec: dict) -> dict:
    """The spec without an ARIA description on every mark. Vega-Lite writes one expression per mark (a bar,
    a tick, a point of a line) that the browser evaluates for each of them, through Streamlit's expression
    interpreter: about a quarter of the Vega work of a story page's charts (docs/performance.md). Axes,
    legends and titles keep theirs. Streamlit drops them itself past 5,000 marks."""
    config = spec.get("config", {})
    return {**spec, "config": {**config, "mark": {**config.get("mark", {}), "aria": False}}}


def packed(spec: dict) -> dict:
    """The spec with each dataset as Arrow IPC bytes, which Streamlit sends as they are; strings that repeat
    (pass kinds, lanes, rule names) dictionary-encoded, so a pass timeline travels at a fraction of its
    size. Streamlit would otherwise turn the rows into Arrow on every send."""
    datasets = spec.get("datasets")
    if not datasets:
        return spec
    return {**spec, "datasets": {name: _arrow(rows) for name, rows in datasets.items()}}


def _arrow(rows):
    if not isinstance(rows, list) or not rows or not all(isinstance(row, dict) for row in rows):
        return rows
    frame = pd.DataFrame.from_records(rows)
    for column in frame.columns:
        values = frame[column]
        if not pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
            if values.map(type).eq(str).all() and values.nunique() <= len(values) // 2:
                frame[column] = values.astype("category")
    return dataframe_util.convert_pandas_df_to_arrow_bytes(frame)


def look_here(title: str, words: bool = True) -> None:
    """The guided tour's pointer: a callout above the chart (or section) a step is about, with the step's
    narration beside it (`words`: left out where the narration stands just above). The first time a step is
    drawn, the page scrolls to it — every step the same way."""
    with st.container(key=state.LOOK_HERE):
        st.markdown(f":orange-background[:material/arrow_downward: **Look here** — {title}]")
        said = st.session_state.get(state.TOUR_WORDS) if words else None
        if said:
            st.caption(said)
    if st.session_state.get(state.SCROLLED_TO) != title:
        st.session_state[state.SCROLLED_TO] = title
        st.html(SCROLL_JS.replace("{target}", f".st-key-{state.LOOK_HERE}").replace("{nonce}", title),
                unsafe_allow_javascript=True)


# Charts above the pointer may still be drawing (and growing): scroll again once they have.
SCROLL_JS = """<script>/* {nonce} */
(() => { const go = () => { const el = document.querySelector("{target}");
  if (el) el.scrollIntoView({block: "start"}); };
  setTimeout(go, 150); setTimeout(go, 900); setTimeout(go, 2000); })();
</script>"""


def chart_ui(page: str, chart_id: str, title: str, caption: str, chart, pointer: str | None = None,
             cache_key=None, on_pick: Callable[[dict], None] | None = None) -> None:
    """A chart with its plain-language caption and PNG / SVG export (rendered only when clicked).

    `pointer`: a tour step's title, shown as "Look here" above the chart.
    `on_pick(point)`: called with the clicked mark's fields when the chart has a `PICK` selection."""
    spec = page_spec(page, chart_id, chart, cache_key)
    # The title and the export button share a row, the button right after the title: the chart's own hover
    # toolbar (top right) never covers it, and at any width the button keeps its whole label.
    with st.container(horizontal=True, vertical_alignment="center", gap="medium"):
        st.markdown(f"##### {title}", width="content")
        _export_ui(page, chart_id, spec, title)
    if pointer is not None:
        look_here(pointer)
    sent = sent_spec(spec, spec_key(page, chart_id, cache_key), state.is_presenting())
    if on_pick is None:
        st.vega_lite_chart(sent, width="stretch")
    else:
        # one widget per view: a chart redrawn for a new cursor starts with no selection, so each click
        # counts once
        view = hashlib.sha1(repr(cache_key).encode()).hexdigest()[:12]
        key = state.keys(page).chart_widget(chart_id, f"pick.{view}")
        event = st.vega_lite_chart(sent, width="stretch", key=key, on_select="rerun", selection_mode=[PICK])
        points = (event.selection or {}).get(PICK) or []
        if points:
            on_pick(points[0])
    st.caption(caption)


def _export_ui(page: str, chart_id: str, spec: dict, title: str) -> None:
    """PNG / SVG of the chart as it is pasted: its title, the page's settings and headline, no cursor."""
    keys, note = state.keys(page), export_note(page)
    with st.popover("Export", icon=":material/download:", width="content"):
        st.download_button("PNG", lambda: chart_image(json.dumps(spec), "png", title, note),
                           file_name=f"{page}-{chart_id}.png", mime="image/png",
                           key=keys.chart_widget(chart_id, "png"), on_click="ignore")
        st.download_button("SVG", lambda: chart_image(json.dumps(spec), "svg", title, note),
                           file_name=f"{page}-{chart_id}.svg", mime="image/svg+xml",
                           key=keys.chart_widget(chart_id, "svg"), on_click="ignore")
