"""What changed between the SGLang releases the model follows, as named capabilities.

Scheduling code asks `cfg.caps.<name>`, never which release it is. Each change below says in one line
what changed upstream, checked in the PyPI wheels' source (sglang-scheduler-facts.md marks most "0.5.22+"
or "0.5.23 only"; it does not cover 0.5.21, which schedules as 0.5.20 does but adds
shortest-prefill-first). One difference in the code changes no decision: 0.5.20's `add_one_req` checks
`total_tokens >= rem_total_tokens` before `_lock_node` and again inside it (`_select_prefill_admission`),
0.5.21+ only inside (`_check_prefill_budget`); locking only shrinks the evictable room, so the first check
never refuses what the second admits (tests/test_scheduler.py).
"""

from __future__ import annotations

from dataclasses import dataclass

RELEASES = ("0.5.20", "0.5.21", "0.5.22", "0.5.23")


@dataclass(frozen=True)
class Change:
    name: str
    since: str  # the first release that has it
    what: str


CHANGES = (
    Change("has_shortest_prefill_first", "0.5.21",
           "schedule_policy 'shortest-prefill-first' exists (SchedulePolicy._sort_by_shortest_prefill, "
           "shortest_prefill_chunk_limit)"),
    Change("clears_full_when_idle", "0.5.22",
           "get_new_batch_prefill resets batch_is_full when the running batch is empty "
           "(0.5.20 could keep it set)"),
    Change("latches_full_only_when_busy", "0.5.22",
           "a NO_TOKEN stop latches batch_is_full only if something was admitted or is running "
           "(0.5.20: always)"),
    Change("mixed_checks_decode_mem", "0.5.22",
           "mixed chunk first checks there is KV for the decode rows (check_decode_mem); "
           "0.5.20 mixes unchecked"),
    Change("ignore_eos_reserves_all", "0.5.22",
           "an ignore_eos request reserves its whole remaining budget (new_token_ratio 1.0) in the "
           "admission offset"),
    Change("sees_inflight_finishes", "0.5.22",
           "overlap schedule: a request whose in-flight result finishes it by length leaves the next batch "
           "(_reqs_finishing_inflight), and decode waits for them instead of retracting when KV is short"),
    Change("caps_graph_bs_at_running", "0.5.22",
           "the decode CUDA graph's default max batch is cut to max_running_requests when that is set "
           "(handle_gpu_memory_settings), so it reserves less memory"),
    Change("has_prefill_complete", "0.5.22",
           "PD's decode_allocation_policy 'prefill_complete' exists (0.5.20 only reserves decode KV early)"),
    Change("stops_on_spent_budget", "0.5.23",
           "the admission loop stops at its top once budget_state() is OTHER, before the first candidate "
           "(the continuing chunk or the mixed decode rows spent it); 0.5.22 tries the first one"),
    Change("chunk_holds_row", "0.5.23",
           "the admission loop adds back the request row the continuing chunked request already holds"),
    Change("defer_has_min_bs", "0.5.23",
           "prefill_decode_interval_min_bs: below that running batch, the prefill deferral is cancelled"),
    Change("mla_prefill_graph_follows_chunk", "0.5.23",
           "the MLA prefill CUDA graph's default max tokens is min(8192, chunked_prefill_size) "
           "(arg_groups/memory_hook.py handle_gpu_memory_settings); 0.5.20-0.5.22 capture up to 2048"),
    Change("prebuilt_copies_async", "0.5.23",
           "PD decode: prepare_for_prebuilt copies with async_h2d; before, its blocking copies (made before "
           "_get_new_prebuilt_batch's wait_stream) waited at the barrier of the forward in flight "
           "(_apply_war_barrier): its end when it ran eagerly, so that merge lost its overlap"),
)


@dataclass(frozen=True)
class Capabilities:
    """One flag per entry of `CHANGES`: True when the release has that behaviour."""

    has_shortest_prefill_first: bool
    clears_full_when_idle: bool
    latches_full_only_when_busy: bool
    mixed_checks_decode_mem: bool
    ignore_eos_reserves_all: bool
    sees_inflight_finishes: bool
    caps_graph_bs_at_running: bool
    has_prefill_complete: bool
    stops_on_spent_budget: bool
    chunk_holds_row: bool
    defer_has_min_bs: bool
    mla_prefill_graph_follows_chunk: bool
    prebuilt_copies_async: bool


def _order(release: str) -> tuple[int, ...]:
    return tuple(int(part) for part in release.split("."))


def first_release(name: str) -> str:
    """The first release with the named behaviour."""
    return next(c.since for c in CHANGES if c.name == name)


def capabilities(release: str) -> Capabilities:
    """The flags of one release (a release the model knows; config validation guarantees it)."""
    return Capabilities(**{c.name: _order(release) >= _order(c.since) for c in CHANGES})

