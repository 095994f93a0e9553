"""A figure's caption in plain text, with its credit line: "Figure 1. The forty replies. … Source: Who Waits
model of the SGLang 0.5.23 scheduler (…), seed 1; simulated, not measured. Licence: …". One builder: the
EPUB sets it under each figure and `who-waits figure … --out F.html` writes it beside the page as F.txt, for
the book's or the post's own caption.
"""

from __future__ import annotations

import functools
import re
import textwrap
import tomllib
from pathlib import Path

from app.present.page import Figure
from app.present.settings import deployment_line
from engine_model import Scenario

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def source_line(scenario: Scenario) -> str:
    """What ran, in the words a credit line takes."""
    return (f"Who Waits model of the SGLang {scenario.engine.version} scheduler "
            f"({deployment_line(scenario)}), seed {scenario.seed}; simulated, not measured on a GPU")


@functools.cache
def licence() -> str:
    """The project's licence as pyproject.toml states it (an SPDX expression, or its text), else where to
    read it."""
    try:
        project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8")).get("project", {})
    except (OSError, tomllib.TOMLDecodeError):
        project = {}
    stated = project.get("license")
    if isinstance(stated, dict):
        stated = stated.get("text") or (f"see {stated['file']}" if stated.get("file") else None)
    return str(stated).strip() if stated else "see the project's LICENSE and NOTICE files"


def caption(figure: Figure, number: int = 1) -> str:
    """The figure's caption: its number, title and teaser, then the credit line (what ran: Figure.source)
    and the licence."""
    return caption_of(figure.title, figure.teaser, figure.source, number)


def caption_of(title: str, teaser: str, source: str, number: int = 1) -> str:
    """`caption` from its parts (the app's export, which has the story and its scenario but no figure)."""
    teaser = re.sub(r"\*([^*]+)\*", r"\1", teaser.strip())  # the teaser's *emphasis*, as plain text
    credit = f"Source: {source.rstrip('.')}." if source else "Source: Who Waits."
    parts = (f"Figure {number}. {title.rstrip('.')}.", teaser, credit, f"Licence: {licence().rstrip('.')}.")
    return " ".join(p for p in parts if p)


def caption_text(text: str) -> str:
    """The caption as a .txt file: wrapped at 100 characters, one trailing newline."""
    return textwrap.fill(text, 100, break_on_hyphens=False) + "\n"
