"""Plain rows a figure draws from one run: passes, token streams and the story's headline numbers.

No pandas, no Altair: a figure is built where the app is not (the CLI). Rows stay few so a page can carry
dozens of runs: back-to-back decode passes merge into one bar, a request's tokens become the stretches in
which they kept arriving, and every gap at or over the stall threshold is its own row (never merged away).
"""

from __future__ import annotations

import numpy as np

from engine_model.core import PassKind, Request
from engine_model.metrics import Metrics
from engine_model.simulation import Result
from engine_model.stories import Headline

KIND_NAMES = {PassKind.PREFILL: "prefill chunk", PassKind.DECODE: "decode", PassKind.MIXED: "mixed",
              PassKind.IDLE: "idle"}
PARTS = {"q": "waiting in queue", "t": "tokens arriving", "x": "no token (stall)", "p": "prefill chunk",
         "m": "mixed"}
STALL_MIN_S = 0.25  # as the app: a gap this long is a stall, or ten typical decode passes if passes are slow
MIN_SHARE = 0.002  # a stretch of tokens is drawn at least this share of the run wide (one token is a tick)


def stall_threshold(result: Result) -> float:
    decode = [it.duration_s for it in result.iterations if it.kind is PassKind.DECODE]
    return max(STALL_MIN_S, 10 * float(np.median(decode))) if decode else STALL_MIN_S


def pass_rows(result: Result) -> list[tuple[str, float, float]]:
    """(kind, start_at, end_at) per bar: back-to-back decode passes merge; every other pass keeps its bar."""
    rows: list[list] = []
    for it in result.iterations:
        if it.kind is PassKind.IDLE and it.duration_s <= 0:
            continue
        kind = KIND_NAMES[it.kind]
        last = rows[-1] if rows else None
        if last and kind == "decode" and last[0] == "decode" and it.start_at - last[2] < 1e-9:
            last[2] = it.end_at
        else:
            rows.append([kind, it.start_at, it.end_at])
    return [tuple(r) for r in rows]


def stream_rows(result: Result, threshold: float) -> list[tuple[int, str, float, float]]:
    """(request order, part, start_at, end_at): queue waits, stretches of tokens, stalls and prompt chunks."""
    order = {r.rid: i for i, r in enumerate(result.requests)}
    min_width = max(result.end_at, 1e-3) * MIN_SHARE
    rows = []
    for i, req in enumerate(result.requests):
        rows += [(i, part, b, e) for part, b, e in _request_parts(req, threshold, min_width)]
    rows += [(order[rid], part, b, e) for rid, part, b, e in _chunks(result)]
    return rows


def _request_parts(req: Request, threshold: float, min_width: float) -> list[tuple[str, float, float]]:
    parts = []
    scheduled = req.first_scheduled_at
    if scheduled is not None and scheduled > req.arrival_at and not req.is_mid_reply:
        parts.append(("q", req.arrival_at, scheduled))
    times = ([req.arrival_at] if req.is_mid_reply else []) + list(req.token_times)
    if not times:
        return parts
    start = prev = times[0]
    for at in times[1:]:
        if at - prev >= threshold:
            parts += [("t", start, max(prev, start + min_width)), ("x", prev, at)]
            start = at
        prev = at
    parts.append(("t", start, max(prev, start + min_width)))
    return parts


def _chunks(result: Result) -> list[tuple[str, str, float, float]]:
    """Each request's prompt chunks; chunks of one request in consecutive passes of one kind join up."""
    open_: dict[str, list] = {}
    done = []
    for it in result.iterations:
        part = "m" if it.kind is PassKind.MIXED else "p"
        for row in it.prefill_rows:
            block = open_.get(row.rid)
            if block and block[1] == part and it.start_at - block[3] < 1e-9:
                block[3] = it.end_at
                continue
            if block:
                done.append(tuple(block))
            open_[row.rid] = [row.rid, part, it.start_at, it.end_at]
    return done + [tuple(b) for b in open_.values()]


# -- headline numbers --------------------------------------------------------------------------------
def headline_value(metrics: Metrics, headline: Headline):
    return metrics.value(headline.group, headline.metric, headline.stat)


def headline_label(metrics: Metrics, headline: Headline) -> str:
    count = metrics.value(headline.group or "", "num_requests")
    return headline.label.format(group_count="" if count is None else count)


def fmt_value(value, unit: str) -> str:
    """Seconds in ms or s (as the app prints them); counts with separators; an em dash for none."""
    if value is None:
        return "—"
    if unit != "s":
        return f"{value:,}"
    if value < 1:
        return f"{value * 1000:.0f} ms" if value >= 0.01 else f"{value * 1000:.1f} ms"
    return f"{value:.1f} s" if value < 100 else f"{value:.0f} s"


# -- KV and queue over time --------------------------------------------------------------------------
MAX_POINTS = 1500  # per series; longer runs keep each time bin's maximum, so a peak is never lost


def binned_max(points: list[tuple[float, float]], end_at: float) -> list[tuple[float, float]]:
    if len(points) <= MAX_POINTS:
        return points
    width = max(end_at, 1e-9) / MAX_POINTS
    bins: dict[int, tuple[float, float]] = {}
    for at, value in points:
        k = int(at / width)
        if k not in bins or value > bins[k][1]:
            bins[k] = (k * width, value)
    return sorted(bins.values())


def kv_rows(result: Result) -> list[tuple[str, float, float]]:
    """("used" | "pool", at, slots): KV slots in use after each pass's allocation, and the pool's size."""
    its = [it for it in result.iterations if it.kind is not PassKind.IDLE or it.duration_s > 0]
    used = binned_max([(it.start_at, float(it.kv_used)) for it in its], result.end_at)
    pool = [(0.0, float(its[0].kv_capacity)), (result.end_at, float(its[-1].kv_capacity))] if its else []
    return [("used", at, v) for at, v in used] + [("pool", at, v) for at, v in pool]


def queue_rows(result: Result) -> list[tuple[str, float, float]]:
    """("waiting" | "running", at, requests) as the scheduler saw them at each pass."""
    its = result.iterations
    waiting = binned_max([(it.start_at, float(it.num_waiting)) for it in its], result.end_at)
    running = binned_max([(it.start_at, float(it.num_running)) for it in its], result.end_at)
    return [("waiting", at, v) for at, v in waiting] + [("running", at, v) for at, v in running]
