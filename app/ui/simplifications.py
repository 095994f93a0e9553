"""What the model simplifies: the "Simplifications" section of docs/design.md, shown at the foot of every
page.

Read at run time, so the page and the design document never disagree.
"""

from __future__ import annotations

import re
from pathlib import Path

import streamlit as st

from app.ui.fold import folded

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


PATH = r"`?(?:[\w.-]+/)+[\w.-]+\.(?:py|md|toml|json)`?"  # engine_model/prefix.py, docs/pd.md, `tests/x.py`


INTERNAL = r"`[A-Z][A-Za-z]+\.\w+`"  # the model's own names: `Scheduler._land`, `Iteration.wasted_rids`
SECTION = r"\s*\(?§[\d.]+\)?"  # a section of the project's notes: "(§1.3)"


def in_words(text: str) -> str:
    """The section as a reader outside the project reads it: no file paths, none of the model's own class and
    attribute names (SGLang's names stay), no references to sections of the project's notes. A parenthesis
    holding only a path goes; 'see docs/pd.md' becomes 'see the project's documentation'; a path the sentence
    needs becomes 'a script in the project'; a path listed beside words goes."""
    text = re.sub(rf"{INTERNAL}(\s*,\s*)?", "", text)
    text = re.sub(SECTION, "", text)
    text = re.sub(rf"\(\s*{PATH}\s+(?=[a-z])", "(a script in the project ", text)
    text = re.sub(rf"\s*\(\s*{PATH}\s*\)", "", text)
    text = re.sub(rf"\bsee {PATH}", "see the project's documentation", text)
    text = re.sub(rf"\(\s*{PATH}\s*,\s*", "(", text)
    text = re.sub(rf",?\s*{PATH}", "", text)
    return tidy(text)


STRAY = re.compile(r"\(\s*\)|\(\s*[;,.]|[;,]\s*\)|[;,]\s*[;,]|\s[;,.](?!\d)|``")  # what a removal can leave


def tidy(text: str) -> str:
    """The punctuation a removed path leaves behind: '(;, "x")' -> '("x")', '(a, b; )' -> '(a, b)', an empty
    parenthesis, a space before a comma."""
    for _ in range(3):  # a removal can uncover another
        text = re.sub(r"\(\s*[;,]\s*", "(", text)
        text = re.sub(r"\s*[;,]\s*\)", ")", text)
        text = re.sub(r"([;,])\s*[;,]", r"\1", text)
        text = re.sub(r"\s*\(\s*\)", "", text)  # a parenthesis left empty
        text = re.sub(r"\(\s+", "(", text)
        text = re.sub(r"[ \t]+([,;])", r"\1", text)
    return text


def leads(text: str) -> list[str]:
    """Each simplification in one short sentence, in order: its bold lead where that is a sentence ('Tensor
    parallel within one node.'), else the bullet's first sentence; without code marks or parentheses."""
    out = []
    for bullet in re.findall(r"^- (.+?)(?=^- |\Z)", text, flags=re.MULTILINE | re.DOTALL):
        bullet = re.sub(r"\s+", " ", bullet).strip()
        bold = re.match(r"\*\*(.+?)\*\*", bullet)
        if bold and bold[1].endswith("."):
            lead = bold[1]
        else:
            lead = re.split(r"(?<=[a-z0-9)`])\.\s", bullet.replace("**", ""), maxsplit=1)[0].rstrip(".") + "."
            lead = re.split(r":\s", lead, maxsplit=1)[0].rstrip(".") + "."  # up to its explanation
        lead = re.sub(r"\s*\([^()]*\)", "", re.sub(r"`([^`]*)`", r"\1", lead))
        out.append(lead)
    return out


def simplifications_ui() -> None:
    with folded("What the model simplifies", "simplifications.open") as is_open:
        if not is_open:
            return
        text = simplifications_text()
        if text is None:
            st.caption("The list of simplifications is not available in this build. The model follows "
                       "SGLang's scheduler rule by rule, each rule named after the SGLang function it "
                       "mirrors.")
        else:  # in short first, a line each; then each one as the design document says it
            st.markdown("**In short** — the model leaves out or simplifies:\n\n"
                        + "\n".join(f"- {lead}" for lead in leads(text)))
            st.markdown("**Each one in detail** (SGLang's own names in `code`):")
            st.markdown(in_words(text))
