"""First views of two or more checkouts, interleaved in one browser: which is lighter, on a noisy machine.

    .venv/bin/python bench/ab_views.py before=../old-checkout now=. --pages /forty_replies /compare --rounds 3

Starts one app server per checkout (`name=path`) and the floor page (bench/floor_page.py), waits for each
warm-up, then in one headless Chromium opens, round after round, the floor and every (checkout, page) in
turn, each in a fresh context (--cached: a new tab of one context per checkout, its frontend files cached,
which leaves out what every page loads alike and keeps what the page itself costs). Interleaving puts the
same load on every variant, which separate `bench_app.py --repo` runs minutes apart do not: a page's
variants are opened back to back, in an order turned each round. Prints the median seconds, CPU seconds
(browser and servers, from /proc) and CPU seconds of the renderer's main thread (where React and Vega draw:
the quietest of the three) of each, and each as a multiple of the floor's.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_app import PAGES, open_view, warm_up  # noqa: E402
from browser import CHROMIUM, CHROMIUM_ARGS, start_streamlit  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("checkouts", nargs="+", help="name=path of a checkout to serve")
    parser.add_argument("--pages", nargs="+", default=PAGES[1:])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warm-limit", type=float, default=300)
    parser.add_argument("--cached", action="store_true", help="one context per checkout, its files cached")
    args = parser.parse_args()
    servers = {}
    try:
        for item in args.checkouts:
            name, path = item.split("=", 1)
            servers[name] = start_streamlit(start_timeout_s=120, repo=Path(path).resolve())
        servers["floor"] = start_streamlit(script="bench/floor_page.py")
        for name, (_, url) in servers.items():
            if name != "floor":
                print(f"{name}: warm-up {warm_up(url, args.warm_limit)} s", flush=True)
        names = [name for name in servers if name != "floor"]
        seen = {("floor", "/"): []} | {(name, page): [] for name in names for page in args.pages}
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            shared = {}
            if args.cached:  # each checkout's frontend loaded once, not counted
                for name, (_, url) in servers.items():
                    shared[name] = browser.new_context(viewport={"width": 1440, "height": 900})
                    open_view(shared[name], url + "/")
            for round_ in range(args.rounds):
                # a page's variants back to back, their order turned each round: the same load on each
                turn = names[round_ % len(names):] + names[:round_ % len(names)]
                for name, page in [("floor", "/"), *((n, page) for page in args.pages for n in turn)]:
                    context = shared.get(name) or browser.new_context(viewport={"width": 1440, "height": 900})
                    view = open_view(context, servers[name][1] + page)
                    if name not in shared:
                        context.close()
                    cpu = view["browser_cpu_s"] + view["server_cpu_s"]
                    seen[(name, page)].append((view["s"], cpu, view["main_thread_s"]))
        medians = {target: tuple(statistics.median(view[i] for view in views) for i in range(3))
                   for target, views in seen.items()}
        floor = medians[("floor", "/")]
        print(f"load average {os.getloadavg()[0]:.1f}; medians of {args.rounds} rounds"
              f"{', frontend cached' if args.cached else ''}\n"
              "| checkout | page | s (x floor) | CPU s (x floor) | renderer main thread CPU s (x floor) |\n"
              "| --- | --- | ---: | ---: | ---: |")
        for (name, page), figures in medians.items():
            print(f"| {name} | {page} | "
                  + " | ".join(f"{v:.2f} ({v / f:.2f})" for v, f in zip(figures, floor, strict=True)) + " |")
    finally:
        for proc, _ in servers.values():
            proc.terminate()
            proc.wait(timeout=10)


if __name__ == "__main__":
    main()
