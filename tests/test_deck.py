"""`who-waits figure forty_replies --pptx tour.pptx` (app/present/deck.py): the tour as a PowerPoint file, a
16:9 slide per step with the step's title as the slide's title, its still (a 2x PNG) and its speaker notes in
the notes pane (the Markdown notes' text); LibreOffice opens it and converts it to PDF with every title
there as text.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from PIL import Image
from pptx import Presentation
from pypdf import PdfReader

from app.present import story_slides
from app.present.cli import main
from engine_model import STORIES

pytestmark = pytest.mark.xdist_group("deck")  # its own worker: the figures group is the longest
STORY = "forty_replies"


@pytest.fixture(scope="module")
def deck(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("pptx") / "tour.pptx"
    assert main(["figure", STORY, "--pptx", str(path)]) == 0
    return path


def soffice() -> str:
    found = shutil.which("soffice")
    if found:
        return found
    if os.environ.get("CI", "").lower() in ("1", "true"):
        pytest.fail("soffice is missing and CI is set: .ci/run installs Debian's libreoffice-impress")
    pytest.skip("LibreOffice not installed (apt-get install --no-install-recommends libreoffice-impress)")


def plain(markdown: str) -> list[str]:
    """The Markdown notes' paragraphs without their markup ("# " headings, **bold**)."""
    return [re.sub(r"\*\*(.+?)\*\*", r"\1", line.removeprefix("# ")) for line in markdown.splitlines()
            if line.strip()]


def test_a_slide_per_step_with_its_title_still_and_notes(deck):
    slides = story_slides(STORY)
    shown = Presentation(str(deck))
    assert len(shown.slides) == len(slides) == len(STORIES[STORY].tour)
    assert shown.slide_width * 9 == shown.slide_height * 16  # 16:9
    for page, slide in zip(shown.slides, slides, strict=True):
        assert page.shapes.title.text == slide.title
        pictures = [s for s in page.shapes if s.shape_type == 13]  # MSO_SHAPE_TYPE.PICTURE
        assert len(pictures) == 1
        image = Image.open(io.BytesIO(pictures[0].image.blob))
        assert image.width == 3840  # the screen slide at 2x
        assert pictures[0].top >= page.shapes.title.top + page.shapes.title.height  # under the title
        assert pictures[0].top + pictures[0].height <= shown.slide_height
        assert slide.chart_title in pictures[0]._element.nvPicPr.cNvPr.get("descr")  # alt text
        notes = page.notes_slide.notes_text_frame.text
        assert notes.strip() and notes.split("\n") == plain(slide.notes())


def test_libreoffice_converts_it_with_every_title_as_text(deck, tmp_path):
    profile = (tmp_path / "profile").as_uri()  # its own profile: no lock shared with another LibreOffice
    done = subprocess.run([soffice(), f"-env:UserInstallation={profile}", "--headless", "--convert-to", "pdf",
                           "--outdir", str(tmp_path), str(deck)], capture_output=True, text=True, timeout=240)
    pdf = tmp_path / "tour.pdf"
    assert done.returncode == 0 and pdf.exists(), done.stdout + done.stderr
    pages = PdfReader(pdf).pages
    assert len(pages) == len(STORIES[STORY].tour)
    for page, step in zip(pages, STORIES[STORY].tour, strict=True):
        assert step.title in " ".join(page.extract_text().split())
        assert page.images  # the still came along
