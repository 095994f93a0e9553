"""The project's licence and the notices its outputs carry (app/present/notices.py): LICENSE, NOTICE and
pyproject agree; what a page or an EPUB bundles is found from the outputs themselves (the scripts a page
inlines, the versions the Vega bundle reports, the fonts a PDF export embeds, every font and data file the
repository ships, every file a story reads), and each has a notice that travels with it.
"""

from __future__ import annotations

import io
import json
import re
import tomllib
import zipfile
from pathlib import Path

import pytest
import vl_convert

from app.present import epub, notices, playback
from app.present.export import render
from app.present.pack import UNPACK_JS
from app.present.page import MOUNT_JS, Figure, figure_html, vega_bundle
from engine_model import STORIES

REPO = Path(__file__).resolve().parents[1]
SCRIPT = re.compile(r"<script>//<!\[CDATA\[\n(.*?)\n//\]\]></script>", re.S)


def tiny_figure(sources: tuple[str, ...] = ()) -> Figure:
    """A figure with one setting and no chart: what a page carries beside its charts, built in no time."""
    axes = [{"name": "mixed", "label": "Mixed chunk", "labels": ["off"], "start": 0}]
    cells = {"0": {"run": 0, "tables": [], "summary": "Nothing happens."}}
    return Figure("ww-tiny", "A tiny figure", "Teaser.", "Note.", axes, cells, [1.0], [], {}, sources=sources)


def named(name: str, version: str) -> list[notices.Notice]:
    return [n for n in notices.SCRIPTS if n.name.split(" (")[0] == name and n.version == version]


def test_the_licence_is_apache_2_in_license_pyproject_and_notice():
    assert (REPO / "LICENSE").read_text().split()[:4] == ["Apache", "License", "Version", "2.0,"]
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["license"] == notices.LICENCE == "Apache-2.0"
    assert set(project["license-files"]) == {"LICENSE", "NOTICE"}


def test_the_notice_file_is_the_modules_text():
    """NOTICE is written from app/present/notices.py (`python -m app.present.notices > NOTICE`)."""
    assert (REPO / "NOTICE").read_text(encoding="utf-8") == notices.notice_text()


def test_every_script_the_page_inlines_is_the_projects_own_or_the_noticed_vega_bundle():
    """The page's scripts, less the project's own code, are exactly the bundle; the bundle carries the
    versions vl-convert reports, and each has a notice at that version."""
    scripts = SCRIPT.findall(figure_html(tiny_figure()))
    own = f"{UNPACK_JS}\n{playback.SCRIPT}\n{MOUNT_JS}"  # the shared script (a book's figures share it)
    assert len(scripts) == 2 and scripts[0] == f"{notices.bundle_banner()}\n{vega_bundle()}\n{own}"
    assert scripts[1].startswith("wwMount(") and scripts[1].endswith(");")
    json.loads(scripts[1][len("wwMount("):-2])  # the rest of the project's script is data, not code
    bundle = vega_bundle()
    found = {"Vega": vl_convert.get_vega_version(), "vega-embed": vl_convert.get_vega_embed_version(),
             "vega-themes": vl_convert.get_vega_themes_version()}
    newest = max(vl_convert.get_vegalite_versions(), key=lambda v: tuple(map(int, v.split("."))))
    found["Vega-Lite"] = re.search(rf'"({re.escape(newest)}\.\d+)"', bundle)[1]  # the one the bundle holds
    for name, version in found.items():
        assert named(name, version), f"{name} {version} is inlined, with no notice"


def test_every_font_a_pdf_export_embeds_and_every_font_file_shipped_has_a_notice():
    spec = {"data": {"values": [{"a": "x"}]}, "mark": "text", "encoding": {"text": {"field": "a"}},
            "title": {"text": "Title", "subtitle": "sub", "fontWeight": "bold"}}
    embedded = {re.sub(r"^[A-Z]{6}\+", "", f.decode()).split("-")[0]
                for f in re.findall(rb"/FontName\s*/([A-Za-z0-9+\-]+)", render(spec, "pdf"))}
    shipped = {p.stem for ext in ("ttf", "otf", "woff", "woff2", "ttc")
               for p in REPO.rglob(f"*.{ext}") if not {".venv", ".git", "node_modules"} & set(p.parts)}
    covered = {f for n in notices.FONTS for f in n.files}
    assert embedded, "the PDF embeds no font: the test no longer sees what it checks"
    assert embedded | shipped <= covered, (embedded | shipped) - covered


def test_every_bundled_data_file_and_licence_file_has_a_notice():
    """Each file in app/samples (the app and its pages ship them) and each licence file beside the data in
    tests/data is named by a data notice; so is every file a story reads."""
    files = [p for p in (REPO / "app" / "samples").iterdir() if p.name != "SOURCE.md"]
    files += list((REPO / "tests" / "data").rglob("LICENSE.*"))
    reads = [s.scenario(s.defaults).workload.trace for s in STORIES.values()]
    files += [Path(t.path) for t in reads if t is not None]
    assert any(t is not None for t in reads)  # the real-traffic story reads a trace
    assert [str(p) for p in files if notices.covering(p.name) is None] == []
    for path in files:
        licence = notices.covering(path.name).licence
        assert licence in notices.LICENCE_NAMES


def test_the_page_carries_each_copyright_line_the_licence_texts_and_the_data_its_runs_read():
    trace = next(s.scenario(s.defaults).workload.trace for s in STORIES.values()
                 if s.scenario(s.defaults).workload.trace is not None)
    plain, with_data = (figure_html(tiny_figure(sources), bundle="/* b */")
                        for sources in ((), (trace.path,)))
    fold = re.search(r'<details class="ww-credits">.*?</details>', with_data, re.S)[0]
    text = re.sub(r"\s+", " ", fold.replace("&quot;", '"').replace("&#x27;", "'").replace("&amp;", "&"))
    for n in notices.SCRIPTS:
        assert n.holder in text and n.name in text
    for key, body in notices.TEXTS.items():
        assert re.sub(r"\s+", " ", body) in text, key
    data = notices.covering(trace.path)
    assert data.name in text and data.holder in text and data.name not in plain
    assert "Apache License, Version 2.0" in text
    assert '<details class="ww-credits">' in figure_html(tiny_figure(), bare=True, bundle="/* b */")


def test_the_epub_has_a_credits_page_in_its_spine_toc_and_landmarks():
    book = epub.book([("tiny", tiny_figure())], bundle="/* b */")
    with zipfile.ZipFile(io.BytesIO(book)) as zf:
        package, nav = zf.read("EPUB/package.opf").decode(), zf.read("EPUB/nav.xhtml").decode()
        page = zf.read(f"EPUB/{epub.CREDITS}").decode()
    assert f'href="{epub.CREDITS}"' in package and '<itemref idref="notices"/>' in package
    assert re.search(r'epub:type="landmarks".*epub:type="credits" href="notices.xhtml"', nav, re.S)
    assert all(n.holder.replace("&", "&amp;") in page for n in notices.SCRIPTS)
    assert notices.TEXTS["BSD-3-Clause"].splitlines()[0] in page


@pytest.mark.parametrize("licence", sorted({n.licence for n in notices.NOTICES}))
def test_each_licence_is_named_and_its_terms_travel_or_it_asks_for_none(licence):
    assert licence in notices.LICENCE_NAMES
    assert licence in notices.TEXTS or licence in notices.LICENCE_URLS or licence in ("0BSD", "Unlicense")
