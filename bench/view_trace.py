"""Where a first view's time goes in the browser: a Chrome trace of one page opened in a fresh context.

    .venv/bin/python bench/view_trace.py /ten_oclock_rush [/forty_replies ...] [--top 8]

Serves the app and the floor page (bench/floor_page.py), opens the floor once to warm the machine, then the
floor and each page in a fresh browser context under Chrome's tracing (devtools.timeline, v8). For each,
from the renderer's main thread: its busy time in 100 ms slices from navigation, the largest tasks with what
filled them (script, GC, layout, paint), and when each JavaScript file was asked for and arrived (a
Streamlit element's code loads the first time one of its kind is drawn). Used for docs/performance.md,
2026-12-04.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import tempfile
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_app import until_idle, warm_up  # noqa: E402
from browser import CHROMIUM, CHROMIUM_ARGS, streamlit_server  # noqa: E402

CATEGORIES = ["devtools.timeline", "disabled-by-default-devtools.timeline", "v8", "loading"]
TASK = ("ThreadControllerImpl::RunTask", "RunTask")
PARTS = ("FunctionCall", "v8.evaluateModule", "MinorGC", "MajorGC", "Layout", "UpdateLayoutTree", "Paint",
         "ParseHTML", "FireAnimationFrame", "EventDispatch")


def record(browser, url: str, path: Path) -> float:
    """Trace one first view of `url` in a fresh context into `path`; returns its seconds."""
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    browser.start_tracing(page=page, path=str(path), categories=CATEGORIES)
    start = time.perf_counter()
    page.goto(url)
    seconds = until_idle(page, start)
    browser.stop_tracing()
    context.close()
    return seconds


def main_thread(events: list[dict]) -> list[dict]:
    """The complete events of the busiest renderer main thread."""
    def thread(e: dict) -> tuple:
        return e.get("pid"), e.get("tid")

    names = {thread(e) for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"
             and e["args"]["name"] == "CrRendererMain"}
    main = collections.Counter(thread(e) for e in events if thread(e) in names).most_common(1)[0][0]
    return [e for e in events if thread(e) == main and e.get("ph") == "X"]


def within(task: dict, events: list[dict]) -> collections.Counter:
    """Milliseconds of each part (PARTS) inside `task`."""
    end = task["ts"] + task["dur"]
    inside = [e for e in events if task["ts"] <= e["ts"] and e["ts"] + e["dur"] <= end]
    return collections.Counter({name: sum(e["dur"] for e in inside if e["name"] == name) / 1e3
                                for name in PARTS})


def report(name: str, seconds: float, events: list[dict], top: int) -> None:
    main = main_thread(events)
    tasks = [e for e in main if e["name"] in TASK]
    start = min(e["ts"] for e in main)
    slices = collections.Counter()
    for task in tasks:
        slices[int((task["ts"] - start) / 1e5)] += task["dur"] / 1e3
    print(f"== {name}: first view {seconds:.2f} s; main thread busy {sum(slices.values()):.0f} ms in "
          f"{len(tasks)} tasks")
    print("   busy per 100 ms: " + " ".join(f"{slices[i]:.0f}" for i in range(max(slices) + 1)))
    for task in sorted(sorted(tasks, key=lambda e: -e["dur"])[:top], key=lambda e: e["ts"]):
        parts = ", ".join(f"{k} {v:.0f}" for k, v in within(task, main).most_common(3) if v >= 1)
        print(f"   task at {(task['ts'] - start) / 1e3:5.0f} ms: {task['dur'] / 1e3:5.0f} ms ({parts})")
    asked, arrived = {}, {}
    for e in events:
        data = (e.get("args") or {}).get("data") or {}
        if e.get("name") == "ResourceSendRequest" and data.get("url", "").endswith(".js"):
            asked[data["requestId"]] = (e["ts"], data["url"].rsplit("/", 1)[-1])
        elif e.get("name") == "ResourceFinish":
            arrived[data.get("requestId")] = e["ts"]
    waves = collections.defaultdict(list)  # files asked for within 50 ms of each other: one wave
    for ts, file in sorted(asked.values()):
        waves[int((ts - start) / 5e4) * 50].append(file.split(".")[0])
    print("   JavaScript asked for (ms: files): " + "; ".join(
        f"{at}: {', '.join(files[:4])}{' …' if len(files) > 4 else ''} ({len(files)})"
        for at, files in sorted(waves.items())))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("pages", nargs="+")
    parser.add_argument("--top", type=int, default=8, help="the largest tasks shown per view")
    args = parser.parse_args()
    with streamlit_server() as url, streamlit_server(script="bench/floor_page.py") as floor, \
            sync_playwright() as p, tempfile.TemporaryDirectory() as tmp:
        warm_up(url, 300)
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        record(browser, floor + "/", Path(tmp) / "warm.json")
        for name, target in [("floor", floor + "/"), *((page, url + page) for page in args.pages)]:
            path = Path(tmp) / "trace.json"
            seconds = record(browser, target, path)
            trace = json.loads(path.read_text())
            report(name, seconds, trace["traceEvents"] if isinstance(trace, dict) else trace, args.top)
        browser.close()


if __name__ == "__main__":
    main()
