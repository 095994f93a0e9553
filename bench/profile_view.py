"""Where does a warm page view spend its time on the server? cProfile over Streamlit's AppTest.

    .venv/bin/python bench/profile_view.py [--page app_pages/forty_replies.py] [--flip forty_replies.mixed]

A first session opens the page (and flips the toggle) so the run caches are filled, as in a room where
someone opened it before; then a second, fresh session does the same with its script runs under cProfile:
the work every new person's page view costs. Prints the time by area (simulation, frames, charts, Altair,
pandas, Streamlit's serialisation, ...) and the app's functions with the most cumulative time (--top).
AppTest does not draw in a browser.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time
from collections import defaultdict
from pathlib import Path

from streamlit.runtime.scriptrunner.script_runner import ScriptRunner
from streamlit.testing.v1 import AppTest

MAIN = str(Path(__file__).resolve().parents[1] / "app" / "main.py")
AREAS = (("engine_model/", "engine_model (simulation)"), ("/app/", "app (frames, charts, pages)"),
         ("altair/", "altair"), ("jsonschema/", "jsonschema"), ("pandas/", "pandas"), ("pyarrow/", "pyarrow"),
         ("narwhals/", "narwhals"), ("streamlit/", "streamlit"), ("google/protobuf", "protobuf"))


def view(page: str, flip: str | None) -> AppTest:
    """A fresh session: open `page`, then flip the toggle whose widget key is `flip` (if any)."""
    at = AppTest.from_file(MAIN, default_timeout=300)
    at.run()
    at.switch_page(page)
    at.run()
    if flip:
        toggle = at.toggle(key=flip)
        toggle.set_value(not toggle.value).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def profile_script_runs(profiler: cProfile.Profile) -> None:
    """Profile every script run in the thread that runs it (cProfile sees only its own thread)."""
    original = ScriptRunner._run_script

    def run_profiled(self, rerun_data):
        profiler.enable()
        try:
            return original(self, rerun_data)
        finally:
            profiler.disable()

    ScriptRunner._run_script = run_profiled


def by_area(stats: pstats.Stats) -> dict[str, float]:
    """Own (not cumulative) seconds per area, from the file each function lives in."""
    totals: dict[str, float] = defaultdict(float)
    for (filename, _, _), (_, _, own, _, _) in stats.stats.items():
        area = next((name for part, name in AREAS if part in filename), "other (stdlib, json, ...)")
        totals[area] += own
    return dict(sorted(totals.items(), key=lambda kv: -kv[1]))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--page", default="app_pages/forty_replies.py")
    parser.add_argument("--flip", default="forty_replies.mixed", help="a toggle's widget key; empty for none")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    start = time.perf_counter()
    view(args.page, args.flip or None)
    print(f"cold session (imports, simulations, caches): {time.perf_counter() - start:.2f} s")
    start, cpu = time.perf_counter(), time.process_time()
    view(args.page, args.flip or None)
    runs = 2 + bool(args.flip)  # home, the page, the flip
    print(f"warm session, no profiler: {time.perf_counter() - start:.2f} s (AppTest's waiting included), "
          f"{(time.process_time() - cpu) / runs:.3f} CPU s per script run ({runs} runs; the server's "
          f"websocket work is not in it: bench_load.py --client websocket measures that too)")
    profiler = cProfile.Profile()
    profile_script_runs(profiler)
    start = time.perf_counter()
    view(args.page, args.flip or None)
    print(f"warm session under cProfile (AppTest's waiting included): {time.perf_counter() - start:.2f} s")
    stats = pstats.Stats(profiler)
    for area, seconds in by_area(stats).items():
        print(f"  {area:32s} {seconds:6.2f} s own time")
    stats.sort_stats("cumulative").print_stats("/app/", args.top)


if __name__ == "__main__":
    main()
