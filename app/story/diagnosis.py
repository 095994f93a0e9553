"""Tell the two stalls apart from a run's frames: back-to-back prefill vs KV retraction. Pure functions."""

from __future__ import annotations

import numpy as np
import pandas as pd

from app.charts.frames import RunFrames
from engine_model import longest_block as longest


def longest_prefill_streak(its: pd.DataFrame) -> tuple[float, int, float]:
    """The longest run of consecutive prefill-only passes while requests were decoding:
    (seconds, number of passes, start time). This is the chunked-prefill stall.

    An idle turn of no duration neither extends nor breaks a run; any other pass breaks it. Column
    arithmetic, not a loop over passes: every page view reads it (the first longest run wins a tie)."""
    if its.empty:
        return 0.0, 0, 0.0
    prefill = ((its["kind"] == "prefill chunk") & (its["num_running"] > 0)).to_numpy()
    breaks = ~prefill & ((its["kind"] != "idle") | (its["duration_s"] > 0)).to_numpy()
    streak = np.cumsum(breaks)[prefill]  # passes of one run share the count of breaks before them
    if not len(streak):
        return 0.0, 0, 0.0
    start_at, end_at = its["start_at"].to_numpy()[prefill], its["end_at"].to_numpy()[prefill]
    first = np.r_[True, streak[1:] != streak[:-1]]
    first_pos = np.maximum.accumulate(np.where(first, np.arange(len(streak)), 0))
    seconds = end_at - start_at[first_pos]
    best = int(np.argmax(seconds))
    if seconds[best] <= 0.0:
        return 0.0, 0, 0.0
    return float(seconds[best]), best - int(first_pos[best]) + 1, float(start_at[first_pos[best]])


def reprefill_tokens(run: RunFrames) -> int:
    """Prompt tokens prefilled beyond each request's first fill: the work a retraction throws away and
    redoes."""
    if run.chunks.empty:
        return 0
    filled = run.chunks.groupby("rid")["extend"].sum()
    prompt = run.requests.set_index("rid")["prompt_len"]
    extra = (filled - prompt.reindex(filled.index).fillna(0)).clip(lower=0)
    return int(extra.sum())


def diagnose(run: RunFrames) -> dict:
    seconds, passes, start = longest_prefill_streak(run.iterations)
    num_retractions = len(run.retractions)
    return {
        "prefill_streak_s": seconds,
        "prefill_streak_passes": passes,
        "prefill_streak_start_at": start,
        "num_retractions": num_retractions,
        "num_retracted_requests": run.summary.iterations.num_retracted_requests,
        "reprefill_tokens": reprefill_tokens(run),
        "kv_peak_fraction": float((run.iterations["kv_used"] / run.iterations["kv_capacity"]).max())
        if len(run.iterations) else 0.0,
        "retracted_pause_s": retracted_pause(run),
        "longest_pause_s": float(run.requests["max_itl_s"].max()) if run.requests["max_itl_s"].notna().any()
        else 0.0,
        "mixed_passes": int((run.iterations["kind"] == "mixed").sum()) if len(run.iterations) else 0,
        "front_end_blocks": len(run.front_end),
        "front_end_longest": longest(run.front_end),
    }


def retracted_pause(run: RunFrames) -> float:
    """The longest gap seen by a request that was retracted: the KV stall's length."""
    retracted = run.requests[run.requests["num_retractions"] > 0]["max_itl_s"].dropna()
    return float(retracted.max()) if len(retracted) else 0.0


def verdict(d: dict, stall_threshold_s: float) -> str:
    """Which stall this run shows; when both happen, the longer pause names the main one."""
    chunk, kv = d["prefill_streak_s"], d.get("retracted_pause_s", 0.0) if d["num_retractions"] else 0.0
    if chunk >= stall_threshold_s and kv >= stall_threshold_s:
        main = "chunked-prefill" if chunk >= kv else "KV (retraction)"
        return (f"Both stalls happen in this run; the {main} stall is the longer one "
                f"(back-to-back prefill {chunk:.2f} s, retracted requests paused up to {kv:.1f} s).")
    if chunk >= stall_threshold_s:
        return "This run shows the chunked-prefill stall."
    if d["num_retractions"]:
        return "This run shows the KV stall (retraction)."
    longest = d.get("longest_pause_s", 0.0)
    if longest >= stall_threshold_s and d.get("mixed_passes"):
        return (f"No back-to-back prefill and no retraction, but replies still pause up to {longest:.1f} s: "
                "one mixed pass at a time (the chunked-prefill stall, spread into one pause per chunk).")
    if longest >= stall_threshold_s:
        return (f"Neither stall in this run, but replies pause up to {longest:.1f} s (see the pass timeline "
                "for what ran meanwhile).")
    return "Neither stall is large in this run: no reply pauses for more than a few decode passes."


def front_end_words(d: dict) -> str:
    """The longest wait the front end added: the scheduler produced tokens the client did not get yet."""
    block = d.get("front_end_longest")
    if block is None:
        return "no prompt's tokenizing held a reply back (or the front end is not modelled in this run)"
    times = "once" if d["front_end_blocks"] == 1 else f"{d['front_end_blocks']:,} times"
    return (f"Tokenizing prompts held replies back {times}; the longest at "
            f"t = {block.start_at:.2f} s: {block.words()}, then each got its queued tokens as one chunk")


def apart_table(d: dict) -> pd.DataFrame:
    """Where to look, what each stall looks like there, and what this run shows."""
    streak = ((f"{d['prefill_streak_passes']} prefill passes back to back for {d['prefill_streak_s']:.2f} s "
               f"from t = {d['prefill_streak_start_at']:.2f} s") if d["prefill_streak_passes"]
              else "no back-to-back prefill while requests decode")
    return pd.DataFrame([
        {"look at": "Pass timeline",
         "chunked-prefill stall": "A row of prefill passes (orange), back to back, while requests are "
                                  "decoding; no decode pass between them.",
         "KV stall (retraction)": "Mostly decode; a retraction, then short re-prefill passes of requests "
                                  "that had already started.",
         "this run": streak},
        {"look at": "KV chart",
         "chunked-prefill stall": "Usage rises chunk by chunk; the pool is not full.",
         "KV stall (retraction)": "Usage at the pool's top, then a sudden drop at each retraction (dark grey "
                                  "rule).",
         "this run": f"peak {d['kv_peak_fraction']:.0%} of the pool; {d['num_retractions']} retraction(s)"},
        {"look at": "Token streams",
         "chunked-prefill stall": "Every running request pauses at the same moment, for the same time.",
         "KV stall (retraction)": "A few requests — the ones with the fewest tokens generated — stop, wait "
                                  "in the queue, re-prefill, then resume; the others keep streaming.",
         "this run": f"{d['num_retracted_requests']} request retraction(s), "
                     f"{d['reprefill_tokens']:,} tokens prefilled again"},
        {"look at": "Server log",
         "chunked-prefill stall": "Consecutive `Prefill batch, … #new-token: <chunk size> … #running-req: N` "
                                  "lines with no `Decode batch` line between them.",
         "KV stall (retraction)": "`KV cache pool is full. Retract requests. #retracted_reqs: …` (WARNING); "
                                  "`sglang:num_retracted_requests_total` rises.",
         "this run": "the model's iterations carry these decisions; see the Why panel"},
        {"look at": "Front end (the server's event loop)",
         "chunked-prefill stall": "Not the cause: passes go on.",
         "KV stall (retraction)": "Not the cause: passes go on.",
         "this run": front_end_words(d)},
        {"look at": "The fix",
         "chunked-prefill stall": "--enable-mixed-chunk, then chunk size as the latency knob; or "
                                  "--prefill-decode-interval; or PD disaggregation.",
         "KV stall (retraction)": "More KV (pool, fp8 KV, TP), fewer admissions "
                                  "(--schedule-conservativeness), shorter max_new_tokens; mixed chunk does "
                                  "not help.",
         "this run": ""},
    ])
