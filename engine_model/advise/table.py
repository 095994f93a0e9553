"""The advice as one table, a row per candidate: the CLI's --csv and --json and the page's table and CSV
export all write these rows."""

from __future__ import annotations

import csv
import io

from engine_model.advise.search import Advice, complete
from engine_model.advise.targets import WAITS
from engine_model.advise.words import why_not


def rows(advice: Advice) -> list[dict]:
    """Today first, then every candidate in the order it ran. Waits in seconds; `front`: on the Pareto front
    of output per GPU against the most-waiting group's p95 first token."""
    front = {o.key for o in advice.front(None, "ttft_p95")}
    best = advice.best.key if advice.best else None
    out = []
    for i, o in enumerate((advice.today, *advice.outcomes)):
        if i > 0 and o.key == advice.today.key:
            continue
        row = {
            "setting": "today" if i == 0 else f"#{i}",
            "layout": o.candidate.layout.words,
            "pd": o.candidate.layout.is_pd,
            "gpus": o.gpus,
            "mixed_chunk": o.candidate.mixed,
            "chunk": o.candidate.chunk,
            "schedule_policy": o.candidate.policy,
            "conservativeness": o.candidate.conservativeness,
            "max_running_requests": o.candidate.max_running,
            "output_tok_s": o.output_tok_s,
            "output_per_gpu": o.output_per_gpu,
        }
        for group in advice.groups:
            for wait in WAITS:
                row[f"{group}.{wait}"] = o.wait(group, wait)
        row.update(
            {
                "meets_targets": complete(o) and advice.meets(o),
                "front": o.key in front,
                "recommended": o.key == best,
                "not_proposed": why_not(o),
                "sets": o.key,
            }
        )
        out.append(row)
    return out


def to_csv(table: list[dict]) -> str:
    if not table:
        return ""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(table[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(table)
    return buffer.getvalue()
