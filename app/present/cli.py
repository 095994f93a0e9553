"""`who-waits`: the engine's commands (`run`, `diagnose`, `trace`, … : engine_model.cli), plus `figure`, which
draws and so lives here, in the presentation layer (`python -m app.present figure …` is the same).

    who-waits figure forty_replies --set engine.enable_mixed_chunk=true --out forty.html
    who-waits figure forty_replies --vary mixed,chunk --slides deck/
    who-waits figure upstream_pd_replica --out pd.html
    who-waits figure ten_oclock_rush_pd --set model=llama-3.1-70b --set tp=8 --set pworkers=2 --out pd.html
    who-waits figure ten_oclock_rush --slides deck/ --set model.name=llama-3.1-70b --set hardware.tp_size=8
    who-waits figure forty_replies --epub forty.epub
    who-waits figure forty_replies --pptx forty.pptx
    who-waits figure forty_replies other_stall --epub book.epub --epub-images art

The slides and the PD figure run what the page runs: their `--set` takes the page's controls (as its URL
writes them, or the scenario keys they write), and the PD figure also the PD section's layout.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from app.present import (
    FIGURES,
    figure_epub,
    figure_of,
    page_values,
    pd_options,
    story_of,
    story_slides,
    write_slides,
)
from app.present.caption import caption, caption_text
from app.present.deck import tour_pptx
from app.present.epub import IMAGES
from app.present.layout import PRINT, SCREEN
from app.present.page import figure_html
from app.present.pd import KEYS as PD_KEYS
from app.present.slides import FORMATS
from engine_model import InputError
from engine_model import cli as engine_cli


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="who-waits figure",
                                description="A story outside the app: one standalone interactive page "
                                            "(HTML / XHTML, no server or network), or its tour as slides.")
    p.add_argument("story", nargs="+",
                   help=f"a story or PD preset: {', '.join(FIGURES)} (several: with --epub only, a chapter "
                        "each)")
    p.add_argument("--out", metavar="FILE.html",
                   help="the page to write (default: STORY.html), its caption and credit line beside it "
                        "(FILE.txt)")
    p.add_argument("--epub", metavar="FILE.epub",
                   help="write the figures as one EPUB 3 book, a chapter each, sharing one script; without "
                        "scripting each shows its story's key switch both ways (stills and numbers)")
    p.add_argument("--epub-images", default=IMAGES, metavar="DIR",
                   help=f"the image folder inside the book (default: {IMAGES})")
    p.add_argument("--slides", metavar="DIR",
                   help="write one 16:9 slide per tour step into DIR (PNG and SVG), with speaker notes (.md)")
    p.add_argument("--pptx", metavar="FILE.pptx",
                   help="write the tour as a PowerPoint file: a 16:9 slide per step, its title, its still "
                        "(a 2x PNG) and its speaker notes in the notes pane")
    p.add_argument("--formats", default="png,svg", metavar="png,svg,pdf",
                   help="the slides' formats (with pdf, also the deck as one PDF, a page per step)")
    p.add_argument("--print", action="store_true", dest="for_print",
                   help="slides for print: 6 in wide at 16:9, every text 7 pt or more, PNG at 300 dpi; the "
                        "narration goes to the notes, to be set as the figure's caption")
    p.add_argument("--set", action="append", default=[], metavar="key=value",
                   help="where the page opens and what every run holds: a control as the app's URL writes it "
                        "(mixed=1, chunk=2048, model=llama-3.1-70b, tp=8) or a scenario key "
                        "(engine.enable_mixed_chunk=true, hardware.gpu=h200); repeat it for more. The slides "
                        "keep the deployment it sets (GPU, model, TP, precision, seed), as the app's tour "
                        "does. The PD figures also take the PD section's layout (pworkers=2, dworkers=1, "
                        "wtp=4, cap=163840, base=one, preset=upstream)")
    p.add_argument("--vary", metavar="a,b",
                   help="the controls a reader flips (e.g. mixed,chunk); default: the story's own choice")
    p.add_argument("--bare", action="store_true",
                   help="leave out the page's own heading, teaser and note (to sit inside a post)")
    return p


def figure(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    keys = args.story
    for key in keys:
        if key not in PD_KEYS:
            story_of(key)  # an unknown story exits 2 before any work
    if len(keys) > 1 and (args.out or args.slides or args.pptx or not args.epub):
        raise InputError("story", f"{len(keys)} given: several figures go into one book (--epub FILE); a "
                                  "page or a deck takes one")
    formats = tuple(f.strip() for f in args.formats.split(",") if f.strip())
    if not formats or set(formats) - set(FORMATS):
        raise InputError("--formats", f"{args.formats!r}: expected some of {', '.join(FORMATS)}")
    for flag, path in (("--out", args.out), ("--epub", args.epub), ("--pptx", args.pptx)):
        if path and not Path(path).resolve().parent.is_dir():
            raise InputError(flag, f"{Path(path).parent} is not a folder")
    if args.for_print and not args.slides:
        raise InputError("--print", "sizes the slides for print; give --slides DIR too")
    vary = tuple(v.strip() for v in args.vary.split(",") if v.strip()) if args.vary else None
    if any(k in PD_KEYS for k in keys) and vary:
        raise InputError("--vary", "the PD figure switches between its workloads and deployments; it takes "
                                   "no --vary (--set sets the deployment and the PD layout)")
    sets = tuple(args.set)
    options = {k: pd_options(sets) if k in PD_KEYS else {"vary": vary, "sets": sets} for k in keys}
    key = keys[0]
    flag = "--slides"
    try:
        if args.slides:
            preset = PRINT if args.for_print else SCREEN
            values = options[key]["values"] if key in PD_KEYS else page_values(key, sets)
            paths = write_slides(story_slides(key, values=values), Path(args.slides), formats, preset)
            size = "6 x 3.375 in" if args.for_print else "1920x1080"
            print(f"wrote {len(paths)} files to {args.slides}: one {size} slide per tour step "
                  f"({', '.join(formats)}) and its speaker notes (.md)")
        if args.pptx:
            flag = "--pptx"
            values = options[key]["values"] if key in PD_KEYS else page_values(key, sets)
            shown = story_slides(key, values=values)
            data = tour_pptx(shown)
            Path(args.pptx).write_bytes(data)
            print(f"wrote {args.pptx} ({len(data):,} bytes; a 16:9 PowerPoint slide per tour step, "
                  f"{len(shown)} in all, with speaker notes)")
        if args.epub:
            flag = "--epub"
            data = figure_epub([(k, options[k]) for k in keys], images=args.epub_images)
            Path(args.epub).write_bytes(data)
            print(f"wrote {args.epub} ({len(data):,} bytes; an EPUB 3 book of {len(keys)} figure"
                  f"{'s' if len(keys) > 1 else ''}, scripted, with the key switch as stills)")
        if args.out or not (args.slides or args.epub or args.pptx):
            flag, out = "--out", Path(args.out or f"{key}.html")
            shown = figure_of(key, **options[key])
            text = figure_html(shown, bare=args.bare)
            out.write_text(text, encoding="utf-8")
            out.with_suffix(".txt").write_text(caption_text(caption(shown)), encoding="utf-8")
            print(f"wrote {out} ({len(text.encode()):,} bytes; opens from disk, no server or network needed) "
                  f"and its caption, {out.with_suffix('.txt')}")
    except OSError as err:
        raise InputError(flag, f"cannot write there: {err.strerror or err}") from None
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "advise":  # the engine's search, with each candidate's links into the app
        from app.present.advise import cli_links

        return engine_cli.main(argv, link=cli_links)
    if not argv or argv[0] != "figure":
        return engine_cli.main(argv)
    try:
        return figure(argv[1:])
    except InputError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
