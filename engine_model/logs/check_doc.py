"""A server check as one plain document: the `metrics`, `metrics_check` and `server_info` parts of
`python -m engine_model diagnose --json` (keys such as `metrics.itl_s.p99`; docs/logs-and-traces.md §8)."""

from __future__ import annotations

from datetime import UTC, datetime

from engine_model.logs.check import ServerCheck
from engine_model.logs.scrape import ScrapeSet
from engine_model.logs.scrape_report import Tail

INTERPOLATED = ("percentiles are interpolated inside histogram buckets, as Prometheus's histogram_quantile "
                "does; each pNN_bucket is the [lower, upper] bucket it lies in (upper 'inf': above the last "
                "bound, and the value is that bound)")


def when(at: float | None) -> str | None:
    return None if at is None else datetime.fromtimestamp(at, UTC).isoformat().replace("+00:00", "Z")


def tail_doc(tail: Tail | None) -> dict | None:
    if tail is None:
        return None
    doc = {"count": tail.count, "mean": tail.mean}
    for name, q in tail.quantiles.items():
        doc[name] = None if q is None else q.value
        doc[f"{name}_bucket"] = None if q is None else [q.lower, q.upper]
    doc.update(top_bucket=list(tail.top) if tail.top else None, long_bound=tail.long_bound,
               num_above_long_bound=tail.num_long)
    return doc


def metrics_doc(found: ScrapeSet, check: ServerCheck) -> dict:
    metrics = check.metrics
    aligned = {row.end_at: row for row in check.aligned}
    intervals = []
    for interval in metrics.intervals if metrics else []:
        row = aligned.get(interval.end_at)
        item = {"start": when(interval.start_at), "end": when(interval.end_at),
                "itl_s": tail_doc(interval.tails.get("itl_s")),
                "ttft_s": tail_doc(interval.tails.get("ttft_s")),
                "counters": interval.counters, "gauges": interval.gauges, "reset": interval.reset}
        if row is not None:
            item["log"] = {"start_s": row.start_s, "end_s": row.end_s,
                           "num_prefill_lines": row.num_prefill_lines, "num_full_chunks": row.num_full_chunks,
                           "max_new_tokens": row.max_new_tokens,
                           "lines": list(row.lines) if row.lines else None}
        intervals.append(item)
    doc = {
        "sources": found.sources, "num_scrapes": len(found.scrapes),
        "scrapes": [{"index": s.index, "at": when(s.at), "at_source": s.at_source, "line": s.first_line}
                    for s in found.scrapes],
        "window": metrics.window if metrics else None, "interpolation": INTERPOLATED,
        **{name: tail_doc(metrics.tails.get(name)) if metrics else None
           for name in ("itl_s", "ttft_s", "e2e_s", "tpot_s", "queue_time_s")},
        "counters": metrics.counters if metrics else {},
        "gauges": {name: {"last": series[-1][1], "max": max(v for _, v in series),
                          "series": [[when(at), v] for at, v in series]}
                   for name, series in (metrics.gauges if metrics else {}).items()},
        "intervals": intervals,
        "lines": {"num_lines": found.num_lines, "num_samples": found.num_samples,
                  "num_other": found.num_other, "num_malformed": found.num_malformed,
                  "malformed_examples": found.malformed_examples},
        "left_out": found.left_out, "warnings": found.warnings, "notes": metrics.notes if metrics else [],
    }
    return doc


def check_doc(check: ServerCheck) -> dict:
    return {"says": check.metrics_say, "sentence": check.sentence, "alignment": check.alignment or "aligned",
            "understates": check.understates}


def info_doc(check: ServerCheck) -> dict:
    info = check.info
    return {"source": info.source, "version": info.version, "settings": info.settings,
            "num_dp_states": info.num_dp_states, "warnings": info.warnings,
            "mismatches": [{"key": m.key, "log": m.log, "server_info": m.server_info}
                           for m in check.mismatches]}
