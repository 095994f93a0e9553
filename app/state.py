"""Settings live in three places, read in this order: the URL, this session's saved values, the defaults.

- On a page's first run in a session (or when its widgets were cleaned up after visiting another page)
  each control's widget state is seeded from `st.query_params`, else from the value saved the last
  time the page ran, else from the control's default. Bad URL values become notes, never tracebacks.
- After the widgets are drawn, `write_url` puts every non-default setting back into the query string,
  so a copied link reopens the same view (defaults are implied; the cursor time is `t`).
"""

from __future__ import annotations

import streamlit as st

from app.stories import Control

# Parameters that are not controls: the cursor, presenter mode, the tour step, and Streamlit's own.
PAGE_PARAMS = ("t", "present", "step")
STREAMLIT_PARAMS = ("embed", "embed_options")


def widget_key(page: str, key: str) -> str:
    return f"{page}.{key}"


def _saved(page: str) -> dict:
    return st.session_state.setdefault("saved", {}).setdefault(page, {})


def seed_widgets(page: str, controls: tuple[Control, ...], extra: tuple[str, ...] = ()) -> None:
    """Seed each control's widget state from the URL / saved / default; record notes for bad parameters."""
    params = st.query_params
    notes = []
    known = {c.key for c in controls} | set(PAGE_PARAMS) | set(STREAMLIT_PARAMS) | set(extra)
    fresh = any(widget_key(page, c.key) not in st.session_state for c in controls)
    for control in controls:
        wkey = widget_key(page, control.key)
        if wkey in st.session_state:
            continue
        value = _saved(page).get(control.key, control.default)
        if control.key in params:
            try:
                value = control.parse(params[control.key])
            except ValueError as err:
                notes.append(f"URL parameter `{control.key}={params[control.key]}`: {err}; "
                             f"using {control.fmt(control.default)}.")
        st.session_state[wkey] = value
    if fresh:
        unknown = sorted(set(params.keys()) - known)
        if unknown:
            notes.append(f"Ignored unknown URL parameter(s): {', '.join(f'`{u}`' for u in unknown)}.")
        st.session_state[widget_key(page, "notes")] = notes


def notes(page: str) -> list[str]:
    return st.session_state.get(widget_key(page, "notes"), [])


def values(page: str, controls: tuple[Control, ...]) -> dict:
    out = {c.key: st.session_state.get(widget_key(page, c.key), c.default) for c in controls}
    _saved(page).update(out)
    return out


def write_url(controls: tuple[Control, ...], current: dict, extra: dict | None = None) -> None:
    """Non-default settings (and `extra`, e.g. the cursor) into the query string; everything else out."""
    wanted = {c.key: c.to_url(current[c.key]) for c in controls if current[c.key] != c.default}
    for key, value in (extra or {}).items():
        if value is not None:
            wanted[key] = str(value)
    params = st.query_params
    for key in list(params.keys()):
        if key not in wanted and key not in STREAMLIT_PARAMS:
            del params[key]
    for key, value in wanted.items():
        if params.get(key) != value:
            params[key] = value


def url_for(page: str, controls: tuple[Control, ...], current: dict, extra: dict | None = None) -> str:
    """A relative link that reopens this view."""
    from urllib.parse import urlencode

    query = {c.key: c.to_url(current[c.key]) for c in controls if current[c.key] != c.default}
    query.update({k: str(v) for k, v in (extra or {}).items() if v is not None})
    return f"/{page}" + (f"?{urlencode(query)}" if query else "")


def is_presenting() -> bool:
    if "present" not in st.session_state:
        st.session_state["present"] = st.query_params.get("present") in ("1", "true")
    return st.session_state["present"]
