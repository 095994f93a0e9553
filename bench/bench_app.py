"""Is every view ready in a breath? Measured in headless Chromium, on a freshly started server.

    .venv/bin/python bench/bench_app.py [--flips 8] [--steps 6] [--json FILE]
    .venv/bin/python bench/bench_app.py --repo ../other-checkout --script app/main.py   # e.g. an older commit
    .venv/bin/python bench/bench_app.py --query "model=llama-3.1-70b&tp=8" --actions-only  # a deployment

Starts `streamlit run app/serve.py` on a free port and waits for its health check; then, if the app reports a
warm-up (/warmup), waits for it (at most --warm-limit s) and says how long it took. Then, each in a fresh
browser session (a new person):
  first view   every page: navigation -> the page has drawn (cards, charts, no placeholder, script over);
               again in one browser that has the app's frontend files cached (a person's second page);
               with when its parts were first seen (frontend loaded, title, script over, first chart)
  tour step    each guided-tour step of the forty replies: click -> redrawn
  flip         the mixed-chunk toggle, --flips times
  (--query: the forty replies open with these URL parameters, e.g. a deployment; --actions-only: only the
  tour steps, flips and steps, after one untimed view of that page, which computes its runs)
  step         step-through "Step" and "Event" clicks, --steps of each: click -> the fragment has redrawn
  PD preset    the ten o'clock page's upstream replica preset: the option clicked in the open list -> both
               policies drawn
A time runs from the navigation or click to the first moment the page is idle and fully drawn (confirmed by
later polls, which are not counted). The floor page (bench/floor_page.py: bare Streamlit, one Altair chart)
is opened in the same browser right before every first view of a page, each in a fresh context: a first
view's multiple of the floor is the median over the rounds of its seconds over those of the floor view just
before it, so a noisy machine's speed, and its drift during the run, cancel out. After every action it
checks that the address bar changed to match.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
import urllib.request
from pathlib import Path

from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parent))
from browser import CHROMIUM, CHROMIUM_ARGS, open_list, streamlit_server  # noqa: E402
from procs import CpuMeter, main_thread_s, renderer_cpu  # noqa: E402

PAGES = ["/", "/forty_replies", "/other_stall", "/ten_oclock_rush", "/real_traffic", "/compare",
         "/your_server"]
# One poll: [idle and drawn, the number of charts, the address, the parts of a first view seen so far].
# The parts: Streamlit's frontend has loaded and asked for the page; the page's title is on screen; the
# server's script run is over (every element has arrived and been rendered); the first chart has drawn. A
# first view's time is when the page is idle, every chart drawn.
STATE = """() => {
  const charts = [...document.querySelectorAll('[data-testid="stVegaLiteChart"]')];
  const script = document.querySelector('[data-testid="stApp"]')?.getAttribute('data-test-script-state');
  const busy = !!document.querySelector('[data-testid="stStatusWidget"], [data-testid="stSkeleton"], '
    + '[data-testid="stSkeletonElement"], [data-stale="true"]');
  const title = !!document.querySelector('[data-testid="stMain"] h1');
  const ready = (title || !!document.querySelector('.st-key-present_bar')) && script === 'notRunning';
  const drawn = charts.map(c => !!c.querySelector('svg, canvas'));
  return [ready && !busy && drawn.every(Boolean), charts.length, location.href,
          {"frontend loaded": !!script, "title shown": title, "script over": script === 'notRunning',
           "first chart drawn": drawn.some(Boolean)}];
}"""


def until_idle(page, start: float, timeout_s: float = 120, confirm: int = 3, poll_ms: int = 30,
               parts: dict | None = None) -> float:
    """Seconds from `start` to the first moment the page was idle and drawn, held for `confirm` polls.
    `parts`: filled with the seconds at which each part of a first view (STATE) was first seen."""
    first, last = None, None
    while time.perf_counter() - start < timeout_s:
        idle, num, _, seen = page.evaluate(STATE)
        now = time.perf_counter()
        if parts is not None:
            parts |= {name: round(now - start, 2) for name, shown in seen.items() if shown and name not in
                      parts}  # in place: the caller's dict
        if idle and (first is None or num != last):
            first, streak = now, 0
        if idle:
            streak += 1
            if streak > confirm:
                return first - start
        else:
            first = None
        last = num
        page.wait_for_timeout(poll_ms)
    raise TimeoutError(f"not idle within {timeout_s:g} s")


def act(page, click, url_changes: str | None = None) -> tuple[float, bool]:
    """Click, wait for the address bar to change (the rerun has happened), then until idle.
    Returns (seconds, whether the address bar followed)."""
    before = page.url
    start = time.perf_counter()
    click()
    followed = True
    try:
        page.wait_for_function(f"() => location.href !== {json.dumps(before)}", timeout=60_000, polling=20)
    except Exception:  # noqa: BLE001 - a URL that never changes is what we report
        followed = False
    seconds = until_idle(page, start)
    if url_changes is not None:  # the URL is written in parts (the cursor first): read it once idle
        followed = followed and re.search(url_changes, page.url) is not None
    return seconds, followed


def warm_up(url: str, limit_s: float) -> float | None:
    """Seconds the app's warm-up took (None when the app has none), waiting at most limit_s."""
    start = time.perf_counter()
    while time.perf_counter() - start < limit_s:
        try:
            with urllib.request.urlopen(f"{url}/warmup", timeout=2) as reply:
                status = json.loads(reply.read())
        except (OSError, ValueError):
            return None
        if status["finished"]:
            return status["seconds"]
        time.sleep(0.25)
    return limit_s


BROWSER, SERVER = CpuMeter(b"chromium"), CpuMeter(b"streamlit")


def open_view(context, url: str, parts: dict | None = None) -> dict[str, float]:
    """Open `url` in a new tab of `context` until idle and drawn: its seconds, and the CPU seconds the
    browser and the servers used meanwhile (from /proc: what other work on the machine barely moves), and
    those of the renderers' main threads and all their threads (procs.main_thread_s)."""
    page = context.new_page()
    BROWSER.start()
    SERVER.start()
    renderers = renderer_cpu()
    start = time.perf_counter()
    page.goto(url)
    seconds = until_idle(page, start, parts=parts)
    main_s, renderer_s = main_thread_s(renderers, renderer_cpu())  # before the tab's renderer ends
    cpu = {"s": seconds, "browser_cpu_s": BROWSER.read(), "server_cpu_s": SERVER.read(),
           "main_thread_s": main_s, "renderer_s": renderer_s}
    page.close()
    return cpu


def floor_views(browser, url: str, repeats: int = 3) -> list[dict[str, float]]:
    """The floor page's first view (bench/floor_page.py), `repeats` times, each in a fresh browser context."""
    seen = []
    for _ in range(repeats):
        context = browser.new_context(viewport={"width": 1440, "height": 900})
        seen.append(open_view(context, url + "/"))
        context.close()
    return seen


def first_views(browser, url: str, cached: bool = False, parts: dict | None = None,
                pages: list[str] = PAGES, floor_url: str | None = None) -> dict[str, dict]:
    """Each page in a new Streamlit session (open_view's figures). `cached`: in one browser that has loaded
    the app once (its frontend files in the browser's cache, as for a person opening a second page or a
    shared link); otherwise each in a fresh browser context (nothing cached: a person's very first page).
    `floor_url`: the floor page's first view right before each page's, and the page's figures over the
    floor's ("x_floor", "x_floor_cpu")."""
    out = {}
    shared = browser.new_context(viewport={"width": 1440, "height": 900}) if cached else None
    if shared is not None:
        open_view(shared, url + "/")
    for path in pages:
        floor = floor_views(browser, floor_url, 1)[0] if floor_url else None
        context = shared or browser.new_context(viewport={"width": 1440, "height": 900})
        out[path] = open_view(context, url + path, None if parts is None else parts.setdefault(path, {}))
        if floor is not None:
            page = out[path]
            page |= {"floor_s": floor["s"], "floor_cpu_s": cpu(floor), "x_floor": page["s"] / floor["s"],
                     "x_floor_cpu": cpu(page) / cpu(floor)}
        if shared is None:
            context.close()
    if shared is not None:
        shared.close()
    return out


def story_actions(browser, url: str, flips: int, steps: int, query: str = "") -> dict[str, list]:
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    page.goto(url + "/forty_replies" + (f"?{query}" if query else ""))
    until_idle(page, time.perf_counter())
    out = {"tour step": [], "flip": [], "step": [], "address bar followed": []}
    for i in range(6):
        button = page.get_by_role("button", name=re.compile(rf"^{i + 1}\. "))
        seconds, followed = act(page, button.click, rf"step={i + 1}")
        out["tour step"].append(seconds)
        out["address bar followed"].append(followed)
    page.get_by_role("button", name=re.compile(r"^1\. ")).click()
    until_idle(page, time.perf_counter())
    toggle = page.locator('[data-testid="stCheckbox"]').filter(has_text="Mixed chunk").locator("label")
    for i in range(flips):
        seconds, followed = act(page, toggle.click, "mixed=1" if i % 2 == 0 else None)
        out["flip"].append(seconds)
        out["address bar followed"].append(followed)
    for name in ("Step", "Event"):
        for _ in range(steps):
            button = page.get_by_role("button", name=name, exact=True).last
            seconds, followed = act(page, button.click, r"t=")
            out["step"].append(seconds)
            out["address bar followed"].append(followed)
    context.close()
    return out


def upstream_preset(browser, url: str) -> tuple[float, bool]:
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    page.goto(url + "/ten_oclock_rush")
    until_idle(page, time.perf_counter())
    shown = page.locator('[data-testid="stCheckbox"]').filter(has_text="Show PD disaggregation")
    if shown.count() and not shown.first.locator("input").is_checked():  # the section opens hidden
        shown.first.click()
        until_idle(page, time.perf_counter())
    choice = open_list(page, "Preset", "Upstream")  # opening the list is the browser's own, not timed
    result = act(page, choice.click, "preset=upstream")
    context.close()
    return result


def pd_section(browser, url: str, query: str = "") -> list[float]:
    """The PD section shown (its verdict, three runs or more) with the toggle, twice: the first with the runs
    as the warm-up left them (the default story's are warmed; another deployment's are not), the second
    with them cached, as a room sees it after the presenter."""
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    page.goto(url + "/ten_oclock_rush" + query)
    until_idle(page, time.perf_counter())
    toggle = page.locator('[data-testid="stCheckbox"]').filter(has_text="Show PD disaggregation").first
    out = []
    for _ in range(2):
        seconds, _ = act(page, toggle.click, "pd=1")
        out.append(seconds)
        act(page, toggle.click)
    context.close()
    return out


def cpu(view: dict) -> float:
    return view["browser_cpu_s"] + view["server_cpu_s"]


def report_first_views(figures: dict) -> None:
    """Each first view in seconds and in CPU seconds (browser + server), each also as a multiple of the floor
    page's (the target: at most 1.5x). On a busy machine the CPU ratio is the one to read."""
    seen, seen_cpu = figures["floor_s"], figures["floor_cpu_s"]
    print(f"load average {os.getloadavg()[0]:.1f}; floor page (bare Streamlit, one Altair chart), opened "
          f"before each page: median {statistics.median(seen):.2f} s of {len(seen)} views ({min(seen):.2f}–"
          f"{max(seen):.2f} s), CPU (browser + server) {statistics.median(seen_cpu):.2f} s; a page's "
          "multiples are the median over rounds of it over the floor view just before it")
    print("| page | first view s | x floor | CPU s (browser + server) | x floor's CPU | frontend cached s | "
          "parts seen (s) |\n| --- | ---: | ---: | ---: | ---: | ---: | --- |")
    for path, view in figures["first_view"].items():
        parts = " · ".join(f"{name} {at:.2f}" for name, at in figures["first_view_parts_s"][path].items())
        print(f"| {path} | {view['s']:.2f} | {view['x_floor']:.2f} | {cpu(view):.2f} "
              f"({view['browser_cpu_s']:.2f} + {view['server_cpu_s']:.2f}) | {view['x_floor_cpu']:.2f} | "
              f"{figures['first_view_cached'][path]['s']:.2f} | {parts} |")


def p95(values: list[float]) -> float:
    """Nearest-rank 95th percentile."""
    ordered = sorted(values)
    return ordered[max(0, -(-95 * len(ordered) // 100) - 1)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--flips", type=int, default=8)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--warm-limit", type=float, default=120)
    parser.add_argument("--repo", type=Path, default=None, help="another checkout to serve (its own app)")
    parser.add_argument("--script", default="app/serve.py")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--repeat", type=int, default=3,
                        help="first views: the median of this many rounds (one alone moves by 0.1-0.2x)")
    parser.add_argument("--first-views", action="store_true", help="only the floor and the first views")
    parser.add_argument("--pages", nargs="+", default=PAGES, help="first views of these pages only")
    parser.add_argument("--query", default="", help="URL parameters the forty replies open with")
    parser.add_argument("--actions-only", action="store_true", help="only tour steps, flips and steps")
    parser.add_argument("--pd-only", action="store_true", help="only the PD section shown, twice per case")
    args = parser.parse_args()
    serve = {"script": args.script} | ({"repo": args.repo.resolve()} if args.repo else {})
    started = time.perf_counter()
    with streamlit_server(**serve) as url, streamlit_server(script="bench/floor_page.py") as floor_url, \
            sync_playwright() as p:
        health = time.perf_counter() - started
        warm = warm_up(url, args.warm_limit)
        print(f"health check answered after {health:.1f} s; warm-up: "
              + ("none" if warm is None else f"{warm:.1f} s"))
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        if args.pd_only:
            figures = {"pd_section_s": pd_section(browser, url),
                       "pd_section_70b_s": pd_section(browser, url, "?model=llama-3.1-70b&tp=8")}
            browser.close()
            report(figures, args.json)
            return
        if args.actions_only:
            figures = story_actions(browser, url, args.flips, args.steps, args.query)
            browser.close()
            report(figures, args.json)
            return
        parts = {}
        floor_views(browser, floor_url, 1)  # the first view of all loads what every page loads: not counted
        rounds = [first_views(browser, url, parts=parts, pages=args.pages, floor_url=floor_url)
                  for _ in range(args.repeat)]
        figures = {"health_s": health, "warm_up_s": warm, "first_view": medians(rounds),
                   "first_view_cached": first_views(browser, url, cached=True, pages=args.pages),
                   "first_view_parts_s": parts}
        figures |= {what: [view[what] for r in rounds for view in r.values()]
                    for what in ("floor_s", "floor_cpu_s")}
        report_first_views(figures)
        if args.first_views:
            write(args.json, figures)
            return
        figures |= story_actions(browser, url, args.flips, args.steps, args.query)
        figures["pd_preset_s"], followed = upstream_preset(browser, url)
        figures["address bar followed"].append(followed)
        figures["pd_section_s"] = pd_section(browser, url)
        figures["pd_section_70b_s"] = pd_section(browser, url, "?model=llama-3.1-70b&tp=8")
        browser.close()
    report(figures, args.json)


def report(figures: dict, path: Path | None) -> None:
    for what in ("tour step", "flip", "step"):
        values = figures.get(what)
        if values:
            print(f"{what:10s} n={len(values):2d}  median {statistics.median(values):.2f} s  "
                  f"p95 {p95(values):.2f} s  max {max(values):.2f} s")
    if "pd_preset_s" in figures:
        print(f"upstream PD preset: {figures['pd_preset_s']:.2f} s")
    for key, what in (("pd_section_s", "the story's defaults"), ("pd_section_70b_s", "70B on 8 x H100")):
        if key in figures:
            first, again = figures[key]
            print(f"PD section with its verdict, {what}: {first:.2f} s as warmed, {again:.2f} s again")
    followed = figures.get("address bar followed")
    if followed:
        print(f"address bar followed {sum(followed)} of {len(followed)} changes")
    write(path, figures)


def write(path: Path | None, figures: dict) -> None:
    if path:
        path.write_text(json.dumps(figures, indent=1))


def medians(rounds: list[dict[str, dict]]) -> dict[str, dict]:
    """Per page, the median of each figure over rounds of first views."""
    return {path: {what: statistics.median(r[path][what] for r in rounds) for what in rounds[0][path]}
            for path in rounds[0]}


if __name__ == "__main__":
    main()
