"""Read back a table a page draws as one Markdown element (app.present.fmt.markdown_table) in AppTest."""

from __future__ import annotations

import re

import pandas as pd
from streamlit.testing.v1 import AppTest


def markdown_table(at: AppTest, first: str) -> pd.DataFrame:
    """The Markdown table whose first column is headed `first`, as the text its cells show, its first column
    the index; an empty frame when the page has none."""
    text = next((m.value for m in at.markdown if m.value.startswith(f"| {first} |")), "")
    rows = [[_cell(c) for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]] for line in text.splitlines()]
    if not rows:
        return pd.DataFrame()
    return pd.DataFrame(rows[2:], columns=rows[0]).set_index(first)


def _cell(text: str) -> str:
    """A cell's text as the page shows it: Markdown escapes (app.present.fmt.escaped) undone."""
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", text.strip())
