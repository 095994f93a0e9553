"""End to end in headless Chromium: flip the main toggle, reopen a copied link, export a PNG, click a pass.

Needs /usr/bin/chromium (Playwright cannot download browsers here). Skipped with a reason when it is
missing, except under CI (CI=true), where that is a failure. Run: pytest -m browser tests/test_browser.py
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from story_runs import opening_t, run

from app.story import cursor

from conftest import tab

pytestmark = pytest.mark.browser

SETTLED = """() => {
  const charts = [...document.querySelectorAll('[data-testid="stVegaLiteChart"]')];
  const drawn = charts.filter(c => c.querySelector('canvas, svg')).length;
  const loading = document.querySelector('[data-testid="stSkeleton"], [data-testid="stSkeletonElement"]');
  const script = document.querySelector('[data-testid="stApp"]')?.getAttribute('data-test-script-state');
  const busy = !!document.querySelector('[data-testid="stStatusWidget"]') || !!loading
    || script !== 'notRunning';
  return [charts.length, drawn, busy,
          [...document.querySelectorAll('.ww-card-value')].map(m => m.innerText).join('|')];
}"""


@pytest.fixture
def page(context):
    pg = tab(context)
    yield pg
    pg.close()


def settle(page, timeout_s: float = 60, polls: int = 3) -> str:
    """Wait until the run is over and every chart has drawn, unchanged for `polls` polls 150 ms apart; returns
    the headline values."""
    # presenter mode has no h1: its bar of pages stands for it
    page.wait_for_selector('[data-testid="stMain"] h1, .st-key-present_bar', timeout=timeout_s * 1000)
    deadline, last, same = time.time() + timeout_s, None, 0
    while time.time() < deadline:
        page.wait_for_timeout(150)
        num, drawn, running, metrics = page.evaluate(SETTLED)
        state = (num, drawn, running, metrics)
        same = same + 1 if state == last and num == drawn and not running else 0
        last = state
        if same >= polls:
            return metrics
    raise AssertionError(f"page did not settle: {last}")


# The folds that hold charts (app/ui/fold.py builds a fold's content once opened), by their titles' start.
CHART_FOLDS = ("Step through the scheduler's decisions", "How long each reply waited", "KV cache and queue",
               "Gaps between tokens", "Each policy's workers", "Pass timelines, A and B", "Sweep:")


ELEMENTS = """() => document.querySelectorAll(
  '[data-testid="stMain"] [data-testid="stElementContainer"]').length"""
FOLD_BUILDING = """(before) => (""" + ELEMENTS + """)() > before
  || document.querySelector('[data-testid="stApp"]')?.getAttribute('data-test-script-state') === 'running'"""


def unfold(page, titles: tuple[str, ...] = CHART_FOLDS, pd: bool = True) -> None:
    """Open the folds whose titles start with `titles` (and show the PD section, where a page has one), as a
    person clicking each would; each is built on the rerun its click starts."""
    shown = page.locator('[data-testid="stCheckbox"]').filter(has_text="Show PD disaggregation")
    if pd and shown.count() and not shown.first.locator("input").is_checked():
        shown.first.click()
        settle(page, timeout_s=120)
    for title in titles:
        fold = page.locator('[data-testid="stExpander"] details').filter(
            has=page.locator("summary", has_text=title))
        if fold.count() and fold.first.get_attribute("open") is None:
            before = page.evaluate(ELEMENTS)
            fold.first.locator("summary").click()
            # the rerun the click starts, or what it built: settling before the rerun began would be early
            page.wait_for_function(FOLD_BUILDING, arg=before, timeout=60_000)
            settle(page, timeout_s=120)


def headline(page, label: str) -> str:
    card = page.locator('.ww-card').filter(has_text=label).first
    return card.locator('.ww-card-value').inner_text()


def toggle(page, label: str):
    return page.locator('[data-testid="stCheckbox"]').filter(has_text=label).first


def test_flipping_mixed_chunk_changes_the_headline_and_a_copied_link_restores_it(server, page):
    page.goto(server + "/forty_replies")
    settle(page)
    before = headline(page, "Longest pause")
    toggle(page, "Mixed chunk").locator("label").click()
    page.wait_for_function("() => document.querySelector('.ww-card-value')"
                           ".innerText.includes('→')")
    settle(page)
    after = headline(page, "Longest pause")
    assert before != after and "→" in after
    assert "mixed=1" in page.url
    copied = page.url
    other = tab(page.context)
    try:
        other.goto(copied)
        settle(other)
        assert toggle(other, "Mixed chunk").locator("input").is_checked()
        assert headline(other, "Longest pause") == after
    finally:
        other.close()


def test_embed_mode_and_presenter_mode_open_and_bad_url_parameters_get_a_note_not_a_traceback(server, page):
    page.goto(server + "/forty_replies?embed=true&present=1&chunk=banana&nope=1")
    settle(page)
    assert (page.locator('[data-testid="stSidebar"]').count() == 0
            or not page.locator('[data-testid="stSidebar"]').is_visible())
    text = page.locator('[data-testid="stAlert"]').all_inner_texts()
    assert any("chunk=banana" in t for t in text) and any("nope" in t for t in text)
    assert page.locator('[data-testid="stException"]').count() == 0


def test_a_chart_exports_as_png_and_clicking_a_pass_moves_the_cursor_there(server, page):
    page.goto(server + "/forty_replies")
    settle(page)
    page.get_by_role("button", name="Export").first.click()
    with page.expect_download(timeout=60_000) as download:
        page.get_by_role("dialog", name="Export").get_by_role("button", name="PNG").click()
    assert Path(download.value.path()).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert download.value.suggested_filename.endswith(".png")
    page.keyboard.press("Escape")  # the export dialog closes; the page is as it was
    opening = opening_t("forty_replies")
    assert f"t={opening}" in page.url  # the story opens on the log's first chunk
    page.get_by_text("Step through the scheduler's decisions").click()  # the fold with the pass timeline
    chart = page.locator('[data-testid="stVegaLiteChart"]').filter(has_text="GPU worker").first
    chart.wait_for(timeout=30_000)
    settle(page)
    assert page.locator('[data-testid="stSlider"]').count() >= 1  # the stepper came with it
    chart.scroll_into_view_if_needed()  # as a person scrolls to it
    box = chart.bounding_box()
    # a decode bar after the log
    page.mouse.click(box["x"] + box["width"] * 0.8, box["y"] + box["height"] * 0.55)
    page.wait_for_function(f"() => !location.search.includes('t={opening}')", timeout=30_000)
    settle(page)
    t = float(page.url.split("t=")[1].split("&")[0])
    assert 6.9 < t < 12.7  # the cursor jumped to the clicked pass, past the log's prefill (0.56-6.96 s)
    assert page.locator('[data-testid="stException"]').count() == 0


def test_a_folded_section_draws_its_content_when_opened_and_keeps_the_view(server, page):
    """The rule's code is not sent with the page (app/ui/fold.py); a click opens it, the cursor stays, and at
    a room's narrowest width no line of it runs off the right edge."""
    page.set_viewport_size({"width": 1280, "height": 2400})
    page.goto(server + "/forty_replies")
    settle(page)
    url = page.url
    assert page.get_by_text("Show the rule (the model's own code)").count() == 0  # in the step-through's fold
    page.get_by_text("Step through the scheduler's decisions").click()
    page.get_by_text("Show the rule (the model's own code)").wait_for(timeout=30_000)
    settle(page)
    assert page.locator('[data-testid="stCode"]').count() == 0
    page.get_by_text("Show the rule (the model's own code)").click()
    page.locator('[data-testid="stCode"]').first.wait_for(timeout=30_000)
    settle(page)
    assert "def " in page.locator('[data-testid="stCode"]').first.inner_text()
    code = page.locator('[data-testid="stCode"] pre').first
    wide, shown = code.evaluate("e => [e.scrollWidth, e.clientWidth]")
    assert wide <= shown
    assert page.url == url and page.locator('[data-testid="stException"]').count() == 0


def test_the_load_benchmarks_websocket_client_gets_a_whole_page_from_the_server(server):
    """bench/websocket_session.py asks for a page as the browser's first message does: every chart arrives,
    as Arrow datasets, and no error box."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from bench.websocket_session import view

    def fetch(path: str):  # its own thread: Playwright's sync API may hold this one's event loop
        return asyncio.run(view(server, path, 120))

    with ThreadPoolExecutor(1) as pool:
        answer, plain = pool.map(fetch, ["/forty_replies?mixed=1", "/forty_replies"])
    assert answer.problems == [] and plain.problems == []
    assert answer.num_charts == plain.num_charts >= 1  # a first view draws the token streams; the rest folds
    assert 0 < answer.seconds < 120 and answer.num_bytes > 50_000


WATCH = """() => {
  window.wwSeen = [];
  const look = () => {
    const card = document.querySelector('.ww-card');
    if (!card) return;
    const box = card.closest('.stElementContainer');
    window.wwSeen.push([card.querySelector('.ww-card-value').innerText,
                        box && box.getAttribute('data-stale') === 'true',
                        parseFloat(getComputedStyle(card.closest('.ww-cards')).opacity)]);
  };
  new MutationObserver(look).observe(document.body, {subtree: true, attributes: true, childList: true});
}"""


def test_a_cards_note_shows_on_keyboard_focus_and_stays_on_the_page(server, page):
    """The "?" beside a card's label is reached with Tab and shows its note while focused; the last card's
    note opens leftwards, inside the window."""
    page.goto(server + "/forty_replies")
    settle(page)
    helps = page.locator(".ww-cards").first.locator(".ww-help")
    assert helps.count() >= 2
    note = "el => getComputedStyle(el, '::after').content"
    first = helps.first
    assert first.evaluate(note) == "none"  # hidden until asked for
    first.focus()
    assert first.evaluate(note).strip('"') == first.get_attribute("data-help") != ""
    last = page.locator(".ww-cards").nth(1).locator(".ww-card").last.locator(".ww-help")
    last.focus()
    left, right = last.evaluate(
        "el => { const a = getComputedStyle(el, '::after'), x = el.getBoundingClientRect().left"
        " + parseFloat(a.left); return [x, x + parseFloat(a.width) + parseFloat(a.paddingLeft)"
        " + parseFloat(a.paddingRight)] }")
    assert 0 <= left < right <= page.viewport_size["width"], (left, right)


def test_while_a_change_is_on_its_way_the_old_numbers_fade_and_say_so(server, page):
    """A setting no cache holds (23 streams) so the rerun takes a moment: every time the first card still
    shows the old number while the page is stale, it is faded."""
    page.goto(server + "/forty_replies?streams=23")
    settle(page)
    old = headline(page, "Longest pause")
    page.evaluate(WATCH)
    toggle(page, "Mixed chunk").locator("label").click()
    value = "document.querySelector('.ww-card-value').innerText"
    page.wait_for_function(f"() => {value} !== {json.dumps(old)}", timeout=60_000)  # the new number is in
    seen = page.evaluate("window.wwSeen")
    stale_old = [s for s in seen if s[1] and s[0] == old]
    assert stale_old, f"the rerun never showed the old card as stale: {old!r} then {seen[:12]}"
    assert all(opacity < 0.5 for _, _, opacity in stale_old)


def test_what_a_reader_sees_plays_the_replies_from_the_cursor(server, page):
    """The fold's panes start at the cursor: at 3 s with mixed chunk off every stream has had no token since
    the log's first chunk began (after the front end's tokenizing, whose queued tokens came as one chunk);
    Play moves the clock on."""
    page.goto(server + "/forty_replies?t=3.0")
    settle(page)
    page.get_by_text("What a reader sees: the replies played back as text", exact=False).click()
    page.wait_for_function("() => [...document.querySelectorAll('iframe')].some(f => f.contentDocument "
                           "&& f.contentDocument.querySelector('.ww-pane'))", timeout=60_000)
    frame = next(f for f in page.frames if f.query_selector(".ww-pane") is not None)
    its = run("forty_replies").iterations
    at = float(its.iloc[cursor.at_time(its, 3.0)]["start_at"])  # the cursor: the pass running at 3 s
    assert frame.inner_text(".ww-play-clock") == f"t = {at:.1f} s"
    waits = [w.inner_text() for w in frame.query_selector_all(".ww-pane-wait")]
    frozen = [float(w.split()[3]) for w in waits if w.startswith("no token for")]
    tokens = run("forty_replies").tokens
    last = tokens[(tokens["group"] == "streams") & (tokens["at"] <= at)].groupby("rid")["until"].max()
    since = at - float(last.max())  # the streams' last token before the cursor: the chunks froze them all
    assert len(frozen) == 5 and all(abs(w - since) <= 0.1 for w in frozen), (frozen, since)
    frame.click(".ww-play-toggle")
    page.wait_for_timeout(1200)
    assert float(frame.inner_text(".ww-play-clock").split()[2]) > 3.5


def test_presenter_cards_keep_each_value_to_two_lines_at_1440_px(server, page):
    """Eight cards share a row in presenter mode: at 1440 px a value ("6.4 s → 818 ms") wrapped onto three
    lines; a narrow card sizes its text so a value takes two lines at most, and the p99 card says why it rose
    without turning red."""
    page.set_viewport_size({"width": 1440, "height": 900})
    page.goto(server + "/forty_replies?present=1&mixed=1")
    settle(page)
    lines = page.evaluate("""() => [...document.querySelectorAll('.ww-card-value')].map(v => {
        const style = getComputedStyle(v);
        return v.getBoundingClientRect().height / parseFloat(style.lineHeight); })""")
    assert len(lines) >= 8 and max(lines) <= 2.1, lines
    assert page.locator(".ww-card-delta.ww-split").count() >= 1
    assert page.locator(".ww-card-why").first.inner_text().startswith("a stall split")
