"""Every tour step of every story on every surface (app/present/slides.py): the page's narration, the slide's
caption and numbers, its speaker notes and the text drawn in its SVG, all filled from the runs; each slide a
1920x1080 page whose texts, measured in Chromium, stay on the slide and never overlap one another. At the
print preset (`figure forty_replies --slides DIR --print`): 6 in × 3.375 in pages, SVG and PDF whose text is
text, every text at least 7 pt, none overlapping, none cut.
"""

from __future__ import annotations

import io
import math
import os
import re
from pathlib import Path

import pytest
from PIL import Image
from pypdf import PdfReader
from scene_boxes import FACES, collisions
from story_runs import scenario_run

from app.charts.scales import colour
from app.pd.narration import step_words
from app.present import story_slides
from app.present.cli import main
from app.present.layout import FONT, GREY_SAFE, MIN_PT, PRINT, SCREEN, SIZE
from app.present.numbers import NarrationError, narrate
from app.present.pd import KEYS as PD_KEYS
from app.present.slides import encoded, fitted, step_values, still
from engine_model import STORIES

pytestmark = pytest.mark.xdist_group("figures")  # one worker builds the decks once
LEFT_OVER = re.compile(r"\{[^{}]*\}")
SAME_BOTH_SIDES = re.compile(
    r"(\d[\d,.]*(?:[ \u00a0]ms|[ \u00a0]s)?) (?:→|to) \1(?!\s+\(unchanged\))(?![\d.])")


@pytest.fixture(scope="session")
def decks() -> dict:
    """Every story's tour as slides, and each slide as SVG."""
    out = {}
    for key in STORIES:
        slides = story_slides(key, scenario_run)
        out[key] = [(slide, fitted(slide)) for slide in slides]
    return out


@pytest.fixture(scope="session")
def print_decks(decks) -> dict:
    """Every story's tour at the print preset (the screen decks' runs), each slide with its SVG."""
    return {key: [(slide, fitted(slide, PRINT)) for slide, _ in deck] for key, deck in decks.items()}


@pytest.fixture(scope="session")
def printed(tmp_path_factory) -> Path:
    """The forty replies' slides at the print preset, as the command writes them."""
    folder = tmp_path_factory.mktemp("print")
    assert main(["figure", "forty_replies", "--slides", str(folder), "--formats", "svg,pdf", "--print"]) == 0
    return folder


def svg_texts(svg: str) -> list[str]:
    return [re.sub(r"<[^>]+>", " ", t) for t in re.findall(r"<text[^>]*>(.*?)</text>", svg, re.S)]


def test_every_step_is_filled_from_its_runs_on_every_surface(decks):
    for key, deck in decks.items():
        story = STORIES[key]
        assert len(deck) == len(story.tour), key
        for (slide, svg), step in zip(deck, story.tour, strict=True):
            values = step_values(story, step)
            now = scenario_run(story.scenario(values))
            base = scenario_run(story.scenario(story.baseline_values(values, step.versus)))
            page = narrate(step.say, story, base, now, step.cursor)  # what the app's tour prints for it
            if step.focus == "pd":  # and a PD step's sentence read from the PD runs (app.pd.narration)
                page = f"{page} {step_words(step.section.get('preset', 'rush'), values, scenario_run)}"
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


def test_a_slide_is_one_1920x1080_page_as_svg_and_pdf_and_twice_that_as_png(decks):
    slide, svg = decks["forty_replies"][3]
    again = fitted(slide)
    assert again == svg and re.search(r'<svg[^>]* width="1920" height="1080"', svg)
    assert Image.open(io.BytesIO(encoded(svg, "png"))).size == (2 * SIZE[0], 2 * SIZE[1])  # for decks
    page = PdfReader(io.BytesIO(encoded(svg, "pdf"))).pages[0]
    assert (float(page.mediabox.width), float(page.mediabox.height)) == SIZE
    assert slide.title in page.extract_text()  # text, not outlines


def pdf_texts(path: Path) -> list[tuple[str, float]]:
    """Every run of text on a PDF page with its size in points: the font size times the height of a unit
    square under the text and page matrices (rotated text too)."""
    found = []

    def seen(text, cm, tm, font, size):
        if text.strip():
            found.append((text.strip(), size * math.hypot(tm[2], tm[3]) * math.hypot(cm[2], cm[3])))

    PdfReader(path).pages[0].extract_text(visitor_text=seen)
    return found


def test_the_print_slides_are_6_inches_wide_at_16_9_and_every_text_is_7_pt_or_more(printed):
    """The PDF's text is text (extracted with its size): the title, the numbers and the settings, none under
    7 pt; the SVG is 432 × 243 pt; the deck is one PDF of a page per step."""
    story = STORIES["forty_replies"]
    names = [f"forty_replies-{i:02d}" for i in range(1, len(story.tour) + 1)]
    files = {f"{n}.{x}" for n in names for x in ("svg", "pdf", "md")} | {"forty_replies.pdf"}
    assert {p.name for p in printed.iterdir()} == files
    for name, step in zip(names, story.tour, strict=True):
        svg = (printed / f"{name}.svg").read_text()
        assert re.search(r'<svg[^>]* width="432" height="243"', svg)
        page = PdfReader(printed / f"{name}.pdf").pages[0]
        assert (float(page.mediabox.width), float(page.mediabox.height)) == PRINT.size  # 6 in × 3.375 in
        texts = pdf_texts(printed / f"{name}.pdf")
        joined = re.sub(r"\s", "", "".join(t for t, _ in texts))  # the PDF places each glyph on its own
        for said in (step.title, "Longest pause, the 40 streams:", "Settings:"):
            assert re.sub(r"\s", "", said) in joined, (name, said)
        small = [(t, round(size, 2)) for t, size in texts if size < MIN_PT - 0.01]
        assert small == [], name
        assert step.title in (printed / f"{name}.md").read_text()  # the caption, for the book
    assert len(PdfReader(printed / "forty_replies.pdf").pages) == len(names)


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


def text_problems(page, name: str, svg: str, size: tuple[int, int], smallest: float = 0) -> list:
    """Texts of a slide drawn in Chromium that leave it, overlap another, are cut ("…") or are smaller than
    `smallest` units (points, at the print preset)."""
    page.set_content(f'<html><body style="margin:0">{svg}</body></html>')
    boxes = page.evaluate(BOXES)
    outside = [b[0] for b in boxes
               if b[1] < -0.5 or b[2] < -0.5 or b[3] > size[0] + 0.5 or b[4] > size[1] + 0.5]
    sizes = page.evaluate("""() => [...document.querySelectorAll('text')].filter(t => t.textContent.trim()
        && !t.closest('[opacity="0"], [display="none"]')).map(t => [t.textContent.trim().slice(0, 40),
        parseFloat(getComputedStyle(t).fontSize)])""")
    return ([(name, "outside", t) for t in outside] + [(name, "overlap", pair) for pair in overlaps(boxes)]
            + [(name, "cut", b[0]) for b in boxes if b[0].endswith("…")]
            + [(name, "small", t, px) for t, px in sizes if px < smallest - 0.01])


@pytest.mark.browser
def test_no_text_of_any_slide_overlaps_another_or_leaves_the_slide(browser, decks, printed, print_decks):
    """Drawn text only: labels Vega hid to avoid an overlap (opacity 0) do not count. Every story's screen
    and print slides, and the forty replies' print slides as the command writes them (in print also: no
    text under 7 pt)."""
    problems = []
    page = browser.new_page(viewport={"width": SIZE[0], "height": SIZE[1]})
    for deck in decks.values():
        for slide, svg in deck:
            problems += text_problems(page, slide.name, svg, SCREEN.size)
    for deck in print_decks.values():
        for slide, svg in deck:
            problems += text_problems(page, f"print {slide.name}", svg, PRINT.size, MIN_PT)
    for path in sorted(printed.glob("*.svg")):
        problems += text_problems(page, f"print {path.stem}", path.read_text(), PRINT.size, MIN_PT)
    page.context.close()
    assert problems == []


def chart_part(svg: str) -> str:
    """A slide's SVG below its title: the chart panels drawn by Vega, nested in the page (layout.compose)."""
    return "".join(re.findall(r"<svg x=.*?</svg>", svg, re.S))


def test_every_story_builds_a_print_deck_whose_stills_all_differ_below_the_title(print_decks):
    """Laid out by design, every print slide is 432 × 243 pt; each step's still shows its own cursor (and
    veil, and marked lanes) as the app's tour does, so no two stills of a deck draw the same chart."""
    for key, deck in print_decks.items():
        for slide, svg in deck:
            assert re.match(r'<svg[^>]* width="432" height="243"', svg), slide.name
            assert chart_part(svg), slide.name
        charts = [chart_part(svg) for _, svg in deck]
        alike = [(a.name, b.name) for i, (a, _) in enumerate(deck) for j, (b, _) in enumerate(deck)
                 if i < j and charts[i] == charts[j]]
        assert alike == [], key


def test_no_label_of_a_print_still_meets_a_mark_a_rule_or_another_text(print_decks):
    """Vega's own scenegraph of each chart panel, every text measured in the face it is drawn with
    (tests/scene_boxes.py): a label placed among the marks (a percentile's, the cursor's, a veil's) never
    lies over a bar, a rule or a marker, and no text over another (axis, legend and title included)."""
    found = []
    for deck in print_decks.values():
        for slide, _ in deck:
            for *_, spec in slide.layout(PRINT)[1]:
                found += [(slide.name, *pair) for pair in collisions(spec)]
    assert found == []


def test_the_collision_check_sees_a_label_over_a_bar():
    bars = {"data": {"values": [{"x": 0, "x2": 10, "y": 0, "y2": 10}]}, "width": 100, "height": 50,
            "layer": [{"mark": "rect", "encoding": {"x": {"field": "x", "type": "quantitative"},
                                                    "x2": {"field": "x2"},
                                                    "y": {"field": "y", "type": "quantitative"},
                                                    "y2": {"field": "y2"}}},
                      {"mark": {"type": "text", "text": "p50 0.015 s"},
                       "encoding": {"x": {"datum": 5, "type": "quantitative"},
                                    "y": {"datum": 5, "type": "quantitative"}}}]}
    assert [label for label, _ in collisions(bars)] == ["p50 0.015 s"]


def grey(hex_colour: str) -> int:
    return Image.new("RGB", (1, 1), hex_colour).convert("L").getpixel((0, 0))


def test_a_print_png_is_300_dpi_in_its_file_and_its_pass_kinds_stay_apart_in_grey(print_decks):
    """The PNG says 300 dpi in its pHYs chunk (a layout program places it at 6 in); in grey, prefill, mixed
    and decode are three levels at least 40 apart, and the still draws them (its greyscale pixels)."""
    slide, svg = print_decks["ten_oclock_rush"][1]  # "Ten o'clock": the pass timeline, prefill and decode
    image = Image.open(io.BytesIO(encoded(svg, "png", PRINT)))
    assert image.info["dpi"] == pytest.approx((300, 300), abs=0.01)
    assert image.size == (6 * 300, int(3.375 * 300))
    levels = sorted(grey(c) for c in GREY_SAFE.values())
    assert min(b - a for a, b in zip(levels, levels[1:], strict=False)) >= 40, levels
    counts = image.convert("RGB").convert("L").histogram()
    for kind in ("prefill", "decode"):
        level = grey(GREY_SAFE[colour(kind)])
        assert sum(counts[level - 1:level + 2]) > 2000, (kind, level)


def test_print_keeps_lane_labels_where_lanes_are_thinner_than_a_label(print_decks):
    """The forty replies' 41 lanes and the ten o'clock rush's 246 are a few points each in print: labels at
    7 pt, the smallest group's first lane among them ("log", the long prompt's; the first contract's)."""
    forty = " ".join(svg_texts(print_decks["forty_replies"][2][1]))
    assert re.search(r"\blog\b", forty) and "streams-00" in forty
    rush = " ".join(svg_texts(print_decks["ten_oclock_rush"][2][1]))
    assert "contracts-00" in rush and re.search(r"questions-\d{3}", rush)


def test_the_svg_names_the_face_its_pdf_and_png_are_drawn_with(print_decks):
    """Every font-family of a print SVG is the stack naming Liberation Sans first (the face vl-convert draws
    and embeds), then metric twins and generic sans-serif; the PDF embeds that face."""
    if not (FACES / "LiberationSans-Regular.ttf").exists():
        if os.environ.get("CI", "").lower() in ("1", "true"):
            pytest.fail("fonts-liberation is missing and CI is set")
        pytest.skip("fonts-liberation not installed")
    slide, svg = print_decks["forty_replies"][0]
    families = set(re.findall(r'font-family="([^"]*)"', svg))
    assert families == {FONT} and FONT.startswith("Liberation Sans") and FONT.endswith("sans-serif")
    pdf = PdfReader(io.BytesIO(encoded(svg, "pdf", PRINT)))
    fonts = {str(f["/BaseFont"]) for f in pdf.pages[0]["/Resources"]["/Font"].get_object().values()}
    assert fonts and all("LiberationSans" in f for f in fonts), fonts


def test_a_pd_deck_is_named_for_its_preset_and_says_its_own_deployment():
    for key, (workload, _) in PD_KEYS.items():
        slides = story_slides(key, scenario_run)
        assert [s.name for s in slides] == [f"{key}-{i:02d}" for i in range(1, len(slides) + 1)]
        first = slides[0]
        assert first.title.startswith("1. ")
        if workload == "upstream":
            assert "upstream test replica's own deployment" in first.settings
            assert "Settings:" not in first.settings and "ten o'clock" not in first.settings
        else:
            assert first.settings.startswith("Settings:") and "ten o'clock workload" in first.settings


def test_a_step_still_is_the_slide_or_its_chart_alone(print_decks):
    """`still`: what another deck format (PowerPoint) places for a step — the whole slide, or the chart in the
    box the slide gives it, without the slide's title, numbers and settings."""
    slide, svg = print_decks["forty_replies"][2]
    assert still(slide, "svg", PRINT).decode() == svg
    chart = still(slide, "svg", PRINT, "chart").decode()
    (_, _, w, h, _), = slide.layout(PRINT)[1]
    placed = re.compile(r'<svg x="[^"]*" y="[^"]*"')  # each panel where its page puts it
    assert re.match(rf'<svg[^>]* width="{w}" height="{h}"', chart)
    assert placed.sub("<svg", chart_part(chart)) == placed.sub("<svg", chart_part(svg))
    assert slide.title not in chart and "Settings:" not in chart
    with pytest.raises(ValueError, match="expected slide or chart"):
        still(slide, "svg", PRINT, "notes")
