"""Presenter mode: large type, no sidebar, a way back on the page. Turned on by a sidebar switch or
?present=1."""

from __future__ import annotations

import streamlit as st

from app import state

PRESENTER_CSS = """
<style>
html { font-size: 21px !important; }
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"], [data-testid="collapsedControl"] { display: none; }
[data-testid="stMetricValue"] { font-size: 2.1rem !important; }
[data-testid="stMainBlockContainer"] { max-width: 100% !important; padding-left: 2rem; padding-right: 2rem; }
</style>
"""


def presenter_ui() -> bool:
    """Sidebar switch (and ?present=1). In presenter mode: large type, no sidebar, a way back on the page."""
    presenting = state.is_presenting()
    if presenting:
        st.html(PRESENTER_CSS)
        if st.button("Leave presenter mode", key=state.LEAVE_PRESENT):
            st.session_state[state.PRESENTING] = False
            st.rerun()
    else:
        st.sidebar.toggle("Presenter mode", key=state.PRESENT_TOGGLE, on_change=_enter_presenter,
                          help="Large type, no sidebar. Or add ?present=1 to a link.")
    return presenting


def _enter_presenter() -> None:
    st.session_state[state.PRESENTING] = True
    st.session_state[state.PRESENT_TOGGLE] = False
