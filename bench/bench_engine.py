"""Simulation speed: iterations/s and simulated tokens/s per built-in scenario and for 10,000 Poisson
requests.

    .venv/bin/python bench/bench_engine.py [--repeat 3]

Wall times depend on the machine; compare ratios between runs on the same machine.
"""

from __future__ import annotations

import argparse
import time

from engine_model import load_scenario, scenario_names, simulate, validate

POISSON_10K = {
    "name": "poisson_10k",
    "hardware": {"gpu": "h100-sxm"},
    "model": {"name": "llama-3.1-8b"},
    "workload": {"groups": [{
        "name": "chat", "count": 10_000, "arrival": {"kind": "poisson", "rate_per_s": 20.0},
        "prompt_len": {"dist": "lognormal", "median": 1000, "sigma": 0.8, "low": 16, "high": 16000},
        "output_len": {"dist": "lognormal", "median": 200, "sigma": 0.7, "low": 4, "high": 2000},
    }]},
}


def best_of(scenario, repeat: int):
    """(the last result, the fastest wall time) over `repeat` runs."""
    best = None
    for _ in range(repeat):
        started = time.perf_counter()
        result = simulate(scenario)
        wall = time.perf_counter() - started
        best = wall if best is None else min(best, wall)
    return result, best


def measure(scenario, repeat: int) -> dict:
    result, best = best_of(scenario, repeat)
    its = sum(len(lane) for lane in result.lanes.values())
    tokens = sum(len(r.token_times) for r in result.requests)
    prefill = sum(row.extend for lane in result.lanes.values() for it in lane for row in it.prefill_rows)
    return {"name": scenario.name, "requests": len(result.requests), "iterations": its, "wall_s": best,
            "iterations_per_s": its / best, "tokens_per_s": (tokens + prefill) / best,
            "simulated_s": result.end_at}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", nargs="*")
    args = parser.parse_args()
    scenarios = [load_scenario(name) for name in scenario_names()] + [validate(POISSON_10K)]
    print("| scenario | requests | iterations | wall s | iterations/s | simulated tokens/s | simulated s |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for scenario in scenarios:
        if args.only and scenario.name not in args.only:
            continue
        m = measure(scenario, 1 if scenario.name == "poisson_10k" else args.repeat)
        print(f"| {m['name']} | {m['requests']} | {m['iterations']} | {m['wall_s']:.2f} | "
              f"{m['iterations_per_s']:,.0f} "
              f"| {m['tokens_per_s']:,.0f} | {m['simulated_s']:.1f} |")


if __name__ == "__main__":
    main()
