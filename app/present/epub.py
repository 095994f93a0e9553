"""Figures as an EPUB 3 book: each figure's standalone page a chapter (a scripted XHTML content document),
every chapter running one shared script file (Vega, Vega-Lite, vega-embed and the page's own code, once for
the whole book), and for a reader without scripting (most e-readers) each chart as two stills of the
story's key switch (app.present.stills) beside the numbers of both settings, each figure's caption with its
credit line under it, a navigation document, and a package document that states the book's accessibility
(schema.org's accessMode, accessModeSufficient, accessibilityFeature, accessibilityHazard,
accessibilitySummary). Debian's `epubcheck` passes it with no message (tests/test_epub.py).

The zip's layout is the one EPUB's Open Container Format fixes: `mimetype` first and stored (not
compressed), then META-INF/container.xml naming the package document, then the book's files.
"""

from __future__ import annotations

import html
import io
import re
import uuid
import zipfile
from datetime import UTC, datetime

from app.present import notices
from app.present.caption import caption
from app.present.page import Figure, figure_html, shared_script
from app.present.stills import still_png
from engine_model import InputError

IMAGES = "images"  # the image folder inside the book (EPUB/IMAGES/<figure>/…), `--epub-images`
SCRIPT = "scripts/who-waits.js"  # the one script every chapter runs
CREDITS = "notices.xhtml"  # the credits and licences (app.present.notices), last in the spine
CONTAINER = """<?xml version="1.0" encoding="UTF-8"?>
<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">
  <rootfiles>
    <rootfile full-path="EPUB/package.opf" media-type="application/oebps-package+xml"/>
  </rootfiles>
</container>
"""
PACKAGE = """<?xml version="1.0" encoding="UTF-8"?>
<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="book-id" xml:lang="en">
  <metadata xmlns:dc="http://purl.org/dc/elements/1.1/">
    <dc:identifier id="book-id">urn:uuid:{uid}</dc:identifier>
    <dc:title>{title}</dc:title>
    <dc:language>en</dc:language>
    <dc:creator>Who Waits</dc:creator>
    <meta property="dcterms:modified">{modified}</meta>
{access}
  </metadata>
  <manifest>
    <item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>
    <item id="script" href="{script}" media-type="application/javascript"/>
{items}
    <item id="notices" href="{credits}" media-type="application/xhtml+xml"/>
  </manifest>
  <spine>
{spine}
    <itemref idref="notices"/>
  </spine>
</package>
"""
NAV = """<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE html>
<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops" lang="en" xml:lang="en">
<head><meta charset="utf-8"/><title>{title}</title></head>
<body>
<nav epub:type="toc" id="toc"><h1>Contents</h1><ol>{entries}
<li><a href="{credits}">Credits and licences</a></li></ol></nav>
<nav epub:type="landmarks" id="landmarks" hidden="hidden"><h2>Landmarks</h2><ol><li><a epub:type="bodymatter"
href="{first}">{first_title}</a></li>
<li><a epub:type="credits" href="{credits}">Credits and licences</a></li></ol></nav>
</body>
</html>
"""
# What a reader can count on, as schema.org's accessibility properties say it (EPUB Accessibility 1.1's
# discovery metadata). No conformance to WCAG is claimed: that takes an audit, which a publisher does.
ACCESS = {
    "schema:accessMode": ("textual", "visual"),
    "schema:accessModeSufficient": ("textual,visual", "textual"),
    "schema:accessibilityFeature": ("alternativeText", "longDescription", "tableOfContents", "readingOrder",
                                    "structuralNavigation"),
    "schema:accessibilityHazard": ("none",),
    "schema:accessibilitySummary": (
        "Each chart has a text alternative that states its headline numbers and a description in words "
        "(This chart in words); every number is also in a table with row and column headers. Without "
        "scripting, each figure shows the setting its story turns on both ways, as images and as a table "
        "with a column for each; with scripting, radio buttons in labelled groups switch between the "
        "settings and the numbers are announced as they change. Text reflows; no conformance to WCAG is "
        "claimed.",),
}


def image_path(folder: str, name: str, chart_id: str, setting: str) -> str:
    """A still's path in the book: FOLDER/FIGURE/CHART-SETTING.png ("images/forty_replies/tokens-mixed-
    chunk-on.png"), so several figures' images never share a name."""
    return f"{folder}/{name}/{chart_id}-{slug(setting)}.png"


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "setting"


def image_folder(folder: str) -> str:
    """`--epub-images`: a relative folder inside the book, of plain names."""
    clean = folder.strip().rstrip("/")
    parts = clean.split("/")
    if not clean or any(p in ("", ".", "..") or not re.fullmatch(r"[A-Za-z0-9._-]+", p) for p in parts) \
            or parts[0] in ("META-INF", "scripts") or clean.lower().endswith((".xhtml", ".opf")):
        raise InputError("--epub-images", f"{folder!r}: expected a folder inside the book of plain names "
                                          "(letters, digits, '.', '_', '-'), such as images or art/figures")
    return clean


def stills(figure: Figure, name: str, folder: str) -> dict[str, dict[str, tuple[str, bytes]]]:
    """Setting key -> chart id -> (path in the book, PNG): the key switch's two settings (the first
    setting alone where the figure has no pair), each chart drawn by the page's own builder (stills.py)."""
    pair = figure.pair
    keys = pair.keys if pair else ("|".join(str(a["start"]) for a in figure.axes),)
    names = dict(zip(pair.keys, pair.names, strict=True)) if pair else {keys[0]: "first setting"}
    out: dict[str, dict[str, tuple[str, bytes]]] = {}
    for key in dict.fromkeys(keys):
        shown = figure.own(key) if figure.own else []
        out[key] = {view.chart_id: (image_path(folder, name, view.chart_id, names[key]), still_png(view, fit))
                    for view, fit in shown}
    return out


def book(figures: list[tuple[str, Figure]], bundle: str | None = None, modified: datetime | None = None,
         images: str = IMAGES) -> bytes:
    """The EPUB file of `figures` (name, figure): a chapter each, NAME.xhtml, in order, all of them running
    one script file. Its identifier follows from the figures' ids (the same figures, the same book);
    `modified` (default: now) is the one date EPUB asks for; `images`: the image folder inside the book."""
    folder = image_folder(images)
    names = [name for name, _ in figures]
    if not figures or len(set(names)) < len(names):
        got = ", ".join(names) or "none"
        raise InputError("--epub", f"expected one or more different figures, got {got}")
    titles = [f.title for _, f in figures]
    title = html.escape("; ".join(dict.fromkeys(titles)))
    when = (modified or datetime.now(UTC)).astimezone(UTC).replace(microsecond=0)
    chapters, pictures = [], []
    for n, (name, figure) in enumerate(figures, 1):
        drawn = stills(figure, name, folder)
        srcs = {key: {chart: path for chart, (path, _) in charts.items()} for key, charts in drawn.items()}
        page = figure_html(figure, stills=srcs, script=SCRIPT, credit=caption(figure, n))
        chapters.append((f"{name}.xhtml", page))
        pictures += [pic for charts in drawn.values() for pic in charts.values()]
    items = [f'    <item id="c{i}" href="{href}" media-type="application/xhtml+xml" properties="scripted"/>'
             for i, (href, _) in enumerate(chapters)]
    items += [f'    <item id="i{i}" href="{path}" media-type="image/png"/>'
              for i, (path, _) in enumerate(pictures)]
    spine = "\n".join(f'    <itemref idref="c{i}"/>' for i in range(len(chapters)))
    access = "\n".join(f'    <meta property="{prop}">{html.escape(value)}</meta>'
                       for prop, values in ACCESS.items() for value in values)
    entries = "".join(f'<li><a href="{href}">{html.escape(t)}</a></li>'
                      for (href, _), t in zip(chapters, titles, strict=True))
    book_id = uuid.uuid5(uuid.NAMESPACE_URL, "who-waits:" + "|".join(f.uid for _, f in figures))
    package = PACKAGE.format(uid=book_id, title=title, modified=when.strftime("%Y-%m-%dT%H:%M:%SZ"),
                             access=access, script=SCRIPT, items="\n".join(items), spine=spine,
                             credits=CREDITS)
    nav = NAV.format(title=title, entries=entries, first=chapters[0][0], first_title=html.escape(titles[0]),
                     credits=CREDITS)
    sources = [source for _, figure in figures for source in figure.sources]
    files = [("mimetype", b"application/epub+zip"),
             ("META-INF/container.xml", CONTAINER.encode()),
             ("EPUB/package.opf", package.encode()),
             ("EPUB/nav.xhtml", nav.encode()),
             (f"EPUB/{SCRIPT}", shared_script(bundle).encode()),
             *((f"EPUB/{href}", page.encode()) for href, page in chapters),
             (f"EPUB/{CREDITS}", notices.page_xhtml(notices.data_for(sources)).encode()),
             *((f"EPUB/{path}", data) for path, data in pictures)]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in files:
            info = zipfile.ZipInfo(name, date_time=when.timetuple()[:6])
            stored = name == "mimetype" or name.endswith(".png")  # mimetype must be; a PNG is compressed
            info.compress_type = zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return buf.getvalue()
