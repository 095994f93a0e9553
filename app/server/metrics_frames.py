"""Tidy frames from a server's metrics for the "Your server" page: the ITL tail per scrape interval, the
gauges over time, the interval table beside the log, /server_info beside the log's settings. Pure
functions: no Streamlit."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pandas as pd

from engine_model import MetricsReport, ServerCheck

TAIL_SERIES = ("p50", "p99", "p99_9")
TAIL_LABELS = {"p50": "p50", "p99": "p99", "p99_9": "p99.9"}
GAUGE_LABELS = {"num_running_reqs": "running requests", "num_queue_reqs": "queued requests",
                "token_usage": "token usage (share of the KV pool)"}


def clock(at: float | None) -> str:
    return "—" if at is None else datetime.fromtimestamp(at, UTC).strftime("%H:%M:%S")


def bucket_text(lower: float, upper: float) -> str:
    return f"{lower:g} s and up" if math.isinf(upper) else f"{lower:g}–{upper:g} s"


def tail_rows(metrics: MetricsReport, origin: float) -> pd.DataFrame:
    """One row per interval and percentile: its end (seconds since `origin`), value and bucket; intervals
    with no gap recorded are left out (the table says so)."""
    rows = []
    for interval in metrics.intervals:
        tail = interval.tails.get("itl_s")
        if tail is None or interval.end_at is None:
            continue
        for name in TAIL_SERIES:
            q = tail.quantiles.get(name)
            if q is not None:
                rows.append({"start_s": interval.start_at - origin, "end_s": interval.end_at - origin,
                             "series": TAIL_LABELS[name], "seconds": q.value,
                             "bucket": bucket_text(q.lower, q.upper), "num_gaps": tail.count})
    return pd.DataFrame(rows, columns=["start_s", "end_s", "series", "seconds", "bucket", "num_gaps"])


def silent_rows(check: ServerCheck) -> pd.DataFrame:
    """Intervals in which no inter-token gap was recorded while requests were running: the stall itself."""
    rows = [{"start_s": r.start_s, "end_s": r.end_s, "running": r.num_running,
             "label": f"no token for {r.num_running:.0f} running replies"}
            for r in check.aligned if r.itl is None and (r.num_running or 0) > 0]
    return pd.DataFrame(rows, columns=["start_s", "end_s", "running", "label"])


def gauge_rows(metrics: MetricsReport, origin: float) -> pd.DataFrame:
    rows = [{"at_s": at - origin, "series": GAUGE_LABELS[name], "value": value}
            for name in ("num_running_reqs", "num_queue_reqs") for at, value in metrics.gauges.get(name, [])
            if at is not None]
    return pd.DataFrame(rows, columns=["at_s", "series", "value"])


def interval_table(check: ServerCheck) -> pd.DataFrame:
    """The scrape intervals beside the log's Prefill lines of the same seconds."""
    rows = []
    for row in check.aligned:
        tail = row.itl
        p99 = tail.quantiles.get("p99") if tail else None
        running, queued = (("—" if v is None else f"{v:.0f}") for v in (row.num_running, row.num_queued))
        rows.append({
            "interval": f"{clock(row.start_at)}–{clock(row.end_at)}",
            "ITL p99 (s)": "—" if p99 is None else f"{p99.value:.2g} ({p99.lower:g}–{p99.upper:g})",
            "gaps > 0.4 s": "none" if tail is None else f"{tail.num_long:,.0f}",
            "longest gap": bucket_text(*tail.top) if tail and tail.top else "—",
            "running / queued": f"{running} / {queued}",
            "Prefill lines (full)": f"{row.num_prefill_lines} ({row.num_full_chunks})",
            "max #new-token": f"{row.max_new_tokens:,}" if row.max_new_tokens else "—",
            "lines": f"{row.lines[0]}–{row.lines[1]}" if row.lines else "—",
        })
    return pd.DataFrame(rows)


def tails_table(metrics: MetricsReport) -> pd.DataFrame:
    """Each latency histogram over the window: count, mean and interpolated percentiles with their bucket."""
    names = {"itl_s": "inter-token latency", "ttft_s": "time to first token", "e2e_s": "end-to-end latency",
             "tpot_s": "time per output token", "queue_time_s": "queue time"}
    rows = []
    for key, label in names.items():
        tail = metrics.tails.get(key)
        if tail is None:
            continue
        row = {"histogram": label, "observed": f"{tail.count:,.0f}",
               "mean (s)": "—" if tail.mean is None else f"{tail.mean:.3g}"}
        for name in ("p50", "p95", "p99", "p99_9"):
            q = tail.quantiles.get(name)
            shown = "—" if q is None else f"{q.value:.3g} in {bucket_text(q.lower, q.upper)}"
            row[f"{TAIL_LABELS.get(name, name)} (s)"] = shown
        rows.append(row)
    return pd.DataFrame(rows)


def info_table(check: ServerCheck) -> pd.DataFrame:
    """/server_info's resolved settings beside the log's, each mismatch marked."""
    info, log = check.info.settings, check.log_settings
    wrong = {m.key for m in check.mismatches}
    rows = [{"setting": key, "/server_info": str(value), "the log": str(log.get(key, "—")),
             "": "mismatch" if key in wrong else ""} for key, value in info.items()]
    return pd.DataFrame(rows)
