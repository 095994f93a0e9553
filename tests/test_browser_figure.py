"""The standalone figure in headless Chromium: opened from disk (file://) with every network request blocked,
as HTML (a blog, an iframe) and as XHTML (an EPUB 3 page). Flipping a bound control changes what is drawn
and the headline, and the page asks for nothing. Run: pytest -m browser tests/test_browser_figure.py
"""

from __future__ import annotations

import pytest
from story_runs import longest_pause
from test_browser import _need_chromium

from bench.browser import CHROMIUM, CHROMIUM_ARGS
from engine_model.figure import figure_html

pytestmark = pytest.mark.browser

DRAWN = """() => {
  const svg = document.querySelector('#figure svg');
  const shapes = [...svg.querySelectorAll('.mark-rect path')].map(p => p.getAttribute('d')).join(';');
  const texts = [...svg.querySelectorAll('.mark-text text')].map(t => t.textContent);
  return [shapes, texts];
}"""


@pytest.fixture(scope="module")
def page_file(tmp_path_factory):
    _need_chromium()
    folder = tmp_path_factory.mktemp("figure")
    text = figure_html("forty_replies")
    for suffix in ("html", "xhtml"):
        (folder / f"forty.{suffix}").write_text(text, encoding="utf-8")
    return folder


@pytest.mark.parametrize("suffix", ["html", "xhtml"])
def test_flipping_mixed_chunk_in_the_file_redraws_and_fetches_nothing(page_file, suffix):
    from playwright.sync_api import sync_playwright

    asked, errors = [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 900, "height": 1400})
        context.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file://")
                      else (asked.append(route.request.url), route.abort()))
        page = context.new_page()
        page.on("request", lambda r: None if r.url.startswith("file://") else asked.append(r.url))
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto((page_file / f"forty.{suffix}").as_uri())
        page.wait_for_function("() => window.whoWaitsView !== undefined", timeout=30_000)
        shapes, texts = page.evaluate(DRAWN)
        page.locator("input[name='mixed'][value='1']").check()
        page.wait_for_function(f"() => ({DRAWN})()[0] !== {shapes!r}", timeout=10_000)
        shapes_on, texts_on = page.evaluate(DRAWN)
        browser.close()
    assert errors == [] and asked == []
    pause = texts.index("Longest pause, the 40 streams")
    assert texts[pause:pause + 1] == texts_on[pause:pause + 1]
    assert longest_pause("forty_replies", "streams") in texts and shapes_on != shapes
    # the streams' longest pause, mixed chunk, 8,192 chunks
    assert texts_on != texts and longest_pause("forty_replies", "streams", (("mixed", True),)) in texts_on
