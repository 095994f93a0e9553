"""Keyboard and presentation clicker step the tour (issue 40), in headless Chromium: → / PageDown / Space the
next step, ← / PageUp the previous, Home the first; not while the focus is in a field.

Needs /usr/bin/chromium (skipped without it, failed under CI=true, as tests/test_browser.py).
Run: pytest -m browser tests/test_browser_keys.py
"""

from __future__ import annotations

import pytest

from bench.browser import wait_idle

from conftest import tab

pytestmark = pytest.mark.browser


def press_and_see(page, key: str, step: int, total: int = 8) -> None:
    page.keyboard.press(key)
    page.get_by_text(f"Step {step} of {total}").first.wait_for(timeout=60_000)
    wait_idle(page)


def test_keys_step_the_tour_and_a_field_keeps_its_own_keys(context, server):
    page = tab(context, 1440, 900)
    page.goto(f"{server}/forty_replies")  # the suite's one warm server (conftest.py)
    wait_idle(page)
    assert not page.get_by_text("Step 1 of 8").count()
    press_and_see(page, "ArrowRight", 1)
    press_and_see(page, "PageDown", 2)
    press_and_see(page, "Space", 3)
    press_and_see(page, "ArrowRight", 4)
    assert "step=4" in page.url and "mixed=1" in page.url  # the step applied, as a click applies it
    press_and_see(page, "ArrowLeft", 3)
    press_and_see(page, "PageUp", 2)
    press_and_see(page, "ArrowRight", 3)
    press_and_see(page, "Home", 1)

    # typing in a field: its keys stay its own
    field = page.get_by_role("textbox", name="Join a room")
    field.click()
    field.press("ArrowRight")
    field.press("Space")
    page.wait_for_timeout(1500)
    assert page.get_by_text("Step 1 of 8").count() and not page.get_by_text("Step 2 of 8").count()
    assert "step=1" in page.url
    page.close()
