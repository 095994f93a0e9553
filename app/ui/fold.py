"""An expander whose content is built only while it is open.

A closed expander still sends its content, and the browser draws it unseen: charts, widgets, the rule's
source code (and the 1.5 MB syntax highlighter it loads), tables, download buttons. A story page's first
view drew all of it, at twice the floor page's cost (docs/performance.md). Folded content is built when a
person opens it (a rerun of the fragment or page it sits in), and the fold remembers that it is open.

Whether a fold is open is kept under its own key in the session (`st.session_state[key]`), not in the
expander, so a fold whose title says what it holds (the deployment, a verdict) stays open when the title
changes, and the tour or a click elsewhere can open it (`open_fold`). Settings inside a fold keep their
values while it is closed: `state.seed_widgets` puts them back from the page's saved values.
"""

from __future__ import annotations

import contextlib

import streamlit as st

from app import state


@contextlib.contextmanager
def folded(label: str, key: str, expanded: bool = False, icon: str | None = None):
    """`with folded(...) as is_open: if is_open: ...` — build the content only when `is_open`. `expanded`:
    open until the person (or `open_fold`) says otherwise."""
    is_open = bool(st.session_state.get(key, expanded))
    box = st.expander(label, expanded=is_open, key=state.fold_box(key), icon=icon, on_change=_remember,
                      args=(key,))
    with box:
        yield is_open


def open_fold(key: str) -> None:
    """Open a fold from a callback (a tour step, a click on a chart): it is built on the rerun."""
    st.session_state[key] = True


def _remember(key: str) -> None:
    st.session_state[key] = bool(st.session_state[state.fold_box(key)])
