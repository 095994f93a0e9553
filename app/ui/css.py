"""The app's own CSS: nothing a person reads is cut off, at any width a room uses (1280 to 1920 px wide).

Streamlit cuts long widget labels and button text with an ellipsis ("Mixe…", "E…"); here they wrap
instead, as a card's value does (app/ui/cards.py). tests/test_browser_room.py checks every label, value and
button at three widths. While a rerun is on its way, the numbers it will replace fade at once and say
"updating…".
"""

from __future__ import annotations

import streamlit as st

from app.ui import cards, markup

NO_CUT = """
<style>
[data-testid="stWidgetLabel"] *, button .stMarkdownEllipsis,
button .stMarkdownEllipsis p, [data-testid="stPageLink"] * {
  white-space: normal !important; overflow: visible !important; text-overflow: clip !important;
}
[data-testid="stWidgetLabel"] { height: auto !important; min-height: 1.5rem; }
/* The tour's buttons, one flex block, share its width equally, as columns did */
.st-key-tour_row > .stElementContainer:has(.stButton) { flex: 1 1 0 !important; min-width: 0 !important; }
.st-key-tour_row { align-items: stretch !important; }  /* the step buttons one height, however they wrap */
.st-key-tour_row > .stElementContainer { align-self: center; }
.st-key-tour_row > .stElementContainer:has(.stButton) {
  align-self: stretch; min-width: min-content !important;  /* never narrower than its longest word */
}
.st-key-tour_row .stButton, .st-key-tour_row .stButton button { height: 100%; }
.st-key-tour_row .stButton * { overflow-wrap: normal !important; word-break: normal !important; }
/* An element that is only a script (the tour's keys, the scroll to "Look here") takes no place and no gap */
.stElementContainer:has(> .stHtml > script:only-child) { display: none !important; }
/* While a rerun has not yet redrawn them, the numbers and the tour's words fade at once and say so: the
   previous step's numbers never pass for the new ones. */
.stElementContainer[data-stale="true"] .ww-cards,
.stElementContainer[data-stale="true"] [data-testid="stAlert"] {
  opacity: 0.3 !important; transition: none !important;
}
.stElementContainer[data-stale="true"] .ww-cards { flex-wrap: wrap; }  /* "updating…" on a line of its own */
.stElementContainer[data-stale="true"] .ww-cards::after {
  content: "updating…"; display: block; flex-basis: 100%; font-size: 0.8rem; color: #555;
}
</style>
""".replace("</style>", cards.CSS + markup.CSS + "</style>")


def no_cut_ui() -> None:
    """Let labels, card values and button text wrap rather than end in an ellipsis."""
    st.html(NO_CUT)
