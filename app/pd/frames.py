"""PD: where each request's time went, one row per phase span of a sampled request. Pure functions."""

from __future__ import annotations

import pandas as pd

from engine_model import Result

MAX_SPAN_REQUESTS = 48


def sample_requests(requests: list, max_requests: int = MAX_SPAN_REQUESTS) -> list:
    """Evenly spaced requests of each group, every group at least 4, in arrival order."""
    if len(requests) <= max_requests:
        return list(requests)
    groups: dict[str, list] = {}
    for r in requests:
        groups.setdefault(r.group, []).append(r)
    picked = []
    for members in groups.values():
        quota = max(4, round(max_requests * len(members) / len(requests)))
        step = max(1, len(members) / quota)
        picked += [members[int(i * step)] for i in range(min(quota, len(members)))]
    return sorted(picked, key=lambda r: (r.arrival_at, r.rid))


def spans_frame(result: Result) -> pd.DataFrame:
    """One row per phase span of a sampled request (PD runs record `Request.spans`); adjacent chunks merge."""
    rows = []
    for r in sample_requests([r for r in result.requests if getattr(r, "spans", None)]):
        last = None
        for phase, start, end in sorted(r.spans, key=lambda span: (span[0] == "transfer", span[1])):
            if last is not None and last["phase"] == phase and start - last["end_at"] < 1e-9:
                last["end_at"] = end
                continue
            last = {"rid": r.rid, "group": r.group, "phase": phase, "start_at": start, "end_at": end}
            rows.append(last)
    frame = pd.DataFrame(rows, columns=["rid", "group", "phase", "start_at", "end_at"])
    frame["duration_s"] = frame["end_at"] - frame["start_at"]
    return frame
