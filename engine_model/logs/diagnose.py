"""Tell the stalls apart from a parsed log: chunked prefill, KV retraction, or a queue behind a limit.

The rules and thresholds are written out in docs/logs-and-traces.md.
"""

from dataclasses import dataclass

from engine_model.config import EngineConfig
from engine_model.logs.parse import (
    DecodeRecord,
    ParsedLog,
    PrefillRecord,
    RetractionRecord,
    default_rank,
    settings,
)
from engine_model.logs.startup import SETTING_KEYS
from engine_model.logs.timeline import Record, Timeline, chunk_size_of, is_full_chunk, records_of

HIGH_TOKEN_USAGE = 0.85
MAX_OBSERVED_REQUESTS = 100_000
MAX_EVIDENCE = 4
KIND_ORDER = ("kv_retraction", "chunked_prefill_stall", "queueing_running_cap", "queueing_token_pool")
VERDICTS = (*KIND_ORDER, "none")
HINT_KEYS = tuple(key for key in SETTING_KEYS if key in EngineConfig.model_fields)  # what a scenario accepts


@dataclass(frozen=True)
class Fix:
    flag: str
    effect: str


@dataclass(frozen=True)
class Finding:
    kind: str  # one of KIND_ORDER
    severity: str  # "observed": requests waited; "latent": the pattern is there but nobody was running
    title: str
    explanation: str
    evidence: list[tuple[int, str]]  # (line number, line text)
    fixes: list[Fix]


@dataclass(frozen=True)
class Diagnosis:
    verdict: str  # the kind of the first observed finding, or "none"
    findings: list[Finding]  # observed first, in KIND_ORDER, then latent
    rank: str
    settings: dict
    notes: list[str]


def quote(records: list[Record]) -> list[tuple[int, str]]:
    if len(records) > MAX_EVIDENCE:
        records = [*records[: MAX_EVIDENCE - 1], records[-1]]
    return [(r.line_no, r.text) for r in records]


# ---- chunked prefill -------------------------------------------------------------------------------


def chunk_runs(records: list[Record], chunk_size: int | None) -> list[list[PrefillRecord]]:
    """Runs of 2+ Prefill lines with no Decode line between, each after the first following a full chunk."""
    runs, current = [], []
    for record in [*records, None]:
        if isinstance(record, PrefillRecord) and current and is_full_chunk(current[-1], chunk_size):
            current.append(record)
            continue
        if len(current) >= 2:
            runs.append(current)
        is_start = isinstance(record, PrefillRecord) and is_full_chunk(record, chunk_size)
        current = [record] if is_start else []
    return runs


def longest_chunk_run(parsed: ParsedLog, timeline: Timeline) -> int:
    """The most full-chunk Prefill lines in a row with no Decode line between (0 when there is none)."""
    records = records_of(parsed, timeline.rank)
    chunk_size, _ = chunk_size_of(parsed, [r for r in records if isinstance(r, PrefillRecord)])
    return max((len(run) for run in chunk_runs(records, chunk_size)), default=0)


def chunk_finding(runs: list[list[PrefillRecord]], chunk_size: int | None, found: dict) -> Finding:
    def waiting(run: list[PrefillRecord]) -> int:
        return max(r.num_running_reqs or 0 for r in run)

    worst = max(runs, key=lambda run: (len(run) * max(waiting(run), 1), len(run)))
    num_waiting, num_passes = waiting(worst), len(worst)
    size = f"{chunk_size:,}" if chunk_size else "a full chunk of"
    span = worst[-1].at - worst[0].at
    where = f"lines {worst[0].line_no}-{worst[-1].line_no}, about {span:.0f} s from first to last"
    first = worst[0]
    if first.num_pending_tokens and not first.num_queue_reqs and chunk_size:
        more = -(-first.num_pending_tokens // chunk_size)
        where += (
            f"; the first left {first.num_pending_tokens:,} prompt tokens pending, about {more} more passes"
        )
    mixed = found.get("enable_mixed_chunk")
    if num_waiting == 0:
        explanation = (
            f"{num_passes} prefill passes of up to {size} tokens ran back to back ({where}), but no request "
            "was mid-reply at the time, so nobody stalled here. Had replies been streaming, they would have "
            "waited for all of them."
        )
    elif mixed is True:
        explanation = (
            f"{num_passes} prefill passes of up to {size} tokens ran back to back ({where}) while up to "
            f"{num_waiting} requests were mid-reply. Mixed chunk is on, so each pass also carried one decode "
            "step for every running request: the longest gap is about one chunk pass, not all of them. "
            "Chunk size is the knob now."
        )
    else:
        state = "off" if mixed is False else "not in the log (default: off)"
        explanation = (
            f"{num_passes} prefill passes of up to {size} tokens ran back to back ({where}) while up to "
            f"{num_waiting} requests were mid-reply. Mixed chunk is {state}, so prefill wins every iteration "
            "and those replies get no token until the last pass is done."
        )
    return Finding(
        kind="chunked_prefill_stall",
        severity="observed" if num_waiting else "latent",
        title="Back-to-back prefill chunks stall running replies",
        explanation=explanation + (f" The log has {len(runs)} runs like this." if len(runs) > 1 else ""),
        evidence=quote(worst),
        fixes=[
            Fix("--enable-mixed-chunk", "each chunk pass also runs one decode step for the running requests"),
            Fix(
                "--chunked-prefill-size (smaller)",
                "shorter passes, so shorter gaps; the long prompt's first token comes later",
            ),
            Fix("--prefill-decode-interval N", "forces N decode rounds after each prefill batch"),
        ],
    )


# ---- KV retraction and queueing --------------------------------------------------------------------


def peak_usage(records: list[Record]) -> PrefillRecord | DecodeRecord | None:
    used = [r for r in records if not isinstance(r, RetractionRecord) and r.token_usage is not None]
    return max(used, key=lambda r: r.token_usage, default=None)


def retraction_finding(records: list[Record], found: dict, args: dict) -> Finding:
    retractions = [r for r in records if isinstance(r, RetractionRecord)]
    peak = peak_usage(records)
    num_reqs = sum(r.num_retracted_reqs for r in retractions)
    peak_text = f" Token usage peaked at {peak.token_usage:.2f}." if peak else ""
    pool = found.get("max_total_tokens")
    capped = args.get("max_total_tokens") not in (None, 0)
    pool_text = (
        f" The KV pool holds {pool:,} tokens{' (capped by --max-total-tokens)' if capped else ''}."
        if pool
        else ""
    )
    fixes = [
        Fix("--mem-fraction-static (higher) or more GPU memory", "a bigger KV pool"),
        Fix("--max-running-requests (lower)", "fewer replies growing in the pool at once"),
        Fix("--schedule-conservativeness (higher)", "admission reserves more room for replies still to grow"),
    ]
    if capped:
        fixes.insert(
            0, Fix("--max-total-tokens (raise or drop)", "the pool was capped below what memory allows")
        )
    return Finding(
        kind="kv_retraction",
        severity="observed",
        title="The KV cache filled and running requests were retracted",
        explanation=(
            f"{len(retractions)} retraction(s) sent {num_reqs} running requests back to the queue.{peak_text}"
            f"{pool_text} SGLang retracts the requests with the fewest generated tokens first; they wait "
            "behind the queue and re-prefill prompt plus output later. Admission then turns cautious "
            f"(new_token_ratio {retractions[-1].new_token_ratio_after:.2f} after the last one). A different "
            "fix from chunked prefill."
        ),
        evidence=quote(retractions) + ([(peak.line_no, peak.text)] if peak else []),
        fixes=fixes,
    )


def at_cap(record: Record, cap: int) -> bool:
    if isinstance(record, RetractionRecord) or not record.num_queue_reqs:
        return False
    running = record.num_running_reqs or 0
    if isinstance(record, PrefillRecord):
        running += record.num_new_reqs
    return running >= cap


def cap_finding(lines: list[Record], cap: int) -> Finding:
    return Finding(
        kind="queueing_running_cap",
        severity="observed",
        title="Requests queue behind max_running_requests",
        explanation=(
            f"On {len(lines)} line(s) the running batch was at its cap of {cap} requests while others were "
            "queued: they wait for a running request to finish, however much KV is free."
        ),
        evidence=quote(lines),
        fixes=[
            Fix("--max-running-requests (higher)", "more requests run at once, if the KV pool can hold them")
        ],
    )


def pool_finding(lines: list[Record]) -> Finding:
    return Finding(
        kind="queueing_token_pool",
        severity="observed",
        title="Requests queue because the KV pool is nearly full",
        explanation=(
            f"On {len(lines)} line(s) requests were queued with token usage at or above {HIGH_TOKEN_USAGE}: "
            "admission reserves room for the replies still growing, so new prompts wait. No retraction yet."
        ),
        evidence=quote(lines),
        fixes=[
            Fix("--mem-fraction-static (higher) or more GPU memory", "a bigger KV pool"),
            Fix("--schedule-conservativeness (lower)", "admits earlier, at the risk of retraction later"),
        ],
    )


def diagnose(parsed: ParsedLog, *, rank: str | None = None) -> Diagnosis:
    """Findings for one rank (default TP0 / DP0), observed ones first; the verdict is the first of those."""
    rank = default_rank(parsed) if rank is None else rank
    records = records_of(parsed, rank)
    found = settings(parsed)
    prefills = [r for r in records if isinstance(r, PrefillRecord)]
    chunk_size, _ = chunk_size_of(parsed, prefills)
    findings = []
    runs = chunk_runs(records, chunk_size)
    if runs:
        findings.append(chunk_finding(runs, chunk_size, found))
    has_retraction = any(isinstance(r, RetractionRecord) for r in records)
    if has_retraction:
        findings.append(retraction_finding(records, found, parsed.server_args or {}))
    cap = found.get("max_running_requests")
    capped = [r for r in records if at_cap(r, cap)] if isinstance(cap, int) and cap > 0 else []
    if capped:
        findings.append(cap_finding(capped, cap))
    capped_lines = {r.line_no for r in capped}
    full = [
        r
        for r in records
        if not isinstance(r, RetractionRecord)
        and r.num_queue_reqs
        and (r.token_usage or 0) >= HIGH_TOKEN_USAGE
        and r.line_no not in capped_lines
    ]
    if full and not has_retraction:
        findings.append(pool_finding(full))
    findings.sort(key=lambda f: (f.severity != "observed", KIND_ORDER.index(f.kind)))
    observed = [f for f in findings if f.severity == "observed"]
    return Diagnosis(
        observed[0].kind if observed else "none", findings, rank, found, notes_for(parsed, records)
    )


def notes_for(parsed: ParsedLog, records: list[Record]) -> list[str]:
    notes = []
    if not records:
        notes.append("no Prefill batch, Decode batch or retraction lines were found for this rank")
    if "enable_mixed_chunk" not in settings(parsed):
        notes.append("no server_args line: mixed chunk and other flags are assumed at their defaults")
    if len(parsed.ranks) > 1:
        notes.append(f"the log has {len(parsed.ranks)} ranks; only one is diagnosed: {sorted(parsed.ranks)}")
    return notes


# ---- hints for a simulation ------------------------------------------------------------------------


def scenario_hints(parsed: ParsedLog, *, rank: str | None = None) -> dict:
    """Engine overrides read from the log, plus `observed_requests`: estimated (arrival_at, prompt_len)."""
    found = settings(parsed)
    hints = {key: found[key] for key in HINT_KEYS if key in found and found[key] is not None}
    rank = default_rank(parsed) if rank is None else rank
    prefills = [r for r in records_of(parsed, rank) if isinstance(r, PrefillRecord)]
    chunk_size, _ = chunk_size_of(parsed, prefills)
    hints["observed_requests"] = observed_requests(prefills, chunk_size)
    return hints


def observed_requests(prefills: list[PrefillRecord], chunk_size: int | None) -> list[tuple[float, int]]:
    """Guess (arrival_at, prompt_len) per request from Prefill lines.

    A line with S new requests and N new + C cached tokens gives S prompts of (N + C) / S tokens, arriving
    at the line's time (an upper bound). When a line used a full chunk, its last request continues on the
    next line; with an empty queue, #pending-token is that request's remainder and fixes its length.
    A time earlier than the line before (clock step, concatenated logs) is raised to it, as in the
    timeline. Stops after MAX_OBSERVED_REQUESTS requests: memory never grows with a number in the log.
    """
    requests, open_req = [], None  # open_req: [arrival_at, tokens so far, expected total or None]
    at = 0.0
    for line in prefills:
        num = line.num_new_reqs
        at = max(at, line.at)
        if num <= 0:
            continue
        if len(requests) >= MAX_OBSERVED_REQUESTS:
            break
        share = (line.num_new_tokens + line.num_cached_tokens) / num
        starts = 0
        if open_req is not None:
            open_req[1] += share
            starts = 1
        num_parts = min(num - starts, MAX_OBSERVED_REQUESTS - len(requests) + 1)  # +1: one may stay open
        parts = [[at, share, None] for _ in range(num_parts)]
        if open_req is not None and (parts or not is_full_chunk(line, chunk_size)):
            requests.append(close(open_req))
            open_req = None
        if is_full_chunk(line, chunk_size) and (parts or open_req is not None):
            open_req = open_req or parts.pop()
            if line.num_pending_tokens and not line.num_queue_reqs:
                open_req[2] = open_req[1] + line.num_pending_tokens
        requests.extend(close(p) for p in parts)
    if open_req is not None:
        requests.append(close(open_req))
    return sorted(requests)[:MAX_OBSERVED_REQUESTS]


def close(request: list) -> tuple[float, int]:
    arrival_at, tokens, expected = request
    return (arrival_at, max(round(expected if expected is not None else tokens), 1))
