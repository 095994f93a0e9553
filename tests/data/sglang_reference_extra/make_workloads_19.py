"""Writes the workloads of issue 19's reference traces (one folder each, `workload.json`), from fixed seeds.

    python3 make_workloads_19.py [OUT_DIR]      # default: this folder

Each is then recorded with the reference tool (README.md). The workloads probe shortest-prefill-first,
the saturation of schedule_conservativeness, 0.5.23's stop on a spent pass budget and init_req's clip of
max_new_tokens to the empty pool.
"""

import json
import random
import sys
from pathlib import Path

PREDICTOR = {"a": 0.010, "b": 5e-5, "c": 1e-7}


def lognormal(rng: random.Random, median: float, sigma: float, low: int, high: int) -> int:
    return min(max(int(rng.lognormvariate(0, sigma) * median), low), high)


def rush(policy: str) -> dict:
    """Ten o'clock in small: 40 short questions at 3 a second, three 30,000-token contracts at t = 4 s."""
    rng = random.Random(19)
    at, requests = 0.0, []
    for i in range(40):
        at += rng.expovariate(3.0)
        requests.append({"rid": f"q{i:02d}", "arrival_s": round(at, 4),
                         "prompt_len": lognormal(rng, 600, 0.6, 50, 3000),
                         "output_len": lognormal(rng, 120, 0.5, 20, 400)})
    requests += [{"rid": f"c{i}", "arrival_s": 4.0, "prompt_len": 30000, "output_len": 32} for i in range(3)]
    requests.sort(key=lambda r: r["arrival_s"])
    return {"description": f"40 questions (3/s) and three 30,000-token contracts at 4 s; {policy}",
            "server_args": {"chunked_prefill_size": 4096, "max_total_tokens": 200000,
                            "max_running_requests": 64, "schedule_policy": policy},
            "predictor": PREDICTOR, "requests": requests}


def spf_prefix() -> dict:
    """Shortest-prefill-first with shared prefixes: two prompt families arrive while a long prompt is
    chunked, so the cached prefix shortens the work and in-batch de-duplication pushes a family back."""
    rng = random.Random(191)
    requests = [{"rid": "long", "arrival_s": 0.0, "prompt_len": 20000, "output_len": 16}]
    for family, at in ((1, 0.05), (2, 0.3)):
        for i in range(6):
            requests.append({"rid": f"f{family}-{i}", "arrival_s": round(at + 0.01 * i, 4),
                             "prompt_len": rng.randint(300, 3000), "output_len": rng.randint(20, 120),
                             "prompt_seed": family})
    for i in range(6):
        requests.append({"rid": f"u{i}", "arrival_s": round(0.1 + 0.2 * i, 4),
                         "prompt_len": rng.randint(100, 4000), "output_len": rng.randint(20, 120)})
    requests.sort(key=lambda r: r["arrival_s"])
    return {"description": "shortest-prefill-first: two shared-prefix families beside a chunked prompt",
            "server_args": {"chunked_prefill_size": 2048, "max_total_tokens": 200000,
                            "max_running_requests": 64, "schedule_policy": "shortest-prefill-first"},
            "predictor": PREDICTOR, "requests": requests}


def spf_pressure() -> dict:
    """Shortest-prefill-first under KV pressure: retracted requests come back with their output as work."""
    rng = random.Random(192)
    requests = [{"rid": f"r{i:02d}", "arrival_s": round(rng.uniform(0, 1.0), 4),
                 "prompt_len": rng.randint(300, 1500), "output_len": rng.randint(300, 900)}
                for i in range(30)]
    requests.append({"rid": "long", "arrival_s": 0.5, "prompt_len": 12000, "output_len": 64})
    requests.sort(key=lambda r: r["arrival_s"])
    return {"description": "shortest-prefill-first on a 30,000-token pool (retractions)",
            "server_args": {"chunked_prefill_size": 2048, "max_total_tokens": 30000,
                            "max_running_requests": 64, "schedule_policy": "shortest-prefill-first"},
            "predictor": PREDICTOR, "requests": requests}


def conservative(value: float) -> dict:
    """The `conservative` workload's requests at a conservativeness above 1/0.7: new_token_ratio saturates."""
    base = json.loads((Path(__file__).parent / "conservative" / "workload.json").read_text())
    return {"description": f"conservativeness {value:g}: min(0.7 x {value:g}, 1) = 1, under KV pressure",
            "server_args": {**base["server_args"], "schedule_conservativeness": value},
            "predictor": PREDICTOR, "requests": base["requests"]}


def spent_budget() -> dict:
    """A chunked prompt's last chunk (3,000 tokens) spends max_prefill_tokens (2,048) before any waiting
    request is tried: 0.5.23 admits none of the short ones into that pass."""
    requests = [{"rid": "long", "arrival_s": 0.0, "prompt_len": 8192 + 3000, "output_len": 24}]
    requests += [{"rid": f"s{i}", "arrival_s": 0.05, "prompt_len": 400, "output_len": 40} for i in range(10)]
    return {"description": "the last chunk spends max_prefill_tokens: no admission beside it (0.5.23)",
            "server_args": {"chunked_prefill_size": 8192, "max_prefill_tokens": 2048,
                            "max_total_tokens": 200000, "max_running_requests": 64},
            "predictor": PREDICTOR, "requests": requests}


def spent_budget_mixed() -> dict:
    """Mixed chunk with max_prefill_tokens 32 and 40 running requests: their decode rows spend the input
    budget, so 0.5.23 admits nothing until fewer than 32 run."""
    requests = [{"rid": f"d{i:02d}", "arrival_s": 0.0, "prompt_len": 20, "output_len": 20 + 4 * i}
                for i in range(40)]
    requests += [{"rid": f"n{i}", "arrival_s": 0.3 + 0.05 * i, "prompt_len": 24, "output_len": 16}
                 for i in range(6)]
    return {"description": "mixed decode rows spend max_prefill_tokens: admission waits (0.5.23)",
            "server_args": {"chunked_prefill_size": 4096, "max_prefill_tokens": 32,
                            "enable_mixed_chunk": True, "max_total_tokens": 200000,
                            "max_running_requests": 64},
            "predictor": PREDICTOR, "requests": requests}


def init_clip() -> dict:
    """max_new_tokens above what an empty 6,000-token pool leaves, at page size 16: init_req_max_new_tokens
    clips it to pool - page-rounded prompt - page - 1, so the request fits and runs (its reservation uses
    the clipped value). The clip to max_req_len - prompt - 1 alone leaves 3000 + 2998 + 16 >= 6000."""
    requests = [
        {"rid": "big", "arrival_s": 0.0, "prompt_len": 3000, "output_len": 200, "max_new_tokens": 5000},
        {"rid": "a", "arrival_s": 0.0, "prompt_len": 800, "output_len": 100, "max_new_tokens": 3000},
        {"rid": "b", "arrival_s": 0.2, "prompt_len": 1200, "output_len": 150, "max_new_tokens": 6000}]
    return {"description": "max_new_tokens clipped to the empty pool at intake (init_req_max_new_tokens)",
            "server_args": {"chunked_prefill_size": 2048, "max_total_tokens": 6000, "max_running_requests": 8,
                            "page_size": 16},
            "predictor": PREDICTOR, "requests": requests}


def readmit_charge() -> dict:
    """A 9,000-token pool that retracts: a retracted request re-admitted beside others is charged its whole
    min(max_new, 4096) at commit, not what it has left (found by searching seeds for a workload where the
    two charges part)."""
    rng = random.Random(1009)
    n = rng.randint(30, 60)
    requests = [{"rid": f"r{i:02d}", "arrival_s": round(rng.uniform(0, 3), 4),
                 "prompt_len": rng.randint(50, 600), "output_len": rng.randint(100, 1200)} for i in range(n)]
    requests.sort(key=lambda r: r["arrival_s"])
    pool = rng.choice([5000, 7000, 9000])
    return {"description": "a retracted request comes back charged min(max_new, 4096) again",
            "server_args": {"chunked_prefill_size": 2048, "max_total_tokens": pool,
                            "max_running_requests": 64},
            "predictor": PREDICTOR, "requests": requests}


WORKLOADS = {
    "spf_rush": lambda: rush("shortest-prefill-first"), "spf_rush_fcfs": lambda: rush("fcfs"),
    "spf_prefix": spf_prefix, "spf_pressure": spf_pressure,
    "conservative_1_5": lambda: conservative(1.5), "conservative_3": lambda: conservative(3.0),
    "spent_budget": spent_budget, "spent_budget_mixed": spent_budget_mixed, "init_clip": init_clip,
    "readmit_charge": readmit_charge,
}


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent
    for name, make in WORKLOADS.items():
        (out / name).mkdir(parents=True, exist_ok=True)
        (out / name / "workload.json").write_text(json.dumps({"name": name, **make()}, indent=1) + "\n")


if __name__ == "__main__":
    main()
