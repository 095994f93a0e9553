"""What the app writes as HTML inside Markdown elements, read back in Streamlit's AppTest as a browser reads
it: the cards (app/ui/cards.py writes a row of cards as one element) and numbered log lines
(app/ui/markup.py)."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from html.parser import HTMLParser

from streamlit.testing.v1 import AppTest

from app.ui.cards import ROW


@dataclass
class Shown:
    label: str = ""
    value: str = ""
    delta: str = ""  # "-10.8 s (-86%)"
    arrow: str = ""  # "↓" | "↑"
    tone: str = ""  # "good" | "bad" | "split" (a percentile up because a stall was split) | "" (no change)
    help: str = ""
    band: str = ""  # "range 5.8–9.8 s"
    why: str = ""  # beside a split stall's change


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.cards: list[Shown] = []
        self.part: str | None = None

    def handle_starttag(self, tag, attrs):
        classes = dict(attrs).get("class", "").split()
        if "ww-card" in classes:
            self.cards.append(Shown())
        for part in ("label", "value", "delta", "band", "why"):
            if f"ww-card-{part}" in classes:
                self.part = part
                if part == "delta":
                    self.cards[-1].tone = next(t for t in ("good", "split", "bad") if f"ww-{t}" in classes
                                               or t == "bad")
        if "ww-help" in classes:
            self.cards[-1].help = dict(attrs)["data-help"]
            self.part = "help"

    def handle_endtag(self, tag):
        if self.part == "help":
            self.part = "label"
        elif tag == "div":
            self.part = None

    def handle_data(self, data):
        if self.part in ("label", "value", "delta", "band", "why"):
            card = self.cards[-1]
            setattr(card, self.part, getattr(card, self.part) + data)


def read(markup: str) -> list[Shown]:
    reader = _Reader()
    reader.feed(markup)
    for card in reader.cards:
        card.arrow, card.delta = card.delta[:1], card.delta[1:].strip()
    return reader.cards


def cards_of(at: AppTest) -> list[Shown]:
    """Every card on the page, row after row."""
    return [card for m in at.markdown if f'class="{ROW}"' in m.value for card in read(m.value)]


def lines_of(at: AppTest) -> str:
    """Every block of numbered log lines on the page, as text, a line a line."""
    blocks = [m.value for m in at.markdown if m.value.startswith('<div class="ww-lines"')]
    return "\n".join(html.unescape(re.sub(r"<[^>]+>", "", b.replace("</div><div>", "\n"))) for b in blocks)
