"""Tidy (long-form) tables built from a `Result`. Pure functions: no Streamlit, no Altair.

Every chart builder in `app.charts` takes one of these frames. Frames that feed charts stay under
Altair's 5,000-row default by aggregating, never by hiding a stall:

- passes:  runs of back-to-back decode passes over the same batch merge into one bar; every prefill,
           mixed and idle-with-duration pass keeps its own bar.
- tokens:  each request keeps every k-th token *and* both tokens around every long gap.
- kv/queue: per-iteration points, or per-time-bin maxima for long runs (a peak is never lost).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from engine_model import PassKind, Result, e2e, gaps, max_itl, queue, summary, tpot, ttft

MAX_TOKEN_MARKS = 2_500  # token ticks: enough to read a stream, light enough to redraw fast
MAX_CHART_ROWS = 4_000  # under Altair's 5,000-row default, with room for cursor and label layers
PHASES = ("prefill chunk", "decode", "mixed", "idle")
PHASE_OF = {PassKind.PREFILL: "prefill chunk", PassKind.DECODE: "decode", PassKind.MIXED: "mixed", PassKind.IDLE: "idle"}
STALL_MIN_S = 0.25  # a gap between two tokens at least this long is drawn as a stall


@dataclass
class RunFrames:
    """Everything a page draws for one run. Cached per scenario JSON (see app.compute)."""

    summary: dict
    iterations: pd.DataFrame  # one row per iteration, every lane
    passes: pd.DataFrame  # Gantt bars, aggregated
    tokens: pd.DataFrame  # thinned token marks
    stalls: pd.DataFrame  # gaps >= stall threshold, one row each
    chunks: pd.DataFrame  # prefill rows: one per (pass, request)
    waits: pd.DataFrame  # time in the waiting queue (first wait and after retraction)
    kv: pd.DataFrame  # KV slots used / reserved / free over time
    queue: pd.DataFrame  # waiting and running counts over time
    itl_hist: pd.DataFrame  # inter-token gap histogram per group
    itl_stats: pd.DataFrame  # p50/p95/p99/max per group
    requests: pd.DataFrame  # per-request metrics
    retractions: pd.DataFrame
    spans: pd.DataFrame  # PD: where each (sampled) request's time went, one row per phase span
    lanes: list[str] = field(default_factory=list)
    request_order: list[str] = field(default_factory=list)
    stall_threshold_s: float = STALL_MIN_S
    end_at: float = 0.0


def build(result: Result) -> RunFrames:
    its = iterations_frame(result)
    toks, stalls, threshold = token_frames(result)
    return RunFrames(
        summary=summary(result).to_json(),
        iterations=its,
        passes=passes_frame(its),
        tokens=toks,
        stalls=stalls,
        chunks=chunks_frame(result),
        waits=waits_frame(result),
        kv=kv_frame(its),
        queue=queue_frame(its),
        itl_hist=itl_histogram(result),
        itl_stats=itl_stats(result),
        requests=requests_frame(result),
        retractions=retractions_frame(result),
        spans=spans_frame(result),
        lanes=list(result.lanes),
        request_order=[r.rid for r in result.requests],
        stall_threshold_s=threshold,
        end_at=result.end_at,
    )


# -- iterations and passes ---------------------------------------------------------------------------
def iterations_frame(result: Result) -> pd.DataFrame:
    rows = []
    for lane, its in result.lanes.items():
        for it in its:
            rows.append({
                "lane": lane,
                "index": it.index,
                "kind": PHASE_OF[it.kind],
                "start_at": it.start_at,
                "end_at": it.end_at,
                "duration_s": it.duration_s,
                "num_new_tokens": it.num_new_tokens,
                "num_prefill_tokens": sum(r.extend for r in it.prefill_rows),
                "num_prefill_rows": len(it.prefill_rows),
                "num_decode_rows": len(it.decode_rids),
                "prefill_rids": " ".join(r.rid for r in it.prefill_rows),
                "batch": hash(it.decode_rids),
                "reason": it.reason,
                "mirrors": it.mirrors,
                "chunked_rid": it.chunked_rid or "",
                "kv_used": it.kv_used,
                "kv_reserved": getattr(it, "kv_reserved", 0),
                "kv_capacity": it.kv_capacity,
                "num_waiting": it.num_waiting,
                "num_running": it.num_running,
                "new_token_ratio": it.new_token_ratio,
                "retracted": " ".join(it.retraction.rids) if it.retraction else "",
            })
    frame = pd.DataFrame(rows)
    if frame.empty:
        return frame
    return frame.sort_values(["start_at", "lane", "index"], kind="stable").reset_index(drop=True)


def passes_frame(its: pd.DataFrame, max_rows: int = MAX_CHART_ROWS) -> pd.DataFrame:
    """Gantt bars. Merge back-to-back decode passes with the same batch; never merge across a gap."""
    if its.empty:
        return its.assign(num_passes=[])
    drawn = its[its["duration_s"] > 0]
    bars = _merge_decode_runs(drawn, same_batch=True)
    if len(bars) > max_rows:  # long runs: merge contiguous decode passes whatever the batch
        bars = _merge_decode_runs(drawn, same_batch=False)
    return bars


def _merge_decode_runs(its: pd.DataFrame, same_batch: bool) -> pd.DataFrame:
    out = []
    for lane, rows in its.groupby("lane", sort=False):
        cur = None
        for row in rows.itertuples(index=False):
            joins = (
                cur is not None and row.kind == "decode" and cur["kind"] == "decode"
                and abs(row.start_at - cur["end_at"]) < 1e-9
                and (not same_batch or row.batch == cur["batch"])
            )
            if joins:
                cur["end_at"] = row.end_at
                cur["last_index"] = row.index
                cur["num_passes"] += 1
                cur["num_new_tokens"] += row.num_new_tokens
                cur["max_batch"] = max(cur["max_batch"], row.num_decode_rows)
                cur["min_batch"] = min(cur["min_batch"], row.num_decode_rows)
                continue
            if cur is not None:
                out.append(cur)
            cur = {
                "lane": lane, "kind": row.kind, "start_at": row.start_at, "end_at": row.end_at,
                "first_index": row.index, "last_index": row.index, "num_passes": 1,
                "num_new_tokens": row.num_new_tokens, "num_prefill_tokens": row.num_prefill_tokens,
                "num_prefill_rows": row.num_prefill_rows, "max_batch": row.num_decode_rows,
                "min_batch": row.num_decode_rows, "batch": row.batch, "reason": row.reason,
                "mirrors": row.mirrors, "prefill_rids": row.prefill_rids,
            }
        if cur is not None:
            out.append(cur)
    frame = pd.DataFrame(out)
    frame["duration_s"] = frame["end_at"] - frame["start_at"]
    frame["label"] = [_pass_label(r) for r in frame.itertuples(index=False)]
    return frame.drop(columns=["batch"])


def _pass_label(row) -> str:
    if row.num_passes > 1:
        batch = f"{row.min_batch}" if row.min_batch == row.max_batch else f"{row.min_batch}-{row.max_batch}"
        return f"{row.num_passes} decode passes, batch {batch}"
    if row.kind == "decode":
        return f"decode, batch {row.max_batch}"
    if row.kind == "idle":
        return "idle"
    extra = f" + {row.max_batch} decode rows" if row.max_batch else ""
    return f"{row.kind}: {row.num_prefill_tokens:,} prompt tokens{extra}"


# -- tokens ------------------------------------------------------------------------------------------
def stall_threshold(result: Result) -> float:
    """STALL_MIN_S, or ten typical decode passes if passes are slow (so normal decoding never reads as a stall)."""
    decode = [it.duration_s for it in result.iterations if it.kind is PassKind.DECODE]
    typical = float(np.median(decode)) if decode else 0.0
    return max(STALL_MIN_S, 10 * typical)


def token_frames(result: Result, max_rows: int = MAX_TOKEN_MARKS) -> tuple[pd.DataFrame, pd.DataFrame, float]:
    """Token marks (thinned) and stall segments (every gap >= threshold, never thinned)."""
    threshold = stall_threshold(result)
    reqs = [r for r in result.requests if r.token_times or r.is_mid_reply]
    per_request = max(6, max_rows // max(len(reqs), 1))
    marks, stalls = [], []
    for req in result.requests:
        times = np.asarray(req.token_times, dtype=float)
        starts = np.concatenate([[req.arrival_at], times[:-1]]) if req.is_mid_reply else np.concatenate([[np.nan], times[:-1]])
        gaps = times - starts
        is_stall = np.nan_to_num(gaps, nan=0.0) >= threshold
        for i in np.flatnonzero(is_stall):
            stalls.append({"rid": req.rid, "group": req.group, "start_at": starts[i], "end_at": times[i], "gap_s": gaps[i]})
        if times.size == 0:
            continue
        step = max(1, int(np.ceil(times.size / per_request)))
        near_stall = is_stall.copy()  # the token that ends a gap ...
        near_stall[:-1] |= is_stall[1:]  # ... and the one that starts it
        keep = near_stall.copy()
        keep[::step] = True
        keep[-1] = True
        for t, g, near in zip(times[keep], gaps[keep], near_stall[keep], strict=True):
            marks.append({"rid": req.rid, "group": req.group, "at": t, "gap_before_s": g, "near_stall": near})
    tokens = pd.DataFrame(marks, columns=["rid", "group", "at", "gap_before_s", "near_stall"])
    stall_frame = pd.DataFrame(stalls, columns=["rid", "group", "start_at", "end_at", "gap_s"])
    budget = max_rows - int(tokens["near_stall"].sum())
    regular = ~tokens["near_stall"]
    if regular.sum() > budget > 0:  # thin the regular marks further; marks at a stall's edges all stay
        every = int(np.ceil(regular.sum() / budget))
        keep = tokens["near_stall"] | (regular & (regular.cumsum() % every == 0))
        tokens = tokens[keep]
    return tokens.drop(columns=["near_stall"]).reset_index(drop=True), stall_frame, threshold


def chunks_frame(result: Result) -> pd.DataFrame:
    """Every prefill row: which part of which prompt ran in which pass."""
    rows = []
    for lane, its in result.lanes.items():
        for it in its:
            for row in it.prefill_rows:
                rows.append({"lane": lane, "index": it.index, "rid": row.rid, "kind": PHASE_OF[it.kind],
                             "start_at": it.start_at, "end_at": it.end_at, "extend": row.extend,
                             "past_kv": row.past_kv})
    frame = pd.DataFrame(rows, columns=["lane", "index", "rid", "kind", "start_at", "end_at", "extend", "past_kv"])
    group_of = {r.rid: r.group for r in result.requests}
    frame["group"] = frame["rid"].map(group_of)
    if len(frame) > MAX_CHART_ROWS:  # merge consecutive chunks of one request only when back to back
        frame = frame.sort_values(["rid", "start_at"]).groupby(
            ["rid", (frame.sort_values(["rid", "start_at"])["start_at"].diff().abs() > 1e-9).cumsum()], as_index=False
        ).agg(lane=("lane", "first"), index=("index", "first"), kind=("kind", "first"), start_at=("start_at", "min"),
              end_at=("end_at", "max"), extend=("extend", "sum"), past_kv=("past_kv", "min"), group=("group", "first"))
    return frame


def waits_frame(result: Result) -> pd.DataFrame:
    """Time spent in the waiting queue: from arrival, and from each retraction, to the next prefill row."""
    starts: dict[str, list[float]] = {}
    for its in result.lanes.values():
        for it in its:
            for row in it.prefill_rows:
                starts.setdefault(row.rid, []).append(it.start_at)
    retracted_at: dict[str, list[float]] = {}
    for event in result.retractions:
        for rid in event.rids:
            retracted_at.setdefault(rid, []).append(event.at)
    rows = []
    for req in result.requests:
        prefill_starts = sorted(starts.get(req.rid, []))
        entries = ([] if req.is_mid_reply else [(req.arrival_at, "waiting for its first prefill")])
        entries += [(at, "retracted: waiting to re-prefill") for at in retracted_at.get(req.rid, [])]
        for at, why in entries:
            later = [s for s in prefill_starts if s >= at - 1e-12]
            end = later[0] if later else (req.finished_at if req.finished_at is not None else result.end_at)
            if end > at:
                rows.append({"rid": req.rid, "group": req.group, "start_at": at, "end_at": end, "why": why,
                             "wait_s": end - at})
    return pd.DataFrame(rows, columns=["rid", "group", "start_at", "end_at", "why", "wait_s"])


# -- KV and queue ------------------------------------------------------------------------------------
def _binned(its: pd.DataFrame, columns: list[str], max_points: int) -> pd.DataFrame:
    """Per-iteration values at each pass's start, or per-time-bin maxima when there are too many."""
    frame = its[["start_at", *columns]].rename(columns={"start_at": "at"})
    if len(frame) <= max_points:
        return frame
    edges = np.linspace(frame["at"].min(), frame["at"].max() + 1e-9, max_points + 1)
    bins = np.digitize(frame["at"], edges) - 1
    out = frame.groupby(bins).agg({"at": "min", **dict.fromkeys(columns, "max")})
    return out.reset_index(drop=True)


def kv_frame(its: pd.DataFrame, max_points: int = 1_000) -> pd.DataFrame:
    """KV slots: used, reserved-not-yet-used (PD decode), free. Long form: at, lane, series, slots."""
    if its.empty:
        return pd.DataFrame(columns=["at", "lane", "series", "slots", "capacity"])
    parts = []
    for lane, rows in its.groupby("lane", sort=False):
        frame = _binned(rows, ["kv_used", "kv_reserved", "kv_capacity"], max_points // max(its["lane"].nunique(), 1))
        frame["kv_free"] = (frame["kv_capacity"] - frame["kv_used"] - frame["kv_reserved"]).clip(lower=0)
        long = frame.melt(id_vars=["at", "kv_capacity"], value_vars=["kv_used", "kv_reserved", "kv_free"],
                          var_name="series", value_name="slots")
        long["lane"] = lane
        parts.append(long)
    out = pd.concat(parts, ignore_index=True)
    out["series"] = out["series"].map({"kv_used": "used", "kv_reserved": "reserved, not yet used", "kv_free": "free"})
    return out.rename(columns={"kv_capacity": "capacity"})


def queue_frame(its: pd.DataFrame, max_points: int = 1_000) -> pd.DataFrame:
    if its.empty:
        return pd.DataFrame(columns=["at", "lane", "series", "requests"])
    parts = []
    for lane, rows in its.groupby("lane", sort=False):
        frame = _binned(rows, ["num_waiting", "num_running"], max_points // max(its["lane"].nunique(), 1))
        long = frame.melt(id_vars=["at"], var_name="series", value_name="requests")
        long["lane"] = lane
        parts.append(long)
    out = pd.concat(parts, ignore_index=True)
    out["series"] = out["series"].map({"num_waiting": "waiting", "num_running": "running"})
    return out


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
        "num_tokens_in_run": len(r.token_times), "ttft_s": ttft(r), "max_itl_s": max_itl(r), "tpot_s": tpot(r),
        "e2e_s": e2e(r), "queue_s": queue(r), "num_retractions": r.num_retractions,
        "finished_at": r.finished_at, "reject_reason": r.reject_reason or "",
    } for r in result.requests])


def retractions_frame(result: Result) -> pd.DataFrame:
    return pd.DataFrame([{
        "at": e.at, "before_iteration": e.before_iteration, "rids": " ".join(e.rids), "num_retracted": len(e.rids),
        "num_running_before": e.num_running_before, "num_running_after": e.num_running_after,
        "kv_free_before": e.kv_free_before, "kv_free_after": e.kv_free_after,
        "ratio_before": e.ratio_before, "ratio_after": e.ratio_after,
    } for e in result.retractions], columns=["at", "before_iteration", "rids", "num_retracted", "num_running_before",
                                             "num_running_after", "kv_free_before", "kv_free_after", "ratio_before",
                                             "ratio_after"])




# -- PD: where each request's time went ------------------------------------------------------------------
SPAN_PHASES = ("waiting", "waiting_for_decode_kv", "prefill", "transfer", "decode", "retracted")
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
