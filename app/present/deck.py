"""The guided tour as a PowerPoint file (python-pptx), for PowerPoint, Keynote, Google Slides and LibreOffice:
one 16:9 slide per tour step, its title as the slide's title (text a reader finds and a screen reader reads),
under it the step's still (app.present.slides: numbers, the step's chart, narration and settings, as a 2x
PNG, described by its alt text) and in the notes pane the step's speaker notes, the same text as its
Markdown notes (Slide.notes), with their bold kept.
"""

from __future__ import annotations

import dataclasses
import io
import re

from PIL import Image
from pptx import Presentation
from pptx.enum.text import PP_ALIGN
from pptx.util import Emu, Pt

from app.present.layout import SCREEN
from app.present.slides import Slide, slide_bytes

WIDTH, HEIGHT = Emu(12_192_000), Emu(6_858_000)  # 13.333 × 7.5 in: PowerPoint's 16:9
MARGIN = Emu(320_040)  # 0.35 in
TITLE_HEIGHT = Emu(777_240)  # 0.85 in
TITLE_PT = 28  # the still's title at 52 px of 1920, on a 13.333 in slide
TITLE_ONLY = 5  # the default template's "Title Only" layout
PAPER = 250  # a grey this light or lighter is the slide's white paper
BOLD = re.compile(r"\*\*(.+?)\*\*")


def still(slide: Slide) -> bytes:
    """The step's still without its title (the slide's title says it), the blank where the title was cut
    off down to the preset's margin, its paper pure white (256 colours may leave it 254 grey, a box on a
    white slide): a 2x PNG."""
    image = Image.open(io.BytesIO(slide_bytes(dataclasses.replace(slide, title=""), "png", SCREEN)))
    if image.mode == "P":
        palette = image.getpalette() or []
        image.putpalette([255 if min(palette[i - i % 3:i - i % 3 + 3]) >= PAPER else v
                          for i, v in enumerate(palette)])
    ink = image.convert("L").point(lambda v: 255 if v < PAPER else 0).getbbox()
    top = max(0, (ink[1] if ink else 0) - round(SCREEN.pad * SCREEN.png_scale / 2))
    out = io.BytesIO()
    image.crop((0, top, image.width, image.height)).save(out, "PNG", optimize=True)
    return out.getvalue()


def notes_paragraphs(markdown: str) -> list[list[tuple[str, bool]]]:
    """The Markdown notes as paragraphs of (text, bold) runs: a heading's text bold, **bold** bold, the
    markup itself gone."""
    out = []
    for line in markdown.splitlines():
        if not line.strip():
            continue
        if line.startswith("# "):
            out.append([(line[2:].strip(), True)])
            continue
        parts = BOLD.split(line)  # text, bold, text, bold, ...
        out.append([(part, i % 2 == 1) for i, part in enumerate(parts) if part])
    return out


def tour_pptx(slides: list[Slide]) -> bytes:
    """The deck: a slide per step, in order."""
    deck = Presentation()
    deck.slide_width, deck.slide_height = WIDTH, HEIGHT
    layout = deck.slide_layouts[TITLE_ONLY]
    for slide in slides:
        page = deck.slides.add_slide(layout)
        title = page.shapes.title
        title.left, title.top = MARGIN, Emu(MARGIN // 2)
        title.width, title.height = Emu(WIDTH - 2 * MARGIN), TITLE_HEIGHT
        title.text = slide.title
        frame = title.text_frame
        frame.word_wrap = True
        paragraph = frame.paragraphs[0]
        paragraph.alignment = PP_ALIGN.LEFT
        paragraph.runs[0].font.size, paragraph.runs[0].font.bold = Pt(TITLE_PT), True
        _picture(page, still(slide), slide)
        _notes(page, slide.notes())
    out = io.BytesIO()
    deck.save(out)
    return out.getvalue()


def _picture(page, data: bytes, slide: Slide) -> None:
    """The still in the room under the title, as large as it fits, centred; its alt text the chart, the
    numbers and the settings."""
    width, height = Image.open(io.BytesIO(data)).size
    top = MARGIN // 2 + TITLE_HEIGHT
    room_w, room_h = WIDTH - 2 * MARGIN, HEIGHT - top - MARGIN // 2
    scale = min(room_w / width, room_h / height)
    w, h = int(width * scale), int(height * scale)
    picture = page.shapes.add_picture(io.BytesIO(data), Emu((WIDTH - w) // 2), Emu(top), Emu(w), Emu(h))
    picture.name = f"{slide.name} still"
    said = f"{slide.chart_title}. {slide.numbers}. {slide.settings}".replace("   ·   ", "; ")
    picture._element.nvPicPr.cNvPr.set("descr", said)  # the alt text (python-pptx has no property for it)


def _notes(page, markdown: str) -> None:
    frame = page.notes_slide.notes_text_frame
    frame.text = ""
    for i, runs in enumerate(notes_paragraphs(markdown)):
        paragraph = frame.paragraphs[0] if i == 0 else frame.add_paragraph()
        for text, bold in runs:
            run = paragraph.add_run()
            run.text, run.font.bold = text, bold
