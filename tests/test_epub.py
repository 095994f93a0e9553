"""`who-waits figure forty_replies --epub b.epub` (app/present/epub.py): an EPUB 3 book that Debian's
epubcheck passes with no error and no warning, laid out as the Open Container Format says, its one chapter
the standalone page (scripted) with each chart's image of the first setting as a file beside it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import pytest

from app.present.cli import main

pytestmark = pytest.mark.xdist_group("figures")
EPUBCHECK_JAR = Path("/usr/share/java/epubcheck.jar")  # Debian's epubcheck package
OPF = "{http://www.idpf.org/2007/opf}"
XHTML = "{http://www.w3.org/1999/xhtml}"


@pytest.fixture(scope="session")
def book(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("epub") / "b.epub"
    assert main(["figure", "forty_replies", "--epub", str(path)]) == 0
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


def test_epubcheck_finds_no_error_and_no_warning(book):
    done = subprocess.run([*epubcheck(), str(book)], capture_output=True, text=True, timeout=300)
    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    assert "No errors or warnings detected." in said and "0 fatals / 0 errors / 0 warnings" in said, said


def test_the_container_starts_with_its_mimetype_stored(book):
    with zipfile.ZipFile(book) as zf:
        first = zf.infolist()[0]
        assert first.filename == "mimetype" and first.compress_type == zipfile.ZIP_STORED
        assert zf.read("mimetype") == b"application/epub+zip" and not first.extra
        container = ET.fromstring(zf.read("META-INF/container.xml"))
        package = container.find(".//{urn:oasis:names:tc:opendocument:xmlns:container}rootfile")
        assert package.attrib["full-path"] == "EPUB/package.opf"


def test_the_package_lists_the_scripted_page_its_images_and_the_nav(book):
    with zipfile.ZipFile(book) as zf:
        names = set(zf.namelist())
        opf = ET.fromstring(zf.read("EPUB/package.opf"))
        items = {i.attrib["href"]: i.attrib for i in opf.iter(f"{OPF}item")}
        chapter = ET.fromstring(zf.read("EPUB/figure.xhtml"))  # well-formed XHTML
    assert items["figure.xhtml"]["properties"] == "scripted" and items["nav.xhtml"]["properties"] == "nav"
    images = [href for href, item in items.items() if item["media-type"] == "image/png"]
    assert sorted(images) == ["images/passes.png", "images/tokens.png", "images/wait.png"]
    assert {f"EPUB/{href}" for href in items} <= names
    assert [i.attrib["idref"] for i in opf.iter(f"{OPF}itemref")] == ["figure", "notices"]  # credits last
    shown = [img.attrib for img in chapter.iter(f"{XHTML}img")]
    assert sorted(a["src"] for a in shown) == sorted(images)  # the images are files, not data: URIs
    assert all("Longest pause, the 40 streams" in a["alt"] for a in shown)
