"""End to end in headless Chromium: open "Your server", pick the retraction sample, see the KV verdict.

Reuses tests/test_browser.py's server / browser / page fixtures and its settle(). Run:
pytest -m browser tests/test_browser_server.py
"""

from __future__ import annotations

import pytest
from test_browser import browser, page, server, settle  # noqa: F401  (fixtures)

pytestmark = pytest.mark.browser


def test_picking_the_retraction_sample_shows_the_kv_verdict(server, page):  # noqa: F811
    page.goto(server + "/your_server?log=chunk")
    settle(page)
    main = page.locator('[data-testid="stMain"]').inner_text()
    assert "it is a queue ramp under prefill-first admission" in main
    page.get_by_text("Docs CI, Qwen2.5-0.5B: KV pool capped (retraction)").click()
    page.wait_for_function("() => document.querySelector('[data-testid=\"stMain\"]').innerText"
                           ".includes('Verdict: it is the KV stall')", timeout=60_000)
    settle(page)
    text = page.locator('[data-testid="stMain"]').inner_text()
    assert "Verdict: it is the KV stall" in text
    assert "Decode out of memory happened. #retracted_reqs: 23" in text
    assert "log=" not in page.url  # the default sample is implied
    assert page.locator('[data-testid="stException"]').count() == 0


def test_the_examples_metrics_stand_beside_its_log_with_the_itl_chart(server, page):  # noqa: F811
    page.goto(server + "/your_server?log=example&metrics=example")
    settle(page)
    main = page.locator('[data-testid="stMain"]').inner_text()
    assert "The metrics agree: from 14:00:15 to 14:00:25 no inter-token gap was recorded" in main
    assert "The replies' inter-token gaps, beside the Prefill lines" in main
    assert page.locator('[data-testid="stException"]').count() == 0
