"""End to end in headless Chromium: open the cost-model panel, change a figure, see the headline, the charts
and the pass breakdown move, and the link keep it. Run: pytest -m browser tests/test_browser_cost.py"""

from __future__ import annotations

import pytest
from test_browser import headline, page, settle, unfold  # noqa: F401 (fixtures)

from conftest import tab

pytestmark = pytest.mark.browser

PANEL = "Cost model: what a forward pass costs"
CHART_SPECS = """() => [...document.querySelectorAll('[data-testid="stVegaLiteChart"]')].length"""


def cost_panel(pg):
    return pg.locator('[data-testid="stExpander"]').filter(has_text=PANEL).first


def pass_took(pg) -> str:
    return (pg.locator('[data-testid="stMarkdownContainer"]').filter(has_text="The pass took")
            .first.inner_text())


STEPS = ("Step through the scheduler's decisions",)  # the fold with the pass under the cursor


def test_a_lower_gemm_efficiency_moves_the_headline_and_the_pass_under_the_cursor(server, page):  # noqa: F811
    page.goto(server + "/forty_replies")
    settle(page)
    unfold(page, STEPS)
    before, took_before = headline(page, "The log's first token"), pass_took(page)
    page.get_by_text(PANEL).click()
    field = cost_panel(page).get_by_role("spinbutton", name="GEMM MFU")
    assert field.get_attribute("placeholder") == "0.8 (preset)"
    field.fill("0.2")
    field.press("Enter")
    page.wait_for_url("**gemm_mfu=0.2**", timeout=60_000)
    settle(page)
    after = headline(page, "The log's first token")
    assert float(after.split()[0]) > 1.3 * float(before.split()[0])  # "18.2 s" against "12.9 s"
    assert pass_took(page) != took_before
    assert field.is_visible() and field.input_value() == "0.2"  # the panel stayed open
    assert page.evaluate(CHART_SPECS) >= 3  # the breakdown's bar, the pass timeline, the token streams
    other = tab(page.context)
    try:
        other.goto(page.url)
        settle(other)
        assert headline(other, "The log's first token") == after
    finally:
        other.close()


def test_turning_overlap_off_shows_the_cpu_time_before_the_kernels(server, page):  # noqa: F811
    page.goto(server + "/forty_replies?t=0.532")
    settle(page)
    unfold(page, STEPS)
    before = headline(page, "Streams' p99 gap")
    assert "hid behind the GPU" in pass_took(page)
    page.get_by_text(PANEL).click()
    (cost_panel(page).locator('[data-testid="stCheckbox"]').filter(has_text="Overlap schedule")
     .locator("label").click())
    page.wait_for_url("**overlap=0**", timeout=60_000)
    settle(page)
    assert "Overlap schedule off" in pass_took(page)
    assert headline(page, "Streams' p99 gap") != before  # 20 ms -> 23 ms
    assert page.locator('[data-testid="stException"]').count() == 0
