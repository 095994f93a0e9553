"""The front end's effect (engine_model/frontend.py) on the upstream replica's four figures and on the
stories' p99 gaps, with and without it (docs/pd.md, "The front end").

    .venv/bin/python bench/bench_frontend.py            # replica: both policies, seeds 1 and 2; stories
    .venv/bin/python bench/bench_frontend.py --stories  # the stories only

Each row is the arithmetic mean over seeds 1 and 2 of the benchmark client's requests (as bench_pd.py).
p99 ITL is given as bench_serving's default `sglang` backend counts it (a coalesced chunk's gap spread
over its tokens) and as its OpenAI-style backends count it (one gap per chunk).
"""

from __future__ import annotations

import argparse

import numpy as np

from engine_model import load_scenario
from engine_model.frontend import itls
from engine_model.metrics import group_metrics
from engine_model.pd.figures import client_requests
from engine_model.simulation import simulate

REPLICA = "scenarios/upstream_pd_replica.toml"
POLICIES = ("early", "prefill_complete")
SEEDS = (1, 2)
STORIES = ("forty_replies", "ten_oclock_rush", "ten_oclock_rush_pd")


def p99_openai(reqs) -> float:
    gaps = [itls(r.client_times or r.token_times, r.arrival_at if r.is_mid_reply else None, "openai")
            for r in reqs]
    gaps = [g for g in gaps if g.size]
    return float(np.percentile(np.concatenate(gaps), 99)) if gaps else float("nan")


def figures(reqs, result) -> dict:
    m = group_metrics(reqs)
    blocks = result.front_end
    return {"tok_s": m.output_throughput_tok_s, "p95_ttft_s": m.ttft_s.p95,
            "mean_tpot_ms": m.tpot_s.mean * 1e3,
            "p99_itl_ms": m.itl_s.p99 * 1e3, "p99_itl_oai_ms": p99_openai(reqs) * 1e3,
            "max_itl_ms": m.itl_s.max * 1e3, "longest_pause_ms": m.max_itl_s.max * 1e3,
            "num_blocks": len(blocks),
            "longest_block_ms": max((b.seconds for b in blocks), default=0.0) * 1e3}


def replica() -> None:
    rows = {}
    for front in (False, True):
        for policy in POLICIES:
            runs = []
            for seed in SEEDS:
                result = simulate(load_scenario(REPLICA, [f"pd.decode_allocation_policy={policy}",
                                                          f"seed={seed}", f"cost.front_end={front}"]))
                runs.append(figures(client_requests(result)["bench"], result))
            rows[front, policy] = {k: sum(r[k] for r in runs) / len(runs) for k in runs[0]}
    print("| front end | metric | early | prefill_complete | change |")
    print("| --- | --- | ---: | ---: | ---: |")
    for front in (False, True):
        a, b = rows[front, "early"], rows[front, "prefill_complete"]
        for key in a:
            change = f"{100 * (b[key] - a[key]) / a[key]:+.1f} %" if a[key] else "—"
            print(f"| {'on' if front else 'off'} | {key} | {a[key]:.4g} | {b[key]:.4g} | {change} |")


def stories() -> None:
    print("| story | front end | p99 ITL (ms) | p99 ITL, OpenAI count (ms) | longest pause (ms) | blocks "
          "| longest block (ms) |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for name in STORIES:
        for front in (False, True):
            result = simulate(load_scenario(name, [f"cost.front_end={front}"]))
            f = figures(result.requests, result)
            print(f"| {name} | {'on' if front else 'off'} | {f['p99_itl_ms']:.2f} | "
                  f"{f['p99_itl_oai_ms']:.2f} | {f['longest_pause_ms']:.1f} | {f['num_blocks']} | "
                  f"{f['longest_block_ms']:.0f} |")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--stories", action="store_true")
    args = p.parse_args()
    stories()
    if not args.stories:
        replica()


if __name__ == "__main__":
    main()
