"""Writes the workloads of issue 42's reference traces (priority scheduling, the queue limit), from fixed
seeds.

    python3 make_workloads_42.py [OUT_DIR]      # default: this folder

Recorded with `bench/sglang_reference/run_priority.py` (the shared tool plus priority and the queue limit).

- `priority_preempt`: ten o'clock in small with priorities. Six long contracts (priority 0) and one request
  that sends no priority (the lowest there is) fill 7 of 8 request slots; twenty short questions (priority
  20) arrive at about 4 a second and, the batch full, each preempts a running request whose priority is
  more than 10 below (`preempt_to_schedule`); three notes (priority 5) are too close to the contracts to
  preempt them and wait. Preempted requests lose their KV and prefill again, reply included.
- `queue_limit`: a burst of 16 and then 8 more requests on 4 request slots with `max_queued_requests` 4:
  a newcomer finding 4 waiting is aborted ("The request queue is full.").
- `queue_limit_priority`: the same with priority scheduling and mixed priorities: a newcomer of higher
  priority aborts the least-preferred waiting request instead (lowest priority, newest).
- `retract_priority`: chats of three priorities on a 24,000-token pool with `retraction_policy = priority`:
  decode retraction takes the lowest priority first, then the fewest generated tokens.
"""

import json
import random
import sys
from pathlib import Path

PREDICTOR = {"a": 0.010, "b": 5e-5, "c": 1e-7}


def priority_preempt() -> dict:
    rng = random.Random(42)
    reqs = [{"rid": f"c{i}", "arrival_s": round(0.2 * i, 4), "prompt_len": rng.randint(6000, 9000),
             "output_len": rng.randint(200, 300), "priority": 0} for i in range(6)]
    reqs.append({"rid": "anon", "arrival_s": 0.5, "prompt_len": 3000, "output_len": 250})
    at = 1.0
    for i in range(20):
        reqs.append({"rid": f"q{i:02d}", "arrival_s": round(at, 4), "prompt_len": rng.randint(300, 1200),
                     "output_len": rng.randint(40, 120), "priority": 20})
        at += rng.expovariate(4.0)
    for i, t in enumerate((2.0, 3.0, 4.0)):
        reqs.append({"rid": f"n{i}", "arrival_s": t, "prompt_len": rng.randint(500, 1500),
                     "output_len": rng.randint(50, 100), "priority": 5})
    reqs.sort(key=lambda r: r["arrival_s"])
    return {"description": "6 contracts (priority 0) + 1 without priority, 20 questions (20) at ~4/s, "
                           "3 notes (5); 8 request slots; priority scheduling with preemption (threshold 10)",
            "server_args": {"chunked_prefill_size": 4096, "max_total_tokens": 200000,
                            "max_running_requests": 8, "enable_priority_scheduling": True},
            "predictor": PREDICTOR, "requests": reqs}


def queue_limit(with_priority: bool) -> dict:
    rng = random.Random(7)
    reqs = []
    for i in range(24):
        at = 0.0 if i < 16 else round(1.0 + 0.4 * (i - 16), 4)
        req = {"rid": f"r{i:02d}", "arrival_s": at, "prompt_len": rng.randint(200, 2000),
               "output_len": rng.randint(30, 150)}
        if with_priority:
            req["priority"] = rng.choice((0, 1, 2, 5))
        reqs.append(req)
    args = {"chunked_prefill_size": 4096, "max_total_tokens": 200000, "max_running_requests": 4,
            "max_queued_requests": 4}
    if with_priority:
        args["enable_priority_scheduling"] = True
    said = "priorities 0-5, priority scheduling on" if with_priority else "fcfs"
    return {"description": f"16 requests at once, 8 more at 2.5/s; 4 request slots, max_queued_requests 4; "
                           f"{said}",
            "server_args": args, "predictor": PREDICTOR, "requests": reqs}


def retract_priority() -> dict:
    rng = random.Random(11)
    at, reqs = 0.0, []
    for i in range(24):
        at += rng.expovariate(8.0)
        reqs.append({"rid": f"c{i:02d}", "arrival_s": round(at, 4), "prompt_len": rng.randint(600, 1400),
                     "output_len": rng.randint(600, 1200), "priority": rng.choice((0, 3, 7))})
    return {"description": "24 chats of priority 0, 3 or 7 at 8/s on a 24,000-token pool; "
                           "retraction_policy priority (no priority gap exceeds 10: no preemption)",
            "server_args": {"chunked_prefill_size": 4096, "max_total_tokens": 24000,
                            "max_running_requests": 64, "enable_priority_scheduling": True,
                            "retraction_policy": "priority"},
            "predictor": PREDICTOR, "requests": reqs}


def main(out: Path) -> None:
    for name, work in (("priority_preempt", priority_preempt()), ("queue_limit", queue_limit(False)),
                       ("queue_limit_priority", queue_limit(True)), ("retract_priority", retract_priority())):
        folder = out / name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "workload.json").write_text(json.dumps({"name": name, **work}, indent=1) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent)
