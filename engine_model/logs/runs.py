"""Prefill passes back to back while replies wait, found without a chunk size: a queue drained pass after
pass, big passes in a row, or Prefill lines that outlast the log's usual Decode interval.

The rules and thresholds are written out in docs/logs-and-traces.md §5.
"""

from statistics import median

from engine_model.logs.parse import DecodeRecord, PrefillRecord, RetractionRecord
from engine_model.logs.verdicts import DECODE_CAVEAT, Finding, Fix, Record, quote

HIGH_TOKEN_USAGE = 0.85
MIN_STREAK = 3  # Prefill lines in a row, with no chunk size known, before their span is compared
MIN_PASS_TOKENS = 1_024  # a prefill pass smaller than this costs about a decode step: no stall
BIG_PASS_TOKENS = 8_192  # a prefill pass this large holds every reply for a visible pause (no mixed chunk)


def waiting(run: list[PrefillRecord]) -> int:
    return max(r.num_running_reqs or 0 for r in run)


def mixed_words(found: dict, until: str) -> str:
    """What mixed chunk did to the replies during the run (`until`: when the run ends, in a few words)."""
    if found.get("enable_mixed_chunk") is True:
        return ("Mixed chunk is on, so each pass also carried one decode step for every running request: the "
                "longest gap is about one chunk pass, not all of them. Chunk size is the knob now.")
    state = "off" if found.get("enable_mixed_chunk") is False else "not in the log (default: off)"
    return (f"Mixed chunk is {state}, so prefill wins every iteration and those replies get no token until "
            f"{until}.")


def at_cap(record: Record, cap: int) -> bool:
    if isinstance(record, RetractionRecord) or not record.num_queue_reqs:
        return False
    running = record.num_running_reqs or 0
    if isinstance(record, PrefillRecord):
        running += record.num_new_reqs
    return running >= cap


def prefill_streaks(records: list[Record]) -> list[list[PrefillRecord]]:
    """Runs of MIN_STREAK+ Prefill lines, with requests running, no other line between, that lasted longer
    than twice the usual time between two Decode lines (the time decode_log_interval decode passes take
    here). Used only when the chunk size is unknown, and only with timestamps: the span is the evidence."""
    decodes = [r for r in records if isinstance(r, DecodeRecord)]
    gaps = [b.at - a.at for a, b in zip(decodes, decodes[1:], strict=False) if b.at > a.at]
    if len(gaps) < 2:
        return []
    usual = median(gaps)
    runs, current = [], []
    for record in [*records, None]:
        if isinstance(record, PrefillRecord) and (record.num_running_reqs or 0) > 0:
            current.append(record)
            continue
        if len(current) >= MIN_STREAK and current[-1].at - current[0].at > 2 * usual:
            runs.append(current)
        current = []
    return runs


def streak_finding(runs: list[list[PrefillRecord]], records: list[Record]) -> Finding:
    worst = max(runs, key=lambda run: run[-1].at - run[0].at)
    decodes = [r for r in records if isinstance(r, DecodeRecord)]
    usual = median(b.at - a.at for a, b in zip(decodes, decodes[1:], strict=False) if b.at > a.at)
    tokens = sum(r.num_new_tokens for r in worst)
    many = any(r.num_new_reqs >= 2 or r.num_queue_reqs for r in worst)
    return Finding(
        kind="prefill_queue_ramp" if many else "chunked_prefill_stall",
        severity="observed",
        title="Prefill passes ran back to back while replies waited",
        explanation=(f"{len(worst)} Prefill lines (lines {worst[0].line_no}-{worst[-1].line_no}, "
                     f"{tokens:,} prompt tokens) ran over about {worst[-1].at - worst[0].at:.0f} s with no "
                     f"Decode line, while up to {waiting(worst)} requests were running; elsewhere in this "
                     f"log a Decode line comes every {usual:.0f} s or so. The chunk size is unknown (paste "
                     "the server_args line), so the passes cannot be told apart as chunks of one prompt or a "
                     f"queue of many. Caveat: {DECODE_CAVEAT}."),
        contradicts="A Decode line between those Prefill lines, or mixed chunk on.",
        evidence=quote(worst),
        fixes=[Fix("--enable-mixed-chunk", "each prefill pass also runs one decode step for the replies"),
               Fix("--prefill-decode-interval N", "N decode rounds after each prefill batch")],
    )


def queue_runs(records: list[Record], cap: int | None) -> list[list[PrefillRecord]]:
    """Runs of 2+ Prefill lines with no other line between, each with requests queued and requests
    running, below the cap and on a pool below HIGH_TOKEN_USAGE, each of MIN_PASS_TOKENS or more: a
    queue drained pass after pass while replies are running (no chunk size needed)."""
    def draining(r: Record) -> bool:
        return (isinstance(r, PrefillRecord) and bool(r.num_queue_reqs) and bool(r.num_running_reqs)
                and (r.token_usage or 0) < HIGH_TOKEN_USAGE and not (cap and at_cap(r, cap)))

    runs, current = [], []
    for record in [*records, None]:
        if record is not None and draining(record):
            current.append(record)
            continue
        if len(current) >= 2 and min(r.num_new_tokens for r in current) >= MIN_PASS_TOKENS:
            runs.append(current)
        current = []
    return runs


def big_pass_runs(records: list[Record]) -> list[list[PrefillRecord]]:
    """Runs of 2+ Prefill lines with no other line between, each of BIG_PASS_TOKENS or more with requests
    running: big prefill passes back to back while replies wait, whatever the queue (no chunk size
    needed)."""
    runs, current = [], []
    for record in [*records, None]:
        if (isinstance(record, PrefillRecord) and record.num_running_reqs
                and record.num_new_tokens >= BIG_PASS_TOKENS):
            current.append(record)
            continue
        if len(current) >= 2:
            runs.append(current)
        current = []
    return runs


def big_pass_finding(runs: list[list[PrefillRecord]], found: dict, timed: bool) -> Finding:
    worst = max(runs, key=lambda run: (len(run) * waiting(run), len(run)))
    many = sum(r.num_new_reqs >= 2 for r in worst) * 2 >= len(worst)
    sizes = sorted(r.num_new_tokens for r in worst)
    span = f", about {worst[-1].at - worst[0].at:.0f} s from first to last" if timed else ""
    who = "several requests" if many else "one request"
    return Finding(
        kind="prefill_queue_ramp" if many else "chunked_prefill_stall",
        severity="observed",
        title="Big prefill passes ran back to back while replies waited",
        explanation=(
            f"{len(worst)} Prefill lines in a row (lines {worst[0].line_no}-{worst[-1].line_no}{span}) of "
            f"{sizes[0]:,}-{sizes[-1]:,} prompt tokens each (mostly {who} a pass), "
            f"while up to {waiting(worst)} requests were running. "
            + mixed_words(found, "the last of those passes is done")
            + (f" The log has {len(runs)} runs like this." if len(runs) > 1 else "")
            + f" Caveat: {DECODE_CAVEAT}."),
        contradicts="A Decode line between those Prefill lines, or mixed chunk on.",
        evidence=quote(worst),
        fixes=[Fix("--enable-mixed-chunk", "each prefill pass also runs one decode step for the replies"),
               Fix("--chunked-prefill-size (smaller)", "shorter passes, so shorter pauses"),
               Fix("--prefill-decode-interval N", "N decode rounds after each prefill batch")],
    )


def queue_run_finding(runs: list[list[PrefillRecord]], found: dict, timed: bool) -> Finding:
    worst = max(runs, key=lambda run: (len(run) * waiting(run), len(run)))
    span = f", about {worst[-1].at - worst[0].at:.0f} s from first to last" if timed else ""
    reqs, tokens = sum(r.num_new_reqs for r in worst), sum(r.num_new_tokens for r in worst)
    return Finding(
        kind="prefill_queue_ramp",
        severity="observed",
        title="A queue of new requests is prefilled pass after pass while replies wait",
        explanation=(
            f"{len(worst)} Prefill lines in a row (lines {worst[0].line_no}-{worst[-1].line_no}{span}) "
            f"admitted {reqs:,} requests ({tokens:,} prompt tokens) from a queue of "
            f"{worst[0].num_queue_reqs:,} while up to {waiting(worst)} requests were running, below any "
            "cap and with room in the pool. SGLang schedules a prefill whenever a waiting request fits "
            "(prefill first), so the queue is drained pass after pass. "
            + mixed_words(found, "the queue is drained or a limit stops admission")
            + (f" The log has {len(runs)} runs like this." if len(runs) > 1 else "")
            + f" Caveat: {DECODE_CAVEAT}."),
        contradicts="A Decode line between those Prefill lines, or mixed chunk on; a cap on running "
                    "requests at the running count.",
        evidence=quote(worst),
        fixes=[Fix("--enable-mixed-chunk", "each prefill pass also runs one decode step for the replies"),
               Fix("--prefill-decode-interval N", "N decode rounds after each prefill batch")],
    )
