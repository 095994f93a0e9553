"""Tell apart what a parsed log shows: a crash, a runaway reply, a cause outside the model, a KV stall, the
chunked-prefill stall, a queue ramp, a queue behind a limit; or that it looks healthy.

The rules and thresholds are written out in docs/logs-and-traces.md §5.
"""

from dataclasses import dataclass, replace

from engine_model.logs.parse import (
    DecodeRecord,
    ParsedLog,
    PrefillRecord,
    RetractionRecord,
    default_rank,
    followed_ranks,
    settings,
)
from engine_model.logs.runs import (
    HIGH_TOKEN_USAGE,
    at_cap,
    big_pass_finding,
    big_pass_runs,
    mixed_words,
    prefill_streaks,
    queue_run_finding,
    queue_runs,
    streak_finding,
    waiting,
)
from engine_model.logs.timeline import Record, Timeline, chunk_size_of, is_full_chunk, records_of
from engine_model.logs.verdicts import (
    DECODE_CAVEAT,
    Finding,
    Fix,
    crash_finding,
    graph_off_finding,
    healthy_finding,
    outside_findings,
    quote,
    runaway_finding,
)

NO_DECODE_PHASE_PREFILLS = 20  # Prefill lines with no Decode line anywhere: replies may have no decode phase
MIN_CAP_LINES = 3  # lines at one same largest running count, with a queue, to infer a cap
KIND_ORDER = (
    "crash_oom",
    "outside_model",
    "runaway_output",
    "kv_retraction",
    "chunked_prefill_stall",
    "prefill_queue_ramp",
    "queueing_running_cap",
    "queueing_token_pool",
)
VERDICTS = (*KIND_ORDER, "healthy", "unknown")
SCHEDULING = ("kv_retraction", "chunked_prefill_stall", "prefill_queue_ramp", "queueing_running_cap",
              "queueing_token_pool")

__all__ = ["Diagnosis", "Finding", "Fix", "KIND_ORDER", "VERDICTS", "diagnose", "longest_chunk_run"]


@dataclass(frozen=True)
class Diagnosis:
    verdict: str  # the kind of the first observed finding; "healthy" when the log shows it; else "unknown"
    findings: list[Finding]  # observed first, in KIND_ORDER, then latent
    rank: str
    settings: dict
    notes: list[str]


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


def ran_back_to_back(run: list[PrefillRecord], chunk_size: int | None, timed: bool = True) -> str:
    """'N prefill passes of up to S tokens ran back to back (lines a-b, about t s ...)'; no seconds when
    the log has no timestamps."""
    size = f"{chunk_size:,}" if chunk_size else "a full chunk of"
    span = run[-1].at - run[0].at
    where = (f"lines {run[0].line_no}-{run[-1].line_no}, "
             + (f"about {span:.0f} s from first to last" if timed else "in this order; the log has no "
                "timestamps, so how long they took is not known"))
    first = run[0]
    if first.num_pending_tokens and not first.num_queue_reqs and chunk_size:
        more = -(-first.num_pending_tokens // chunk_size)
        where += (f"; the first left {first.num_pending_tokens:,} prompt tokens pending, about {more} more"
                  " passes")
    return f"{len(run)} prefill passes of up to {size} tokens ran back to back ({where})"


def long_prompt_finding(runs: list[list[PrefillRecord]], chunk_size: int | None, found: dict,
                        timed: bool = True) -> Finding:
    worst = max(runs, key=lambda run: (len(run) * max(waiting(run), 1), len(run)))
    num_waiting, ran = waiting(worst), ran_back_to_back(worst, chunk_size, timed)
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
        explanation=explanation + (f" The log has {len(runs)} runs like this." if len(runs) > 1 else "")
        + f" Caveat: {DECODE_CAVEAT}.",
        contradicts="A Decode line between those Prefill lines, or --enable-mixed-chunk on with requests "
                    "running (each pass then carried a decode step).",
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


def queue_ramp_finding(runs: list[list[PrefillRecord]], chunk_size: int | None, found: dict,
                       timed: bool = True) -> Finding:
    worst = max(runs, key=lambda run: (len(run) * max(waiting(run), 1), len(run)))
    num_waiting, fresh = waiting(worst), num_fresh(worst)
    tokens = sum(r.num_new_tokens + r.num_cached_tokens for r in worst)
    per_seq = sorted(r.num_new_reqs for r in worst)
    queued = worst[0].num_queue_reqs
    queue_text = f", from a queue of {queued:,} at the first line" if queued else ""
    mid_reply = f" while up to {num_waiting} requests were mid-reply" if num_waiting else ""
    explanation = (
        f"{ran_back_to_back(worst, chunk_size, timed)}{mid_reply}. They were not one long prompt: the passes "
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
        explanation=explanation + (f" The log has {len(runs)} runs like this." if len(runs) > 1 else "")
        + f" Caveat: {DECODE_CAVEAT}.",
        contradicts="A Decode line between those Prefill lines, or mixed chunk on; an empty queue at the "
                    "first line (then it is one long prompt, not a queue).",
        evidence=quote(worst),
        fixes=[
            Fix("--enable-mixed-chunk", "each prefill pass also runs one decode step for the replies"),
            Fix("--prefill-decode-interval N", "N decode rounds after each prefill batch"),
            Fix("--max-running-requests (lower)",
                "admission stops at the cap, so replies decode while the rest wait (first tokens later)"),
        ],
    )


def chunk_findings(runs: list[list[PrefillRecord]], chunk_size: int | None, found: dict,
                   timed: bool = True) -> list[Finding]:
    """One finding per kind of run present: long prompts chunked, and queues drained by prefill."""
    ramps = [run for run in runs if run_kind(run) == "prefill_queue_ramp"]
    prompts = [run for run in runs if run_kind(run) == "chunked_prefill_stall"]
    return ([long_prompt_finding(prompts, chunk_size, found, timed)] if prompts else []) + (
        [queue_ramp_finding(ramps, chunk_size, found, timed)] if ramps else [])


def no_decode_phase(finding: Finding, parsed: ParsedLog, records: list[Record]) -> Finding:
    """With many Prefill lines and no Decode line anywhere in the log, nothing shows a decode phase: the
    requests may have none (max_tokens=1, embeddings, scoring), so nobody is said to starve mid-reply."""
    prefills = sum(isinstance(r, PrefillRecord) for r in records)
    if parsed.decodes or prefills < NO_DECODE_PHASE_PREFILLS or finding.severity != "observed":
        return finding
    return replace(finding, severity="latent", explanation=(
        f"The log has {prefills} Prefill lines and no Decode line at all, so no decode pass shows: the "
        "requests may have no decode phase (max_tokens=1, embeddings, scoring), or the excerpt stops before "
        "the Decode lines. Their #running-req is not taken as replies starving mid-reply. "
        + finding.explanation))


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
        contradicts="None in the log: a retraction line is SGLang saying it happened. Whether it hurt shows "
                    "in the queue and the replies after it.",
    )


def inferred_cap(records: list[Record]) -> tuple[int | None, int]:
    """(cap, lines reaching it) when the lines show a cap on running requests the log does not state: the
    running batch (on a Prefill line, with the new requests) reaches one same largest value on
    MIN_CAP_LINES or more lines, in two or more ways (different splits of running and new), while requests
    are queued on a pool below HIGH_TOKEN_USAGE, and never exceeds it. Else (None, 0)."""
    def running(r: Record) -> int:
        return (r.num_running_reqs or 0) + (r.num_new_reqs if isinstance(r, PrefillRecord) else 0)

    batches = [r for r in records if not isinstance(r, RetractionRecord)]
    if not batches:
        return None, 0
    top = max(running(r) for r in batches)
    hits = [r for r in batches if running(r) == top and r.num_queue_reqs
            and (r.token_usage or 0) < HIGH_TOKEN_USAGE]
    splits = {(type(r), r.num_running_reqs) for r in hits}  # reached in different ways, not one repeated
    return (top, len(hits)) if top > 1 and len(hits) >= MIN_CAP_LINES and len(splits) >= 2 else (None, 0)


def cap_finding(lines: list[Record], cap: int, inferred: int = 0) -> Finding:
    source = (f" (the cap is inferred: the running batch reaches {cap} on {inferred} lines with a queue "
              "and never more; the server_args line would confirm it)" if inferred else "")
    return Finding(
        kind="queueing_running_cap",
        severity="observed",
        title="Requests queue behind max_running_requests",
        explanation=(
            f"On {len(lines)} line(s) the running batch was at its cap of {cap} requests while others were "
            f"queued{source}: they wait for a running request to finish, however much KV is free."
        ),
        evidence=quote(lines),
        fixes=[
            Fix("--max-running-requests (higher)", "more requests run at once, if the KV pool can hold them")
        ],
        contradicts="A running count below the cap on the same lines (the cap read from the log is wrong).",
    )


def pool_finding(lines: list[Record], loosen: bool) -> Finding:
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
            *([Fix("--schedule-conservativeness (lower)", "admits earlier, at the risk of retraction later")]
              if loosen else []),
        ],
        contradicts="Token usage well below the threshold on the queued lines, or a queue that empties "
                    "within a line or two (a burst being admitted).",
    )


def diagnose(parsed: ParsedLog, *, rank: str | None = None, known: dict | None = None) -> Diagnosis:
    """Findings for one rank (default TP0 / DP0), observed ones first; the verdict is the first of those,
    else "healthy" when the log shows replies progressing, else "unknown".

    `known`: resolved settings from elsewhere (a /server_info); the log's own lines win where both say.
    Crash and hang lines count whatever rank printed them: a scheduler that died stops every rank.
    """
    rank = default_rank(parsed) if rank is None else rank
    records = records_of(parsed, rank)
    found = {**(known or {}), **settings(parsed)}
    prefills = [r for r in records if isinstance(r, PrefillRecord)]
    chunk_size, _ = chunk_size_of(parsed, prefills, known)
    cap = found.get("max_running_requests")
    cap = cap if isinstance(cap, int) and not isinstance(cap, bool) and cap > 0 else None
    cap_lines = 0
    crash = crash_finding(parsed)
    findings = [crash] if crash else []
    if cap is None:
        cap, cap_lines = inferred_cap(records)
    findings += outside_findings(parsed, records, cap, parsed.default_decode_log_interval)
    runaway = runaway_finding(records)
    findings += [runaway] if runaway else []
    stalls = chunk_findings(chunk_runs(records, chunk_size), chunk_size, found, parsed.has_times)
    if not stalls:
        queued = queue_runs(records, cap)
        stalls = [queue_run_finding(queued, found, parsed.has_times)] if queued else []
    if not stalls:
        big = big_pass_runs(records)
        stalls = [big_pass_finding(big, found, parsed.has_times)] if big else []
    if chunk_size is None and not stalls and parsed.has_times:
        streaks = prefill_streaks(records)
        stalls = [streak_finding(streaks, records)] if streaks else []
    findings += [no_decode_phase(f, parsed, records) for f in stalls]
    has_retraction = any(isinstance(r, RetractionRecord) for r in records)
    if has_retraction:
        findings.append(retraction_finding(records, found, parsed.server_args or {}))
    capped = [r for r in records if at_cap(r, cap)] if cap else []
    if capped:
        findings.append(cap_finding(capped, cap, inferred=cap_lines))
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
        findings.append(pool_finding(full, loosen=crash is None and runaway is None))
    if crash or runaway:  # the failure shown is the cause: scheduling findings are context, not verdicts
        findings = [f if f.kind not in SCHEDULING else replace(f, fixes=[]) for f in findings]
    graph = graph_off_finding(parsed, records, found)
    if graph:
        alone = not any(f.severity == "observed" for f in findings)
        findings.append(graph if alone else replace(graph, severity="latent"))
    findings.sort(key=lambda f: (f.severity != "observed", KIND_ORDER.index(f.kind)))
    observed = [f for f in findings if f.severity == "observed"]
    if not observed and not parsed.events and not any(f.kind == "runaway_output" for f in findings):
        healthy = healthy_finding(records, parsed)
        if healthy:
            findings.insert(0, healthy)
            observed = [healthy]
    verdict = observed[0].kind if observed else "unknown"
    return Diagnosis(verdict, findings, rank, found, notes_for(parsed, records, found, verdict))


def notes_for(parsed: ParsedLog, records: list[Record], found: dict, verdict: str) -> list[str]:
    notes = []
    if not records:
        notes.append("no Prefill batch, Decode batch or retraction lines were found for this rank")
    if "enable_mixed_chunk" not in found:
        notes.append("no server_args line: mixed chunk and other flags are assumed at their defaults")
    if records and not parsed.has_times:
        notes.append("the log has no timestamps: passes are read in order, and no duration is given")
    schedulers = followed_ranks(parsed)
    if len(schedulers) > 1:
        notes.append(f"the log has {len(schedulers)} schedulers (DP / PP ranks); one is diagnosed: "
                     f"{sorted(ranks[0] or '(no tag)' for ranks in schedulers.values())}")
    shards = [ranks for ranks in schedulers.values() if len(ranks) > 1]
    if shards:
        notes.append(f"{sum(len(r) - 1 for r in shards)} more shard(s) of the same scheduler (TP / EP / CP "
                     f"ranks such as {shards[0][1]}) print the same passes; {shards[0][0] or '(no tag)'}'s "
                     "lines are read")
    if verdict == "unknown":
        notes.append("no verdict: the lines show no trouble, but too little to call the server healthy "
                     "(it takes a Decode line with replies running, and no line with more than a small "
                     "queue)")
    return notes
