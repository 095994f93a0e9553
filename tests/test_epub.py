"""`who-waits figure forty_replies other_stall --epub b.epub` (app/present/epub.py): one EPUB 3 book of two
figures that Debian's epubcheck passes with no message, laid out as the Open Container Format says, its
chapters the standalone pages (scripted) running one shared script file, its package stating the book's
accessibility; without scripting each chapter shows its key switch both ways: a 2x still of each setting per
chart and the numbers with a column for each, different.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import pytest
import vl_convert as vlc
from PIL import Image

from app.present.cli import main
from app.present.stills import STILL_SCALE, still_spec

pytestmark = pytest.mark.xdist_group("figures")
EPUBCHECK_JAR = Path("/usr/share/java/epubcheck.jar")  # Debian's epubcheck package
OPF = "{http://www.idpf.org/2007/opf}"
XHTML = "{http://www.w3.org/1999/xhtml}"
STORIES = ("forty_replies", "other_stall")
IMAGES = "art/figures"  # --epub-images


@pytest.fixture(scope="session")
def book(tmp_path_factory) -> Path:
    """Two figures in one book; mixed chunk only on each page, so the book builds in seconds."""
    path = tmp_path_factory.mktemp("epub") / "b.epub"
    assert main(["figure", *STORIES, "--vary", "mixed", "--epub", str(path), "--epub-images", IMAGES]) == 0
    return path


def epubcheck() -> list[str]:
    """The command that runs epubcheck: its jar under Java (Debian's /usr/bin/epubcheck is the jar itself,
    which runs only where binfmt is set up), with a quick-starting JVM."""
    java = shutil.which("java")
    if java and EPUBCHECK_JAR.exists():
        return [java, "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-jar", str(EPUBCHECK_JAR)]
    if os.environ.get("CI", "").lower() in ("1", "true"):
        pytest.fail(f"{EPUBCHECK_JAR} or java is missing and CI is set: .ci/run installs Debian's epubcheck")
    pytest.skip("epubcheck not installed (apt-get install epubcheck)")


def test_epubcheck_finds_no_message_at_all(book):
    done = subprocess.run([*epubcheck(), str(book)], capture_output=True, text=True, timeout=300)
    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    assert "No errors or warnings detected." in said, said
    assert "0 fatals / 0 errors / 0 warnings / 0 infos" in said, said


def test_the_container_starts_with_its_mimetype_stored(book):
    with zipfile.ZipFile(book) as zf:
        first = zf.infolist()[0]
        assert first.filename == "mimetype" and first.compress_type == zipfile.ZIP_STORED
        assert zf.read("mimetype") == b"application/epub+zip" and not first.extra
        container = ET.fromstring(zf.read("META-INF/container.xml"))
        package = container.find(".//{urn:oasis:names:tc:opendocument:xmlns:container}rootfile")
        assert package.attrib["full-path"] == "EPUB/package.opf"


def package(book) -> tuple[ET.Element, dict[str, dict], set[str]]:
    with zipfile.ZipFile(book) as zf:
        opf = ET.fromstring(zf.read("EPUB/package.opf"))
        names = set(zf.namelist())
    return opf, {i.attrib["href"]: i.attrib for i in opf.iter(f"{OPF}item")}, names


def test_the_chapters_share_one_script_and_keep_their_images_apart(book):
    opf, items, names = package(book)
    chapters = [f"{key}.xhtml" for key in STORIES]
    spine = [i.attrib["idref"] for i in opf.iter(f"{OPF}itemref")]
    assert spine == [items[c]["id"] for c in chapters] + ["notices"]  # the credits last
    assert all(items[c]["properties"] == "scripted" for c in chapters)
    assert items["nav.xhtml"]["properties"] == "nav"
    scripts = [href for href, item in items.items() if item["media-type"] == "application/javascript"]
    assert scripts == ["scripts/who-waits.js"] and {f"EPUB/{href}" for href in items} <= names
    with zipfile.ZipFile(book) as zf:
        shared = zf.read("EPUB/scripts/who-waits.js").decode()
        pages = {c: zf.read(f"EPUB/{c}").decode() for c in chapters}
    assert "vegaEmbed" in shared and "function wwMount" in shared and len(shared) > 500_000
    for page in pages.values():  # each chapter runs the shared file; inline only its own data
        assert page.count('<script src="scripts/who-waits.js"></script>') == 1
        assert "function wwMount" not in page and len(page) < len(shared) / 2
    images = [href for href, item in items.items() if item["media-type"] == "image/png"]
    assert images and all(re.fullmatch(rf"{IMAGES}/({'|'.join(STORIES)})/[\w-]+\.png", i) for i in images)
    assert {i.split("/")[2] for i in images} == set(STORIES)  # a folder per figure: names never clash


def test_the_package_states_the_books_accessibility(book):
    opf, _, _ = package(book)
    said: dict[str, list[str]] = {}
    for meta in opf.iter(f"{OPF}meta"):
        said.setdefault(meta.attrib.get("property", ""), []).append(meta.text)
    assert set(said["schema:accessMode"]) == {"textual", "visual"}
    assert "textual" in said["schema:accessModeSufficient"]
    assert {"alternativeText", "longDescription", "tableOfContents", "readingOrder",
            "structuralNavigation"} <= set(said["schema:accessibilityFeature"])
    assert said["schema:accessibilityHazard"] == ["none"]
    assert len(said["schema:accessibilitySummary"][0]) > 200
    assert "dcterms:conformsTo" not in said  # no WCAG audit behind the book: no conformance claimed


def still_only(element: ET.Element) -> bool:
    return "ww-still-only" in element.attrib.get("class", "").split()


def test_without_scripts_each_figure_shows_its_key_switch_both_ways(book):
    with zipfile.ZipFile(book) as zf:
        for number, key in enumerate(STORIES, 1):
            page = ET.fromstring(zf.read(f"EPUB/{key}.xhtml"))
            css = next(page.iter(f"{XHTML}style")).text
            assert ".ww-static .ww-still-only { display: block; }" in css  # the page starts static
            section = next(page.iter(f"{XHTML}section"))
            assert "ww-static" in section.attrib["class"]
            # the numbers: a column per setting, filled from each setting's run
            pair = next(t for t in section.iter(f"{XHTML}table") if "ww-pair" in t.attrib["class"])
            head = [th.text for th in pair.find(f"{XHTML}thead").iter(f"{XHTML}th")]
            assert head == ["Number", "Mixed chunk off", "Mixed chunk on"]
            rows = [[c.text for c in tr] for tr in pair.find(f"{XHTML}tbody")]
            assert [r[1] for r in rows] != [r[2] for r in rows], rows
            # every chart: one still per setting, named, different, each a file of the book
            boxes = [d for d in section.iter(f"{XHTML}div") if d.attrib.get("class") == "ww-chart"]
            others = [f for f in section.iter(f"{XHTML}figure") if still_only(f)]
            assert len(boxes) == len(others) >= 3
            for box, other in zip(boxes, others, strict=True):
                shots = [next(box.iter(f"{XHTML}figure")), other]
                said = [s.find(f"{XHTML}figcaption").text for s in shots]
                assert said == ["Mixed chunk off", "Mixed chunk on"]
                srcs = [s.find(f"{XHTML}img").attrib["src"] for s in shots]
                alts = [s.find(f"{XHTML}img").attrib["alt"] for s in shots]
                data = [zf.read(f"EPUB/{src}") for src in srcs]
                assert data[0] != data[1] and alts[0] != alts[1] and all(len(a) > 80 for a in alts)
                assert all(Image.open(io.BytesIO(d)).width >= 1000 for d in data)  # 2x, not 820 px
            credit = next(p for p in section.iter(f"{XHTML}p") if "ww-credit" in p.attrib.get("class", ""))
            assert credit.text.startswith(f"Figure {number}. ")
            assert re.search(r"Source: Who Waits model of the SGLang [\d.]+ scheduler \(.+\), seed \d+",
                             credit.text) and "Licence: " in credit.text


def test_a_still_reads_on_a_small_screen():
    """Its smallest text is at least 1/50 of its width (the page's 1x image: 9 px in 820, about 1/90), and it
    is drawn at 2x."""
    from app.present import figure_of

    figure = figure_of("forty_replies", vary=("mixed",))
    for view, fit in figure.own(figure.pair.keys[1]):
        svg = vlc.vegalite_to_svg(still_spec(view, fit))
        width = float(re.search(r'width="([\d.]+)"', svg).group(1))
        sizes = [float(s) for s in re.findall(r'<text[^>]*font-size="([\d.]+)px"[^>]*>(?!<)', svg)]  # drawn
        assert sizes and min(sizes) / width >= 1 / 50, (view.chart_id, min(sizes), width)
    assert STILL_SCALE == 2


@pytest.mark.parametrize("folder", ["../out", "/abs", "META-INF", "a b", ""])
def test_the_image_folder_must_be_a_plain_folder_inside_the_book(folder, tmp_path, capsys):
    argv = ["figure", "forty_replies", "--epub", str(tmp_path / "b.epub"), "--epub-images", folder]
    assert main(argv) == 2
    assert capsys.readouterr().err.startswith("error: --epub-images:")


def test_several_figures_go_into_a_book_only(tmp_path, capsys):
    assert main(["figure", *STORIES, "--out", str(tmp_path / "x.html")]) == 2
    assert capsys.readouterr().err.startswith("error: story:")


SHOWN = """() => [...document.querySelectorAll('.ww-still-only, .ww-live, .ww-chart svg')].map(e =>
  [e.tagName.toLowerCase(), (e.className.baseVal ?? e.className), e.getBoundingClientRect().height > 0])"""


@pytest.mark.browser
def test_a_chapter_shows_its_stills_without_scripts_and_its_charts_with_them(book, browser, tmp_path):
    """The first chapter from the unpacked book in Chromium: with scripting off, the stills and the two-column
    table show and the live numbers hide; with it on (the shared script file), the charts draw, the stills
    hide, and nothing fails."""
    with zipfile.ZipFile(book) as zf:
        zf.extractall(tmp_path)
    url = (tmp_path / "EPUB" / f"{STORIES[0]}.xhtml").as_uri()
    errors: list[str] = []
    for scripts in (False, True):
        context = browser.new_context(java_script_enabled=scripts, viewport={"width": 700, "height": 900})
        page = context.new_page()
        page.on("pageerror", lambda err: errors.append(str(err)))
        page.goto(url)
        if scripts:
            page.wait_for_function("() => document.querySelectorAll('.ww-chart svg').length >= 3",
                                   timeout=60_000)
        shown = page.evaluate(SHOWN)
        context.close()
        stills = [on for tag, cls, on in shown if "ww-still-only" in cls]
        live = [on for tag, cls, on in shown if "ww-live" in cls or tag == "svg"]
        assert len(stills) >= 4 and live
        if scripts:
            assert all(live) and not any(stills), shown
        else:
            assert all(stills) and not any(live), shown
    assert errors == []
