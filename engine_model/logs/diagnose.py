"""Tell the stalls apart from a parsed log: chunked prefill, KV retraction, or a queue behind a limit.

The rules and thresholds are written out in docs/logs-and-traces.md.
"""

from dataclasses import dataclass

from engine_model.logs.parse import (
    DecodeRecord,
    ParsedLog,
    PrefillRecord,
    RetractionRecord,
    default_rank,
    settings,
)
from engine_model.logs.timeline import Record, Timeline, chunk_size_of, is_full_chunk, records_of

HIGH_TOKEN_USAGE = 0.85
MAX_EVIDENCE = 4
KIND_ORDER = (
    "kv_retraction",
    "chunked_prefill_stall",
    "prefill_queue_ramp",
    "queueing_running_cap",
    "queueing_token_pool",
)
VERDICTS = (*KIND_ORDER, "none")


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


def longest_run(parsed: ParsedLog, timeline: Timeline) -> list[PrefillRecord]:
    """The longest run of full-chunk Prefill lines with no Decode line between (empty when there is none)."""
    records = records_of(parsed, timeline.rank)
    chunk_size, _ = chunk_size_of(parsed, [r for r in records if isinstance(r, PrefillRecord)])
    return max(chunk_runs(records, chunk_size), key=len, default=[])


def longest_chunk_run(parsed: ParsedLog, timeline: Timeline) -> int:
    """The most full-chunk Prefill lines in a row with no Decode line between (0 when there is none)."""
    return len(longest_run(parsed, timeline))


def run_kind(run: list[PrefillRecord]) -> str:
    """What started a run of back-to-back full chunks: one long prompt, or a queue drained pass after pass.

    A chunked request continues first in the next batch (`add_chunked_req`). When the second pass carried
    that request alone, filling the whole chunk, the prompt was longer than a chunk: a long prompt. When
    it also admitted new requests (`#new-seq` >= 2), the passes are many prompts filling each chunk
    budget: a queue ramp under prefill-first admission.
    """
    return "chunked_prefill_stall" if run[1].num_new_reqs == 1 else "prefill_queue_ramp"


def queue_behind(run: list[PrefillRecord]) -> list[PrefillRecord]:
    """The lines of a long-prompt run after the prompt's last chunk: the queue that built up behind it."""
    carried = next((i for i, r in enumerate(run[1:], start=1) if r.num_new_reqs != 1), len(run))
    return run[carried:]


def num_fresh(run: list[PrefillRecord]) -> int:
    """Requests the run admitted: all of the first line's, and on each later line all but the carried one."""
    return run[0].num_new_reqs + sum(max(r.num_new_reqs - 1, 0) for r in run[1:])


def waiting(run: list[PrefillRecord]) -> int:
    return max(r.num_running_reqs or 0 for r in run)


def ran_back_to_back(run: list[PrefillRecord], chunk_size: int | None) -> str:
    """'N prefill passes of up to S tokens ran back to back (lines a-b, about t s ...)'."""
    size = f"{chunk_size:,}" if chunk_size else "a full chunk of"
    span = run[-1].at - run[0].at
    where = f"lines {run[0].line_no}-{run[-1].line_no}, about {span:.0f} s from first to last"
    first = run[0]
    if first.num_pending_tokens and not first.num_queue_reqs and chunk_size:
        more = -(-first.num_pending_tokens // chunk_size)
        where += (f"; the first left {first.num_pending_tokens:,} prompt tokens pending, about {more} more"
                  " passes")
    return f"{len(run)} prefill passes of up to {size} tokens ran back to back ({where})"


def mixed_words(found: dict, until: str) -> str:
    """What mixed chunk did to the replies during the run (`until`: when the run ends, in a few words)."""
    if found.get("enable_mixed_chunk") is True:
        return ("Mixed chunk is on, so each pass also carried one decode step for every running request: the "
                "longest gap is about one chunk pass, not all of them. Chunk size is the knob now.")
    state = "off" if found.get("enable_mixed_chunk") is False else "not in the log (default: off)"
    return (f"Mixed chunk is {state}, so prefill wins every iteration and those replies get no token until "
            f"{until}.")


def long_prompt_finding(runs: list[list[PrefillRecord]], chunk_size: int | None, found: dict) -> Finding:
    worst = max(runs, key=lambda run: (len(run) * max(waiting(run), 1), len(run)))
    num_waiting, ran = waiting(worst), ran_back_to_back(worst, chunk_size)
    if num_waiting == 0:
        explanation = (f"{ran}, but no request was mid-reply at the time, so nobody stalled here. Had "
                       "replies been streaming, they would have waited for all of them.")
    else:
        explanation = (f"{ran} while up to {num_waiting} requests were mid-reply. "
                       + mixed_words(found, "the last pass is done"))
    behind = queue_behind(worst)
    if behind:
        queued = sum(r.num_new_reqs - 1 for r in behind)
        explanation += (f" The last {len(behind)} of those passes admitted {queued:,} requests that had "
                        "queued behind the long prompt.")
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


def queue_ramp_finding(runs: list[list[PrefillRecord]], chunk_size: int | None, found: dict) -> Finding:
    worst = max(runs, key=lambda run: (len(run) * max(waiting(run), 1), len(run)))
    num_waiting, fresh = waiting(worst), num_fresh(worst)
    tokens = sum(r.num_new_tokens + r.num_cached_tokens for r in worst)
    per_seq = sorted(r.num_new_reqs for r in worst)
    queued = worst[0].num_queue_reqs
    queue_text = f", from a queue of {queued:,} at the first line" if queued else ""
    mid_reply = f" while up to {num_waiting} requests were mid-reply" if num_waiting else ""
    explanation = (
        f"{ran_back_to_back(worst, chunk_size)}{mid_reply}. They were not one long prompt: the passes "
        f"admitted {fresh:,} new requests of about "
        f"{round(tokens / fresh, -1):,.0f} prompt tokens each (#new-seq {per_seq[0]}-{per_seq[-1]} a pass, "
        f"one of them carried over from the pass before){queue_text}. SGLang schedules a prefill whenever a "
        "waiting request fits (prefill first), so a queue is drained pass after pass. "
    )
    if num_waiting:
        explanation += (mixed_words(found, "the queue is drained or a limit stops admission")
                        + " A smaller --chunked-prefill-size does not help here: the queue's tokens stay "
                        "the same, in more passes.")
    else:
        explanation += "No request was mid-reply at the time, so nobody stalled here."
    return Finding(
        kind="prefill_queue_ramp",
        severity="observed" if num_waiting else "latent",
        title="A queue of new requests is prefilled pass after pass while replies wait",
        explanation=explanation + (f" The log has {len(runs)} runs like this." if len(runs) > 1 else ""),
        evidence=quote(worst),
        fixes=[
            Fix("--enable-mixed-chunk", "each prefill pass also runs one decode step for the replies"),
            Fix("--prefill-decode-interval N", "N decode rounds after each prefill batch"),
            Fix("--max-running-requests (lower)",
                "admission stops at the cap, so replies decode while the rest wait (first tokens later)"),
        ],
    )


def chunk_findings(runs: list[list[PrefillRecord]], chunk_size: int | None, found: dict) -> list[Finding]:
    """One finding per kind of run present: long prompts chunked, and queues drained by prefill."""
    ramps = [run for run in runs if run_kind(run) == "prefill_queue_ramp"]
    prompts = [run for run in runs if run_kind(run) == "chunked_prefill_stall"]
    return ([long_prompt_finding(prompts, chunk_size, found)] if prompts else []) + (
        [queue_ramp_finding(ramps, chunk_size, found)] if ramps else [])


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


def diagnose(parsed: ParsedLog, *, rank: str | None = None, known: dict | None = None) -> Diagnosis:
    """Findings for one rank (default TP0 / DP0), observed ones first; the verdict is the first of those.

    `known`: resolved settings from elsewhere (a /server_info); the log's own lines win where both say.
    """
    rank = default_rank(parsed) if rank is None else rank
    records = records_of(parsed, rank)
    found = {**(known or {}), **settings(parsed)}
    prefills = [r for r in records if isinstance(r, PrefillRecord)]
    chunk_size, _ = chunk_size_of(parsed, prefills, known)
    findings = []
    findings.extend(chunk_findings(chunk_runs(records, chunk_size), chunk_size, found))
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
        observed[0].kind if observed else "none", findings, rank, found, notes_for(parsed, records, found)
    )


def notes_for(parsed: ParsedLog, records: list[Record], found: dict) -> list[str]:
    notes = []
    if not records:
        notes.append("no Prefill batch, Decode batch or retraction lines were found for this rank")
    if "enable_mixed_chunk" not in found:
        notes.append("no server_args line: mixed chunk and other flags are assumed at their defaults")
    if len(parsed.ranks) > 1:
        notes.append(f"the log has {len(parsed.ranks)} ranks; only one is diagnosed: {sorted(parsed.ranks)}")
    return notes
