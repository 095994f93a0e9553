"""The numbers the README, docs/app.md and docs/figure.md quote from a run are the runs'
(app/present/docs.py): each sits between markers naming the story, its settings and the figure, and is
filled by the tour's own narration. The pages' sizes are checked where the pages are built
(tests/test_figure.py).
"""

from __future__ import annotations

import re

import pytest
from story_runs import scenario_run

from app.present import docs

pytestmark = pytest.mark.xdist_group("figures")  # the runs' cache: the same stories as the figure tests


def test_every_number_the_docs_quote_from_a_run_is_what_the_run_says():
    found = docs.stale(scenario_run)
    assert [(m.file, m.what, m.shown, should) for m, should in found] == []


def test_the_claims_that_went_stale_before_are_marked():
    """The freeze and the trickle, real traffic's stall, "More KV" (7 → 2 where the docs once said it
    stayed), the settings and sizes of the pages."""
    marked = [m for file in docs.FILES for m in docs.marks((docs.ROOT / file).read_text(), file)]
    whats = {(m.file, m.kind, m.what) for m in marked}
    for expected in [("docs/app.md", "run", "forty_replies: {now:streams.max_itl_s.max}"),
                     ("docs/app.md", "run", "forty_replies mixed=1: {now:streams.max_itl_s.max}"),
                     ("docs/app.md", "run", "real_traffic mixed=1: {now:all.max_itl_s.max}"),
                     ("docs/app.md", "run", "other_stall pool=120000: {before:all.num_retracted} → "
                                            "{now:all.num_retracted}"),
                     ("docs/figure.md", "settings", "forty_replies"),
                     ("docs/figure.md", "page", "ten_oclock_rush_pd"),
                     ("README.md", "page", "forty_replies")]:
        assert expected in whats


def test_no_before_and_after_in_the_docs_goes_unmarked():
    """A "before → after" of numbers outside a marker is a number nobody checks."""
    for file in docs.FILES:
        text = docs.MARK.sub("", (docs.ROOT / file).read_text(encoding="utf-8"))
        loose = re.findall(r"\d[\d,.]*(?: ?m?s)? → \d", text)
        assert loose == [], file


def test_a_number_that_drifts_is_caught_and_refilled(tmp_path):
    for file in docs.FILES:
        (tmp_path / file).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / file).write_text((docs.ROOT / file).read_text(encoding="utf-8"), encoding="utf-8")
    app = tmp_path / "docs" / "app.md"
    text = app.read_text(encoding="utf-8")
    drifted = re.sub(r"(<!--run forty_replies: \{now:streams.max_itl_s.max\}-->)[^<]*", r"\g<1>12.8 s", text)
    app.write_text(drifted, encoding="utf-8")
    found = docs.stale(scenario_run, root=tmp_path)
    assert [(m.file, m.shown) for m, _ in found] == [("docs/app.md", "12.8 s")]
    assert docs.fill(drifted, scenario_run, None) == text
