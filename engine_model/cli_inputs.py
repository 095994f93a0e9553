"""The CLI's `diagnose LOG` and `trace FILE`: what a server log or a request trace says, without simulating.

Each builds one plain document (what `--json` prints) and prints it as text otherwise. A partial result
says how many lines or rows were skipped and why; input that is no log or no trace raises InputError.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

from engine_model.config import MetricsConfig
from engine_model.errors import InputError
from engine_model.files import name_of
from engine_model.logs import build_timeline, parse_log_file
from engine_model.logs.check import check_server
from engine_model.logs.check_doc import check_doc, info_doc, metrics_doc
from engine_model.logs.diagnose import longest_chunk_run
from engine_model.logs.scrape import read_scrape_files
from engine_model.logs.server_info import read_server_info_file
from engine_model.traces import bucket_mix, load_trace, request_mix

VERDICT_WORDS = {
    "chunked_prefill_stall": "chunked-prefill stall (a long prompt, chunk after chunk)",
    "prefill_queue_ramp": "a queue ramp under prefill-first admission (many prompts, pass after pass)",
    "kv_retraction": "KV stall (the pool filled; requests were retracted)",
    "queueing_running_cap": "requests queue behind max_running_requests",
    "queueing_token_pool": "requests queue on a nearly full KV pool",
    "crash_oom": "the server crashed or ran out of memory",
    "runaway_output": "runaway output (a few requests hold far more tokens than a reply)",
    "outside_model": "outside what this model can see (a hang, a bug, slow GPU work, a queue at an empty "
                     "pool)",
    "healthy": "looks healthy: replies progressing, nobody queued",
    "unknown": "unknown: no trouble shows, but too little to call it healthy",
    "needs_log": "replies paused, but the metrics alone cannot say which stall: add the server log",
}


def plain(value):
    """A value JSON can hold: dataclasses and tuples opened up, keys as text, non-finite numbers as text."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return plain(dataclasses.asdict(value))
    if isinstance(value, dict):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [plain(item) for item in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value if isinstance(value, str | int | float | bool | type(None)) else str(value)


# ---- diagnose LOG ----------------------------------------------------------------------------------


def read_log(path: str):
    parsed = parse_log_file(Path(path))
    num_records = len(parsed.prefills) + len(parsed.decodes) + len(parsed.retractions) + parsed.num_events
    if not num_records and parsed.server_args is None and parsed.startup is None:
        malformed = parsed.malformed_examples[:1]
        why = (f" ({parsed.num_malformed:,} malformed; line {malformed[0][0]}: {malformed[0][1]})"
               if malformed else "")
        raise InputError(name_of(path),
                         f"no usable SGLang scheduler line among its {parsed.num_lines:,} lines{why}; "
                         "expected 'Prefill batch', 'Decode batch', a retraction, a crash or "
                         "out-of-memory line, or server_args=")
    return parsed


def server_document(log: str | None, metrics: list[str], server_info: str | None) -> dict:
    """`diagnose [LOG] [--metrics SCRAPE ...] [--server-info FILE]`: the log's document, with the metrics
    beside it and /server_info's settings, when given."""
    if log is None and not metrics and server_info is None:
        raise InputError("diagnose", "give a LOG, --metrics SCRAPE or --server-info FILE")
    parsed = read_log(log) if log is not None else None
    scrapes = read_scrape_files(metrics) if metrics else None
    info = read_server_info_file(server_info) if server_info is not None else None
    check = check_server(parsed, scrapes, info)
    known = info.settings if info is not None else None
    doc = log_document(log, parsed, check.diagnosis, known) if parsed is not None else {"log": None}
    doc.update(verdict=check.verdict, verdict_words=VERDICT_WORDS[check.verdict],
               settings=plain(check.settings))
    if scrapes is not None:
        doc.update(metrics=plain(metrics_doc(scrapes, check)), metrics_check=plain(check_doc(check)))
    if info is not None:
        doc["server_info"] = plain(info_doc(check))
    return doc


def log_document(path: str, parsed, found, known: dict | None = None) -> dict:
    timeline = build_timeline(parsed, known=known)
    return plain({
        "log": name_of(path),
        "verdict": found.verdict,
        "verdict_words": VERDICT_WORDS[found.verdict],
        "rank": found.rank,
        "settings": found.settings,
        "findings": found.findings,
        "timeline": {
            "num_prefill_passes": len(timeline.prefills), "num_decode_lines": len(timeline.decodes),
            "num_retractions": len(timeline.retractions),
            "span_s": timeline_span(timeline) if timeline.timed else None, "timed": timeline.timed,
            "chunk_size": timeline.chunk_size, "chunk_size_source": timeline.chunk_size_source,
            "decode_log_interval": timeline.decode_log_interval,
            "decode_log_interval_source": timeline.decode_log_interval_source,
            "longest_chunk_run": longest_chunk_run(parsed, timeline), "notes": timeline.notes,
        },
        "lines": {
            "num_lines": parsed.num_lines, "num_prefill": len(parsed.prefills),
            "num_decode": len(parsed.decodes),
            "num_retraction": len(parsed.retractions), "num_blank": parsed.num_blank,
            "num_unrecognised": parsed.num_unrecognised, "num_malformed": parsed.num_malformed,
            "malformed_examples": parsed.malformed_examples, "num_not_read": parsed.num_lines_not_read,
            "num_clipped": parsed.num_clipped, "clipped_examples": parsed.clipped_examples,
            "unrecognised_examples": parsed.unrecognised_examples,
            "num_timestamped": parsed.num_timestamped, "num_untimestamped": parsed.num_untimestamped,
        },
        "events": {"num_events": parsed.num_events,
                   "lines": [(e.line_no, e.kind, e.text) for e in parsed.events]},
        "formats": parsed.formats,
        "notes": found.notes,
        "warnings": parsed.warnings,
        "version_hints": parsed.version_hints,
    })


def timeline_span(timeline) -> float:
    times = [p.at for p in timeline.prefills] + [d.end_at for d in timeline.decodes]
    return round(max(times) - min(times), 6) if times else 0.0


def print_log(doc: dict) -> None:
    lines, timeline = doc["lines"], doc["timeline"]
    print(f"{doc['log']}: verdict: {doc['verdict_words']}")
    print(f"  read {lines['num_lines']:,} lines: {lines['num_prefill']:,} Prefill, "
          f"{lines['num_decode']:,} Decode, "
          f"{lines['num_retraction']:,} retraction; skipped {lines['num_unrecognised']:,} unrecognised, "
          f"{lines['num_malformed']:,} malformed, {lines['num_blank']:,} blank"
          + (f"; {lines['num_not_read']:,} not read (line limit)" if lines["num_not_read"] else ""))
    for line_no, why in lines["malformed_examples"]:
        print(f"    malformed line {line_no}: {why}")
    for line_no, text in lines["unrecognised_examples"][:3]:
        print(f"    unrecognised line {line_no}: {text[:160]}")
    if doc["formats"]:
        print(f"  formats read: {'; '.join(doc['formats'])}")
    over = (f"over {timeline['span_s']:.1f} s" if timeline["timed"]
            else "in log order (no timestamps: no seconds)")
    chunk = (f"{timeline['chunk_size']:,} ({timeline['chunk_size_source']})" if timeline["chunk_size"]
             else "unknown: paste the server_args line")
    print(f"  timeline (rank {doc['rank'] or 'untagged'}): {timeline['num_prefill_passes']} prefill passes, "
          f"{timeline['num_decode_lines']} Decode lines, {timeline['num_retractions']} retractions {over}; "
          f"chunk size {chunk}; longest run of full chunks {timeline['longest_chunk_run']}")
    settings = ", ".join(f"{key}={value}" for key, value in doc["settings"].items())
    print(f"  settings: {settings or 'none in the log (SGLang defaults assumed)'}")
    for finding in doc["findings"]:
        print(f"  [{finding['severity']}] {finding['title']}")
        print(f"    {finding['explanation']}")
        for line_no, text in finding["evidence"]:
            print(f"    line {line_no}: {text[:160]}")
        for fix in finding["fixes"]:
            print(f"    try {fix['flag']}: {fix['effect']}")
        if finding["contradicts"]:
            print(f"    would contradict it: {finding['contradicts']}")
    for note in [*doc["warnings"], *doc["notes"]]:
        print(f"  note: {note}")


def print_server(doc: dict) -> None:
    if doc["log"] is not None:
        print_log(doc)
    else:
        print(f"metrics only: verdict: {doc['verdict_words']}")
    if "server_info" in doc:
        info = doc["server_info"]
        print(f"  /server_info ({info['source']}, SGLang {info['version'] or 'version not given'}): "
              + ", ".join(f"{k}={v}" for k, v in info["settings"].items()))
        for m in info["mismatches"]:
            print(f"    mismatch: {m['key']} is {m['log']} in the log, {m['server_info']} in /server_info")
        for warning in info["warnings"]:
            print(f"    note: {warning}")
    if "metrics" in doc:
        print_metrics(doc["metrics"], doc["metrics_check"])


def print_metrics(m: dict, check: dict) -> None:
    lines = m["lines"]
    print(f"  metrics: {m['num_scrapes']} scrapes ({', '.join(m['sources'])}), {m['window']}; "
          f"{lines['num_samples']:,} samples read, {lines['num_other']:,} of other families skipped, "
          f"{lines['num_malformed']:,} malformed")
    for where, why in lines["malformed_examples"]:
        print(f"    malformed {where}: {why}")
    for name in ("itl_s", "ttft_s", "e2e_s", "tpot_s", "queue_time_s"):
        if m[name]:
            print(f"    {name}: {tail_text(m[name])}")
    print(f"    ({m['interpolation']})")
    for item in m["intervals"]:
        log = item.get("log")
        beside = (f" | log: {log['num_prefill_lines']} Prefill lines, {log['num_full_chunks']} full chunks"
                  + (f", lines {log['lines'][0]}-{log['lines'][1]}" if log["lines"] else "")) if log else ""
        itl = item["itl_s"]
        gaps = (f"ITL p99 {itl['p99']:.3g} s, {itl['num_above_long_bound']:,.0f} gaps > "
                f"{itl['long_bound']:g} s" if itl else "no ITL recorded")
        gauges = item["gauges"]
        print(f"    {(item['start'] or '?')[11:19]}-{(item['end'] or '?')[11:19]}  {gaps}, running "
              f"{gauges.get('num_running_reqs', '-')}, queued {gauges.get('num_queue_reqs', '-')}{beside}")
    print(f"  metrics check ({check['says']}): {check['sentence']}")
    for note in [*check["understates"], *m["notes"], *m["warnings"]]:
        print(f"    note: {note}")
    for why in m["left_out"]:
        print(f"    left out: {why}")


def tail_text(tail: dict) -> str:
    parts = [f"{name.replace('_', '.')} {tail[name]:.3g} s in {bounds(tail[f'{name}_bucket'])}"
             for name in ("p50", "p90", "p99", "p99_9") if tail[name] is not None]
    top = tail["top_bucket"]
    return (", ".join(parts) + f"; {tail['count']:,.0f} observed"
            + (f", mean {tail['mean']:.3g} s" if tail["mean"] is not None else "")
            + (f", the longest in {bounds(top)}" if top else ""))


def bounds(pair: list) -> str:
    """A bucket as (lower, upper]; the JSON writes an infinite bound as text."""
    return f"({float(pair[0]):g}, {float(pair[1]):g}]"


# ---- trace FILE ------------------------------------------------------------------------------------


def trace_document(path: str, fmt: str | None, max_requests: int | None) -> dict:
    trace = load_trace(Path(path), fmt=fmt, max_requests=max_requests)
    mix = request_mix(trace)
    return plain({
        "trace": name_of(path),
        "fmt": trace.fmt,
        "num_requests": mix.num_requests,
        "num_rows": trace.num_rows,
        "num_skipped": trace.num_skipped,
        "skipped_by_kind": trace.skipped_by_kind,
        "skipped_examples": trace.skipped_examples,
        "stopped": trace.stopped,
        "dropped": trace.dropped,
        "num_unread": trace.num_unread,
        "warnings": trace.warnings,
        "arrival_span_s": mix.duration_s,
        "mean_arrival_rate": mix.mean_arrival_rate,
        "prompt_len": mix.prompt_len_percentiles,
        "output_len": mix.output_len_percentiles,
        "buckets": bucket_mix(trace, MetricsConfig().bucket_edges),
        "headline": mix.headline(),
    })


def print_trace(doc: dict) -> None:
    rate = doc["mean_arrival_rate"]
    print(f"{doc['trace']}: {doc['fmt']}, {doc['num_requests']:,} requests "
          f"({doc['num_rows']:,} rows read, {doc['num_skipped']:,} skipped)")
    print(f"  arrivals over {doc['arrival_span_s']:.3f} s" + (f", {rate:.3g} requests/s" if rate else ""))
    print(f"  {'bucket':>12} {'requests':>9}  {'prompt_len p50 / p90 / p99 / max':<40}"
          "output_len p50 / p90 / p99 / max")
    for label, bucket in {"all": {"num_requests": doc["num_requests"], **doc}, **doc["buckets"]}.items():
        print(f"  {label:>12} {bucket['num_requests']:>9,}  {percentiles(bucket['prompt_len']):<40}"
              f"{percentiles(bucket['output_len'])}")
    print(f"  {doc['headline']}")
    if doc["num_skipped"]:
        kinds = ", ".join(f"{kind} {count:,}" for kind, count in doc["skipped_by_kind"].items())
        print(f"  skipped {doc['num_skipped']:,} rows ({kinds}); first: {doc['skipped_examples'][0][1]}")
    if doc["dropped"]:
        dropped = doc["dropped"].items()
        print("  not kept: " + ", ".join(f"{why.replace('_', ' ')} {n:,}" for why, n in dropped))
    stopped = [f"{doc['stopped']}; {doc['num_unread']:,} more lines not read"] if doc["stopped"] else []
    for note in [*doc["warnings"], *stopped]:
        print(f"  note: {note}")


def percentiles(values: dict) -> str:
    return " / ".join(f"{values[p]:g}" for p in ("50", "90", "99", "100"))
