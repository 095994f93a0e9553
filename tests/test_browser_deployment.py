"""End to end in headless Chromium: a person picks the buyer's deployment on a story page. 70B on one H100
is refused with the fix, and the address bar keeps the model (a shared link says the same, never silently
the old model); TP 8 then runs it with the GPU count on screen, and the copied link reopens it.
Run: pytest -m browser tests/test_browser_deployment.py
"""

from __future__ import annotations

import pytest
from test_browser import page, settle  # noqa: F401 - the fixtures

from bench.browser import open_list

from conftest import tab

pytestmark = pytest.mark.browser
SHOWN = "8 × H100 SXM 80GB, TP 8"


def pick(page, label: str, option: str) -> None:  # noqa: F811
    open_list(page, label, option).click()
    page.wait_for_timeout(500)
    settle(page)


def test_a_refused_model_stays_in_the_link_and_tp8_runs_it(server, page):  # noqa: F811
    page.goto(server + "/forty_replies")
    settle(page)
    page.locator("summary").filter(has_text="Deployment:").first.click()
    pick(page, "Model", "Llama-3.1-70B")
    error = page.locator('[data-testid="stAlertContentError"]').first.inner_text()
    assert "This combination cannot run." in error and "Fix: TP 4" in error
    assert "model=llama-3.1-70b" in page.url  # the link says what is on screen
    pick(page, "Tensor parallel", "TP 8")
    assert page.locator('[data-testid="stAlertContentError"]').count() == 0
    caption = page.locator('[data-testid="stCaptionContainer"]').filter(has_text=SHOWN)
    assert "GiB on each of the 8 GPUs" in caption.first.inner_text()
    assert "model=llama-3.1-70b" in page.url and "tp=8" in page.url
    other = tab(page.context)
    try:
        other.goto(page.url)
        settle(other)
        shown = other.locator('[data-testid="stCaptionContainer"]').filter(has_text=SHOWN)
        assert "GiB on each of the 8 GPUs" in shown.first.inner_text()
    finally:
        other.close()
