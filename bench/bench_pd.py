"""PD speed and the allocation-policy table on the upstream replica (docs/pd.md).

    .venv/bin/python bench/bench_pd.py [--repeat 2]      # simulation speed, both policies
    .venv/bin/python bench/bench_pd.py --table           # the measured table, via the CLI, seeds 1 and 2

The table uses the benchmark client only (`pd.clients.bench`: the 256 requests after the warm-up), as
bench_serving reports, and takes the arithmetic mean over the two seeds, as the upstream authors did.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

from bench_engine import best_of

from engine_model import load_scenario

SCENARIO = "scenarios/upstream_pd_replica.toml"
POLICIES = ("early", "prefill_complete")
SEEDS = (1, 2)


def speed(policy: str, repeat: int) -> dict:
    result, best = best_of(load_scenario(SCENARIO, [f"pd.decode_allocation_policy={policy}"]), repeat)
    worker_its = sum(len(lane) for lane in result.lanes.values())
    rank_its = sum(len(lane) for lane in result.pd.rank_lanes.values())
    return {"policy": policy, "wall_s": best, "worker_iterations": worker_its, "rank_iterations": rank_its,
            "worker_iterations_per_s": worker_its / best, "simulated_s": result.end_at}


def cli_metrics(policy: str, seed: int) -> dict:
    cmd = [sys.executable, "-m", "engine_model", "run", SCENARIO, "--json",
           "--set", f"pd.decode_allocation_policy={policy}", "--set", f"seed={seed}"]
    doc = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    bench = doc["pd"]["clients"]["bench"]
    return {
        "output_tok_s": bench["output_throughput_tok_s"],
        "p95_ttft_s": bench["ttft_s"]["p95"],
        "mean_tpot_s": bench["tpot_s"]["mean"],
        "p99_itl_s": bench["itl_s"]["p99"],
        "reserved_idle_token_s": doc["pd"]["kv_reserved_idle_token_s"],
    }


def table() -> None:
    means = {}
    for policy in POLICIES:
        runs = [cli_metrics(policy, seed) for seed in SEEDS]
        means[policy] = {key: sum(run[key] for run in runs) / len(runs) for key in runs[0]}
        for seed, run in zip(SEEDS, runs, strict=True):
            print(policy, f"seed {seed}", {k: round(v, 4) for k, v in run.items()})
    print("| metric (mean of seeds 1, 2) | early | prefill_complete | change |")
    print("| --- | ---: | ---: | ---: |")
    for key in means["early"]:
        a, b = means["early"][key], means["prefill_complete"][key]
        print(f"| {key} | {a:.4g} | {b:.4g} | {100 * (b - a) / a:+.1f} % |")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--table", action="store_true")
    args = p.parse_args()
    if args.table:
        return table()
    print("| policy | wall s | worker iterations | rank iterations | worker iterations/s | simulated s |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for policy in POLICIES:
        r = speed(policy, args.repeat)
        print(f"| {r['policy']} | {r['wall_s']:.2f} | {r['worker_iterations']} | {r['rank_iterations']} | "
              f"{r['worker_iterations_per_s']:,.0f} | {r['simulated_s']:.1f} |")


if __name__ == "__main__":
    main()
