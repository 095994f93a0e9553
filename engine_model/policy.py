"""Scheduling policies as small functions over explicit budgets, each named after the SGLang rule it mirrors.

- `NewTokenRatio`: `NewTokenRatioTracker` (scheduler_components/new_token_ratio_tracker.py).
- `PrefillAdder`: `PrefillAdder` + `PrefillBudget` (schedule_policy.py, mem_cache/prefill_budget.py).
- `retraction_order`, `ratio_after_retraction`: `ScheduleBatch.retract_decode` (schedule_batch.py).
- `sort_shortest_prefill_first`, `shortest_prefill_chunk_limit`: `SchedulePolicy` (schedule_policy.py;
  0.5.21+).
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum

from engine_model.core import Request
from engine_model.resolve import Resolved
from engine_model.rules import mirrors

CLIP_MAX_NEW_TOKENS = 4096  # SGLANG_CLIP_MAX_NEW_TOKENS_ESTIMATION
RETRACT_DECODE_STEPS = 20  # SGLANG_RETRACT_DECODE_STEPS


class NewTokenRatio:
    """The guess of how much of its remaining budget a running request will still use."""

    def __init__(self, cfg: Resolved):
        self.init, self.min, self.decay = cfg.ratio_init, cfg.ratio_min, cfg.ratio_decay
        self.value = self.init

    def decay_step(self) -> None:
        """Once per scheduled decode step that retracts nothing (`update_running_batch`)."""
        self.value = max(self.value - self.decay, self.min)

    def reset(self) -> None:
        """Only when the server is fully idle (`Scheduler.on_idle`)."""
        self.value = self.init


def ratio_after_retraction(survivors: list[Request]) -> float:
    """`estimate_new_token_ratio_after_retract`: over the requests that stay, max_new unclipped."""
    generated = sum(r.num_generated for r in survivors)
    budget = sum(r.max_new_tokens for r in survivors)
    return min(1.0, (generated + RETRACT_DECODE_STEPS * len(survivors)) / (budget + 1))


def retraction_order(running: list[Request]) -> list[Request]:
    """Who goes first: fewest generated tokens, ties to the longest prompt (`_get_decode_retraction_order`).

    SGLang sorts by (len(output_ids), -len(origin_input_ids)) descending and pops from the end; the
    returned list is in pop order. Python's sort is stable, as SGLang's is, so further ties keep batch order.
    """
    ranked = sorted(running, key=lambda r: (r.num_generated, -r.prompt_len), reverse=True)
    return ranked[::-1]


def ceil_page(tokens: int, page_size: int) -> int:
    return -(-tokens // page_size) * page_size


class Verdict(Enum):
    """`AddReqResult`: why the admission loop continues or stops."""

    CONTINUE = "continue"
    NO_TOKEN = "no_token"  # the memory budget is spent
    OTHER = "other"  # the token (compute) budget or request cap is spent


class PrefillAdder:
    """Builds one prefill batch against SGLang's budgets (sglang-scheduler-facts.md section 2.3).

    rem_total  = pool - (mixed rows + sum over running of min(remaining max_new, 4096) x ratio
                 + sum over admitted of (extend + page + decode charge))   # what stays free after all finish
    cur_rem    = pool - (mixed rows + sum over admitted of (extend + page))  # the allocation right now
    rem_input  = max_prefill_tokens - mixed rows - sum of admitted extends
    rem_chunk  = chunked_prefill_size - mixed rows - sum of admitted extends  (None: chunking off)
    """

    def __init__(self, cfg: Resolved, *, pool: int, running: list[Request], ratio: float, num_mixed: int):
        self.cfg = cfg
        self.pool = pool
        self.rem_input = cfg.max_prefill_tokens - num_mixed
        self.rem_chunk = None if cfg.chunked_prefill_size is None else cfg.chunked_prefill_size - num_mixed
        self.total_offset = num_mixed + self._reservations(running, ratio)
        self.current_offset = num_mixed
        self.admitted: list[tuple[Request, int]] = []  # (request, extend) in batch order
        self.new_chunked: Request | None = None
        self.no_second_chunk = False  # shortest-prefill-first beside a still-cut chunk: cut no other

    def _reservations(self, running: list[Request], ratio: float) -> float:
        """`_get_running_request_total_token_offset`: each running request's min(remaining max_new, 4096) x
        ratio, summed in batch order; an ignore_eos request may reserve its whole budget (ratio 1)."""
        whole = self.cfg.caps.ignore_eos_reserves_all
        return sum([min(max(r.max_new_tokens - r.num_generated, 0), CLIP_MAX_NEW_TOKENS)
                    * (1.0 if whole and r.ignore_eos else ratio) for r in running])

    @property
    def rem_total(self) -> float:
        return self.pool - self.total_offset

    @property
    def cur_rem(self) -> float:
        return self.pool - self.current_offset

    def state(self) -> Verdict:
        """`budget_state`: memory first, then the token budgets."""
        if self.rem_total <= 0 or self.cur_rem <= 0:
            return Verdict.NO_TOKEN
        if self.rem_input <= 0 or (self.rem_chunk is not None and self.rem_chunk <= 0):
            return Verdict.OTHER
        return Verdict.CONTINUE

    def _charge(self, req: Request, extend: int, decode_charge: int, locked: int = 0) -> None:
        """`_update_prefill_budget`; a newly locked cached prefix leaves the evictable (free) pool too."""
        paged = ceil_page(extend, self.cfg.page_size)
        self.total_offset += paged + self.cfg.page_size + decode_charge + locked
        self.current_offset += paged + self.cfg.page_size + locked
        self.rem_input -= paged
        if self.rem_chunk is not None:
            self.rem_chunk -= paged
        self.admitted.append((req, extend))

    @mirrors("add_chunked_req")
    def add_chunked(self, req: Request, limit: int | None = None) -> bool:
        """`add_chunked_req`: the pending chunk goes first and always progresses, within `limit`
        (`chunked_req_limit`: shortest-prefill-first's cap) if one is set. True if still truncated."""
        room = min(self.rem_chunk, int(self.rem_total)) if self.rem_chunk is not None else int(self.rem_total)
        if room <= 0:
            room = self.rem_chunk if self.rem_chunk is not None else req.num_uncomputed
        if limit is not None:
            room = min(room, limit)
        extend = min(req.num_uncomputed, room)
        truncated = extend < req.num_uncomputed
        self._charge(req, extend, 0 if truncated else min(req.max_new_tokens, CLIP_MAX_NEW_TOKENS))
        return truncated

    @mirrors("PrefillAdder", "add_one_req")
    def add_one(self, req: Request, locked: int = 0) -> Verdict:
        """`add_one_req`: the whole remaining prompt and its clipped budget must fit, even if it will be
        chunked.

        `locked`: cached prefix tokens this request's match takes out of the evictable pool (`_lock_node`).
        The KV check is made with the prefix locked, as in every release: 0.5.20 also checks once before
        locking, which refuses nothing the locked check admits."""
        if self.cfg.prefill_max_requests is not None and len(self.admitted) >= self.cfg.prefill_max_requests:
            return Verdict.OTHER
        extend = req.num_uncomputed
        total_tokens = extend + min(req.remaining_max_new, CLIP_MAX_NEW_TOKENS) + self.cfg.page_size
        if total_tokens >= self.rem_total - locked:
            return Verdict.NO_TOKEN
        paged = ceil_page(extend, self.cfg.page_size)
        if self.rem_chunk is None and self.admitted and paged >= self.rem_input:
            return Verdict.OTHER
        if self.rem_chunk is None or paged <= self.rem_chunk:
            # admitted whole: charged min(max_new, 4096), not the remaining budget the check used
            # (`_select_prefill_admission` -> `_commit_prefill_admission`), so a retracted request
            # coming back is charged its whole reply again
            self._charge(req, extend, min(req.max_new_tokens, CLIP_MAX_NEW_TOKENS), locked)
            return self.state()
        if self.no_second_chunk:
            return Verdict.OTHER  # "Only one unfinished chunked request can be tracked"
        page = self.cfg.page_size
        truncated = self.rem_chunk // page * page
        end = (req.kv_len + truncated) // page * page
        truncated = end - req.kv_len
        if truncated <= 0:
            return Verdict.OTHER
        self.new_chunked = req
        self._charge(req, truncated, 0, locked)
        return self.state()

    def fits_empty_pool(self, req: Request) -> bool:
        """Could this request ever be admitted, with nothing running and the whole pool free?"""
        total_tokens = (req.num_uncomputed + min(req.remaining_max_new, CLIP_MAX_NEW_TOKENS)
                        + self.cfg.page_size)
        return total_tokens < self.cfg.max_total_tokens


def num_decode_slots_needed(running: list[Request], page_size: int) -> int:
    """`check_decode_mem`: a new page for every request whose KV ends on a page boundary."""
    if page_size == 1:
        return len(running)
    return sum(page_size for r in running if r.kv_len % page_size == 0)


def shortest_prefill_work(req: Request, num_cached: int) -> int:
    """`_shortest_prefill_work`: the tokens this request still has to prefill (prompt plus any reply kept
    through a retraction, less its cached prefix), at least 1."""
    return max(1, req.fill_len - num_cached)


@mirrors("_sort_by_shortest_prefill")
def sort_shortest_prefill_first(waiting: list[Request], cached: Callable[[Request], int],
                                entered: dict[str, int], deferred: set[int]) -> None:
    """`_sort_by_shortest_prefill`: deferred requests last (`_compute_prefix_matches`), then the least
    uncached work first, ties by when the request entered the queue (`wait_queue_entry_time`; a retracted
    request re-enters)."""
    waiting.sort(key=lambda r: (id(r) in deferred, shortest_prefill_work(r, cached(r)), entered[r.rid]))


@mirrors("shortest_prefill_chunk_limit")
def shortest_prefill_chunk_limit(chunked: Request, waiting: list[Request], budget: int, page_size: int,
                                 cached: Callable[[Request], int]) -> int | None:
    """`SchedulePolicy.shortest_prefill_chunk_limit`: cap the continuing chunk so the shorter waiting
    requests (sorted first) join this pass. From the queue's head, each request whose whole work is less
    than the chunk's remaining prompt reserves its page-rounded work, while the reservations leave a page
    of the budget; the chunk gets the rest, page-aligned. None: no cap (nothing shorter waits, or the
    budget is under two pages)."""
    if budget < 2 * page_size:
        return None
    remaining, reserved = chunked.num_uncomputed, 0
    for req in waiting:
        work = shortest_prefill_work(req, cached(req))
        charge = ceil_page(work, page_size)
        if work >= remaining or reserved + charge > budget - page_size:
            break
        reserved += charge
    return (budget - reserved) // page_size * page_size if reserved else None
