"""The project's docs as one more surface: a number they quote from a run sits between two markers that say
where it comes from, and is filled from the run, as a tour's narration is, so it cannot go stale.

    <!--run other_stall pool=120000: {before:all.num_retracted} → {now:all.num_retracted}-->7 → 3<!--/run-->
    <!--page forty_replies-->1.6 MB<!--/page-->

`run STORY [control=value …]: TEMPLATE` fills TEMPLATE (app.present.numbers.narrate) from the story at its
defaults with those controls set (as the app's URL writes them), beside the story as it opened; `page KEY`
is the size of `who-waits figure KEY`; `settings STORY` the settings its page carries; `bundle` the Vega
scripts every page inlines. `python -m app.present.docs` says which differ; `--write` fills them in.
tests/test_doc_numbers.py fails when one drifts.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from app.present.grid import apply_sets, plan
from app.present.numbers import narrate
from engine_model import STORIES

ROOT = Path(__file__).resolve().parents[2]
FILES = ("README.md", "docs/app.md", "docs/figure.md")
MARK = re.compile(r"<!--(run|page|settings|bundle)\b ?(.*?)-->(.*?)<!--/\1-->", re.S)


@dataclass(frozen=True)
class Mark:
    file: str
    kind: str
    what: str
    shown: str  # the text between the markers


def marks(text: str, file: str = "") -> list[Mark]:
    return [Mark(file, m[1], m[2].strip(), m[3]) for m in MARK.finditer(text)]


def run_words(what: str, runs: Callable) -> str:
    """`STORY [control=value …]: TEMPLATE`, filled from the story's run and its baseline."""
    head, _, template = what.partition(":")
    key, *settings = head.split()
    story = STORIES[key]
    values, held = apply_sets(story, story.defaults, settings)
    now = runs(story.scenario(values, tuple(held)))
    base = runs(story.scenario(story.baseline_values(values), tuple(held)))
    return narrate(template.strip(), story, base, now)


def settings_count(key: str) -> str:
    count = 1
    for axis in plan(STORIES[key])[0]:
        count *= len(axis.values)
    return f"{count}"


def megabytes(size: int) -> str:
    return f"{size / 1e6:.1f} MB"


def wanted(mark: Mark, runs: Callable, sizes: Callable[[str], int] | None) -> str | None:
    """What a mark should say; None for a page's size when no `sizes` is given (building pages is slow)."""
    if mark.kind == "run":
        return run_words(mark.what, runs)
    if mark.kind == "settings":
        return settings_count(mark.what)
    if mark.kind == "bundle":
        from app.present.page import vega_bundle

        return megabytes(len(vega_bundle().encode()))
    return None if sizes is None else megabytes(sizes(mark.what))


def stale(runs: Callable, sizes: Callable[[str], int] | None = None,
          root: Path = ROOT) -> list[tuple[Mark, str]]:
    """Every mark of FILES whose text is not what the runs say: (mark, what it should say)."""
    out = []
    for file in FILES:
        for mark in marks((root / file).read_text(encoding="utf-8"), file):
            should = wanted(mark, runs, sizes)
            if should is not None and should != mark.shown:
                out.append((mark, should))
    return out


def fill(text: str, runs: Callable, sizes: Callable[[str], int] | None) -> str:
    def one(m: re.Match) -> str:
        should = wanted(Mark("", m[1], m[2].strip(), m[3]), runs, sizes)
        return m[0] if should is None else m[0][:m.start(3) - m.start(0)] + should + f"<!--/{m[1]}-->"

    return MARK.sub(one, text)


def page_size(key: str) -> int:
    from app.present import figure_page

    return len(figure_page(key).encode())


def main(argv: list[str] | None = None) -> int:
    from app.present.grid import _run

    p = argparse.ArgumentParser(prog="python -m app.present.docs", description=__doc__.split("\n\n")[0])
    p.add_argument("--write", action="store_true", help="fill every mark in from the runs")
    p.add_argument("--no-pages", action="store_true", help="leave the pages' sizes (each page is built)")
    args = p.parse_args(argv)
    sizes = None if args.no_pages else page_size
    if args.write:
        for file in FILES:
            path = ROOT / file
            path.write_text(fill(path.read_text(encoding="utf-8"), _run, sizes), encoding="utf-8")
    found = stale(_run, sizes)
    for mark, should in found:
        print(f"{mark.file}: <!--{mark.kind} {mark.what}--> says {mark.shown!r}; the runs say {should!r}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
