"""The requests a log implies, for a simulation: engine settings it states, and (arrival, prompt) guesses.

Every guess is listed in docs/logs-and-traces.md §6.
"""

from bisect import bisect_left
from itertools import accumulate

from engine_model.config import EngineConfig
from engine_model.logs.parse import DecodeRecord, ParsedLog, PrefillRecord, default_rank, settings
from engine_model.logs.startup import SETTING_KEYS
from engine_model.logs.timeline import chunk_size_of, is_full_chunk, records_of

MAX_OBSERVED_REQUESTS = 100_000
# What a scenario accepts, except dp_size: a log's lines are one DP rank's, and its replay runs that rank's
# requests on one engine (engine_model/logs/deployment.py says so), not split again over dp_size engines.
HINT_KEYS = tuple(key for key in SETTING_KEYS if key in EngineConfig.model_fields and key != "dp_size")


def scenario_hints(parsed: ParsedLog, *, rank: str | None = None) -> dict:
    """Engine overrides read from the log, plus `observed_requests`: estimated (arrival_at, prompt_len)."""
    found = settings(parsed)
    hints = {key: found[key] for key in HINT_KEYS if key in found and found[key] is not None}
    rank = default_rank(parsed) if rank is None else rank
    lines = [r for r in records_of(parsed, rank) if isinstance(r, PrefillRecord | DecodeRecord)]
    chunk_size, _ = chunk_size_of(parsed, [r for r in lines if isinstance(r, PrefillRecord)])
    hints["observed_requests"] = observed_requests(lines, chunk_size)
    return hints


def num_observed(parsed: ParsedLog) -> int:
    """How many requests the log's Prefill lines introduce (reading stops at MAX_OBSERVED_REQUESTS)."""
    return len(scenario_hints(parsed)["observed_requests"])


def observed_requests(lines: list[PrefillRecord | DecodeRecord], chunk_size: int | None
                      ) -> list[tuple[float, int]]:
    """Guess (arrival_at, prompt_len) per request from Prefill lines.

    A line with S new requests and N new tokens gives S prompts of N / S tokens: the cached tokens are left
    out, because SGLang did not compute them and the model has no cache for these requests. A request
    arrives at its line's time, or earlier when a line before it said it was already queued
    (`arrival_bounds`). When a line used a full chunk, its last request continues on the next line; with
    an empty queue, #pending-token is that request's remainder and fixes its length. A time earlier than
    the line before (clock step, concatenated logs) is raised to it, as in the timeline. Stops after
    MAX_OBSERVED_REQUESTS requests: memory never grows with a number in the log.
    """
    requests, open_req = [], None  # [arrival_at, tokens so far, expected total or None, admission index]
    bounds: list[tuple[float, int]] = []  # (time, requests admitted or queued by then)
    at, num_admitted = 0.0, 0
    for line in lines:
        at = max(at, line.at)
        is_new = isinstance(line, PrefillRecord) and line.num_new_reqs > 0
        if is_new and len(requests) < MAX_OBSERVED_REQUESTS:
            num_admitted, open_req = read_prefill(line, at, chunk_size, requests, open_req, num_admitted)
        bounds.append((at, num_admitted + (line.num_queue_reqs or 0)))
    if open_req is not None:
        requests.append(open_req)
    arrived_by = arrival_bounds(bounds)
    return sorted(close(r, arrived_by) for r in requests)[:MAX_OBSERVED_REQUESTS]


def read_prefill(line: PrefillRecord, at: float, chunk_size: int | None, requests: list,
                 open_req: list | None, num_admitted: int) -> tuple[int, list | None]:
    """One Prefill line's requests into `requests`; returns the admission count and the request left open."""
    num, share = line.num_new_reqs, line.num_new_tokens / line.num_new_reqs
    starts = 0
    if open_req is not None:
        open_req[1] += share
        starts = 1
    num_parts = min(num - starts, MAX_OBSERVED_REQUESTS - len(requests) + 1)  # +1: one may stay open
    parts = [[at, share, None, num_admitted + i] for i in range(num_parts)]
    if open_req is not None and (parts or not is_full_chunk(line, chunk_size)):
        requests.append(open_req)
        open_req = None
    if is_full_chunk(line, chunk_size) and (parts or open_req is not None):
        open_req = open_req or parts.pop()
        if line.num_pending_tokens and not line.num_queue_reqs:
            open_req[2] = open_req[1] + line.num_pending_tokens
    requests.extend(parts)
    return num_admitted + num - starts, open_req


def arrival_bounds(bounds: list[tuple[float, int]]):
    """index -> the earliest time by which the index-th admitted request (0-based) had certainly arrived.

    At a line of time t that has admitted A requests so far and reports Q queued, the next Q to be admitted
    were waiting at t (SGLang admits in queue order under fcfs). Under the overlap schedule `#queue-req` is
    sampled after the next batch was picked, which only makes the bound looser, never wrong.
    """
    times = [t for t, _ in bounds]
    reach = list(accumulate((n for _, n in bounds), max))

    def arrived_by(index: int) -> float | None:
        found = bisect_left(reach, index + 1)
        return times[found] if found < len(times) else None

    return arrived_by


def close(request: list, arrived_by) -> tuple[float, int]:
    arrival_at, tokens, expected, index = request
    bound = arrived_by(index)
    arrival = arrival_at if bound is None else min(arrival_at, bound)
    return (arrival, max(round(expected if expected is not None else tokens), 1))
