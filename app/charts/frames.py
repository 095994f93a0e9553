"""Tidy (long-form) tables built from a `Result`: everything a page draws for one run. Pure functions: no
Streamlit, no Altair.

Every chart builder in `app.charts` takes one of these frames. Frames that feed charts stay under
Altair's 5,000-row default by aggregating, never by hiding a stall:

- passes:  runs of back-to-back decode passes over the same batch merge into one bar; every prefill,
           mixed and idle-with-duration pass keeps its own bar.
- tokens:  each request keeps every k-th token *and* both tokens around every long gap
           (app.charts.request_frames).
- kv:      per-iteration points, or for long runs two real passes per time bin (the fullest and the
           emptiest): a stacked point is always one pass's state, never maxima of different passes.
- queue:   per-iteration points, or per-time-bin maxima of each line (a peak is never lost).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from app.charts.phases import MAX_CHART_ROWS, PHASE_OF
from app.charts.request_frames import (
    STALL_MIN_S,
    chunks_frame,
    itl_histogram,
    itl_stats,
    pauses_frame,
    requests_frame,
    retractions_frame,
    token_frames,
    waits_frame,
)
from app.pd.frames import spans_frame
from engine_model import Result, Summary, pass_shape, seen, summary


@dataclass
class RunFrames:
    """Everything a page draws for one run. Cached per scenario JSON (see app.compute)."""

    summary: Summary
    iterations: pd.DataFrame  # one row per iteration, every lane
    passes: pd.DataFrame  # Gantt bars, aggregated
    tokens: pd.DataFrame  # thinned token marks
    stalls: pd.DataFrame  # gaps >= stall threshold, one row each
    pauses: pd.DataFrame  # each request's wait for its next token, as sawtooth points
    chunks: pd.DataFrame  # prefill rows: one per (pass, request)
    waits: pd.DataFrame  # time in the waiting queue (first wait and after retraction)
    kv: pd.DataFrame  # KV slots used / reserved / free over time
    queue: pd.DataFrame  # waiting and running counts over time
    itl_hist: pd.DataFrame  # inter-token gap histogram per group
    itl_stats: pd.DataFrame  # p50/p95/p99/max per group
    requests: pd.DataFrame  # per-request metrics
    retractions: pd.DataFrame
    spans: pd.DataFrame  # PD: where each (sampled) request's time went, one row per phase span
    replies: dict = field(default_factory=dict)  # every token time of each group's first REPLIES requests
    lanes: list[str] = field(default_factory=list)
    request_order: list[str] = field(default_factory=list)
    stall_threshold_s: float = STALL_MIN_S
    end_at: float = 0.0
    chunk_pass_s: tuple[float, float] | None = None  # a full chunk's pass, shortest and longest
    front_end: tuple = ()  # engine_model.frontend.Block: where tokenizing held replies back


def build(result: Result) -> RunFrames:
    its = iterations_frame(result)
    toks, stalls, threshold = token_frames(result)
    return RunFrames(
        summary=summary(result),
        iterations=its,
        passes=passes_frame(its),
        tokens=toks,
        stalls=stalls,
        pauses=pauses_frame(stalls, toks),
        chunks=chunks_frame(result),
        waits=waits_frame(result),
        kv=kv_frame(its),
        queue=queue_frame(its),
        itl_hist=itl_histogram(result),
        itl_stats=itl_stats(result),
        requests=requests_frame(result),
        retractions=retractions_frame(result),
        spans=spans_frame(result),
        replies=replies_of(result),
        lanes=list(result.lanes),
        request_order=[r.rid for r in result.requests],
        stall_threshold_s=threshold,
        end_at=result.end_at,
        chunk_pass_s=chunk_pass(its, result.resolved.chunked_prefill_size),
        front_end=tuple(result.front_end),
    )


REPLIES = 8  # requests per group whose every token time is kept (the playback's panes)


def replies_of(result: Result) -> dict[str, np.ndarray]:
    kept, count = {}, {}
    for req in result.requests:
        if count.get(req.group, 0) < REPLIES and req.token_times:
            kept[req.rid] = np.asarray(seen(req), dtype=float)
            count[req.group] = count.get(req.group, 0) + 1
    return kept


def chunk_pass(its: pd.DataFrame, chunk_size: int) -> tuple[float, float] | None:
    """How long a pass carrying a full prompt chunk took, shortest and longest (it grows with the prompt
    already in KV): with mixed chunk on, the pause a running request sees per chunk. None without chunking."""
    if its.empty or chunk_size <= 0:
        return None
    full = its[its["kind"].isin(["prefill chunk", "mixed"]) & (its["num_prefill_tokens"] >= 0.9 * chunk_size)]
    return (float(full["duration_s"].min()), float(full["duration_s"].max())) if len(full) else None


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
                "past_kv_sum": it.past_kv_sum,  # with attn_pairs, what the pass cost breakdown needs
                "attn_pairs": pass_shape(it).attn_pairs,
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


# -- KV and queue ------------------------------------------------------------------------------------
def _bins(at: pd.Series, max_bins: int) -> np.ndarray:
    edges = np.linspace(at.min(), at.max() + 1e-9, max_bins + 1)
    return np.digitize(at, edges) - 1


def _binned(its: pd.DataFrame, columns: list[str], max_points: int) -> pd.DataFrame:
    """Per-iteration values at each pass's start, or per-time-bin maxima of each column when there are too
    many (for lines drawn apart, where a peak must never be lost)."""
    frame = its[["start_at", *columns]].rename(columns={"start_at": "at"})
    if len(frame) <= max_points:
        return frame
    out = frame.groupby(_bins(frame["at"], max_points)).agg({"at": "min", **dict.fromkeys(columns, "max")})
    return out.reset_index(drop=True)


def _moments(its: pd.DataFrame, columns: list[str], total: pd.Series, max_points: int) -> pd.DataFrame:
    """Per-iteration values, or, when there are too many, two real iterations per time bin: the one with the
    largest `total` and the one with the smallest. Every drawn point is one pass's state, so a stack of
    these columns never sums values from different passes (and a peak or a drop is never lost)."""
    frame = its[["start_at", *columns]].rename(columns={"start_at": "at"})
    if len(frame) <= max_points:
        return frame
    bins = pd.Series(_bins(frame["at"], max(max_points // 2, 1)), index=frame.index)
    keep = pd.Index(total.groupby(bins).idxmax()).union(pd.Index(total.groupby(bins).idxmin()))
    return frame.loc[keep].sort_values("at", kind="stable").reset_index(drop=True)


def kv_frame(its: pd.DataFrame, max_points: int = 1_000) -> pd.DataFrame:
    """KV slots: used, reserved-not-yet-used (PD decode), free. Long form: at, lane, series, slots, capacity.
    Each point is one iteration's state (`_moments`), so used + reserved + free is that pass's pool."""
    if its.empty:
        return pd.DataFrame(columns=["at", "lane", "series", "slots", "capacity"])
    parts = []
    per_lane = max_points // max(its["lane"].nunique(), 1)
    for lane, rows in its.groupby("lane", sort=False):
        rows = rows.drop_duplicates("start_at", keep="last")  # Vega stacks by x: one state per moment
        columns = ["kv_used", "kv_reserved", "kv_capacity"]
        frame = _moments(rows, columns, rows["kv_used"] + rows["kv_reserved"], per_lane)
        frame["kv_free"] = (frame["kv_capacity"] - frame["kv_used"] - frame["kv_reserved"]).clip(lower=0)
        long = frame.melt(id_vars=["at", "kv_capacity"], value_vars=["kv_used", "kv_reserved", "kv_free"],
                          var_name="series", value_name="slots")
        long["lane"] = lane
        parts.append(long)
    out = pd.concat(parts, ignore_index=True)
    names = {"kv_used": "used", "kv_reserved": "reserved, not yet used", "kv_free": "free"}
    out["series"] = out["series"].map(names)
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
