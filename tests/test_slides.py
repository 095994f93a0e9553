"""Every tour step of every story on every surface (app/present/slides.py): the page's narration, the slide's
caption and numbers, its speaker notes and the text drawn in its SVG, all filled from the runs; each slide a
1920x1080 page whose texts, measured in Chromium, stay on the slide and never overlap one another.
"""

from __future__ import annotations

import io
import re

import pytest
from PIL import Image
from story_runs import scenario_run
from test_browser import _need_chromium

from app.present import story_slides
from app.present.numbers import NarrationError, narrate
from app.present.slides import SIZE, slide_bytes, slide_svg, step_values
from bench.browser import CHROMIUM, CHROMIUM_ARGS
from engine_model import STORIES

pytestmark = pytest.mark.xdist_group("figures")  # one worker builds the decks once
LEFT_OVER = re.compile(r"\{[^{}]*\}")
SAME_BOTH_SIDES = re.compile(r"(\d[\d,.]*(?:[ \u00a0]ms|[ \u00a0]s)?) (?:→|to) \1(?! \(unchanged\))(?![\d.])")


@pytest.fixture(scope="module")
def decks() -> dict:
    """Every story's tour as slides, and each slide as SVG."""
    out = {}
    for key in STORIES:
        slides = story_slides(key, scenario_run)
        out[key] = [(slide, slide_svg(slide)) for slide in slides]
    return out


def svg_texts(svg: str) -> list[str]:
    return [re.sub(r"<[^>]+>", " ", t) for t in re.findall(r"<text[^>]*>(.*?)</text>", svg, re.S)]


def test_every_step_is_filled_from_its_runs_on_every_surface(decks):
    for key, deck in decks.items():
        story = STORIES[key]
        assert len(deck) == len(story.tour), key
        for (slide, svg), step in zip(deck, story.tour, strict=True):
            values = step_values(story, step)
            now = scenario_run(story.scenario(values))
            base = scenario_run(story.scenario(story.baseline_values(values)))
            page = narrate(step.say, story, base, now)  # what the app's tour prints for this step
            assert slide.caption == page, (key, step.title)
            surfaces = {"page": page, "numbers": slide.numbers, "notes": slide.notes(),
                        "slide": " ".join(svg_texts(svg))}
            for surface, text in surfaces.items():
                assert not LEFT_OVER.search(text), (key, step.title, surface, LEFT_OVER.search(text)[0])
                same = SAME_BOTH_SIDES.search(text)
                assert not same, (key, step.title, surface, same and same[0])
            assert step.title in slide.notes() and slide.numbers in slide.notes()


def test_a_number_that_did_not_move_never_reads_as_a_change():
    assert SAME_BOTH_SIDES.search("comes a little later (12.9 s → 12.9 s)")
    assert not SAME_BOTH_SIDES.search("comes a little later (12.88 s → 12.90 s)")
    assert not SAME_BOTH_SIDES.search("3 → 3 (unchanged)") and not SAME_BOTH_SIDES.search("1.8 s → 1.85 s")


def test_narration_with_a_figure_nobody_fills_fails_when_it_is_built():
    story = STORIES["forty_replies"]
    run = scenario_run(story.scenario(story.defaults))
    with pytest.raises(NarrationError, match="no such number"):
        narrate("{now:streams.no_such_metric.p99}", story, run, run)
    with pytest.raises(NarrationError, match="not a figure narration can fill"):
        narrate("the pause was {pause}", story, run, run)


def test_the_pd_steps_compare_what_they_say(decks):
    slides = [slide for slide, _ in decks["ten_oclock_rush"]]
    split, policies = slides[4], slides[5]
    assert split.numbers.startswith("one engine (1 GPU) → PD, early (2 GPUs):")
    assert policies.numbers.startswith("PD, early (12 GPUs) → PD, prefill_complete (12 GPUs):")
    assert policies.chart_title == "Decode KV: in use and reserved" and policies.chart != split.chart


def test_a_slide_is_one_1920x1080_page_as_png_and_pdf(decks):
    slide, svg = decks["forty_replies"][3]
    image = Image.open(io.BytesIO(slide_bytes(svg, "png")))
    assert image.size == SIZE
    assert slide_bytes(svg, "pdf").startswith(b"%PDF")
    assert svg.startswith("<svg") and f'viewBox="0 0 {SIZE[0]} {SIZE[1]}"' in svg[:200]


BOXES = """() => [...document.querySelectorAll('text')].filter(t => t.textContent.trim()
    && !t.closest('[opacity="0"], [display="none"]')).map(t => {
  const r = t.getBoundingClientRect();
  return [t.textContent.trim().slice(0, 40), r.left, r.top, r.right, r.bottom];
})"""


def overlaps(boxes: list, tolerance: float = 0.5) -> list[tuple[str, str]]:
    found = []
    for i, (a, ax1, ay1, ax2, ay2) in enumerate(boxes):
        for b, bx1, by1, bx2, by2 in boxes[i + 1:]:
            if min(ax2, bx2) - max(ax1, bx1) > tolerance and min(ay2, by2) - max(ay1, by1) > tolerance:
                found.append((a, b))
    return found


@pytest.mark.browser
def test_no_text_of_any_slide_overlaps_another_or_leaves_the_slide(decks):
    """Drawn text only: labels Vega hid to avoid an overlap (opacity 0) do not count."""
    _need_chromium()
    from playwright.sync_api import sync_playwright

    problems = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": SIZE[0], "height": SIZE[1]})
        for deck in decks.values():
            for slide, svg in deck:
                page.set_content(f'<html><body style="margin:0">{svg}</body></html>')
                boxes = page.evaluate(BOXES)
                outside = [b[0] for b in boxes if b[1] < -0.5 or b[2] < -0.5 or b[3] > SIZE[0] + 0.5
                           or b[4] > SIZE[1] + 0.5]
                problems += [(slide.name, "outside", t) for t in outside]
                problems += [(slide.name, "overlap", pair) for pair in overlaps(boxes)]
        browser.close()
    assert problems == []
