"""Per-request tables built from a `Result`: token marks, stalls, prefill chunks, queue waits, gaps between
tokens per group, metrics and retractions. Pure functions: no Streamlit, no Altair.

A request's tokens that come close together are one mark (a bar from the first to the last), a token
on its own a tick; past MAX_TOKEN_MARKS the ticks are thinned, but the marks around every gap at or over
the stall threshold stay, and every such gap is its own stall row.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from app.charts.phases import MAX_CHART_ROWS, PHASE_OF
from engine_model import PassKind, Result, e2e, gaps, max_itl, queue, seen, tpot, ttft

MAX_TOKEN_MARKS = 2_500  # token marks: enough to read a stream, light enough to redraw fast
JOIN_PX, DRAW_PX = 2, 1_000  # tokens under 2 px apart on a 1,000-px-wide chart of the run draw as one bar
STALL_MIN_S = 0.25  # a gap between two tokens at least this long is drawn as a stall
GAP_EDGES_S = (1.0, 5.0, 20.0)  # stall shades: threshold-1 s, 1-5 s, 5-20 s, 20 s or more


def gap_bands(threshold_s: float) -> list[tuple[float, float, str]]:
    """The shades a stall is drawn in, shortest first: (from s, to s, label). The same for every run with
    this threshold, so flipping a setting moves a stall from one shade to another."""
    lows = [threshold_s, *(edge for edge in GAP_EDGES_S if edge > threshold_s)]
    highs = [*lows[1:], float("inf")]
    return [(lo, hi, f"{lo:.2g}–{hi:g} s" if hi != float("inf") else f"{lo:.2g} s or more")
            for lo, hi in zip(lows, highs, strict=True)]


def gap_band(gap_s: float, threshold_s: float) -> str:
    """The label of the shade a gap of gap_s seconds is drawn in."""
    return next(label for lo, hi, label in gap_bands(threshold_s) if gap_s < hi)


def shared_threshold(thresholds: list[float]) -> float:
    """The stall threshold several runs in one chart are shaded and captioned by: the lowest of theirs."""
    return min(thresholds)


def shaded_alike(stalls: pd.DataFrame, thresholds: list[float]) -> tuple[pd.DataFrame, float]:
    """Several runs' stalls in one chart, each shaded on the bands of their `shared_threshold`, so one shade
    means one length in every run: (the stalls, that threshold)."""
    threshold = shared_threshold(thresholds)
    if len(stalls):
        stalls = stalls.assign(band=[gap_band(gap, threshold) for gap in stalls["gap_s"]])
    return stalls, threshold


# -- tokens ------------------------------------------------------------------------------------------
def stall_threshold(result: Result) -> float:
    """STALL_MIN_S, or ten typical decode passes if passes are slow (so normal decoding never reads as a
    stall)."""
    decode = [it.duration_s for it in result.iterations if it.kind is PassKind.DECODE]
    typical = float(np.median(decode)) if decode else 0.0
    return max(STALL_MIN_S, 10 * typical)


def token_frames(result: Result, max_rows: int = MAX_TOKEN_MARKS) -> tuple[pd.DataFrame, pd.DataFrame, float]:
    """Token marks and stall segments (every gap >= threshold, never thinned). A mark is a run of a
    request's tokens each less than `join_gap` apart (drawn as one bar, `at` to `until`) or a single token
    (a tick, `until == at`); `n` is the run's first token's place in this run's stream, `count` its tokens."""
    threshold = stall_threshold(result)
    join_s = join_gap(result.end_at, threshold)
    stalls, marks, near = [], [], []
    for req in result.requests:
        times = np.asarray(seen(req), dtype=float)  # as the client receives them (engine_model/frontend.py)
        starts = (np.concatenate([[req.arrival_at], times[:-1]]) if req.is_mid_reply
                  else np.concatenate([[np.nan], times[:-1]]))
        gaps = times - starts
        is_stall = np.nan_to_num(gaps, nan=0.0) >= threshold
        for i in np.flatnonzero(is_stall):
            stalls.append({"rid": req.rid, "group": req.group, "start_at": starts[i], "end_at": times[i],
                           "gap_s": gaps[i], "band": gap_band(gaps[i], threshold)})
        if not times.size:
            continue
        first = np.flatnonzero(np.concatenate([[True], gaps[1:] >= join_s]))
        last = np.concatenate([first[1:] - 1, [times.size - 1]])
        for i, j in zip(first, last, strict=True):
            marks.append((req.rid, req.group, times[i], times[j], gaps[i], int(i) + 1, int(j - i) + 1))
            near.append(bool(is_stall[i] or (j + 1 < times.size and is_stall[j + 1])))
    tokens = pd.DataFrame(marks, columns=["rid", "group", "at", "until", "gap_before_s", "n", "count"])
    tokens = tokens[_thinned(tokens, np.asarray(near, dtype=bool), 2 * join_s, max_rows)]
    stall_frame = pd.DataFrame(stalls, columns=["rid", "group", "start_at", "end_at", "gap_s", "band"])
    return tokens.reset_index(drop=True), stall_frame, threshold


def join_gap(end_at: float, threshold_s: float) -> float:
    """Tokens closer than this draw as one bar: JOIN_PX on a chart DRAW_PX wide showing the whole run (ticks
    that close look solid anyway), and never a stall."""
    return min(threshold_s, JOIN_PX * max(end_at, 1e-3) / DRAW_PX)


def _thinned(marks: pd.DataFrame, near: np.ndarray, width_s: float, max_rows: int) -> np.ndarray:
    """Which marks to draw when there are more than `max_rows` (a long trickle of single ticks): every run,
    the marks either side of a stall, each lane's last mark, and the first mark in every time bin of
    `width_s`, so a thinned lane never looks empty where tokens kept coming. The bins widen until the marks
    fit."""
    if len(marks) <= max_rows:
        return np.ones(len(marks), dtype=bool)
    lane = marks["rid"].to_numpy()
    fixed = near | (marks["count"].to_numpy() > 1) | np.concatenate([lane[1:] != lane[:-1], [True]])
    while True:
        bins = np.floor(marks["at"].to_numpy() / width_s)
        keep = fixed | np.concatenate([[True], (lane[1:] != lane[:-1]) | (bins[1:] != bins[:-1])])
        if keep.sum() <= max_rows or width_s > 1e7:
            return keep
        width_s *= 1.5


def pauses_frame(stalls: pd.DataFrame, tokens: pd.DataFrame) -> pd.DataFrame:
    """Each request's wait for its next token as points of a sawtooth (rid, order, at, wait_s): 0 at a token,
    rising through a stall to its length at the token that ends it, then 0 again."""
    if tokens.empty:
        return pd.DataFrame(columns=["rid", "group", "order", "at", "wait_s"])
    ends = tokens.groupby("rid", sort=False).agg(group=("group", "first"), start=("at", "min"),
                                                 stop=("until", "max"))
    rows = []
    for rid, group, start, stop in ends.itertuples():
        rows += [(rid, group, start, 0.0), (rid, group, stop, 0.0)]
    for stall in stalls.itertuples(index=False):
        rows += [(stall.rid, stall.group, stall.start_at, 0.0), (stall.rid, stall.group, stall.end_at,
                                                                  stall.gap_s),
                 (stall.rid, stall.group, stall.end_at, 0.0)]
    frame = pd.DataFrame(rows, columns=["rid", "group", "at", "wait_s"])
    frame["order"] = range(len(frame))
    frame = frame.sort_values(["rid", "at", "order"], kind="stable")  # at one instant: the peak, then 0
    frame["order"] = range(len(frame))
    return frame.reset_index(drop=True)


def chunks_frame(result: Result) -> pd.DataFrame:
    """Every prefill row: which part of which prompt ran in which pass."""
    rows = []
    for lane, its in result.lanes.items():
        for it in its:
            for row in it.prefill_rows:
                rows.append({"lane": lane, "index": it.index, "rid": row.rid, "kind": PHASE_OF[it.kind],
                             "start_at": it.start_at, "end_at": it.end_at, "extend": row.extend,
                             "past_kv": row.past_kv})
    frame = pd.DataFrame(rows, columns=["lane", "index", "rid", "kind", "start_at", "end_at", "extend",
                                        "past_kv"])
    group_of = {r.rid: r.group for r in result.requests}
    frame["group"] = frame["rid"].map(group_of)
    if len(frame) > MAX_CHART_ROWS:  # merge consecutive chunks of one request only when back to back
        frame = frame.sort_values(["rid", "start_at"]).groupby(
            ["rid", (frame.sort_values(["rid", "start_at"])["start_at"].diff().abs() > 1e-9).cumsum()],
            as_index=False
        ).agg(lane=("lane", "first"), index=("index", "first"), kind=("kind", "first"),
              start_at=("start_at", "min"), end_at=("end_at", "max"), extend=("extend", "sum"),
              past_kv=("past_kv", "min"), group=("group", "first"))
    return frame


def waits_frame(result: Result) -> pd.DataFrame:
    """Time spent in the waiting queue: from arrival, and from each retraction or preemption, to the next
    prefill row."""
    starts: dict[str, list[float]] = {}
    for its in result.lanes.values():
        for it in its:
            for row in it.prefill_rows:
                starts.setdefault(row.rid, []).append(it.start_at)
    retracted_at: dict[str, list[float]] = {}
    for event in result.retractions:
        for rid in event.rids:
            retracted_at.setdefault(rid, []).append(event.at)
    preempted_at: dict[str, list[float]] = {}
    for preemption in result.preemptions:  # priority scheduling: released like a retraction
        for rid in preemption.rids:
            preempted_at.setdefault(rid, []).append(preemption.at)
    rows = []
    for req in result.requests:
        prefill_starts = sorted(starts.get(req.rid, []))
        entries = ([] if req.is_mid_reply else [(req.arrival_at, "waiting for its first prefill")])
        entries += [(at, "retracted: waiting to re-prefill") for at in retracted_at.get(req.rid, [])]
        entries += [(at, "preempted: waiting to re-prefill") for at in preempted_at.get(req.rid, [])]
        for at, why in entries:
            later = [s for s in prefill_starts if s >= at - 1e-12]
            end = later[0] if later else (req.finished_at if req.finished_at is not None else result.end_at)
            if end > at:
                rows.append({"rid": req.rid, "group": req.group, "start_at": at, "end_at": end, "why": why,
                             "wait_s": end - at})
    return pd.DataFrame(rows, columns=["rid", "group", "start_at", "end_at", "why", "wait_s"])


# -- latency distributions ---------------------------------------------------------------------------
def _gaps_by_group(result: Result) -> dict[str, np.ndarray]:

    out: dict[str, list[np.ndarray]] = {}
    for req in result.requests:
        g = gaps(req)
        if g.size:
            out.setdefault(req.group, []).append(g)
    return {k: np.concatenate(v) for k, v in out.items()}


def itl_histogram(result: Result, num_bins: int = 40) -> pd.DataFrame:
    """Counts of inter-token gaps per group on log-spaced bins (seconds)."""
    by_group = _gaps_by_group(result)
    if not by_group:
        return pd.DataFrame(columns=["group", "bin_start", "bin_end", "count"])
    every = np.concatenate(list(by_group.values()))
    every = every[every > 0]
    lo, hi = max(every.min(), 1e-4), max(every.max(), 1e-3) * 1.0001
    edges = np.geomspace(lo, hi, num_bins + 1)
    rows = []
    for group, values in by_group.items():
        counts, _ = np.histogram(np.clip(values, lo, hi * 0.9999), bins=edges)
        for start, end, count in zip(edges[:-1], edges[1:], counts, strict=True):
            if count:
                rows.append({"group": group, "bin_start": start, "bin_end": end, "count": int(count)})
    return pd.DataFrame(rows)


def itl_stats(result: Result) -> pd.DataFrame:
    rows = []
    for group, values in _gaps_by_group(result).items():
        for stat, q in (("p50", 50), ("p95", 95), ("p99", 99)):
            rows.append({"group": group, "stat": stat, "gap_s": float(np.percentile(values, q))})
        rows.append({"group": group, "stat": "max", "gap_s": float(values.max())})
    return pd.DataFrame(rows, columns=["group", "stat", "gap_s"])


# -- per request -------------------------------------------------------------------------------------
def requests_frame(result: Result) -> pd.DataFrame:
    return pd.DataFrame([{
        "rid": r.rid, "group": r.group, "prompt_len": r.prompt_len, "output_len": r.output_len,
        "max_new_tokens": r.max_new_tokens, "arrival_at": r.arrival_at, "state": r.state.value,
        "num_tokens_in_run": len(r.token_times), "ttft_s": ttft(r), "max_itl_s": max_itl(r),
        "tpot_s": tpot(r), "e2e_s": e2e(r), "queue_s": queue(r), "num_retractions": r.num_retractions,
        "finished_at": r.finished_at, "reject_reason": r.reject_reason or "",
    } for r in result.requests])


def retractions_frame(result: Result) -> pd.DataFrame:
    return pd.DataFrame([{
        "at": e.at, "before_iteration": e.before_iteration, "rids": " ".join(e.rids),
        "num_retracted": len(e.rids),
        "num_running_before": e.num_running_before, "num_running_after": e.num_running_after,
        "kv_free_before": e.kv_free_before, "kv_free_after": e.kv_free_after,
        "ratio_before": e.ratio_before, "ratio_after": e.ratio_after,
    } for e in result.retractions], columns=["at", "before_iteration", "rids", "num_retracted",
                                             "num_running_before", "num_running_after", "kv_free_before",
                                             "kv_free_after", "ratio_before", "ratio_after"])
