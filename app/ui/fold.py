"""An expander whose content is built only while it is open.

A closed expander still sends its content, and the browser draws it unseen: the rule's source code (and
the 1.5 MB syntax highlighter it loads), a table, download buttons. On a story page's first view
that was about half a second of the browser's time (docs/performance.md). Folded content is built when a
person opens it (a rerun of the fragment or page it sits in), and the expander remembers that it is open.

Only for content without settings: a widget that is not drawn loses its value.
"""

from __future__ import annotations

import contextlib

import streamlit as st


@contextlib.contextmanager
def folded(label: str, key: str, expanded: bool = False, icon: str | None = None):
    """`with folded(...) as is_open: if is_open: ...` — build the content only when `is_open`."""
    box = st.expander(label, expanded=expanded, key=key, icon=icon, on_change="rerun")
    with box:
        yield bool(box.open)
