"""Writes the workloads of issue 37's reference traces (`client_reply`, `client_none`), from a fixed seed.

    python3 make_workloads_37.py [OUT_DIR]      # default: this folder

The other stall in small: 32 chat replies at 10 a second on a 20,000-token pool. The same requests twice:
`client_reply` asks for exactly each reply's length (max_new_tokens = output_len, the story's client);
`client_none` is a client that sends no max_tokens. The reference tool always sends an integer, so it sends
what SGLang 0.5.23 fills in for such a request (`Scheduler.init_req_max_new_tokens`: 1 << 30, clipped to
max_req_len - prompt - 1 and to pool - page-rounded prompt - page - 1; max_req_len = pool - 1 here, below the
context length), i.e. 19,998 - prompt at page size 1. Each reply then ends by EOS at its output_len.
"""

import json
import random
import sys
from pathlib import Path

PREDICTOR = {"a": 0.010, "b": 5e-5, "c": 1e-7}
POOL = 20000


def chats(client: str) -> dict:
    rng = random.Random(37)
    at, requests = 0.0, []
    for i in range(32):
        at += rng.expovariate(10.0)
        prompt, output = rng.randint(800, 1600), rng.randint(800, 1500)
        max_new = output if client == "reply" else min(POOL - 1 - prompt - 1, POOL - prompt - 1 - 1)
        requests.append({"rid": f"c{i:02d}", "arrival_s": round(at, 4), "prompt_len": prompt,
                         "output_len": output, "max_new_tokens": max_new})
    said = ("max_new_tokens = the reply's length" if client == "reply"
            else "max_new_tokens = what SGLang fills in without one (pool - 2 - prompt)")
    return {"description": f"32 chats at 10/s on a {POOL:,}-token pool; {said}",
            "server_args": {"chunked_prefill_size": 4096, "max_total_tokens": POOL,
                            "max_running_requests": 64},
            "predictor": PREDICTOR, "requests": requests}


def main(out: Path) -> None:
    for client in ("reply", "none"):
        folder = out / f"client_{client}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "workload.json").write_text(json.dumps({"name": f"client_{client}", **chats(client)},
                                                         indent=1) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent)
