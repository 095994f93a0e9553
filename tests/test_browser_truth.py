"""In headless Chromium at 1440 wide: the PD step of the tour opens the upstream preset, and the cards say
before -> after for the step they narrate. (Every chart fitting its column: tests/test_browser_room.py.)

Run: pytest -m browser tests/test_browser_truth.py
"""

from __future__ import annotations

import pytest
from story_runs import retractions
from test_browser import settle

from engine_model import STORIES

from conftest import tab

pytestmark = pytest.mark.browser


@pytest.fixture
def page(context):
    pg = tab(context, 1440)
    yield pg
    pg.close()


def open_drawn(page, url: str, num_charts: int) -> None:
    """Open a page and wait until at least `num_charts` charts are drawn and the page is still."""
    page.goto(url)
    page.wait_for_function(f"() => document.querySelectorAll('[data-testid=\"stVegaLiteChart\"] canvas, "
                           f"[data-testid=\"stVegaLiteChart\"] svg').length >= {num_charts}", timeout=240_000)
    settle(page, timeout_s=180)


def test_the_more_kv_step_shows_before_to_after_on_the_card(server, page):  # noqa: F811
    open_drawn(page, server + "/other_stall", 1)  # a first view draws the token streams
    page.get_by_role("button", name="6. More KV is the fix").click()
    page.wait_for_function("() => location.search.includes('pool=120000')", timeout=120_000)
    settle(page, timeout_s=180)
    kv = page.locator('[data-testid="stVegaLiteChart"]').filter(has_text="KV slots")
    assert kv.count() == 1 and kv.first.is_visible()  # the step is about the pool: it opened its fold
    card = page.locator('.ww-card').filter(has_text="Requests pushed back").first
    settings = tuple(sorted(STORIES["other_stall"].tour[5].settings.items()))
    before, after = retractions("other_stall"), retractions("other_stall", settings)
    assert after < before
    assert card.locator('.ww-card-value').inner_text() == f"{before} → {after}"
