"""The standalone page in headless Chromium: opened from disk (file://) with every network request blocked, as
HTML (a blog, an iframe) and as XHTML (an EPUB 3 page). Flipping a control redraws the app's charts and
changes the numbers, the page asks for nothing, and it fits a phone and a column without scrolling sideways.
Run: pytest -m browser tests/test_browser_figure.py
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from story_runs import longest_pause, scenario_run

from app.present import story_page

from conftest import need_chromium

DOCS = Path(__file__).resolve().parents[1] / "docs" / "figure.md"

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("figures")]

DRAWN = """(uid) => {
  const root = document.getElementById(uid);
  const marks = [...root.querySelectorAll('.ww-chart svg .mark-rect path')].map(p => p.getAttribute('d'));
  const numbers = [...root.querySelectorAll('.ww-numbers td')].map(t => t.textContent);
  const drawn = root.querySelectorAll('.ww-chart svg').length;
  return [marks.join(';'), numbers, drawn === root.querySelectorAll('.ww-chart').length];
}"""


@pytest.fixture(scope="session")
def page_file(tmp_path_factory):
    need_chromium()
    folder = tmp_path_factory.mktemp("figure")
    text = story_page("forty_replies", vary=("mixed", "chunk"), runs=scenario_run)
    for suffix in ("html", "xhtml"):
        (folder / f"forty.{suffix}").write_text(text, encoding="utf-8")
    return folder, uid_of(text)


def uid_of(text: str) -> str:
    return re.search(r'<section class="ww-figure[^"]*" id="([^"]+)"', text)[1]


def open_page(browser, path, width: int, said: list | None = None):
    """A fresh context on a local file, every request elsewhere blocked and recorded (`asked`); the context
    (closed by the caller), the page, what it asked for and its script errors. `said`: a list that collects
    every console error and warning from the start."""
    asked, errors = [], []
    context = browser.new_context(viewport={"width": width, "height": 1000})
    local = ("file://", "data:")
    context.route("**/*", lambda route: route.continue_() if route.request.url.startswith(local)
                  else (asked.append(route.request.url), route.abort()))
    page = context.new_page()
    page.on("pageerror", lambda e: errors.append(str(e)))
    if said is not None:
        page.on("console", lambda m: said.append(f"{m.type}: {m.text}") if m.type in ("error", "warning")
                else None)
    page.goto(path.as_uri())
    return context, page, asked, errors


@pytest.mark.parametrize("suffix", ["html", "xhtml"])
def test_flipping_mixed_chunk_in_the_file_redraws_and_fetches_nothing(browser, page_file, suffix):
    folder, uid = page_file
    context, page, asked, errors = open_page(browser, folder / f"forty.{suffix}", 1100)
    page.wait_for_function(f"() => ({DRAWN})({uid!r})[2] === true", timeout=30_000)
    marks, numbers, _ = page.evaluate(DRAWN, uid)
    page.locator(f"input[name='{uid}-mixed'][value='1']").check()
    page.wait_for_function(f"() => ({DRAWN})({uid!r})[0] !== {marks!r}", timeout=10_000)
    marks_on, numbers_on, _ = page.evaluate(DRAWN, uid)
    context.close()
    assert errors == [] and asked == []
    pause = longest_pause("forty_replies", "streams")
    assert numbers[0] == pause and numbers[1].startswith(f"{pause} (range ")  # defaults: before = now
    mixed = longest_pause("forty_replies", "streams", (("mixed", True),))
    assert numbers_on[1].partition(" (")[0] == mixed != pause
    assert marks_on != marks


@pytest.mark.parametrize("width", [390, 700, 1440])
def test_the_page_fits_a_phone_a_column_and_a_desktop_and_axe_finds_nothing_serious(
        browser, page_file, width):
    """No sideways scroll, every chart inside the window, and axe-core (axe-playwright-python) reports no
    serious or critical violation, before and after a flip."""
    from axe_playwright_python.sync_playwright import Axe

    folder, uid = page_file
    context, page, _, errors = open_page(browser, folder / "forty.html", width)
    page.wait_for_function(f"() => ({DRAWN})({uid!r})[2] === true", timeout=30_000)
    page.wait_for_timeout(300)
    scroll = page.evaluate("document.documentElement.scrollWidth")
    charts = page.evaluate(f"""() => [...document.querySelectorAll('#{uid} .ww-chart svg')]
        .map(s => s.getBoundingClientRect().right)""")
    found = Axe().run(page).response["violations"]
    page.locator(f"input[name='{uid}-mixed'][value='1']").check()
    page.wait_for_timeout(500)
    found += Axe().run(page).response["violations"]
    context.close()
    assert errors == [] and scroll <= width
    assert all(right <= width for right in charts)  # the whole time axis is on screen
    serious = [(v["id"], v["impact"], [n["target"] for n in v["nodes"][:3]]) for v in found
               if v["impact"] in ("serious", "critical")]
    assert serious == []


def test_each_chart_is_named_described_and_told_in_words_a_keyboard_opens(browser, page_file):
    """The chart's accessible name is its title and its description its caption and its words; the words
    follow the run; Tab reaches the settings and each chart's words."""
    folder, uid = page_file
    context, page, _, errors = open_page(browser, folder / "forty.html", 1100)
    page.wait_for_function(f"() => ({DRAWN})({uid!r})[2] === true", timeout=30_000)
    named = page.evaluate(f"""() => [...document.querySelectorAll('#{uid} .ww-chart svg')].map(s => [
        s.getAttribute('role'),
        document.getElementById(s.getAttribute('aria-labelledby')).textContent,
        s.getAttribute('aria-describedby').split(' ').map(i => document.getElementById(i).className)])""")
    words = f"() => document.getElementById('{uid}-tokens-words').textContent"
    before = page.evaluate(words)
    page.locator(f"input[name='{uid}-mixed'][value='1']").check()
    page.wait_for_function(f"() => ({words})() !== {before!r}", timeout=10_000)
    reached = set()
    for _ in range(30):
        page.keyboard.press("Tab")
        reached.add(page.evaluate("""() => { const a = document.activeElement;
            return a.tagName + ' ' + (a.name || (a.nextElementSibling || {}).id || ''); }"""))
    context.close()
    assert errors == []
    assert [n[0] for n in named] == ["img"] * 3 and named[0][1].startswith("Token streams")
    assert all(n[2] == ["ww-caption", ""] for n in named)  # the caption, then the words' <p>
    assert longest_pause("forty_replies", "streams") in before
    assert {f"INPUT {uid}-mixed", f"INPUT {uid}-chunk"} <= reached
    assert {f"SUMMARY {uid}-{c}-words" for c in ("tokens", "wait", "passes")} <= reached


def embed_snippet() -> tuple[str, str]:
    """The frame and the parent page's script that sizes it, as docs/figure.md gives them."""
    block = re.search(r"```html\n(<iframe.*?)```", DOCS.read_text(encoding="utf-8"), re.S)[1]
    frame, script = block.split("<script>", 1)
    return frame, "<script>" + script


def test_the_documented_iframe_snippet_sizes_each_frame_to_its_figure(browser, page_file):
    """Two frames of the page in a 700 px column, embedded as docs/figure.md says: each titled, each as tall
    as its figure (nothing to scroll inside the frame)."""
    folder, uid = page_file
    frame, script = embed_snippet()
    assert 'title="' in frame and 'src="forty.html"' in frame
    host = folder / "post.html"
    host.write_text(f"<!DOCTYPE html><html lang='en'><head><title>A post</title></head><body>"
                    f"<main style='width:700px'><h1>A post</h1><p>Text.</p>{frame}<p>More text.</p>{frame}"
                    f"</main>{script}</body></html>", encoding="utf-8")
    context, page, _, errors = open_page(browser, host, 760)
    frames = [f.content_frame() for f in page.query_selector_all("iframe")]
    for inner in frames:
        inner.wait_for_function(f"() => ({DRAWN})({uid!r})[2] === true", timeout=60_000)
    page.wait_for_timeout(1000)
    outer = page.evaluate("""() => [...document.querySelectorAll('iframe')].map(f => [
        f.getAttribute('title'), f.getBoundingClientRect().height])""")
    inner = [f.evaluate("Math.ceil(document.documentElement.getBoundingClientRect().height)")
             for f in frames]
    scrolls = [f.evaluate("document.documentElement.scrollHeight - innerHeight") for f in frames]
    context.close()
    assert errors == [] and len(outer) == 2
    for (title, height), content, scroll in zip(outer, inner, scrolls, strict=True):
        assert title and abs(height - content) <= 2 and scroll <= 1, (height, content, scroll)


def test_two_figures_inline_on_one_page_each_switch_their_own_runs(browser, page_file):
    """Two pages' figures pasted into one post (the Vega script once, each figure's section and script):
    both draw, and flipping one changes its numbers only."""
    folder, uid = page_file
    pages = [(folder / "forty.html").read_text(encoding="utf-8"),
             story_page("forty_replies", vary=("mixed",), bare=True, runs=scenario_run)]
    sections = [re.search(r'<section class="ww-figure.*?</section>', t, re.S)[0] for t in pages]
    bundle, mount = (re.findall(r"<script>.*?</script>", pages[0], re.S)[i] for i in (0, 1))
    other = re.findall(r"<script>.*?</script>", pages[1], re.S)[1]
    style = re.search(r"<style>.*?</style>", pages[0], re.S)[0]
    host = folder / "two.html"
    host.write_text(f"<!DOCTYPE html><html lang='en'><head><title>Two figures</title>{style}</head>"
                    f"<body><main>{sections[0]}<p>Between the figures.</p>{sections[1]}</main>"
                    f"{bundle}{mount}{other}</body></html>", encoding="utf-8")
    second = uid_of(sections[1])
    assert second != uid
    context, page, asked, errors = open_page(browser, host, 1000)
    for key in (uid, second):
        page.wait_for_function(f"() => ({DRAWN})({key!r})[2] === true", timeout=30_000)
    before = {key: page.evaluate(DRAWN, key)[1] for key in (uid, second)}
    page.locator(f"input[name='{uid}-mixed'][value='1']").check()
    page.wait_for_function(f"() => ({DRAWN})({uid!r})[1][1] !== {before[uid][1]!r}", timeout=10_000)
    after = {key: page.evaluate(DRAWN, key)[1] for key in (uid, second)}
    context.close()
    assert errors == [] and asked == []
    assert after[uid] != before[uid] and after[second] == before[second]


def test_the_pd_figure_fits_a_phone_and_axe_finds_nothing_serious(browser, tmp_path):
    """The PD figure gets the same treatment: at 390 px no sideways scroll (its six-column table scrolls in
    its own box) and no serious or critical axe-core violation."""
    from axe_playwright_python.sync_playwright import Axe

    from app.present import pd_page

    need_chromium()
    path = tmp_path / "pd.html"
    text = pd_page()  # from the runs the figure tests made (the command's cache)
    path.write_text(text, encoding="utf-8")
    uid = uid_of(text)
    context, page, asked, errors = open_page(browser, path, 390)
    page.wait_for_function(f"() => ({DRAWN})({uid!r})[2] === true", timeout=60_000)
    scroll = page.evaluate("document.documentElement.scrollWidth")
    tables = page.evaluate("() => [...document.querySelectorAll('.ww-numbers')].map(t => t.scrollWidth)")
    found = Axe().run(page).response["violations"]
    context.close()
    assert errors == [] and asked == [] and scroll <= 390
    assert max(tables) <= 1000, tables  # the checklist's prose wraps (it was 3,495 px on one line)
    assert [v["id"] for v in found if v["impact"] in ("serious", "critical")] == []


def test_a_long_option_label_wraps_on_a_phone(browser, tmp_path):
    """The ten o'clock page's "Queue order" options are wider than a phone ("shortest-prefill-first (caps the
    running chunk; needs the radix cache)"): at 390 px they wrap inside their fieldset, no sideways scroll."""
    need_chromium()
    path = tmp_path / "ten.html"
    text = story_page("ten_oclock_rush", vary=("policy",), runs=scenario_run)
    path.write_text(text, encoding="utf-8")
    uid = uid_of(text)
    context, page, asked, errors = open_page(browser, path, 390)
    page.wait_for_function(f"() => ({DRAWN})({uid!r})[2] === true", timeout=60_000)
    scroll = page.evaluate("document.documentElement.scrollWidth")
    widest = page.evaluate(f"""() => Math.max(...[...document.querySelectorAll(
        '#{uid} fieldset, #{uid} label')].map(e => e.getBoundingClientRect().right))""")
    context.close()
    assert errors == [] and asked == []
    assert "shortest-prefill-first (caps the running chunk" in text
    assert scroll <= 390 and widest <= 390


STRICT = '<meta http-equiv="Content-Security-Policy" content="script-src \'self\' \'unsafe-inline\'"/>'
PRINTED = """(uid) => {
  const root = document.getElementById(uid), seen = e => e.getClientRects().length > 0;
  return {radios: [...root.querySelectorAll('input, button, select')].filter(seen).length,
          charts: [...root.querySelectorAll('.ww-chart svg')].filter(seen).length,
          numbers: [...root.querySelectorAll('.ww-numbers td')].filter(seen).length,
          setting: [...root.querySelectorAll('.ww-printed')].filter(seen).map(e => e.textContent).join('')};
}"""


def test_under_a_strict_policy_the_page_draws_says_nothing_prints_and_fits_a_phone(browser, page_file):
    """One load of the page under a Content-Security-Policy without 'unsafe-eval' (a blog platform's, an
    e-reader's): the charts draw (SVG marks) and redraw on a flip with no console error or warning (no CSP
    violation, no Vega-Lite warning); on paper (print media) no radio button, Play or playback, the charts
    and numbers kept and the setting named; on a phone no empty playback pane stands open."""
    folder, uid = page_file
    strict = folder / "strict.html"
    strict.write_text((folder / "forty.html").read_text(encoding="utf-8").replace(
        '<meta charset="utf-8"/>', f'<meta charset="utf-8"/>{STRICT}', 1), encoding="utf-8")
    said = []
    context, page, asked, errors = open_page(browser, strict, 1100, said)
    page.wait_for_function(f"() => ({DRAWN})({uid!r})[2] === true", timeout=30_000)
    marks, _, _ = page.evaluate(DRAWN, uid)
    page.locator(f"input[name='{uid}-mixed'][value='1']").check()
    page.wait_for_function(f"() => ({DRAWN})({uid!r})[0] !== {marks!r}", timeout=10_000)
    page.emulate_media(media="print")
    printed = page.evaluate(PRINTED, uid)
    page.emulate_media(media="screen")
    page.set_viewport_size({"width": 390, "height": 1000})
    page.wait_for_timeout(300)
    panes = page.evaluate(f"""() => [...document.querySelectorAll('#{uid} .ww-pane')].map(p => [
        p.querySelector('.ww-pane-wait').textContent, p.getBoundingClientRect().height])""")
    context.close()
    assert errors == [] and said == [] and asked == [] and marks
    assert printed["radios"] == 0 and printed["charts"] == 3 and printed["numbers"] > 0
    assert printed["setting"].startswith("Setting shown: mixed chunk on;"), printed
    empty = [h for text, h in panes if text == "no token yet"]
    assert empty and max(empty) < 40, panes  # one line each, not a 6.5rem box


def test_a_chart_that_cannot_be_drawn_keeps_its_image_and_says_so(browser, page_file):
    """Whatever stops a chart from drawing (here vega-embed made to fail): its still image stays, a note
    says the interactive chart could not be drawn, and the numbers still follow the buttons."""
    folder, uid = page_file
    broken = folder / "broken.html"
    broken.write_text((folder / "forty.html").read_text(encoding="utf-8").replace(
        "\nwwMount(", "\nwindow.vegaEmbed = function () { return Promise.reject(new Error('forced')); };"
        "\nwwMount(", 1), encoding="utf-8")
    context, page, asked, errors = open_page(browser, broken, 1100)
    page.wait_for_function(f"() => document.querySelectorAll('#{uid} .ww-undrawn').length === 3",
                           timeout=10_000)
    kept = page.evaluate(f"""() => [...document.querySelectorAll('#{uid} .ww-chart')].map(b => [
        b.querySelectorAll('img').length, (b.querySelector('img') || {{}}).naturalWidth || 0,
        b.querySelectorAll('svg').length, b.querySelector('.ww-undrawn').textContent])""")
    before = page.evaluate(DRAWN, uid)[1]
    page.locator(f"input[name='{uid}-mixed'][value='1']").check()
    page.wait_for_function(f"() => ({DRAWN})({uid!r})[1][1] !== {before[1]!r}", timeout=10_000)
    context.close()
    assert errors == [] and asked == []
    assert all(images == 1 and width > 0 and svgs == 0 for images, width, svgs, _ in kept), kept
    assert all("could not be drawn" in k[3] and "forced" in k[3] for k in kept)
