"""Writes the workloads of issue 42's prefix-reuse traces (`prefix_lpm`, `prefix_dfs`), from a fixed seed.

    python3 make_workloads_42_prefix.py [OUT_DIR]      # default: this folder

Multi-turn chats on two shared system prompts, in Mooncake's shape: each prompt is a list of 512-token
blocks (`hash_ids`), a later turn repeats its conversation's earlier full blocks and adds new ones (the block
where the last prompt ended holds the reply too, so it is new), and a few one-off questions share only a
system prompt. Eight conversations of three turns (four on each system prompt) and eight one-offs in two
bursts, on a 24,000-token pool, chunk 4,096, 4 running, `schedule_policy = lpm`: the first turns arrive
together at 0 s (the in-batch check defers all but one request per uncached system prompt), later turns 2-5 s
after the last while others still run (lpm puts the longest cached prefix first), and the pool holds about a
third of the distinct tokens, so finished turns are evicted least recently used first. Recorded with
bench/sglang_reference/run_blocks.py (the tool plus `hash_ids`). `prefix_dfs` is the same requests under
`schedule_policy = dfs-weight`.
"""

import json
import random
import sys
from pathlib import Path

PREDICTOR = {"a": 0.010, "b": 5e-5, "c": 1e-7}
POOL = 24000
BLOCK = 512


def prefix_lpm() -> dict:
    rng = random.Random(42)
    next_id = iter(range(1, 10_000))
    systems = [[next(next_id) for _ in range(4)], [next(next_id) for _ in range(2)]]
    requests = []
    for c in range(8):
        system = systems[c // 4]
        full_blocks = list(system)  # the conversation's blocks so far
        at = 0.0
        for turn in range(3):
            new_tokens = rng.randint(600, 1800)
            length = len(full_blocks) * BLOCK + new_tokens
            num_blocks = -(-length // BLOCK)
            blocks = full_blocks + [next(next_id) for _ in range(num_blocks - len(full_blocks))]
            output = rng.randint(24, 96)
            requests.append({"rid": f"c{c}t{turn}", "arrival_s": at, "prompt_len": length,
                             "output_len": output, "hash_ids": blocks})
            full_blocks = blocks[: length // BLOCK]  # the last, partial block changes with the reply
            at = round(at + rng.uniform(2.0, 5.0), 4)
    for q in range(8):
        system = systems[q % 2]
        length = len(system) * BLOCK + rng.randint(100, 900)
        blocks = system + [next(next_id) for _ in range(-(-length // BLOCK) - len(system))]
        burst = 3.0 if q < 4 else 7.0
        requests.append({"rid": f"q{q}", "arrival_s": round(burst + rng.uniform(0.0, 0.05), 4),
                         "prompt_len": length, "output_len": rng.randint(16, 64), "hash_ids": blocks})
    requests.sort(key=lambda r: r["arrival_s"])
    return {"description": "8 three-turn chats and 8 one-off questions on two system prompts (hash_ids "
                           f"blocks of {BLOCK}), lpm, a {POOL:,}-token pool: prefix reuse, in-batch "
                           "deferral, LRU eviction",
            "server_args": {"chunked_prefill_size": 4096, "max_total_tokens": POOL, "max_running_requests": 4,
                            "schedule_policy": "lpm"},
            "predictor": PREDICTOR, "requests": requests}


def prefix_dfs() -> dict:
    workload = prefix_lpm()
    workload["server_args"]["schedule_policy"] = "dfs-weight"
    workload["description"] = workload["description"].replace(", lpm,", ", dfs-weight,")
    return workload


def main(out: Path) -> None:
    for name, workload in (("prefix_lpm", prefix_lpm()), ("prefix_dfs", prefix_dfs())):
        folder = out / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "workload.json").write_text(json.dumps(workload, indent=1) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent)
