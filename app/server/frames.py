"""Tidy tables for the "Your server" page, built from a parsed log, its timeline, a trace or a run.
Pure functions.

The log frames use the same columns as the simulated run's frames (app.charts.frames), so the same chart
builders draw them: `log_passes` feeds `timelines.pass_timeline`, `log_queue` feeds `timelines.queue_depth`,
`log_kv` and `log_retractions` feed `timelines.kv_occupancy`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from app.charts.phases import MAX_CHART_ROWS, PHASES
from app.charts.words import bucket_words
from app.server.thin import fit_passes, peak_per_bin
from engine_model import ParsedLog, Summary, Timeline, Trace
from engine_model import log_settings as settings

PREFILL_LANE, DECODE_LANE, LOG_LANE = "Prefill lines", "Decode lines", "from the log"
MIN_BAR_SHARE = 0.004  # a Prefill bar is at least this share of the log's span wide, so it can be seen
SHOWN_SETTINGS = (  # the flags that decide who waits, in the order the page lists them
    ("chunked_prefill_size", "--chunked-prefill-size", "auto (from GPU memory)"),
    ("enable_mixed_chunk", "--enable-mixed-chunk", "off"),
    ("max_running_requests", "--max-running-requests", "auto (from the KV pool)"),
    ("max_total_tokens", "--max-total-tokens (the KV pool, in tokens)", "auto (from GPU memory)"),
    ("max_prefill_tokens", "--max-prefill-tokens", "16384"),
    ("prefill_decode_interval", "--prefill-decode-interval", "0 (off)"),
    ("schedule_policy", "--schedule-policy", "fcfs"),
    ("schedule_conservativeness", "--schedule-conservativeness", "1.0"),
    ("page_size", "--page-size", "1"),
    ("mem_fraction_static", "--mem-fraction-static", "auto"),
    ("kv_cache_dtype", "--kv-cache-dtype", "auto"),
    ("tp_size", "--tp-size", "1"),
    ("dp_size", "--dp-size", "1"),
    ("disaggregation_mode", "--disaggregation-mode", "null (one engine)"),
    ("decode_log_interval", "--decode-log-interval", "40"),
    ("model_path", "--model-path", "—"),
)
FROM_STARTUP = {"max_total_tokens", "chunked_prefill_size", "max_prefill_tokens", "max_running_requests"}


# -- what the log says -------------------------------------------------------------------------------
def settings_table(parsed: ParsedLog, timeline: Timeline) -> pd.DataFrame:
    """Each flag that shapes scheduling: its resolved value and which line said so (or SGLang's default)."""
    found = settings(parsed)
    startup = parsed.startup or {}
    rows = []
    for key, flag, default in SHOWN_SETTINGS:
        if key in found:
            source = ("scheduler startup line (resolved)" if key in FROM_STARTUP and _in_startup(key, startup)
                      else "server_args line")
            rows.append({"setting": flag, "value": _show(found[key]), "from": source})
        elif key == "chunked_prefill_size" and timeline.chunk_size_source == "inferred":
            rows.append({"setting": flag, "value": f"{timeline.chunk_size:,}",
                         "from": "inferred: the largest #new-token, on lines that show a prompt cut at it"})
        elif key == "chunked_prefill_size":
            rows.append({"setting": flag, "value": "unknown",
                         "from": "the lines do not show it: paste the server_args line"})
        else:
            rows.append({"setting": flag, "value": default,
                         "from": "not in the log: SGLang's default assumed"})
    return pd.DataFrame(rows)


def _in_startup(key: str, startup: dict) -> bool:
    return (key == "max_total_tokens" and "max_total_num_tokens" in startup) or key in startup


def _show(value) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def line_counts(parsed: ParsedLog) -> pd.DataFrame:
    """Every line of the log is in exactly one row (except untimestamped lines, which are also counted)."""
    rows = [
        ("Prefill batch lines", len(parsed.prefills)),
        ("Decode batch lines", len(parsed.decodes)),
        ("retraction warnings", len(parsed.retractions)),
        ("server_args lines", parsed.num_server_args_lines),
        ("blank lines", parsed.num_blank),
        ("unrecognised lines (startup, HTTP, other programs)", parsed.num_unrecognised),
        ("malformed lines (a known line with a broken field)", parsed.num_malformed),
    ]
    if parsed.num_untimestamped:
        rows.append(("of these, lines without a timestamp", parsed.num_untimestamped))
    if parsed.num_lines_not_read:
        rows.append(("lines not read (over the line limit)", parsed.num_lines_not_read))
    return pd.DataFrame(rows, columns=["lines", "count"])


def num_scheduler_lines(parsed: ParsedLog) -> int:
    """Lines the parser read as the scheduler's: Prefill, Decode, retraction, crash / OOM / hang."""
    return len(parsed.prefills) + len(parsed.decodes) + len(parsed.retractions) + parsed.num_events


# -- the log's timeline, in the simulated run's columns ----------------------------------------------
def log_span(timeline: Timeline) -> tuple[float, float]:
    """The first and last scheduler line's time (seconds since the log's first timestamped line)."""
    times = [s.at for s in timeline.samples] + [r.at for r in timeline.retractions]
    return (min(times), max(times)) if times else (0.0, 0.0)


def prefill_kind(num_running: int | None, is_mixed: bool) -> str:
    """A Prefill line is a mixed pass when mixed chunk is on and requests were running (the log cannot show
    the logprob exception, which turns mixing off for a pass)."""
    return PHASES[2] if is_mixed and num_running else PHASES[0]


def log_prefills(timeline: Timeline, is_mixed: bool) -> pd.DataFrame:
    """One row per Prefill line: when, how many new tokens, and whether it used the whole chunk."""
    rows = [{"at": p.at, "line_no": p.line_no, "num_new_tokens": p.num_new_tokens,
             "num_cached_tokens": p.num_cached_tokens, "num_new_reqs": p.num_new_reqs,
             "num_running_reqs": p.num_running_reqs, "num_queue_reqs": p.num_queue_reqs,
             "is_full_chunk": p.is_full_chunk, "kind": prefill_kind(p.num_running_reqs, is_mixed)}
            for p in timeline.prefills]
    frame = pd.DataFrame(rows, columns=["at", "line_no", "num_new_tokens", "num_cached_tokens",
                                        "num_new_reqs", "num_running_reqs", "num_queue_reqs", "is_full_chunk",
                                        "kind"])
    return peak_per_bin(frame, "num_new_tokens", ("kind",), keep=frame["is_full_chunk"].astype(bool))


def log_passes(timeline: Timeline, is_mixed: bool) -> pd.DataFrame:
    """Gantt bars for `charts.pass_timeline`: a lane of Prefill lines, a lane of Decode lines.

    The log does not say how long a pass took. A full-chunk Prefill line followed by another Prefill line is
    drawn up to that line: prefill ran back to back (the chunked-prefill stall). Any other Prefill line is a
    thin mark at its time. A Decode bar is the segment one Decode line stands for (decode_log_interval passes,
    somewhere between it and the previous Decode line).
    """
    start, end = log_span(timeline)
    min_width = max(end - start, 1.0) * MIN_BAR_SHARE
    lines = sorted([(s.line_no, s.at, s.kind) for s in timeline.samples]
                   + [(r.line_no, r.at, "retraction") for r in timeline.retractions])
    after = {line: lines[i + 1] for i, (line, _, _) in enumerate(lines[:-1])}
    rows, streaks, decodes = [], [], []
    for p in timeline.prefills:
        _, next_at, next_kind = after.get(p.line_no, (None, p.at, None))
        is_streak = p.is_full_chunk and next_kind == "prefill"
        streaks.append(is_streak)
        until = max(next_at if is_streak else p.at, p.at + min_width)
        kind = prefill_kind(p.num_running_reqs, is_mixed)
        running = p.num_running_reqs or 0
        rows.append(_bar(PREFILL_LANE, kind, p.at, until, p.num_new_tokens, p.num_new_reqs,
                         running if kind == PHASES[2] else 0,
                         f"line {p.line_no}: {p.num_new_tokens:,} new tokens, "
                         f"{p.num_new_reqs} new request(s)",
                         ("full chunk, and the next line is another Prefill: prefill back to back"
                          if is_streak else f"{running} request(s) running, {p.num_queue_reqs or 0} queued")))
    for d in timeline.decodes:
        decodes.append(_bar(DECODE_LANE, PHASES[1], d.start_at, max(d.end_at, d.start_at + min_width),
                         d.num_steps * d.num_running_reqs, 0, d.num_running_reqs,
                         f"line {d.line_no}: about {d.num_steps} decode passes, batch {d.num_running_reqs}",
                         f"{d.num_queue_reqs or 0} queued"
                         + (f"; gen throughput {d.gen_throughput:,.0f} token/s" if d.gen_throughput else "")))
    columns = ["lane", "kind", "start_at", "end_at", "duration_s", "first_index", "last_index", "num_passes",
               "num_new_tokens", "num_prefill_tokens", "num_prefill_rows", "max_batch", "min_batch", "reason",
               "mirrors", "label"]
    rows = fit_passes(rows, streaks, decodes)
    return (pd.DataFrame(rows, columns=columns).sort_values(["lane", "start_at"], kind="stable")
            .reset_index(drop=True))


def _bar(lane, kind, start_at, end_at, num_new_tokens, num_new_reqs, batch, label, reason) -> dict:
    return {"lane": lane, "kind": kind, "start_at": start_at, "end_at": end_at,
            "duration_s": end_at - start_at, "first_index": None, "last_index": None, "num_passes": 1,
            "num_new_tokens": num_new_tokens,
            "num_prefill_tokens": num_new_tokens if kind != PHASES[1] else 0,
            "num_prefill_rows": num_new_reqs, "max_batch": batch, "min_batch": batch, "reason": reason,
            "mirrors": "read from the log", "label": label}


def log_queue(timeline: Timeline) -> pd.DataFrame:
    """Running and queued requests as each line reported them (`charts.queue_depth` columns)."""
    rows = []
    for s in timeline.samples:
        if s.num_queue_reqs is not None:
            rows.append({"at": s.at, "lane": LOG_LANE, "series": "waiting", "requests": s.num_queue_reqs})
        if s.num_running_reqs is not None:
            rows.append({"at": s.at, "lane": LOG_LANE, "series": "running", "requests": s.num_running_reqs})
    frame = pd.DataFrame(rows, columns=["at", "lane", "series", "requests"])
    return peak_per_bin(frame, "requests", ("series",))


def log_kv(timeline: Timeline, pool: int | None) -> pd.DataFrame:
    """KV use from `token usage` (a fraction of the pool): slots used and free when the pool size is known
    (`charts.kv_occupancy` columns), else the fraction alone (series 'used', capacity 1)."""
    rows = []
    capacity = pool or 1
    usage = pd.DataFrame([(s.at, s.token_usage) for s in timeline.samples if s.token_usage is not None],
                         columns=["at", "token_usage"])
    for s in peak_per_bin(usage, "token_usage", budget=MAX_CHART_ROWS // 2).itertuples():
        used = s.token_usage * capacity
        rows.append({"at": s.at, "lane": LOG_LANE, "series": "used", "slots": used, "capacity": capacity})
        rows.append({"at": s.at, "lane": LOG_LANE, "series": "free", "slots": max(capacity - used, 0),
                     "capacity": capacity})
    return pd.DataFrame(rows, columns=["at", "lane", "series", "slots", "capacity"])


def log_retractions(timeline: Timeline) -> pd.DataFrame:
    """Retraction warnings in `charts.kv_occupancy`'s retraction columns (the log has no free-slot counts)."""
    return peak_per_bin(pd.DataFrame([{
        "at": r.at, "rids": f"{r.num_retracted_reqs} requests (line {r.line_no})",
        "num_retracted": r.num_retracted_reqs,
        "kv_free_before": None, "kv_free_after": None, "line_no": r.line_no,
        "ratio": f"{r.new_token_ratio_before:.2f} -> {r.new_token_ratio_after:.2f}",
    } for r in timeline.retractions], columns=["at", "rids", "num_retracted", "kv_free_before",
                                               "kv_free_after", "line_no", "ratio"]),
                        "num_retracted", budget=MAX_CHART_ROWS // 4)


# -- a trace's request mix ---------------------------------------------------------------------------
def length_bins(max_len: int) -> np.ndarray:
    """Powers of two from 1 to past the longest length: 1, 2, 4, ..., so a bin is 'from k to 2k tokens'."""
    top = int(np.ceil(np.log2(max(max_len, 2)))) + 1
    return 2.0 ** np.arange(0, top + 1)


def bin_label(low: float) -> str:
    def short(v: float) -> str:
        return f"{v / 1024:g}k" if v >= 1024 else f"{v:g}"
    return f"{short(low)}–{short(low * 2)}"


def prompt_mix(trace: Trace) -> pd.DataFrame:
    """Per prompt-length bin (powers of two): the share of requests and the share of prompt tokens (long
    form)."""
    prompts = np.array([r.prompt_len for r in trace.requests], dtype=float)
    edges = length_bins(int(prompts.max()))
    counts, _ = np.histogram(prompts, bins=edges)
    tokens, _ = np.histogram(prompts, bins=edges, weights=prompts)
    rows = []
    for i, (low, count, mass) in enumerate(zip(edges[:-1], counts, tokens, strict=True)):
        if count == 0:
            continue
        for series, share in (("share of requests", count / len(prompts)),
                              ("share of prompt tokens", mass / prompts.sum())):
            rows.append({"bin": bin_label(low), "order": i, "low": low, "series": series,
                         "share": float(share), "num_requests": int(count)})
    return pd.DataFrame(rows, columns=["bin", "order", "low", "series", "share", "num_requests"])


def output_mix(trace: Trace) -> pd.DataFrame:
    outputs = np.array([max(r.output_len, 1) for r in trace.requests], dtype=float)
    edges = length_bins(int(outputs.max()))
    counts, _ = np.histogram(outputs, bins=edges)
    return pd.DataFrame([{"bin": bin_label(low), "order": i, "low": low, "num_requests": int(c),
                          "share": c / len(outputs)}
                         for i, (low, c) in enumerate(zip(edges[:-1], counts, strict=True)) if c],
                        columns=["bin", "order", "low", "num_requests", "share"])


def trace_rows(trace: Trace) -> tuple[tuple[float, int, int], ...]:
    """The trace as plain tuples (arrival_at, prompt_len, output_len): hashable, so a run can be cached on
    it."""
    return tuple((r.arrival_at, r.prompt_len, r.output_len) for r in trace.requests)


# -- a run's latency by prompt length ----------------------------------------------------------------
BUCKET_METRICS = (("ttft_s", "first token (TTFT)"), ("itl_s", "gap between tokens (ITL)"),
                  ("max_itl_s", "longest pause per request"))


def bucket_latency(summary: Summary) -> pd.DataFrame:
    """metrics.buckets in long form: bucket, metric, stat, seconds (p50 / p95 / p99)."""
    rows = []
    for order, (bucket, block) in enumerate(summary.metrics.buckets.items()):
        for metric, title in BUCKET_METRICS:
            for stat in ("p50", "p95", "p99"):
                value = block.value(metric, stat)
                if value is not None:
                    rows.append({"bucket": bucket_words(bucket), "order": order, "metric": title,
                                 "stat": stat, "seconds": value, "num_requests": block.num_requests})
    return pd.DataFrame(rows, columns=["bucket", "order", "metric", "stat", "seconds", "num_requests"])


def bucket_table(summary: Summary, fmt) -> pd.DataFrame:
    """One row per prompt-length bucket: requests, and p50 / p95 / p99 of TTFT and ITL (formatted by
    `fmt`)."""
    rows = []
    for bucket, block in summary.metrics.buckets.items():
        row = {"prompt length (tokens)": bucket_words(bucket), "requests": block.num_requests,
               "retracted": block.num_retracted}
        for metric, _ in BUCKET_METRICS[:2]:
            short = "TTFT" if metric == "ttft_s" else "ITL"
            for stat in ("p50", "p95", "p99"):
                row[f"{short} {stat}"] = fmt(block.value(metric, stat))
        row["longest pause"] = fmt(block.max_itl_s.max)
        rows.append(row)
    return pd.DataFrame(rows)
