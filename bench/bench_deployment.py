"""What a story costs the server on a buyer's deployment: the check, the run and the frames of a page view
(the run shown and its baseline), for each story, on the stories' default (Llama-3.1-8B on one H100) and on
others (Llama-3.1-70B at TP 8 on H100 by default), in this process, nothing cached.

    .venv/bin/python bench/bench_deployment.py [--repeat 3] [--set model=llama-3.1-70b --set tp=8 ...]

Each figure is the fastest of --repeat (the machine is shared: the fastest is the least disturbed). "check"
is `Story.scenario` for both runs (validation and engine_model.deployment.check); "run" is `simulate` of
both; "frames" is `app.charts.frames.build` of both, what a page draws from.
"""

from __future__ import annotations

import argparse
import os
import time

from app.charts.frames import build
from engine_model import STORIES, simulate

DEPLOYMENTS = {"8B on 1 × H100 (default)": {},
               "70B on 8 × H100, TP 8": {"model": "llama-3.1-70b", "tp": 8}}


def timed(work) -> tuple[object, float]:
    started = time.perf_counter()
    out = work()
    return out, time.perf_counter() - started


def page_view(story, values: dict) -> dict[str, float]:
    """The check, the runs and the frames of one page view (the run shown and its baseline)."""
    scenarios, check_s = timed(lambda: [story.scenario(v) for v in (values, story.baseline_values(values))])
    results, run_s = timed(lambda: [simulate(s) for s in scenarios])
    _, frames_s = timed(lambda: [build(r) for r in results])
    return {"check": check_s, "run": run_s, "frames": frames_s, "iterations": len(results[0].iterations)}


def best(story, values: dict, repeat: int) -> dict[str, float]:
    views = [page_view(story, values) for _ in range(repeat)]
    return {key: min(v[key] for v in views) for key in views[0]}


def parse_sets(items: list[str]) -> dict:
    out = {}
    for item in items:
        key, _, text = item.partition("=")
        out[key] = int(text) if text.isdigit() else text
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--set", action="append", default=[], metavar="control=value",
                        help="a deployment to time besides the default (replaces the 70B TP 8 one)")
    args = parser.parse_args()
    deployments = dict(DEPLOYMENTS) if not args.set else {
        "default": {}, " ".join(args.set): parse_sets(args.set)}
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; fastest of {args.repeat}")
    print("| story | deployment | iterations | check s | run s | frames s | page view s |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for story in STORIES.values():
        for name, sets in deployments.items():
            m = best(story, {**story.defaults, **sets}, args.repeat)
            total = m["check"] + m["run"] + m["frames"]
            print(f"| {story.key} | {name} | {m['iterations']:,} | {m['check']:.3f} | {m['run']:.3f} | "
                  f"{m['frames']:.3f} | {total:.2f} |")


if __name__ == "__main__":
    main()
