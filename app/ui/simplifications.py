"""What the model simplifies: the "Simplifications" section of docs/design.md, shown at the foot of every
page.

Read at run time, so the page and the design document never disagree.
"""

from __future__ import annotations

import re
from pathlib import Path

import streamlit as st

DESIGN_DOC = Path(__file__).resolve().parents[2] / "docs" / "design.md"


def simplifications_text(path: Path = DESIGN_DOC) -> str | None:
    """The body of the first heading named 'Simplifications' up to the next heading of the same or a
    higher level (None if the file or the section is missing, or the section is empty)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return None
    match = re.search(r"^(#+)\s*Simplifications\b.*?$", text, flags=re.MULTILINE | re.IGNORECASE)
    if not match:
        return None
    level = len(match.group(1))
    rest = text[match.end():]
    end = re.search(rf"^#{{1,{level}}}\s", rest, flags=re.MULTILINE)
    return rest[: end.start() if end else len(rest)].strip() or None


REPO_FILE = re.compile(r"`?\b(docs|engine_model|app|tests)/(?:[\w-]+/)*([\w-]+)\.(md|py)`?")


def for_readers(text: str) -> str:
    """The design document's file references in words ("docs/pd.md" -> "the project's pd notes"): a page
    shows no repository paths."""
    return REPO_FILE.sub(lambda m: f"the project's {m.group(2)} {'notes' if m.group(3) == 'md' else 'code'}",
                         text)


def simplifications_ui() -> None:
    with st.expander("What the model simplifies"):
        text = simplifications_text()
        if text is None:
            st.caption("The list of simplifications (the design notes' section “Simplifications”) is not "
                       "available in this build. The model follows SGLang's scheduler as the project's notes "
                       "describe it.")
        else:
            st.markdown(for_readers(text))
