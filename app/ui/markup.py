"""HTML the app writes into Markdown elements (one element where Streamlit would draw several, or would load a
1.5 MB syntax highlighter): every text in it escaped, so that no Markdown, LaTeX ($) or icon code (:name:)
in a label or a log line is ever read as such."""

from __future__ import annotations

import html

import streamlit as st


def text(words: str) -> str:
    """`words` as HTML text that no Markdown, LaTeX or icon code can touch, on one line."""
    return html.escape(words).replace("$", "&#36;").replace(":", "&#58;").replace("\n", " ")


def lines_ui(lines: list[tuple[int, str]]) -> None:
    """Numbered lines of a log as monospaced text, the numbers aligned, a long line wrapped under its text."""
    width = max((len(str(n)) for n, _ in lines), default=1)
    body = "".join(f"<div>{text(f'{n:>{width}} | {line}')}</div>" for n, line in lines)
    st.markdown(f'<div class="ww-lines" style="--indent: {width + 3}ch">{body}</div>', unsafe_allow_html=True)


CSS = """
.ww-lines { font-family: "Source Code Pro", monospace; font-size: 0.8rem; line-height: 1.5;
  white-space: pre-wrap; overflow-wrap: anywhere; background: rgba(240, 242, 246, 0.8); border-radius: 0.5rem;
  padding: 0.75rem 1rem; margin-bottom: 1rem; }
.ww-lines > div { padding-left: var(--indent); text-indent: calc(-1 * var(--indent)); }
"""
