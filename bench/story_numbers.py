"""The stories' headline numbers under the current cost model, so prose that quotes them can be checked.

    .venv/bin/python bench/story_numbers.py            # a markdown table
    .venv/bin/python bench/story_numbers.py --json     # the same as JSON

Each row runs one scenario with `--set` style overrides (the switches the stories' tours flip) and reads
the figures the story headlines show (app/stories.py): a group's statistic of a metric.
"""

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from engine_model.report import summary  # noqa: E402
from engine_model.scenario_io import load_scenario  # noqa: E402
from engine_model.simulation import simulate  # noqa: E402

ROWS = [
    ("forty_replies", (),
     [("streams", "max_itl_s", "max"), ("log", "ttft_s", "max"), ("streams", "itl_s", "p99")]),
    ("forty_replies", ("engine.enable_mixed_chunk=true",),
     [("streams", "max_itl_s", "max"), ("log", "ttft_s", "max"), ("streams", "itl_s", "p99")]),
    ("forty_replies", ("engine.enable_mixed_chunk=true", "engine.chunked_prefill_size=2048"),
     [("streams", "max_itl_s", "max"), ("log", "ttft_s", "max")]),
    ("other_stall", (),
     [(None, "num_retracted", None), ("chats", "max_itl_s", "max"), ("chats", "ttft_s", "p95")]),
    ("other_stall", ("engine.max_total_tokens=120000",),
     [(None, "num_retracted", None), ("chats", "max_itl_s", "max")]),
    ("ten_oclock_rush", (), [("questions", "ttft_s", "p95"), ("questions", "max_itl_s", "max"),
                             ("contracts", "ttft_s", "p95")]),
    ("ten_oclock_rush", ("engine.enable_mixed_chunk=true",), [("questions", "max_itl_s", "max")]),
    ("real_traffic", (), [("requests", "max_itl_s", "max"), ("requests", "max_itl_s", "p50"),
                          ("requests", "ttft_s", "p95")]),
]


def numbers(extra_sets: tuple[str, ...] = ()) -> list[dict]:
    rows = []
    for name, sets, figures in ROWS:
        metrics = summary(simulate(load_scenario(name, [*sets, *extra_sets]))).metrics
        for group, metric, stat in figures:
            value = metrics.value(group, metric, stat)
            rows.append({"scenario": name, "sets": " ".join(sets) or "(defaults)",
                         "figure": f"{group or 'all'} {metric} {stat or ''}".strip(), "value": value})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--set", action="append", default=[],
                        help="applied to every row, e.g. cost.kind=linear")
    args = parser.parse_args()
    rows = numbers(tuple(args.set))
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    print("| scenario | switches | figure | value |\n|---|---|---|---:|")
    for r in rows:
        value = r["value"] if isinstance(r["value"], int) else f"{r['value']:.3f}"
        print(f"| {r['scenario']} | {r['sets']} | {r['figure']} | {value} |")


if __name__ == "__main__":
    main()
