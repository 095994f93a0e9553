"""Our scheduling loop against SGLang 0.5.23's own scheduler (the reference tool): same workloads, one run
each.

    .venv/bin/python bench/bench_vs_reference.py --venv /tmp/sgref-venv [--tool TOOL_DIR]
    .venv/bin/python bench/bench_vs_reference.py --ours-only        # our side alone (no reference venv)

Two workloads, written here from a fixed seed: `poisson_200` (200 chat-sized requests, Poisson arrivals) and
`retraction_40` (a small KV pool that retracts, about 4,500 passes). The reference side's time is the tool's
`requests_s` (from the first request sent to the last token, engine start-up excluded); ours is one
`simulate` of the same workload on the same linear predictor. Both traces are compared pass by pass, so
the two sides did the same work. Wall times depend on the machine; the ratio is what to compare.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from engine_model.reference import compare, scenario_from_workload, write_trace
from engine_model.simulation import simulate

TOOL = Path(__file__).resolve().parents[1].parent / "shared" / "tools" / "sglang_reference"
SERVER_ARGS = {"chunked_prefill_size": 8192, "max_running_requests": 64}


def poisson_200() -> dict:
    """200 requests at 4 per second: lognormal prompts around 1,000 tokens, replies around 200."""
    rng = random.Random(200)
    at, requests = 0.0, []
    for i in range(200):
        at += rng.expovariate(4.0)
        prompt = min(max(int(rng.lognormvariate(6.9, 0.8)), 16), 8000)
        output = min(max(int(rng.lognormvariate(5.3, 0.7)), 4), 1000)
        requests.append({"rid": f"p{i:03d}", "arrival_s": round(at, 6), "prompt_len": prompt,
                         "output_len": output})
    return {"name": "poisson_200", "server_args": {**SERVER_ARGS, "max_total_tokens": 200000},
            "requests": requests}


def retraction_40() -> dict:
    """40 requests of 1,500 prompt and 1,400 reply tokens over 2 s on a 36,000-token pool: it retracts."""
    requests = [{"rid": f"r{i:02d}", "arrival_s": round(i * 2 / 39, 6), "prompt_len": 1500,
                 "output_len": 1400} for i in range(40)]
    return {"name": "retraction_40", "server_args": {**SERVER_ARGS, "max_total_tokens": 36000},
            "requests": requests}


def ours(workload: Path, out: Path) -> tuple[float, int]:
    """One run of our loop: (wall seconds of `simulate`, passes)."""
    scenario = scenario_from_workload(workload)
    started = time.perf_counter()
    result = simulate(scenario)
    wall = time.perf_counter() - started
    write_trace(result, out)
    return wall, sum(it.kind.value != "idle" for it in result.iterations)


def reference(workload: Path, out: Path, tool: Path, venv: str) -> float:
    """One run of the real scheduler: the tool's wall time for the requests (start-up excluded)."""
    subprocess.run([sys.executable, str(tool / "run_reference.py"), "--workload", str(workload),
                    "--out", str(out), "--venv", venv], check=True, capture_output=True)
    return json.loads((out / "run_info.json").read_text())["wall_time"]["requests_s"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--venv", help="the reference tool's venv (install.sh)")
    parser.add_argument("--tool", type=Path, default=TOOL)
    parser.add_argument("--ours-only", action="store_true")
    args = parser.parse_args()
    if not args.ours_only and not args.venv:
        parser.error("--venv is needed unless --ours-only")
    print("| workload | passes | SGLang 0.5.23 s | ours s | ratio | passes agree |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    with tempfile.TemporaryDirectory() as tmp:
        folders = []
        for make in (poisson_200, retraction_40):  # ours first: the tool's engine processes linger a while
            data = make()
            folder = Path(tmp) / data["name"]
            folder.mkdir()
            (folder / "workload.json").write_text(json.dumps(data))
            folders.append((folder, *ours(folder / "workload.json", folder / "ours")))
        for folder, our_s, num_passes in folders:
            if args.ours_only:
                print(f"| {folder.name} | {num_passes} | — | {our_s:.4f} | — | — |")
                continue
            ref_s = reference(folder / "workload.json", folder / "ref", args.tool, args.venv)
            agree = compare(folder / "ref", folder / "ours")["pass_agreement"]
            print(f"| {folder.name} | {num_passes} | {ref_s:.2f} | {our_s:.4f} | {ref_s / our_s:.0f}× "
                  f"| {agree:.0%} |")


if __name__ == "__main__":
    main()
