"""In headless Chromium at 1440 wide: every chart fits its column (nothing cut off at the right edge), the
PD step of the tour opens the upstream preset, and the cards say before -> after for the step they narrate.

Run: pytest -m browser tests/test_browser_truth.py
"""

from __future__ import annotations

import pytest
from story_runs import retractions
from test_browser import browser, settle  # noqa: F401  (fixtures)

from engine_model import STORIES

pytestmark = pytest.mark.browser

OVERFLOW = """() => [...document.querySelectorAll('[data-testid="stVegaLiteChart"]')].map(chart => {
  const drawn = chart.querySelector('canvas, svg');
  const box = chart.getBoundingClientRect(), inner = drawn.getBoundingClientRect();
  return [Math.round(inner.right - box.right), Math.round(inner.width)];
})"""


@pytest.fixture
def page(browser):  # noqa: F811
    context = browser.new_context(viewport={"width": 1440, "height": 2000})
    pg = context.new_page()
    yield pg
    context.close()


def open_drawn(page, url: str, num_charts: int) -> None:
    """Open a page and wait until at least `num_charts` charts are drawn and the page is still."""
    page.goto(url)
    page.wait_for_function(f"() => document.querySelectorAll('[data-testid=\"stVegaLiteChart\"] canvas, "
                           f"[data-testid=\"stVegaLiteChart\"] svg').length >= {num_charts}", timeout=240_000)
    settle(page, timeout_s=180)


@pytest.mark.parametrize(("path", "num_charts"),
                         [("/forty_replies", 5), ("/ten_oclock_rush", 12), ("/compare", 6)])
def test_every_chart_fits_its_column(server, page, path, num_charts):  # noqa: F811
    open_drawn(page, server + path, num_charts)
    found = page.evaluate(OVERFLOW)
    assert found and all(width > 0 for _, width in found)
    assert [over for over, _ in found if over > 1] == []  # no chart drawn past its column's right edge


def test_the_more_kv_step_shows_before_to_after_on_the_card(server, page):  # noqa: F811
    open_drawn(page, server + "/other_stall", 5)
    page.get_by_role("button", name="6. More KV is the fix").click()
    page.wait_for_function("() => location.search.includes('pool=120000')", timeout=120_000)
    settle(page, timeout_s=180)
    card = page.locator('[data-testid="stMetric"]').filter(has_text="Requests pushed back").first
    settings = tuple(sorted(STORIES["other_stall"].tour[5].settings.items()))
    before, after = retractions("other_stall"), retractions("other_stall", settings)
    assert after < before
    assert card.locator('[data-testid="stMetricValue"]').inner_text() == f"{before} → {after}"
