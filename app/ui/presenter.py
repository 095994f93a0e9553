"""Presenter mode: large type, no sidebar, and a bar on the page to move between stories and to leave.
Turned on by a sidebar switch or ?present=1. The bar shows the room's code and its QR code
(app/room/ui.py): followers see what the presenter shows.

It is laid out for one 1080p screen: on a story page the headline cards and the token streams lie within
the first 1,080 px without scrolling (tests/test_browser_room.py); charts get larger labels too
(app.present.shown.room_spec).
"""

from __future__ import annotations

import streamlit as st

from app import state
from app.room.ui import presenter_room_ui

PRESENTER_CSS = """
<style>
html { font-size: 18px !important; }
[data-testid="stMain"] [data-testid="stVerticalBlock"] { gap: 0.6rem !important; }
.st-key-headline [data-testid="stExpander"] { display: none; }
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"], [data-testid="collapsedControl"],
[data-testid="stHeader"] { display: none; }
[data-testid="stMainBlockContainer"] { max-width: 100% !important;
  padding: 0.5rem 2rem 2rem 2rem !important; }
[data-testid="stMain"] h1 { font-size: 2rem !important; padding: 0.2rem 0 !important; }
.ww-card-value { font-size: 1.9rem !important; }
</style>
"""


def presenter_ui(pages: list) -> bool:
    """Sidebar switch (and ?present=1). In presenter mode: large type, no sidebar, a bar with every page
    and the way back. Returns whether presenter mode is on."""
    presenting = state.is_presenting()
    if not presenting:
        st.sidebar.toggle("Presenter mode", key=state.PRESENT_TOGGLE, on_change=_enter_presenter,
                          help="Large type, no sidebar. Or add ?present=1 to a link.")
        return False
    st.html(PRESENTER_CSS)
    with st.container(horizontal=True, vertical_alignment="center", gap="small", key=state.PRESENT_BAR):
        for page in pages:
            st.page_link(page, label=page.title, icon=page.icon, query_params={state.PRESENT: "1"})
        presenter_room_ui()  # the room's code, and its QR code in a popover
        st.button("Leave presenter mode", key=state.LEAVE_PRESENT, on_click=_leave_presenter,
                  icon=":material/close_fullscreen:")
    return True


def _enter_presenter() -> None:
    st.session_state[state.PRESENTING] = True
    st.session_state[state.PRESENT_TOGGLE] = False


def _leave_presenter() -> None:
    st.session_state[state.PRESENTING] = False
