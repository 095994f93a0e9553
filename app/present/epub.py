"""A figure as an EPUB 3 book: the standalone page as its one chapter (a scripted XHTML content document),
each chart's image of the first setting as a file beside it (what a reader without scripting shows), a
navigation document and the package. Debian's `epubcheck` passes it with no error and no warning
(tests/test_epub.py).

The zip's layout is the one EPUB's Open Container Format fixes: `mimetype` first and stored (not
compressed), then META-INF/container.xml naming the package document, then the book's files.
"""

from __future__ import annotations

import html
import io
import uuid
import zipfile
from datetime import UTC, datetime

from app.present import notices
from app.present.page import Figure, figure_html

CHAPTER = "figure.xhtml"
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
  </metadata>
  <manifest>
    <item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>
    <item id="figure" href="{chapter}" media-type="application/xhtml+xml" properties="scripted"/>
    <item id="notices" href="{credits}" media-type="application/xhtml+xml"/>
{images}
  </manifest>
  <spine>
    <itemref idref="figure"/>
    <itemref idref="notices"/>
  </spine>
</package>
"""
NAV = """<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE html>
<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops" lang="en" xml:lang="en">
<head><meta charset="utf-8"/><title>{title}</title></head>
<body>
<nav epub:type="toc" id="toc"><h1>Contents</h1><ol><li><a href="{chapter}">{title}</a></li>
<li><a href="{credits}">Credits and licences</a></li></ol></nav>
<nav epub:type="landmarks" id="landmarks" hidden="hidden"><h1>Landmarks</h1><ol>
<li><a epub:type="bodymatter" href="{chapter}">{title}</a></li>
<li><a epub:type="credits" href="{credits}">Credits and licences</a></li></ol></nav>
</body>
</html>
"""


def image_path(chart_id: str) -> str:
    return f"images/{chart_id}.png"


def book(figure: Figure, bundle: str | None = None, modified: datetime | None = None) -> bytes:
    """The EPUB file. Its identifier follows from the figure's id (the same figure, the same book);
    `modified` (default: now) is the one date EPUB asks for."""
    title = html.escape(figure.title)
    when = (modified or datetime.now(UTC)).astimezone(UTC).replace(microsecond=0)
    paths = {c.chart_id: image_path(c.chart_id) for c in figure.charts}
    images = "\n".join(f'    <item id="image-{i}" href="{path}" media-type="image/png"/>'
                       for i, path in enumerate(paths.values()))
    book_id = uuid.uuid5(uuid.NAMESPACE_URL, f"who-waits:{figure.uid}")
    files = [("mimetype", b"application/epub+zip"),
             ("META-INF/container.xml", CONTAINER.encode()),
             ("EPUB/package.opf", PACKAGE.format(uid=book_id, title=title, chapter=CHAPTER, credits=CREDITS,
                                                 images=images,
                                                 modified=when.strftime("%Y-%m-%dT%H:%M:%SZ")).encode()),
             ("EPUB/nav.xhtml", NAV.format(title=title, chapter=CHAPTER, credits=CREDITS).encode()),
             (f"EPUB/{CREDITS}", notices.page_xhtml(notices.data_for(figure.sources)).encode()),
             (f"EPUB/{CHAPTER}", figure_html(figure, bundle=bundle, images=paths).encode()),
             *((f"EPUB/{paths[c.chart_id]}", c.image) for c in figure.charts)]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in files:
            info = zipfile.ZipInfo(name, date_time=when.timetuple()[:6])
            stored = name == "mimetype" or name.endswith(".png")  # mimetype must be; a PNG is compressed
            info.compress_type = zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return buf.getvalue()
