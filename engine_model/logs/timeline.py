"""Rebuild a plain timeline from a parsed log: prefill passes, decode segments, retractions, load samples.

Every estimate made here is listed in docs/logs-and-traces.md and in `Timeline.notes`.
"""

from collections import Counter
from dataclasses import dataclass
from statistics import median

from engine_model.logs.parse import (
    DecodeRecord,
    ParsedLog,
    PrefillRecord,
    RetractionRecord,
    default_rank,
    settings,
)

DEFAULT_DECODE_LOG_INTERVAL = 40
MIN_INFERRED_CHUNK = 256


@dataclass(frozen=True)
class PrefillPoint:
    at: float
    line_no: int
    num_new_reqs: int
    num_new_tokens: int
    num_cached_tokens: int
    num_running_reqs: int | None
    num_queue_reqs: int | None
    num_pending_tokens: int | None
    token_usage: float | None
    is_full_chunk: bool  # the pass used the whole chunk budget, or left part of a prompt pending


@dataclass(frozen=True)
class DecodeSegment:
    """The decode passes that one `Decode batch` line stands for, between the previous one and this one."""

    start_at: float
    end_at: float
    line_no: int
    num_steps: int
    steps_from_tokens: float | None  # the same count estimated from #token growth, as a check
    num_running_reqs: int
    num_tokens: int | None
    token_usage: float | None
    gen_throughput: float | None
    num_queue_reqs: int | None


@dataclass(frozen=True)
class RetractionPoint:
    at: float
    line_no: int
    num_retracted_reqs: int
    new_token_ratio_before: float
    new_token_ratio_after: float


@dataclass(frozen=True)
class LoadSample:
    """Running and queued requests and KV use as one log line reported them."""

    at: float
    line_no: int
    kind: str  # "prefill" or "decode"
    num_running_reqs: int | None
    num_queue_reqs: int | None
    token_usage: float | None


@dataclass(frozen=True)
class Timeline:
    rank: str
    prefills: list[PrefillPoint]
    decodes: list[DecodeSegment]
    retractions: list[RetractionPoint]
    samples: list[LoadSample]
    decode_log_interval: int
    decode_log_interval_source: str  # "server_args", "tokens" or "default"
    chunk_size: int | None
    chunk_size_source: str  # "server_args", "server_info", "inferred" or "unknown"
    notes: list[str]
    timed: bool = True  # False: the log has no timestamps, and `at` is the line's place in order (no seconds)


Record = PrefillRecord | DecodeRecord | RetractionRecord


def records_of(parsed: ParsedLog, rank: str) -> list[Record]:
    """All scheduler records of one rank, in line order."""
    found = [r for r in (*parsed.prefills, *parsed.decodes, *parsed.retractions) if r.rank == rank]
    return sorted(found, key=lambda record: record.line_no)


def spread_times(records: list[Record], resolution_s: float) -> tuple[dict[int, float], int]:
    """Line number -> time, with lines that share a timestamp spread evenly over that tick.

    k lines stamped t get t, t + w/k, ..., t + (k-1)w/k, where w is one tick (1 s, or 1 ms with
    SGLANG_LOG_MS) but never past the next line's stamp. A stamp earlier than the one before it (clock
    step, concatenated logs) is raised to the one before it; the count is returned.
    """
    times, num_raised, previous = [], 0, float("-inf")
    for record in records:
        num_raised += record.at < previous
        previous = max(previous, record.at)
        times.append(previous)
    spread, start = {}, 0
    while start < len(records):
        end = start
        while end < len(records) and times[end] == times[start]:
            end += 1
        width = min(resolution_s, (times[end] - times[start]) if end < len(records) else resolution_s)
        for offset, index in enumerate(range(start, end)):
            spread[records[index].line_no] = round(times[start] + width * offset / (end - start), 6)
        start = end
    return spread, num_raised


def chunk_size_of(parsed: ParsedLog, prefills: list[PrefillRecord],
                  known: dict | None = None) -> tuple[int | None, str]:
    """chunked_prefill_size from the startup lines, else from `known` settings (a /server_info), else the
    largest #new-token when the lines show a prompt cut at it (`shows_a_cut`); else unknown."""
    for source, found in (("server_args", settings(parsed)), ("server_info", known or {})):
        value = found.get("chunked_prefill_size")
        if isinstance(value, int) and not isinstance(value, bool):
            return (value if value > 0 else None), source
    sizes = Counter(p.num_new_tokens for p in prefills)
    if sizes:
        largest = max(sizes)
        if sizes[largest] >= 2 and largest >= MIN_INFERRED_CHUNK and shows_a_cut(prefills, largest):
            return largest, "inferred"
    return None, "unknown"


def shows_a_cut(prefills: list[PrefillRecord], size: int) -> bool:
    """Whether the Prefill lines of `size` tokens show a prompt cut at `size` (the chunk budget), not whole
    prompts that happen to add up to the same count twice (six 2,560-token prompts, twice).

    A cut shows when a line of that size left prompt tokens pending with nothing queued (the rest of its own
    prompt: `#pending-token`, later 0.5.x); when its requests cannot be whole prompts of one length (the count
    does not divide by `#new-seq`, so unequal prompts filled exactly the budget); or when two such lines of
    one request each follow one another with no line between (one prompt longer than the budget, chunk after
    chunk: `add_chunked_req` carries it on alone).
    """
    lines = [(i, p) for i, p in enumerate(prefills) if p.num_new_tokens == size]
    if any(p.num_pending_tokens and not p.num_queue_reqs for _, p in lines):
        return True
    if any(p.num_new_reqs > 1 and size % p.num_new_reqs for _, p in lines):
        return True
    return any(i + 1 == j and a.num_new_reqs == b.num_new_reqs == 1 and b.line_no == a.line_no + 1
               for (i, a), (j, b) in zip(lines, lines[1:], strict=False))


def is_full_chunk(record: PrefillRecord, chunk_size: int | None) -> bool:
    pending_is_own = record.num_pending_tokens and not record.num_queue_reqs
    return bool(pending_is_own or (chunk_size and record.num_new_tokens >= chunk_size))


def steps_between(before: DecodeRecord, after: DecodeRecord, between: list[Record]) -> float | None:
    """Decode passes between two Decode lines, from #token growth: Δ#token − prefilled tokens, per request.

    None when it cannot be told: a retraction in between, speculative decoding, no #token field, or
    requests finished in between (the count comes out below one).
    """
    if before.num_tokens is None or after.num_tokens is None or after.accept_len is not None:
        return None
    if any(isinstance(r, RetractionRecord) for r in between):
        return None
    prefilled = sum(r.num_new_tokens + r.num_cached_tokens for r in between if isinstance(r, PrefillRecord))
    num_reqs = (before.num_running_reqs + after.num_running_reqs) / 2
    if num_reqs <= 0:
        return None
    steps = round((after.num_tokens - before.num_tokens - prefilled) / num_reqs, 1)
    return steps if steps >= 1 else None  # requests finished in between and freed their KV


def decode_interval(parsed: ParsedLog, clean_estimates: list[float]) -> tuple[int, str]:
    known = settings(parsed).get("decode_log_interval")
    if isinstance(known, int) and not isinstance(known, bool) and known > 0:
        return known, "server_args"
    usable = [e for e in clean_estimates if e >= 1]
    if usable:
        return max(round(median(usable)), 1), "tokens"
    return parsed.default_decode_log_interval, "default"


def decode_pairs(records: list[Record]) -> list[tuple[DecodeRecord | None, DecodeRecord, list[Record]]]:
    """(previous Decode line or None, this Decode line, records in between) for every Decode line."""
    pairs, previous, between = [], None, []
    for record in records:
        if isinstance(record, DecodeRecord):
            pairs.append((previous, record, between))
            previous, between = record, []
        else:
            between.append(record)
    return pairs


def build_decodes(parsed: ParsedLog, records: list[Record], times: dict[int, float]):
    pairs = decode_pairs(records)
    estimates = [steps_between(b, a, mid) if b else None for b, a, mid in pairs]
    clean = [
        e
        for (b, a, mid), e in zip(pairs, estimates, strict=True)
        if e is not None and not mid and b.num_running_reqs == a.num_running_reqs
    ]
    interval, source = decode_interval(parsed, clean)
    first_at = times[records[0].line_no] if records else 0.0
    segments = [
        DecodeSegment(
            start_at=times[before.line_no] if before else first_at,
            end_at=times[after.line_no],
            line_no=after.line_no,
            num_steps=interval,
            steps_from_tokens=estimate,
            num_running_reqs=after.num_running_reqs,
            num_tokens=after.num_tokens,
            token_usage=after.token_usage,
            gen_throughput=after.gen_throughput,
            num_queue_reqs=after.num_queue_reqs,
        )
        for (before, after, _), estimate in zip(pairs, estimates, strict=True)
    ]
    return segments, interval, source


def prefill_point(record: PrefillRecord, at: float, chunk_size: int | None) -> PrefillPoint:
    return PrefillPoint(
        at=at,
        line_no=record.line_no,
        num_new_reqs=record.num_new_reqs,
        num_new_tokens=record.num_new_tokens,
        num_cached_tokens=record.num_cached_tokens,
        num_running_reqs=record.num_running_reqs,
        num_queue_reqs=record.num_queue_reqs,
        num_pending_tokens=record.num_pending_tokens,
        token_usage=record.token_usage,
        is_full_chunk=is_full_chunk(record, chunk_size),
    )


def load_sample(record: PrefillRecord | DecodeRecord, at: float) -> LoadSample:
    kind = "prefill" if isinstance(record, PrefillRecord) else "decode"
    return LoadSample(
        at, record.line_no, kind, record.num_running_reqs, record.num_queue_reqs, record.token_usage
    )


def build_timeline(parsed: ParsedLog, *, rank: str | None = None, known: dict | None = None) -> Timeline:
    """The timeline of one rank (default: TP0 / DP0, see `default_rank`); `known`: settings from a
    /server_info, used where the log states none (the chunk size)."""
    rank = default_rank(parsed) if rank is None else rank
    records = records_of(parsed, rank)
    if parsed.has_times:
        times, num_raised = spread_times(records, parsed.time_resolution_s)
        tick = "second" if parsed.time_resolution_s == 1 else "millisecond"
        clock_note = f"lines stamped in the same {tick} are spread evenly over it, in log order"
    else:  # no stamp on any scheduler line: order is all the log gives
        times, num_raised = {r.line_no: float(i) for i, r in enumerate(records)}, 0
        clock_note = ("the log has no timestamps: the timeline is its lines in order, one step each, "
                      "not seconds; how long anything took cannot be read from it")
    prefills = [r for r in records if isinstance(r, PrefillRecord)]
    chunk_size, chunk_source = chunk_size_of(parsed, prefills, known)
    decodes, interval, interval_source = build_decodes(parsed, records, times)
    notes = [
        clock_note,
        f"each Decode line stands for {interval} decode passes (decode_log_interval, from {interval_source})",
    ]
    if chunk_source == "inferred":
        notes.append(f"chunked_prefill_size {chunk_size} inferred: the largest #new-token, on lines that "
                     "show a prompt cut at it")
    elif chunk_source == "unknown":
        notes.append("chunked_prefill_size unknown: the lines do not show it; paste the server_args line")
    if num_raised:
        notes.append(f"{num_raised} timestamps went backwards and were raised to the one before")
    return Timeline(
        rank=rank,
        prefills=[prefill_point(r, times[r.line_no], chunk_size) for r in prefills],
        decodes=decodes,
        retractions=[
            RetractionPoint(
                times[r.line_no],
                r.line_no,
                r.num_retracted_reqs,
                r.new_token_ratio_before,
                r.new_token_ratio_after,
            )
            for r in records
            if isinstance(r, RetractionRecord)
        ],
        samples=[load_sample(r, times[r.line_no]) for r in records if not isinstance(r, RetractionRecord)],
        decode_log_interval=interval,
        decode_log_interval_source=interval_source,
        chunk_size=chunk_size,
        chunk_size_source=chunk_source,
        notes=notes,
        timed=parsed.has_times,
    )
