"""Follow the presenter: a room code and its QR code in presenter mode; followers see the presenter's page,
tour step, settings and cursor within about a second, can break away and re-join with one click.

The presenter's session writes its view (the page and its URL parameters, the link that reopens it) to the
shared store (app/room/store.py) after every run and every cursor move. A follower's page carries a fragment
that reads the room every POLL_S seconds; when the room's version moved, it opens the presenter's link as if
it were clicked: the page's own state is dropped, so the settings, the tour step (its folds and its
"Look here") and the cursor are seeded from the link (app/state.py), exactly as a shared link opens.
"""

from __future__ import annotations

import logging
import time
from urllib.parse import urlsplit

import segno
import streamlit as st

from app import state
from app.room import store as room_store
from app.ui.link import copy_link_ui

POLL_S = 1.0  # a follower's view lags the presenter's by at most this, plus one page run
RETRY_S = 60.0  # a store that could not be reached is tried again after this long, not on every run
REFRESH_S = 600.0  # a presenter whose view stays put still refreshes the room's expiry this often
NOT_FOLLOWED = (state.PRESENT, state.ROOM)  # the presenter's large type stays the presenter's
log = logging.getLogger(__name__)


@st.cache_resource(show_spinner=False)
def store() -> room_store.RoomStore:
    """The one store of this process ($WHO_WAITS_ROOM_URL: SQLite by default, Redis when configured)."""
    return room_store.open_store()


def current_view() -> dict:
    """The page on screen and the parameters that reopen it (not presenter mode, not the room)."""
    params = {k: st.query_params[k] for k in st.query_params.keys() if k not in NOT_FOLLOWED}
    return {"page": st.session_state.get(state.ROOM_PAGE, ""), "params": params}


# -- the presenter ---------------------------------------------------------------------------------------
def presenter_room_ui() -> None:
    """In presenter mode's bar: the room's code; its popover holds the QR code of the join link."""
    code = _presenter_room()
    if code is None:  # the view's link stays at hand
        with st.popover("No room (its store cannot be reached)", icon=":material/link:"):
            copy_link_ui()
        return
    link = join_link(code)
    with st.popover(f"Room {room_store.shown_code(code)}", icon=":material/groups:"):
        st.markdown(f"Join at **{link}** or scan — or enter the code **{room_store.shown_code(code)}** "
                    "in the sidebar's *Join a room*. Followers see this page, its tour step, settings and "
                    "cursor within a second.")
        st.html(f'<img data-testid="wwRoomQr" alt="QR code of {link}" src="{qr_data_uri(link)}">')
        copy_link_ui()  # this view's own link, presenter mode in it


def _presenter_room() -> str | None:
    """This session's room: the one this browser presented before a reload (its cookie), else a new one.
    The token stays in this session and in the presenter's own browser's cookie, never in a URL."""
    if state.ROOM_TOKEN not in st.session_state:
        _reclaim()
    if state.ROOM_TOKEN not in st.session_state:
        failed = st.session_state.get(state.ROOM_FAILED)
        if failed is not None and time.monotonic() - failed < RETRY_S:
            return None
        try:
            code, token = store().create(current_view())
        except Exception as err:  # a store that cannot be reached: presenting goes on without a room
            log.warning("room store: %s", err)
            st.session_state[state.ROOM_FAILED] = time.monotonic()
            return None
        st.session_state[state.ROOM_CODE], st.session_state[state.ROOM_TOKEN] = code, token
    _keep_in_browser()
    return st.session_state[state.ROOM_CODE]


def _reclaim() -> None:
    """A presenter who reloads the page (a new session) keeps their room: the browser's cookie holds the
    code and token, and the store accepts the token for that code (else a new room is opened)."""
    kept = st.context.cookies.get(state.ROOM_COOKIE)
    if not isinstance(kept, str):  # no cookie (or no browser: a test's script runner)
        return
    code, _, token = kept.partition(".")
    if not (room_store.clean_code(code) and token):
        return
    try:
        room = store().publish(room_store.clean_code(code), token, current_view())
    except Exception as err:
        log.warning("room store: %s", err)
        return
    if room is not None:
        st.session_state[state.ROOM_CODE], st.session_state[state.ROOM_TOKEN] = room.code, token


def _keep_in_browser() -> None:
    """The room's code and token into the presenter's browser (a cookie of this origin, sent back on a
    reload), once a session; it lasts as long as the room may."""
    if st.session_state.get(state.ROOM_COOKIE_SET) == st.session_state[state.ROOM_CODE]:
        return
    value = f"{st.session_state[state.ROOM_CODE]}.{st.session_state[state.ROOM_TOKEN]}"
    st.html(f"<script>document.cookie = '{state.ROOM_COOKIE}={value}; path=/; "
            f"max-age={int(room_store.TTL_S)}; SameSite=Strict';</script>", unsafe_allow_javascript=True)
    st.session_state[state.ROOM_COOKIE_SET] = st.session_state[state.ROOM_CODE]


def join_link(code: str) -> str:
    """The address followers open: this server's origin and ?room=CODE."""
    url = urlsplit(st.context.url or "")
    origin = f"{url.scheme}://{url.netloc}" if url.netloc else ""
    return f"{origin}/?{state.ROOM}={room_store.shown_code(code)}"


def qr_data_uri(link: str) -> str:
    """The join link as a QR code: an SVG drawn here (segno: no network), as a data URI (Streamlit's HTML
    element drops inline SVG)."""
    return segno.make(link, error="m").svg_data_uri(scale=7, border=2, dark="#111")


def publish_view() -> None:
    """The presenter's view into the room (when it changed, or to keep the room alive); a no-op elsewhere."""
    token = st.session_state.get(state.ROOM_TOKEN)
    if token is None or not state.is_presenting():
        return
    view, now = current_view(), time.monotonic()
    last = st.session_state.get(state.ROOM_PUBLISHED)
    if last is not None and last[0] == view and now - last[1] < REFRESH_S:
        return
    try:
        store().publish(st.session_state[state.ROOM_CODE], token, view)
    except Exception as err:
        log.warning("room store: %s", err)
        return
    st.session_state[state.ROOM_PUBLISHED] = (view, now)


# -- a follower ------------------------------------------------------------------------------------------
def join_ui() -> None:
    """The sidebar's code box; and a link's ?room=CODE joins (once per code)."""
    asked = st.query_params.get(state.ROOM)
    if asked and room_store.clean_code(asked) != st.session_state.get(state.ROOM_CODE):
        _join(asked)
    with st.sidebar.form(state.ROOM_FORM, border=False, clear_on_submit=True):
        st.text_input("Join a room", key=state.ROOM_JOIN, placeholder="ABCDE-FGHJK",
                      help="The code on the presenter's screen: follow their page, tour step and settings.")
        if st.form_submit_button("Join", icon=":material/groups:"):
            _join(st.session_state.get(state.ROOM_JOIN) or "")


def _join(text: str) -> None:
    code = room_store.clean_code(text)
    if code is None:
        st.sidebar.error(f"Room code `{text}`: expected {room_store.CODE_LEN} letters and digits "
                         f"(from {room_store.ALPHABET}), as the presenter shows them, e.g. ABCDE-FGHJK.")
        return
    if _room(code) is None:
        st.sidebar.error(f"No room {room_store.shown_code(code)}: it has ended, or the code is mistyped "
                         f"(rooms end {room_store.TTL_S // 3600} h after the presenter's last move).")
        return
    st.session_state[state.ROOM_CODE] = code
    st.session_state[state.ROOM_FOLLOWING] = True
    st.session_state[state.ROOM_APPLIED] = None


def _room(code: str):
    try:
        return store().get(code)
    except Exception as err:
        log.warning("room store: %s", err)
        return None


def follower_ui(pages: list) -> None:
    """A follower's bar at the top of the page; it polls the room and follows while following."""
    if st.session_state.get(state.ROOM_TOKEN) or state.ROOM_CODE not in st.session_state:
        return
    st.fragment(_follow, run_every=POLL_S)(pages)


def _follow(pages: list) -> None:
    code = st.session_state[state.ROOM_CODE]
    room, following = _room(code), st.session_state.get(state.ROOM_FOLLOWING, True)
    with st.container(horizontal=True, vertical_alignment="center", gap="small", key=state.ROOM_BAR):
        if room is None:
            st.caption(f":material/groups: Room {room_store.shown_code(code)} has ended.")
            return
        if following:
            st.caption(f":material/groups: Following the presenter · room {room_store.shown_code(code)}")
            if st.button("Break away to explore", key=state.ROOM_LEAVE, icon=":material/explore:"):
                st.session_state[state.ROOM_FOLLOWING] = False
                st.rerun(scope="fragment")
        else:
            st.caption(f":material/explore: Exploring on your own · room {room_store.shown_code(code)}")
            if st.button("Follow the presenter again", key=state.ROOM_REJOIN, type="primary",
                         icon=":material/groups:"):
                st.session_state[state.ROOM_FOLLOWING] = True
                _open(room, pages)
    if following and room.version != st.session_state.get(state.ROOM_APPLIED):
        _open(room, pages)


def _open(room: room_store.Room, pages: list) -> None:
    """Open the room's view as its link would open: the page's own state dropped, seeded from the link."""
    st.session_state[state.ROOM_APPLIED] = room.version
    page = room.view.get("page", "")
    target = next((p for p in pages if p.url_path == page), pages[0])
    forget_page(page)
    params = {**room.view.get("params", {}), state.ROOM: room_store.shown_code(room.code)}
    st.switch_page(target, query_params=params)


def forget_page(page: str) -> None:
    """Drop what this session keeps of `page` (its widgets, saved settings, tour step, cursor), so its next
    run reads the link alone; the PD section's too, and where the page last scrolled."""
    prefixes = tuple(f"{p}." for p in (page, state.PD_PAGE) if p)
    for key in [k for k in st.session_state if isinstance(k, str) and k.startswith(prefixes)]:
        del st.session_state[key]
    saved = st.session_state.get(state.SAVED, {})
    for key in [k for k in saved if k == page or k.startswith(f"{page}.")]:
        del saved[key]
    st.session_state.pop(state.SCROLLED_TO, None)
