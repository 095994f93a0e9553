"""How does the app hold up when a room uses it at once? N headless browser sessions, each a fixed script.

    .venv/bin/python bench/bench_load.py                     # starts `streamlit run`, N = 1, 5, 10
    .venv/bin/python bench/bench_load.py --replicas 2        # starts 2 replicas behind nginx (deploy/)
    .venv/bin/python bench/bench_load.py --url http://127.0.0.1:8500 --sessions 1 5 10   # a running one
    .venv/bin/python bench/bench_load.py --client websocket --sessions 1 5 10 30   # the server alone
    .venv/bin/python bench/bench_load.py --replicas 2 --client websocket --room --sessions 25   # a room

Each session is its own browser context (its own cookies, so nginx may put it on its own replica) in one
headless Chromium (/usr/bin/chromium). It runs the same actions, in order: `/path` opens a page (the first
by URL, later ones by the sidebar link, as a person would), `flip:Label` clicks that toggle. An action's
time runs from the click (or URL) until the page is quiet: the script run is over (stApp's script state),
nothing is stale or still loading and every chart has drawn, unchanged for three polls 0.1 s apart; the
time is taken at the first of those polls. Errors: an action past --timeout, a browser exception, a lost
connection to the server, or a Streamlit exception or error box on the page.
Bounded: a fixed number of actions per session, one wall-clock cap per N (--max-seconds); it stops by
itself. Before the measured rounds, --warmup sessions run the script once (fills the app's run caches,
one per replica behind nginx). Only localhost URLs are accepted.
The wall times include drawing every session's charts in one headless Chromium on the same cores as the
server, which a real room does on its own laptops. So when it starts the server itself, it also reports
the server's CPU seconds per N (user + system, from /proc): the work the room asked of the server alone.

`--client websocket` leaves the browsers out: each action is a new session on Streamlit's own websocket
(bench/websocket_session.py), timed from connecting until the server has sent the whole page, every chart
spec included. A flip there is a new view of the page with the flag in its URL (`/forty_replies?mixed=1`),
a full script run as the browser's flip is. This is what a room asks of the server when every person's
own laptop draws their page.

`--room` (with `--client websocket`): N followers of one presenter (app/room/). The benchmark opens a room
in the store the replicas share (WHO_WAITS_ROOM_URL, or the default SQLite file they all open on this
machine) and moves it, as the presenter's session would, through ten tour steps (ROOM_STEPS: the forty
replies' six, the other stall's first four); after each move all N followers open `/?room=CODE` at once,
and each is timed until the server has sent the whole page of the step it followed — the same run a
follower's bar starts (`st.switch_page` to the room's link). A follower that lands elsewhere (no chart:
the home page) counts as an error.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import os
import statistics
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

from playwright.async_api import TimeoutError as PlaywrightTimeout
from playwright.async_api import async_playwright

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))
import websocket_session  # noqa: E402
from bench_app import warm_up  # noqa: E402
from browser import CHROMIUM, CHROMIUM_ARGS, free_port, streamlit_server  # noqa: E402
from procs import cpu_seconds, descendants, with_command  # noqa: E402

from deploy.serve_replicas import requests_by_agent, serve  # noqa: E402

ACTIONS = ("/forty_replies", "flip:Mixed chunk", "/other_stall", "flip:Mixed chunk", "/forty_replies")
WS_ACTIONS = ("/forty_replies", "/forty_replies?mixed=1", "/other_stall", "/other_stall?mixed=1",
              "/forty_replies")  # the same script, as fresh sessions (a flip: the flag in the URL)
LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1"}
STATE = """() => {
  const charts = [...document.querySelectorAll('[data-testid="stVegaLiteChart"]')];
  const h1 = document.querySelector('[data-testid="stMain"] h1');
  const app = document.querySelector('[data-testid="stApp"]');
  return {charts: charts.length, drawn: charts.filter(c => c.querySelector('canvas, svg')).length,
          running: app ? app.dataset.testScriptState !== 'notRunning' : true,
          connection: app ? app.dataset.testConnectionState : '',
          stale: document.querySelectorAll('[data-stale="true"], [data-testid="stSkeleton"]').length,
          title: h1 ? h1.innerText : '', href: location.href,
          headline: [...document.querySelectorAll('.ww-card-value')]
            .map(m => m.innerText).join('|'),
          errors: document.querySelectorAll(
            '[data-testid="stException"], [data-testid="stAlertContentError"]').length};
}"""
POLL_S, QUIET_POLLS = 0.1, 3


@dataclass
class Tally:
    """What one N measured: seconds per action kind, and errors by kind."""

    seconds: dict[str, list[float]] = field(default_factory=lambda: {"view": [], "flip": []})
    bytes: list[int] = field(default_factory=list)  # per answer, --client websocket
    errors: Counter = field(default_factory=Counter)
    wall_s: float = 0.0
    cpu_s: float = 0.0
    load: float = 0.0  # the machine's 1-minute load average as the round started


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile: the smallest value with at least q % of the values at or below it."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(len(ordered) * q / 100) - 1)] if ordered else float("nan")


def is_quiet(state: dict) -> bool:
    """A page (STATE) with a title, no script run, nothing stale or loading, and every chart drawn."""
    drawn = state["charts"] == state["drawn"]
    return bool(state["title"]) and drawn and not state["running"] and not state["stale"]


async def quiet_after(page, start: float, deadline: float, started) -> float:
    """Seconds from `start` to the first of QUIET_POLLS quiet, unchanged polls, once `started(state)` held."""
    seen_start, last, same, quiet_at = False, None, 0, 0.0
    while time.perf_counter() < deadline:
        state = await page.evaluate(STATE)
        now = time.perf_counter()
        seen_start = seen_start or started(state)
        quiet = seen_start and is_quiet(state)
        if quiet and state == last:
            same += 1
        else:
            same, quiet_at = 0, now
        if quiet and same >= QUIET_POLLS - 1:
            return quiet_at - start
        last = state
        await asyncio.sleep(POLL_S)
    shown = {k: v for k, v in (last or {}).items() if k in ("title", "charts", "drawn", "running", "stale")}
    raise TimeoutError(f"the page did not settle: {shown}")


async def act(page, base: str, action: str, first: bool, timeout_s: float) -> tuple[str, float]:
    """Run one action; returns its kind ("view" or "flip") and its seconds."""
    before = await page.evaluate(STATE) if not first else None
    start = time.perf_counter()
    deadline = start + timeout_s
    if action.startswith("flip:"):
        toggle = page.locator('[data-testid="stCheckbox"]').filter(has_text=action[5:]).first.locator("label")
        await toggle.click(timeout=timeout_s * 1000)

        def changed(state) -> bool:  # the rerun has begun, or already changed the URL or the headline
            moved = any(state[k] != before[k] for k in ("href", "headline"))
            return state["running"] or state["stale"] or moved

        return "flip", await quiet_after(page, start, deadline, changed)
    if first:
        await page.goto(base + action, timeout=timeout_s * 1000, wait_until="commit")
        return "view", await quiet_after(page, start, deadline, lambda s: True)
    link = page.locator(f'[data-testid="stSidebarNav"] a[href$="{action}"]').first
    await link.click(timeout=timeout_s * 1000)

    def arrived(state) -> bool:  # the new page's title, or a run under way (the same page again)
        return state["title"] != before["title"] or state["running"]

    return "view", await quiet_after(page, start, deadline, arrived)


async def session(browser, base: str, name: str, actions, timeout_s: float, deadline: float, tally: Tally,
                  verbose: bool = False):
    """One browser context runs `actions` in order; records times and errors into `tally`.

    After a timeout the session waits (once more up to --timeout) for the page to settle and goes on;
    if it does not, or after any other exception, the session stops and its remaining actions count as
    not run."""
    context = await browser.new_context(viewport={"width": 1400, "height": 1600},
                                        user_agent=f"who-waits-load/{name}")
    page = await context.new_page()
    try:
        for i, action in enumerate(actions):
            left = deadline - time.perf_counter()
            if left <= 0:
                tally.errors["not run (--max-seconds)"] += len(actions) - i
                return
            if not await attempt(page, base, name, action, i == 0, min(timeout_s, left), tally, verbose):
                tally.errors["not run (after an error)"] += len(actions) - i - 1
                return
    finally:
        await context.close()


async def attempt(page, base: str, name: str, action: str, first: bool, timeout_s: float, tally: Tally,
                  verbose: bool) -> bool:
    """One action, its time or its error into `tally`; False when the session cannot go on."""
    try:
        kind, seconds = await act(page, base, action, first, timeout_s)
    except (TimeoutError, PlaywrightTimeout) as err:
        tally.errors["timeout"] += 1
        print(f"  {name}: {action}: timeout ({str(err).splitlines()[0][:160]})", file=sys.stderr)
        now = time.perf_counter()
        with contextlib.suppress(TimeoutError, PlaywrightTimeout):
            await quiet_after(page, now, now + timeout_s, lambda s: True)
            return True
        return False
    except Exception as err:  # a browser or page failure is a result to count, not a crash
        tally.errors[f"exception ({type(err).__name__})"] += 1
        print(f"  {name}: {action}: {type(err).__name__}: {str(err).splitlines()[0][:120]}", file=sys.stderr)
        return False
    tally.seconds[kind].append(seconds)
    if verbose:
        print(f"  {name}: {action}: {seconds:.2f} s", file=sys.stderr)
    state = await page.evaluate(STATE)
    if state["errors"]:
        tally.errors["error box on the page"] += 1
    if state["connection"] != "CONNECTED":
        tally.errors[f"connection {state['connection']}"] += 1
    return True


async def ws_session(base: str, name: str, actions, timeout_s: float, deadline: float, tally: Tally,
                     verbose: bool = False):
    """One person over the websocket: each action a new session's whole page (bench/websocket_session.py)."""
    for i, action in enumerate(actions):
        left = deadline - time.perf_counter()
        if left <= 0:
            tally.errors["not run (--max-seconds)"] += len(actions) - i
            return
        try:
            answer = await websocket_session.view(base, action, min(timeout_s, left),
                                                  agent=f"who-waits-load/{name}")
        except TimeoutError:
            tally.errors["timeout"] += 1
            continue
        except Exception as err:  # a refused or dropped connection is a result to count, not a crash
            tally.errors[f"exception ({type(err).__name__})"] += 1
            print(f"  {name}: {action}: {type(err).__name__}: {str(err)[:120]}", file=sys.stderr)
            continue
        tally.seconds["flip" if "?" in action else "view"].append(answer.seconds)
        tally.bytes.append(answer.num_bytes)
        for problem in answer.problems:
            tally.errors[f"{problem} on the page"] += 1
        if verbose:
            print(f"  {name}: {action}: {answer.seconds:.2f} s, {answer.num_bytes / 1e6:.2f} MB, "
                  f"{answer.num_charts} charts", file=sys.stderr)


async def crowd(browser, base: str, n: int, args, tag: str, pids) -> Tally:
    """`n` sessions at once (started `--stagger` s apart), under one wall-clock cap."""
    tally = Tally(load=os.getloadavg()[0])
    start, cpu = time.perf_counter(), cpu_seconds(pids)
    deadline = start + args.max_seconds

    async def one(i: int):
        await asyncio.sleep(i * args.stagger)
        if browser is None:
            await ws_session(base, f"{tag}-{i}", args.actions, args.timeout, deadline, tally, args.verbose)
        else:
            await session(browser, base, f"{tag}-{i}", args.actions, args.timeout, deadline, tally,
                          args.verbose)

    await asyncio.gather(*(one(i) for i in range(n)))
    tally.wall_s, tally.cpu_s = time.perf_counter() - start, cpu_seconds(pids) - cpu
    return tally


HEADER = ("| sessions | views | view p50 s | view p95 s | view max s | flips | flip p50 s | flip p95 s "
          "| errors | wall s | server CPU s | CPU s per view | load avg |\n"
          "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: |")


def row(n: int, tally: Tally, pids) -> str:
    """One markdown table row under HEADER."""
    views, flips = tally.seconds["view"], tally.seconds["flip"]
    errors = ", ".join(f"{k}: {v}" for k, v in sorted(tally.errors.items())) or "0"
    done = len(views) + len(flips)  # a flip is a whole page view too (a full script run)
    cpu = f"{tally.cpu_s:.1f} | {tally.cpu_s / done:.3f}" if pids and done else "n/a | n/a"
    return (f"| {n} | {len(views)} | {percentile(views, 50):.2f} | {percentile(views, 95):.2f} | "
            f"{max(views, default=float('nan')):.2f} | {len(flips)} | {percentile(flips, 50):.2f} | "
            f"{percentile(flips, 95):.2f} | {errors} | {tally.wall_s:.0f} | {cpu} | {tally.load:.1f} |")


def spread(access_log: Path, tag: str) -> str:
    """How nginx spread the sessions tagged `tag` over the replicas, from its access log: per browser (one
    cookie, one replica unless moved) and per websocket connection (each a new session)."""
    mine = {ua: rows for ua, rows in requests_by_agent(access_log).items()
            if ua.startswith(f"who-waits-load/{tag}-")}
    agents = {ua: {addr for _, addr in rows} for ua, rows in mine.items()}
    per = Counter(next(iter(addrs)) for addrs in agents.values() if len(addrs) == 1)
    moved = sum(len(addrs) > 1 for addrs in agents.values())
    streams = Counter(addr for rows in mine.values() for path, addr in rows
                      if path.endswith("/_stcore/stream"))
    return (f"{tag}: sessions per replica {dict(sorted(per.items()))}" + (f", {moved} moved" if moved else "")
            + f"; connections per replica {dict(sorted(streams.items()))}")


async def measure(base: str, pids, args, access_log: Path | None = None) -> None:
    async with contextlib.AsyncExitStack() as stack:
        browser = None
        if args.client == "browser":
            p = await stack.enter_async_context(async_playwright())
            browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            stack.push_async_callback(browser.close)
        if args.warmup:
            warm = await crowd(browser, base, args.warmup, args, "warmup", pids)
            print(f"warm-up: {args.warmup} sessions, {warm.wall_s:.0f} s, errors {dict(warm.errors) or 0}")
        what = (f"a room: {len(ROOM_STEPS)} tour steps followed" if args.room
                else f"actions per session: {', '.join(args.actions)}")
        print(f"{base}, {args.client}, {what}\n{HEADER}")
        sent = []
        for n in args.sessions:
            tally = (await room_crowd(base, n, args, pids) if args.room
                     else await crowd(browser, base, n, args, f"n{n}", pids))
            sent += tally.bytes
            print(row(n, tally, pids), flush=True)
        if sent:
            print(f"the server sent {statistics.median(sent) / 1e6:.2f} MB per page (median of {len(sent)})")
    if access_log:
        for tag in ["warmup"] * bool(args.warmup) + [f"n{n}" for n in args.sessions]:
            print(spread(access_log, tag))


ROOM_STEPS = [("forty_replies", i) for i in range(6)] + [("other_stall", i) for i in range(4)]


def step_view(key: str, i: int) -> dict:
    """The room's view at tour step i of story `key`: its page and its link's parameters (the step, and the
    settings it changes from the defaults: a step puts every other one back to its default), as the
    presenter's address bar has them."""
    from engine_model import STORIES

    story = STORIES[key]
    settings = story.tour[i].settings
    params = {c.key: c.to_url(settings[c.key]) for c in story.controls
              if c.key in settings and settings[c.key] != c.default}
    return {"page": key, "params": {**params, "step": str(i + 1)}}


async def room_crowd(base: str, n: int, args, pids) -> Tally:
    """N followers through ROOM_STEPS: the room moves, then all N open it at once (`--stagger` apart)."""
    from app.room import store as room_store

    tally = Tally(load=os.getloadavg()[0])
    start, cpu = time.perf_counter(), cpu_seconds(pids)
    deadline = start + args.max_seconds
    rooms = room_store.open_store()
    code, token = rooms.create(step_view(*ROOM_STEPS[0]))
    join = f"/?room={room_store.shown_code(code)}"

    async def follow(i: int, name: str) -> None:
        await asyncio.sleep(i * args.stagger)
        left = deadline - time.perf_counter()
        if left <= 0:
            tally.errors["not run (--max-seconds)"] += 1
            return
        try:
            answer = await websocket_session.view(base, join, min(args.timeout, left),
                                                  agent=f"who-waits-load/{name}")
        except TimeoutError:
            tally.errors["timeout"] += 1
            return
        except Exception as err:  # a refused or dropped connection is a result to count, not a crash
            tally.errors[f"exception ({type(err).__name__})"] += 1
            return
        tally.seconds["view"].append(answer.seconds)
        tally.bytes.append(answer.num_bytes)
        for problem in answer.problems:
            tally.errors[f"{problem} on the page"] += 1
        if not answer.num_charts:
            tally.errors["did not follow (no chart)"] += 1
        if args.verbose:
            print(f"  {name}: {answer.seconds:.2f} s, {answer.num_charts} charts", file=sys.stderr)

    for step, (key, i) in enumerate(ROOM_STEPS):
        if rooms.publish(code, token, step_view(key, i)) is None:
            tally.errors["the room could not be moved"] += 1
        await asyncio.gather(*(follow(k, f"n{n}-{k}") for k in range(n)))
        if args.verbose:
            print(f"step {step + 1}: {key} {i + 1} done", file=sys.stderr)
    tally.wall_s, tally.cpu_s = time.perf_counter() - start, cpu_seconds(pids) - cpu
    return tally


def local_url(text: str) -> str:
    """Only localhost: this benchmark loads a server, so it must be ours."""
    parsed = urlparse(text)
    if parsed.scheme not in ("http", "https") or parsed.hostname not in LOCAL_HOSTS:
        raise argparse.ArgumentTypeError(f"{text!r}: allowed is http(s)://localhost, 127.0.0.1 or [::1]")
    return text.rstrip("/")


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="N headless sessions against the app; p50/p95 and errors.")
    parser.add_argument("--url", type=local_url,
                        help="a running app or nginx (default: start `streamlit run`)")
    parser.add_argument("--replicas", type=int, default=0, help="start this many replicas behind nginx")
    parser.add_argument("--sessions", type=int, nargs="+", default=[1, 5, 10], help="N values, run in order")
    parser.add_argument("--client", choices=("browser", "websocket"), default="browser",
                        help="headless Chromium sessions, or the server alone over its websocket")
    parser.add_argument("--actions", nargs="+", help="`/path` or `flip:Toggle label` (browser); "
                        "`/path` or `/path?query` (websocket)")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds one action may take")
    parser.add_argument("--max-seconds", type=float, default=300.0, help="wall-clock cap for one N")
    parser.add_argument("--stagger", type=float, default=0.2, help="seconds between session starts")
    parser.add_argument("--verbose", action="store_true", help="print every action's time")
    parser.add_argument("--room", action="store_true", help="N followers of a room through ten tour steps "
                        "(with --client websocket)")
    parser.add_argument("--warmup", type=int, help="sessions that run the script once first "
                        "(default: one per replica, at least 2)")
    args = parser.parse_args(argv)
    args.warmup = max(2, args.replicas) if args.warmup is None else args.warmup
    if not 0 <= args.replicas <= 16:
        parser.error(f"--replicas {args.replicas}: allowed 0 (one `streamlit run`) to 16")
    if any(not 1 <= n <= 50 for n in args.sessions):
        parser.error(f"--sessions {args.sessions}: each N must be 1 to 50")
    args.actions = args.actions or list(ACTIONS if args.client == "browser" else WS_ACTIONS)
    if args.room and args.client != "websocket":
        parser.error("--room: with --client websocket")
    if args.client == "websocket" and any(not a.startswith("/") for a in args.actions):
        parser.error("--actions with --client websocket: each one `/path` or `/path?query`")
    if not args.actions[0].startswith("/") or any(not a.startswith(("/", "flip:")) for a in args.actions):
        parser.error("--actions: the first is a `/path`, each one `/path` or `flip:Toggle label`")
    return args


def main() -> None:
    args = parse_args()
    with contextlib.ExitStack() as stack:
        access_log = None
        if args.url:
            base, pids = args.url, ()
        elif args.replicas:
            ports = [free_port() for _ in range(args.replicas)]
            room = stack.enter_context(serve(ports, free_port(), "127.0.0.1"))
            base, pids, access_log = room.url, room.replica_pids, room.access_log
            print(f"{args.replicas} replicas behind nginx, logs in {room.prefix}")
        else:
            base = stack.enter_context(streamlit_server())
            pids = with_command(descendants(), b"streamlit")
        if pids:  # a server started here warms up by itself (app/warm.py): measure after it, as a room would
            warm = warm_up(base, 120)
            print(f"the server's own warm-up: {'none' if warm is None else f'{warm:.1f} s'}")
        asyncio.run(measure(base, pids, args, access_log))


if __name__ == "__main__":
    main()
