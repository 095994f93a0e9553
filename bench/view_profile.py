"""Which code fills a first view's main thread? V8's sampling profiler over first views, by JavaScript file.

    .venv/bin/python bench/view_profile.py /ten_oclock_rush /compare [--views 3] [--top 14]

Serves the app and the floor page (bench/floor_page.py); for the floor and each page, opens it once in a
fresh browser context (its frontend files then cached, as for a person's second page), then `--views` more
times in that context under the DevTools protocol's CPU profiler (a sample every 200 µs). Prints each one's
sampled milliseconds per view, self time by file (Streamlit's chunks: react-dom, StreamlitMarkdown,
emotion-styled, embed and vega-interpreter for Vega, ...; "(program)" is the browser's own work: style,
layout, paint; "(garbage collector)") and by function. Used for docs/performance.md, 2026-12-04 (second
session).
"""

from __future__ import annotations

import argparse
import collections
import re
import sys
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_app import until_idle, warm_up  # noqa: E402
from browser import CHROMIUM, CHROMIUM_ARGS, streamlit_server  # noqa: E402


def profiled(context, url: str) -> tuple[collections.Counter, collections.Counter]:
    """One first view under the profiler: self microseconds by file and by (file, function, line)."""
    page = context.new_page()
    cdp = context.new_cdp_session(page)
    cdp.send("Profiler.enable")
    cdp.send("Profiler.setSamplingInterval", {"interval": 200})
    cdp.send("Profiler.start")
    start = time.perf_counter()
    page.goto(url)
    until_idle(page, start)
    profile = cdp.send("Profiler.stop")["profile"]
    page.close()
    nodes = {node["id"]: node["callFrame"] for node in profile["nodes"]}
    by_file, by_function = collections.Counter(), collections.Counter()
    for node, micros in zip(profile["samples"], profile["timeDeltas"], strict=True):
        frame = nodes[node]
        # a chunk's name without its content hash: "react-dom.Dzbslgj4.js" -> "react-dom.js"
        name = re.sub(r"\.[\w-]{8}\.js$", ".js", frame["url"].rsplit("/", 1)[-1]) or frame["functionName"]
        by_file[name] += micros
        by_function[(name, frame["functionName"] or "(anonymous)", frame["lineNumber"])] += micros
    return by_file, by_function


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("pages", nargs="+")
    parser.add_argument("--views", type=int, default=3)
    parser.add_argument("--top", type=int, default=14)
    args = parser.parse_args()
    with (streamlit_server() as url, streamlit_server(script="bench/floor_page.py") as floor,
          sync_playwright() as p):
        warm_up(url, 300)
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for name, address in [("floor", floor + "/"), *((page, url + page) for page in args.pages)]:
            context = browser.new_context(viewport={"width": 1440, "height": 900})
            first = context.new_page()
            first.goto(address)
            until_idle(first, time.perf_counter())  # the frontend's files into the cache: not counted
            first.close()
            by_file, by_function = collections.Counter(), collections.Counter()
            for _ in range(args.views):
                files, functions = profiled(context, address)
                by_file.update(files)
                by_function.update(functions)
            context.close()
            each = 1000 * args.views  # microseconds over all views -> milliseconds a view
            print(f"== {name}: {sum(by_file.values()) / each:.0f} ms sampled a view (idle included)")
            print("   by file:", ", ".join(f"{f} {us / each:.0f}" for f, us in by_file.most_common(args.top)))
            print("   by function:", ", ".join(f"{f}:{fn}@{line} {us / each:.0f}"
                                             for (f, fn, line), us in by_function.most_common(args.top)))


if __name__ == "__main__":
    main()
