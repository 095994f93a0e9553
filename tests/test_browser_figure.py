"""The standalone page in headless Chromium: opened from disk (file://) with every network request blocked, as
HTML (a blog, an iframe) and as XHTML (an EPUB 3 page). Flipping a control redraws the app's charts and
changes the numbers, the page asks for nothing, and it fits a phone and a column without scrolling sideways.
Run: pytest -m browser tests/test_browser_figure.py
"""

from __future__ import annotations

import pytest
from story_runs import longest_pause, scenario_run
from test_browser import _need_chromium

from app.present import story_page
from bench.browser import CHROMIUM, CHROMIUM_ARGS

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("figures")]

DRAWN = """(uid) => {
  const root = document.getElementById(uid);
  const marks = [...root.querySelectorAll('.ww-chart svg .mark-rect path')].map(p => p.getAttribute('d'));
  const numbers = [...root.querySelectorAll('.ww-numbers td')].map(t => t.textContent);
  const drawn = root.querySelectorAll('.ww-chart svg').length;
  return [marks.join(';'), numbers, drawn === root.querySelectorAll('.ww-chart').length];
}"""


@pytest.fixture(scope="module")
def page_file(tmp_path_factory):
    _need_chromium()
    folder = tmp_path_factory.mktemp("figure")
    text = story_page("forty_replies", vary=("mixed", "chunk"), runs=scenario_run)
    for suffix in ("html", "xhtml"):
        (folder / f"forty.{suffix}").write_text(text, encoding="utf-8")
    uid = text.split('<section class="ww-figure" id="', 1)[1].split('"', 1)[0]
    return folder, uid


def open_page(p, path, width: int):
    asked, errors = [], []
    browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
    context = browser.new_context(viewport={"width": width, "height": 1000})
    local = ("file://", "data:")
    context.route("**/*", lambda route: route.continue_() if route.request.url.startswith(local)
                  else (asked.append(route.request.url), route.abort()))
    page = context.new_page()
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri())
    return browser, page, asked, errors


@pytest.mark.parametrize("suffix", ["html", "xhtml"])
def test_flipping_mixed_chunk_in_the_file_redraws_and_fetches_nothing(page_file, suffix):
    from playwright.sync_api import sync_playwright

    folder, uid = page_file
    with sync_playwright() as p:
        browser, page, asked, errors = open_page(p, folder / f"forty.{suffix}", 1100)
        page.wait_for_function(f"() => ({DRAWN})({uid!r})[2] === true", timeout=30_000)
        marks, numbers, _ = page.evaluate(DRAWN, uid)
        page.locator(f"input[name='{uid}-mixed'][value='1']").check()
        page.wait_for_function(f"() => ({DRAWN})({uid!r})[0] !== {marks!r}", timeout=10_000)
        marks_on, numbers_on, _ = page.evaluate(DRAWN, uid)
        browser.close()
    assert errors == [] and asked == []
    assert numbers[:2] == [longest_pause("forty_replies", "streams")] * 2  # defaults: before = now
    assert numbers_on[1] == longest_pause("forty_replies", "streams", (("mixed", True),)) != numbers[1]
    assert marks_on != marks


@pytest.mark.parametrize("width", [390, 700, 1440])
def test_the_page_fits_a_phone_a_column_and_a_desktop_without_sideways_scroll(page_file, width):
    from playwright.sync_api import sync_playwright

    folder, uid = page_file
    with sync_playwright() as p:
        browser, page, _, errors = open_page(p, folder / "forty.html", width)
        page.wait_for_function(f"() => ({DRAWN})({uid!r})[2] === true", timeout=30_000)
        page.wait_for_timeout(300)
        scroll = page.evaluate("document.documentElement.scrollWidth")
        charts = page.evaluate(f"""() => [...document.querySelectorAll('#{uid} .ww-chart svg')]
            .map(s => s.getBoundingClientRect().right)""")
        browser.close()
    assert errors == [] and scroll <= width
    assert all(right <= width for right in charts)  # the whole time axis is on screen


def test_the_pages_playback_feels_the_freeze_and_the_trickle(page_file):
    """At 6 s with mixed chunk off every stream pane has waited since the log arrived; with it on, under
    one chunk pass."""
    from playwright.sync_api import sync_playwright

    folder, uid = page_file
    waits = {}
    with sync_playwright() as p:
        browser, page, _, errors = open_page(p, folder / "forty.html", 1100)
        page.wait_for_function(f"() => ({DRAWN})({uid!r})[2] === true", timeout=30_000)
        for mixed in ("0", "1"):
            page.locator(f"input[name='{uid}-mixed'][value='{mixed}']").check()
            page.evaluate(f"window.whoWaits[{uid!r}].playback.seek(6)")
            waits[mixed] = page.evaluate(f"""() => [...document.querySelectorAll('#{uid} .ww-pane-wait')]
                .map(w => w.textContent)""")
        browser.close()
    assert errors == []
    off = [float(w.split()[3]) for w in waits["0"] if w.startswith("no token for")]
    on = [float(w.split()[3]) for w in waits["1"] if w.startswith("no token for")]
    assert len(off) == 5 and min(off) > 5.0  # frozen since about 0.5 s
    assert max(on, default=0.0) < 2.0  # a trickle: the last token came within one chunk pass
