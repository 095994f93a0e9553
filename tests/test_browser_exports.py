"""Exports from the running app, in headless Chromium: what a person downloads is what they can paste.

A chart's SVG carries its title, the page's settings and headline and no cursor; "Export → standalone page"
gives one self-contained HTML file; Compare gives one side-by-side PNG. Reuses tests/test_browser.py's
fixtures. Run: pytest -m browser tests/test_browser_exports.py
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from PIL import Image
from story_runs import longest_pause
from test_browser import page, settle, unfold  # noqa: F401  (fixtures)

from app.present.export import EXPORT_WIDTH
from bench.browser import start_streamlit

from conftest import need_chromium

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def builder():
    """A second app process for the two figure exports (each builds a whole figure: ~20 CPU-s), so they run
    on the other core instead of holding the suite's one shared server, which every browser test's page
    runs go through (docs/performance.md, "Test suite")."""
    need_chromium()
    proc, url = start_streamlit(script="app/main.py")
    yield url
    proc.terminate()
    proc.wait(timeout=10)


def download(page, click, timeout_s: float = 120) -> tuple[str, bytes]:  # noqa: F811
    with page.expect_download(timeout=timeout_s * 1000) as info:
        click()
    return info.value.suggested_filename, Path(info.value.path()).read_bytes()


def test_a_story_chart_exports_as_svg_with_title_and_settings_and_no_cursor(server, page):  # noqa: F811
    page.goto(server + "/forty_replies?mixed=1&t=2.0")
    settle(page)
    row = page.locator('[data-testid="stHorizontalBlock"]',
                       has=page.get_by_text("Token streams: who got a token, and when", exact=True)).last
    row.get_by_role("button", name="Export").click()
    dialog = page.get_by_role("dialog", name="Export")
    name, data = download(page, lambda: dialog.get_by_role("button", name="SVG").click())
    svg = data.decode()
    assert name == "forty_replies-tokens.svg"
    assert "Token streams: who got a token, and when" in svg
    assert "SGLang flags: Mixed chunk: on · Chunk size: 8,192 (auto, from GPU memory)" in svg
    pause = longest_pause("forty_replies", "streams", (("mixed", True),))
    assert f"Longest pause, the 40 streams: {pause} (SGLang" in svg
    assert "cursor" not in svg


def test_the_standalone_page_button_gives_one_file_that_opens_where_the_person_was(builder, page):  # noqa: F811
    page.goto(builder + "/forty_replies?mixed=1&streams=20")
    settle(page)
    unfold(page, ("Export",), pd=False)  # the foot's exports are a fold: built when opened
    button = page.get_by_role("button", name="Export → standalone page (HTML)")
    name, data = download(page, button.click)
    text = data.decode()
    assert name == "forty_replies.html" and len(data) < 3_000_000
    assert text.startswith("<?xml") and "wwMount(" in text
    assert re.search(r'name="ww-\w+-mixed" value="1" checked="checked"', text)  # mixed on, as on the page
    assert "Longest pause, the 20 streams" in text  # the page's 20 streams hold for every run


def test_the_ten_oclock_page_exports_the_pd_figure(builder, page):  # noqa: F811
    page.goto(builder + "/ten_oclock_rush")
    settle(page, timeout_s=120)
    unfold(page, ("Export",), pd=False)
    name, data = download(page, page.get_by_role("button", name="Export → PD figure (HTML)").click, 240)
    text = data.decode()
    assert name == "pd.html" and "PD, prefill_complete" in text and "The upstream test replica" in text


def test_compare_exports_a_and_b_as_one_image(server, page):  # noqa: F811
    page.goto(server + "/compare")
    settle(page, timeout_s=120)
    unfold(page, ("Pass timelines",), pd=False)  # the image holds them: its button is built in their fold
    button = page.get_by_role("button", name="Export A and B as one image (PNG)")
    name, data = download(page, button.click)
    image = Image.open(io.BytesIO(data))
    assert name == "forty_replies-a-vs-b.png" and image.format == "PNG"
    assert image.size[0] < 2 * 1.2 * EXPORT_WIDTH  # one chart wide (at scale 2): one chart over the other
