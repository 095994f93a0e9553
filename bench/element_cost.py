"""What does one Streamlit element of each kind cost the browser? N of a kind on a bare page, against none.

    .venv/bin/python bench/element_cost.py [--n 40] [--rounds 3] [KIND ...]

Serves bench/element_page.py and opens, in one headless Chromium, each kind's page in a fresh context, the
kinds in turn, `--rounds` times. An element's cost is (the median CPU seconds of its page, browser and
server, from /proc; and the renderer's main thread alone) minus the bare page's, over N. Used to decide
what a first view can carry (docs/performance.md, 2026-12-03 afternoon).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_app import open_view  # noqa: E402
from browser import CHROMIUM, CHROMIUM_ARGS, streamlit_server  # noqa: E402
from element_page import KINDS  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("kinds", nargs="*", default=list(KINDS))
    parser.add_argument("--n", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    seen = {kind: [] for kind in ["none", *args.kinds]}
    with streamlit_server(script="bench/element_page.py") as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for _ in range(args.rounds):
            for kind, cpu in seen.items():
                context = browser.new_context(viewport={"width": 1440, "height": 900})
                view = open_view(context, f"{url}/?kind={kind}&n={args.n}")
                context.close()
                cpu.append((view["browser_cpu_s"] + view["server_cpu_s"], view["main_thread_s"]))
    medians = {kind: [statistics.median(view[i] for view in views) for i in (0, 1)]
               for kind, views in seen.items()}
    bare, bare_main = medians["none"]
    print(f"bare page {bare:.2f} CPU-s, renderer main thread {bare_main:.2f} (median of {args.rounds})")
    for kind, (cpu, main_s) in medians.items():
        if kind != "none":
            print(f"{kind:14s} {cpu:5.2f} CPU-s   {(cpu - bare) / args.n * 1e3:6.1f} ms an element   "
                  f"main thread {(main_s - bare_main) / args.n * 1e3:6.1f} ms")


if __name__ == "__main__":
    main()
