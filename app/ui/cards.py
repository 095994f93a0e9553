"""A row of cards: a label, a value, the change and a note on each, as one Markdown element.

One element per row, not one `st.metric` per card: each st.metric is its own React subtree with its own
tooltip, and a story opens with eight; as one element a row saves a story's first view 0.02–0.06 s of the
browser's main thread (docs/performance.md, "2026-12-04, second session"), and every surface's cards are
one type. The cards look as st.metric's did: a bordered box, the label small, the value large, the change
under it with an arrow, green when it is better and red when it is worse; grey, with its reason under it in
green, when a percentile rose only because a stall was split into short gaps (a fix, not a regression). A
note sits behind a "?" that shows it on hover or keyboard focus. Every text is escaped (app/ui/markup.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import streamlit as st

from app.ui.markup import text

ROW = "ww-cards"  # the class of a row; tests/markup.py reads the cards back by it


@dataclass(frozen=True)
class Card:
    label: str
    value: str
    delta: str | None = None  # "+1.3 s (+6645%)": its sign picks the arrow
    better: str = "lower"  # which way the change is good: "lower" | "higher" (its colour)
    help: str = ""
    band: str = ""  # "5.8–9.8 s": the value's range where the evidence is thin (engine_model.band)
    why: str = ""  # why a change is not what its sign says (a split stall): beside it; the change grey


def card_html(card: Card) -> str:
    note = (f'<span class="ww-help" tabindex="0" role="note" aria-label="{text(card.help)}" '
            f'data-help="{text(card.help)}">?</span>' if card.help else "")
    out = (f'<div class="ww-card"><div class="ww-card-label">{text(card.label)}{note}</div>'
           f'<div class="ww-card-value">{text(card.value)}</div>')
    if card.delta:
        down = card.delta.lstrip().startswith(("-", "−"))
        good = down == (card.better == "lower")
        tone = "split" if card.why else "good" if good else "bad"
        out += (f'<div class="ww-card-delta ww-{tone}">'
                f'<span aria-hidden="true">{"↓" if down else "↑"}</span> {text(card.delta)}</div>')
        if card.why:
            out += f'<div class="ww-card-why">{text(card.why)}</div>'

    if card.band:
        out += f'<div class="ww-card-band">range {text(card.band)}</div>'
    return out + "</div>"


def row_html(cards: Sequence[Card]) -> str:
    return f'<div class="{ROW}">' + "".join(card_html(c) for c in cards) + "</div>"


def cards_ui(cards: Sequence[Card], title: str = "") -> None:
    """One row of cards, equal in width (on a phone, wrapping onto more rows), a value wrapping at the arrow
    of "before → after" when its card is narrow; `title` (Markdown, a heading) above them in the same
    element."""
    if cards:
        st.markdown(f"{title}\n\n{row_html(cards)}" if title else row_html(cards), unsafe_allow_html=True)


CSS = """
.ww-cards { display: flex; gap: 1rem; align-items: stretch; margin-bottom: 0.5rem; }
.ww-card { flex: 1 1 0; min-width: 0; border: 1px solid rgba(49, 51, 63, 0.2); border-radius: 0.5rem;
  padding: calc(1rem - 1px); }
.ww-card-label { font-size: 0.875rem; line-height: 1.4; margin-bottom: 0.25rem; }
.ww-card-value { font-size: 2.25rem; line-height: 1.25; overflow-wrap: normal; }
.ww-card-delta { font-size: 0.875rem; margin-top: 0.25rem; }
.ww-card-band { font-size: 0.75rem; line-height: 1.2; margin-top: 0.125rem; color: #8a5a00; }
.ww-card-delta.ww-good { color: #177233; }
.ww-card-delta.ww-bad { color: #bd1f2d; }
.ww-card-delta.ww-split { color: #555555; }  /* a rise that is not worse: its reason beside it */
.ww-card-why { font-size: 0.8rem; line-height: 1.3; margin-top: 0.125rem; color: #177233; }
.ww-help { position: relative; display: inline-block; width: 1rem; height: 1rem; margin-left: 0.35rem;
  border: 1px solid rgba(49, 51, 63, 0.6); border-radius: 50%; font-size: 0.7rem; line-height: 0.95rem;
  text-align: center; color: rgba(49, 51, 63, 0.75); cursor: help; vertical-align: 0.05rem; }
.ww-help:hover::after, .ww-help:focus::after { content: attr(data-help); position: absolute; left: 0;
  top: 1.4rem; z-index: 1000; width: 18rem; padding: 0.5rem 0.75rem; border-radius: 0.5rem;
  background: #262730; color: #fff; font-size: 0.85rem; line-height: 1.4; text-align: left;
  white-space: normal; }
.ww-card:last-child .ww-help::after { left: auto; right: 0; }  /* the note stays on the page */
.ww-card { container-type: inline-size; }  /* a narrow card (eight a row at 1440 px) sizes its text */
@container (max-width: 13rem) {  /* specific enough to win over presenter mode's larger type */
  .ww-cards .ww-card .ww-card-value { font-size: max(1.25rem, 15cqi) !important; }
  .ww-cards .ww-card .ww-card-label { font-size: 0.8rem; line-height: 1.3; }
  .ww-cards .ww-card .ww-card-delta, .ww-cards .ww-card .ww-card-band { font-size: 0.78rem; }
}
@media (max-width: 640px) {  /* a phone: two or three cards a row, not eight slivers */
  .ww-cards { flex-wrap: wrap; } .ww-card { min-width: 9rem; }
}
"""
