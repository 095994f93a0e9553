"""Who Waits: the Streamlit entry point. `streamlit run app/main.py`, or `streamlit run app/serve.py` (what
scripts/serve.sh runs): the same pages, with the caches warmed at start-up (app/warm.py).

Builds the navigation over app/app_pages/, applies presenter mode and the room (app/room/ui.py: the
presenter's view is published after each run, a follower's bar follows it); each page draws itself.
"""

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # `streamlit run app/main.py` puts app/ on the path, not the repo root
    sys.path.insert(0, str(REPO))

import streamlit as st  # noqa: E402

from app import state  # noqa: E402
from app.room import ui as room  # noqa: E402
from app.ui.css import no_cut_ui  # noqa: E402
from app.ui.presenter import presenter_ui  # noqa: E402

# An emoji icon becomes an inline SVG; a `:material/...:` page icon is fetched from Google's font host,
# which a meeting room without internet cannot reach (tests/test_browser_room.py counts such requests).
st.set_page_config(page_title="Who Waits", page_icon="⌛", layout="wide")

PAGES = [
    st.Page("app_pages/home.py", title="Home", icon=":material/hourglass_top:", default=True),
    st.Page("app_pages/forty_replies.py", title="The forty replies", icon=":material/forum:",
            url_path="forty_replies"),
    st.Page("app_pages/other_stall.py", title="The other stall", icon=":material/memory:",
            url_path="other_stall"),
    st.Page("app_pages/ten_oclock_rush.py", title="Ten o'clock rush", icon=":material/schedule:",
            url_path="ten_oclock_rush"),
    st.Page("app_pages/real_traffic.py", title="Real traffic", icon=":material/public:",
            url_path="real_traffic"),
    st.Page("app_pages/compare.py", title="Compare and sweep", icon=":material/compare_arrows:",
            url_path="compare"),
    st.Page("app_pages/your_server.py", title="Your server", icon=":material/dns:", url_path="your_server"),
    st.Page("app_pages/advise.py", title="What should I set?", icon=":material/recommend:",
            url_path="advise"),
]

no_cut_ui()
page = st.navigation(PAGES, position="hidden" if state.is_presenting() else "sidebar")
st.session_state[state.ROOM_PAGE] = page.url_path
if not presenter_ui(PAGES):
    room.join_ui()  # a follower: ?room=CODE or the sidebar's code box
    room.follower_ui(PAGES)
try:
    page.run()
finally:  # the presenter's view into the room (a page that stops early is still the view on screen)
    room.publish_view()
