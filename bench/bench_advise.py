"""The advisor's speed: 200 candidate settings of the ten o'clock rush on Llama-3.1-70B × 8 H100, by backend
and workers, with wall time and peak memory (docs/performance.md, "What should I set?").

    .venv/bin/python bench/bench_advise.py                 # serial, 2 processes, Dask LocalCluster of 2
    .venv/bin/python bench/bench_advise.py --only processes --workers 2
    .venv/bin/python bench/bench_advise.py --search        # also advise() end to end: Optuna, 200 trials
    .venv/bin/python bench/bench_advise.py --only search   # advise() end to end alone

The 200 candidates: every flag combination (mixed chunk off/on, chunk auto/2,048/4,096/8,192/16,384,
fcfs/shortest-prefill-first, conservativeness 1/1.5, max running auto/64) on the layouts of the 8 GPUs that
SGLang starts for this model in bf16 (one engine × TP 8, two engines × TP 4, PD 1 : 1 × TP 4 early), the
first 200 in the space's order. Past two cores the scaling is simulated: each candidate's CPU seconds
list-scheduled, in submission order, onto k workers (no start-up or transfer cost), said as "simulated".
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine_model import load_scenario  # noqa: E402
from engine_model.advise import Budget, Layout, Space, advise, parse_target, run_all  # noqa: E402
from engine_model.advise import search as search_mod  # noqa: E402

BUDGET = Budget(8, "h100-sxm", "llama-3.1-70b")
NUM = 200
LAYOUTS = (Layout(8, engines=1), Layout(4, engines=2), Layout(4, prefill=1, decode=1, policy="early"))
SPACE = Space(
    LAYOUTS,
    mixed=(False, True),
    chunk=("auto", 2048, 4096, 8192, 16384),
    policy=("fcfs", "shortest-prefill-first"),
    conservativeness=(1.0, 1.5),
    max_running=(None, 64),
)
TARGETS = (parse_target("questions.ttft_p95=2s"), parse_target("questions.longest_pause=4s"))


def peak_mib() -> dict:
    """Peak resident memory of this process and of its finished children (ru_maxrss: KiB on Linux)."""
    return {
        "self_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "children_mib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
    }


def keys() -> list[str]:
    return [c.key for c in SPACE.candidates()[:NUM]]


def measure(backend: str, workers: int) -> dict:
    scenario_json = load_scenario("ten_oclock_rush").model_dump_json()
    budget = tuple(vars(BUDGET).values())
    started = time.perf_counter()
    outcomes = run_all(scenario_json, budget, keys(), backend, workers)
    wall = time.perf_counter() - started
    runs = [o.wall_s for o in outcomes]
    cpu = [o.cpu_s for o in outcomes]
    return {
        "backend": backend,
        "workers": workers,
        "candidates": len(outcomes),
        "wall_s": round(wall, 2),
        "ran": sum(o.runs for o in outcomes),
        "refused": sum(not o.runs for o in outcomes),
        "run_s_mean": round(sum(runs) / len(runs), 3),
        "run_s_max": round(max(runs), 3),
        "worker_peak_mib": round(max(o.peak_mib for o in outcomes), 1),
        "cpu_s_sum": round(sum(cpu), 1),
        "cpu_s_mean": round(sum(cpu) / len(cpu), 3),
        "load_avg_1min": round(os.getloadavg()[0], 1),
        "run_s": runs,
        "cpu_s": cpu,
        **peak_mib(),
    }


def simulated(runs: list[float], workers: int) -> float:
    """The makespan of `runs`, in order, each to the first free of `workers` (list scheduling)."""
    free = [0.0] * workers
    for run in runs:
        heapq.heapreplace(free, free[0] + run)
    return max(free)


def search_end_to_end(workers: int) -> dict:
    search_mod._CACHE.clear()
    started = time.perf_counter()
    advice = advise(
        load_scenario("ten_oclock_rush"), BUDGET, TARGETS, workers=workers, method="optuna", trials=NUM
    )
    return {
        "backend": "processes",
        "workers": workers,
        "method": "optuna",
        "candidates": len(advice.outcomes),
        "ran": len(advice.ran),
        "wall_s": round(time.perf_counter() - started, 2),
        "recommended": advice.best.candidate.words if advice.best else None,
        **peak_mib(),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", choices=["serial", "processes", "dask", "search"])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--search", action="store_true")
    args = parser.parse_args()
    plan = {
        "serial": [("processes", 1)],
        "processes": [("processes", args.workers)],
        "dask": [("dask", args.workers)],
    }
    plan["search"] = []
    todo = plan[args.only] if args.only else [*plan["serial"], *plan["processes"], *plan["dask"]]
    rows = []
    print(
        f"cores this process may use: {len(os.sched_getaffinity(0))}; load average {os.getloadavg()[0]:.2f}"
    )
    for backend, workers in todo:
        row = measure(backend, workers)
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k not in ("run_s", "cpu_s")}))
    serial = rows[0] if rows else {"cpu_s": [], "backend": ""}
    for k in (1, 2, 4, 8, 16) if rows else ():
        print(
            json.dumps(
                {
                    "backend": "simulated",
                    "workers": k,
                    "wall_s": round(simulated(serial["cpu_s"], k), 2),
                    "how": f"the {serial['backend']} run's per-candidate CPU seconds list-scheduled onto k "
                    "free cores, no start-up or transfer",
                }
            )
        )
    if args.search or args.only == "search":
        print(json.dumps(search_end_to_end(args.workers)))


if __name__ == "__main__":
    main()
