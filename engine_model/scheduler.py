"""One SGLang server, one iteration at a time: schedule -> cost -> apply -> record.

`Scheduler.step()` mirrors one turn of `event_loop_normal`, or of `event_loop_overlap` when the overlap
schedule is on (SGLang's default): there a pass's results land only after the next pass was scheduled and
launched, so its finished requests still hold their KV and their batch row one iteration longer.
`get_next_batch_to_run` picks
a prefill, mixed or decode batch (or nothing), the cost model prices the forward pass, and the result
is applied (tokens stamped at the end of the pass, finished requests release their KV).
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass, field
from operator import attrgetter

from engine_model import speculative, verify
from engine_model.core import Iteration, PassKind, Request, RequestState, Retraction, Row, count
from engine_model.cost import PassShape, attn_pairs
from engine_model.policy import (
    CLIP_MAX_NEW_TOKENS,
    RETRACT_DECODE_STEPS,
    NewTokenRatio,
    PrefillAdder,
    Verdict,
    ceil_page,
    num_decode_slots_needed,
    ratio_after_retraction,
    retraction_order,
    shortest_prefill_chunk_limit,
    sort_shortest_prefill_first,
)
from engine_model.prefix import CACHE_AWARE, PrefixCache
from engine_model.priority import (
    PRIORITY_DISABLED,
    WAITING_TIMEOUT,
    Preemption,
    choose_preempted,
    priority_of,
    priority_retraction_order,
    queue_limit_victim,
    running_offset,
    sort_by_priority,
    timed_out,
)
from engine_model.resolve import Resolved
from engine_model.rules import mirrors

KV_LEN, RID = attrgetter("kv_len"), attrgetter("rid")
FINISHED, RUNNING = RequestState.FINISHED, RequestState.RUNNING
EXTEND_KINDS = frozenset((PassKind.PREFILL, PassKind.MIXED))
DECODE_MIRRORS = "Scheduler.get_next_batch_to_run -> update_running_batch"

@mirrors("handle_generate_request", "init_req_max_new_tokens")
def intake(req: Request, cfg: Resolved) -> str:
    """Before any queue: a prompt at or above max_req_input_len is refused (`validate_input_length`), and
    `init_req_max_new_tokens` clips max_new_tokens so the prompt and the reply fit max_req_len and an empty
    KV pool (pool - page-rounded prompt - page - 1, `max_new_tokens_for_memory`): every request can then be
    admitted once the pool is empty. Returns why it is refused, or ""."""
    if req.prompt_len >= cfg.max_req_input_len:
        return f"prompt of {req.prompt_len} tokens >= max_req_input_len {cfg.max_req_input_len}"
    page = cfg.page_size
    empty_pool = cfg.max_total_tokens - ceil_page(req.prompt_len, page) - page - 1
    req.max_new_tokens = min(req.max_new_tokens, cfg.max_req_len - req.prompt_len - 1, empty_pool)
    if req.max_new_tokens < 1:  # SGLang would run it as a prefill-only request and return no token
        return (f"prompt of {req.prompt_len} tokens leaves no KV slot for a reply in a pool of "
                f"{cfg.max_total_tokens} (page {page})")
    if req.num_generated_before >= req.max_new_tokens:  # ours: a mid-reply stream (SGLang has none)
        return (f"a reply already {req.num_generated_before} tokens long, but the prompt of "
                f"{req.prompt_len} tokens leaves room for {req.max_new_tokens} in a pool of "
                f"{cfg.max_total_tokens} (page {page})")
    req.output_len = min(req.output_len, req.max_new_tokens)
    return ""


@dataclass(slots=True)
class Plan:
    """The batch one iteration runs, and why."""

    kind: PassKind
    prefill: list[tuple[Request, int]] = field(default_factory=list)  # (request, extend) in batch order
    decode: list[Request] = field(default_factory=list)
    reason: str = ""
    mirrors: str = ""
    num_running: int = 0
    retraction: Retraction | None = None
    decode_past_kv: int = 0  # KV before this pass's decode slot, summed over the decode rows

    def shape(self) -> PassShape:
        num_decode = len(self.decode)
        past_decode = self.decode_past_kv
        if not self.prefill:
            return PassShape(num_decode, num_decode, num_decode, past_decode, past_decode + num_decode)
        new_prefill = sum(extend for _, extend in self.prefill)
        past_prefill = sum(r.kv_len - extend for r, extend in self.prefill)
        pairs = (sum(attn_pairs(e, r.kv_len - e) for r, e in self.prefill)
                 + past_decode + num_decode)
        return PassShape(
            num_rows=len(self.prefill) + num_decode,
            num_decode_rows=num_decode,
            new_tokens=new_prefill + num_decode,
            past_kv_sum=past_prefill + past_decode,
            attn_pairs=pairs,
        )


@functools.lru_cache(maxsize=256)
def decode_reason(why_not_prefill: str) -> str:
    """Why a decode pass runs (one string per reason prefill was not formed, built once)."""
    why = why_not_prefill or "none could be formed"
    return f"decode: every running request gets one token; no prefill because {why}"


class Scheduler:
    def __init__(self, cfg: Resolved, cost, rng: random.Random):
        self.cfg = cfg
        self.cost = cost
        self.rng = rng
        self.now = 0.0
        self.waiting: list[Request] = []
        self.running: list[Request] = []  # the running (decode) batch, in batch order
        self.chunked: Request | None = None  # SGLang's chunked_req
        self.last_extend: list[Request] = []  # the last prefill/mixed batch, merged next iteration
        self.batch_is_full = False
        self.ratio = NewTokenRatio(cfg)
        self.countdown = 0  # prefill_decode_interval
        self.kv_used = 0
        self.prefix = PrefixCache(cfg.page_size, enabled=not cfg.disable_radix_cache)
        self.iterations: list[Iteration] = []
        self.retractions: list[Retraction] = []
        self.finished: list[Request] = []  # in finishing order
        self.rejected: list[Request] = []
        self.done: list[Request] = []  # finished or rejected, in that order of events
        self.in_flight: list[Request] = []  # overlap: finished by the last pass, its result not yet landed
        self.landed: list[Request] = []  # overlap: the requests whose result landed in this iteration
        self.crash: str | None = None  # why the server stopped: SGLang's allocator raised out of memory
        self.entered: dict[str, int] = {}  # rid -> when it last entered the queue, as a count
        self.num_entered = 0
        self.chunk_cap: int | None = None  # shortest-prefill-first's cap on this pass's continuing chunk
        self.spec = cfg.speculative  # speculative decoding (engine_model/speculative.py), or None
        self.spec_extra: dict[str, int] = {}  # rid -> KV slots allocated beyond its committed tokens
        self.preemptions: list[Preemption] = []  # priority scheduling (engine_model/priority.py)
        self.preempted: list[Request] = []  # this pass's preempt_list, re-queued once admission is done
        self.to_stash: Request | None = None  # the chunked request whose last chunk is not in the tree yet
        # overlap: prefilled requests whose result has not landed, and their prefill's end (`extend_end`)
        self.to_checkpoint: list[tuple[Request, int]] = []

    # -- arrivals ---------------------------------------------------------------------------------
    def arrive(self, req: Request) -> None:
        """A request reaches the scheduler (`_add_request_to_queue`, after `intake`'s length checks)."""
        rules = self.cfg.queueing
        if rules.enabled:
            priority_of(req, rules)
        elif rules.abort_when_disabled and req.priority is not None:  # _set_or_validate_priority
            return self._reject(req, PRIORITY_DISABLED)
        if req.is_mid_reply:
            return self._start_mid_reply(req)
        self._enqueue(req)

    def _enqueue(self, req: Request) -> None:
        """`_add_request_to_queue`: to the back of the waiting queue (`wait_queue_entry_time` stamped), unless
        the queue is full (`_abort_on_queued_limit`, for new, retracted and preempted requests alike)."""
        if self.cfg.queueing.max_queued is not None and self._queue_full(req):  # None in PD (ignored there)
            return
        req.state, req.queued_at = RequestState.WAITING, self.now
        self.entered[req.rid] = self.num_entered = self.num_entered + 1
        self.waiting.append(req)

    def _queue_full(self, req: Request) -> bool:
        """`_abort_on_queued_limit`: True if `req` is aborted; it may abort a waiting request instead."""
        aborted, why = queue_limit_victim(req, self.waiting, self.cfg.queueing, self.entered)
        if aborted is None:
            return False
        if aborted is not req:
            self.waiting.remove(aborted)
        self._reject(aborted, why)
        return aborted is req

    def _start_mid_reply(self, req: Request) -> None:
        """Our construct, not SGLang's: a request admitted before the run began joins the running batch.
        It may not take the KV that the chunked request's admission already counted on (`add_one_req`
        checked its whole prompt; `add_chunked_req` then allocates each chunk without a memory check)."""
        kv = ceil_page(req.fill_len - 1, self.cfg.page_size)
        if kv + self._owed_to_chunked() > self.kv_free or len(self.running) >= self.cfg.max_running_requests:
            return self._reject(req, "a mid-reply request does not fit the KV pool (less the chunked "
                                     "request's remaining prompt) or the running-request cap")
        req.state, req.kv_len, req.first_scheduled_at = RequestState.RUNNING, req.fill_len - 1, self.now
        self.kv_used += kv
        self.running.append(req)

    def _owed_to_chunked(self) -> int:
        """KV slots the chunked request's remaining chunks will allocate."""
        if self.chunked is None:
            return 0
        page = self.cfg.page_size
        return ceil_page(self.chunked.fill_len, page) - ceil_page(self.chunked.kv_len, page)

    def _reject(self, req: Request, reason: str) -> None:
        req.reject(reason, self.now)
        self.rejected.append(req)
        self.done.append(req)

    @property
    def has_work(self) -> bool:
        return self.crash is None and bool(self.waiting or self.running or self.chunked or self.last_extend)

    @property
    def kv_free(self) -> int:
        return self.cfg.max_total_tokens - self.kv_used

    # -- one iteration ----------------------------------------------------------------------------
    def step(self) -> Iteration:
        """schedule -> cost -> apply -> record (with the overlap schedule, the last pass's results land
        between this pass's launch and its end)."""
        plan = self.schedule()
        if plan.kind is PassKind.IDLE:
            view = self.launch_view(plan)
            self._land()
            if not self.has_work:
                self.ratio.reset()  # Scheduler.on_idle, is_fully_idle
            return self.record(plan, view, self.now)
        end = self.now + self.pass_seconds(plan)
        view = self.launch_view(plan)
        self._land()
        self.apply(plan, end)
        record = self.record(plan, view, end)
        self.now = end
        return record

    def decode_streak(self, horizon: float, max_passes: int) -> list[Iteration]:
        """The decode passes `step()` would run next while nothing can change, run in one go: each pass
        recorded exactly as `step()` records it, each request's tokens appended once for the streak.
        Passes start before `horizon` (the next arrival), at most `max_passes`; the pass that changes
        something is left to `step()`."""
        num_passes = min(max_passes, self._num_quiet_passes())
        if num_passes <= 0 or self.now >= horizon:
            return []
        self._land()  # nothing in flight: it only forgets what landed last time, as step() would
        rows, n = self.running, len(self.running)
        reason, rids = decode_reason(self._prefill_plan()[1]), tuple(map(RID, rows))
        past, now, ends = sum(map(KV_LEN, rows)), self.now, []
        first, capacity, num_waiting = len(self.iterations), self.cfg.max_total_tokens, len(self.waiting)
        while len(ends) < num_passes and now < horizon:
            self.ratio.decay_step()
            self.prefix.make_room(n, self.kv_free)  # check_decode_mem, as step() would
            self.kv_used += n
            end = now + self.cost.seconds(PassShape(n, n, n, past, past + n))
            self.iterations.append(Iteration(
                index=first + len(ends), kind=PassKind.DECODE, start_at=now, end_at=end, prefill_rows=(),
                decode_rids=rids, decode_past_kv=past, reason=reason, mirrors=DECODE_MIRRORS,
                chunked_rid=None, finished_rids=(), kv_used=self.kv_used, kv_capacity=capacity,
                num_waiting=num_waiting, num_running=n, new_token_ratio=self.ratio.value))
            ends.append(end)
            past, now = past + n, end
        for req in rows:
            req.kv_len += len(ends)
            req.num_generated += len(ends)
            req.token_times.extend(ends)
        self.now = now
        return self.iterations[first:]

    def _num_quiet_passes(self) -> int:
        """How many decode passes from now change nothing but the tokens: nothing to merge or land, no
        prefill to try (the queue is empty or batch_is_full is latched, no chunked request, no interval
        countdown), a KV slot for every row of every pass (page size 1), no request finishing."""
        rows = self.running
        if (self.last_extend or self.in_flight or self.to_checkpoint or self.chunked is not None
                or self.countdown or not rows or self.spec is not None or self.cfg.page_size != 1
                or (self.waiting and not self.batch_is_full) or self.crash
                or (self.waiting and self.cfg.queueing.every_pass)):
            return 0
        return min(self.kv_free // len(rows), min(r.output_len - r.num_generated for r in rows) - 1)

    @mirrors("get_next_batch_to_run")
    def schedule(self) -> Plan:
        """`Scheduler.get_next_batch_to_run` (after `_poll_timeout_aborts` where a waiting timeout is set)."""
        if self.cfg.queueing.waiting_timeout_s is not None and self.waiting:
            self._abort_timed_out()
        self._stash_chunked()
        self._merge_last_extend()
        if self.countdown > 0 and self._defer_prefill():
            rounds = count(self.countdown + 1, "decode round")
            plan, why_not = None, f"prefill_decode_interval: {rounds} left before prefill"
        else:
            plan, why_not = self._prefill_plan()
        if plan is None:
            plan = self._decode_plan(why_not)
        if plan.kind in EXTEND_KINDS:
            self.countdown = self.cfg.prefill_decode_interval  # _arm_prefill_decode_interval
        return plan

    def _abort_timed_out(self) -> None:
        """`_poll_timeout_aborts` -> `abort_request`: a request waiting past SGLANG_REQ_WAITING_TIMEOUT is
        taken out of the queue and aborted (503, "Request waiting timeout reached.")."""
        for req in timed_out(self.waiting, self.now, self.cfg.queueing):
            self.waiting.remove(req)
            self._reject(req, WAITING_TIMEOUT)

    @mirrors("stash_chunked_request")
    def _stash_chunked(self) -> None:
        """`stash_chunked_request`: the chunked request's prefilled part goes into the radix cache."""
        if self.to_stash is not None:
            self.kv_used += self.prefix.checkpoint(self.to_stash)
            self.to_stash = None

    def _merge_last_extend(self) -> None:
        """get_next_batch_to_run step 3: the last prefill batch joins the running batch.

        When the running batch is empty (always after a mixed pass, which emptied it), the last batch
        *becomes* the running batch, and its `batch_is_full` flag, never set, replaces the latched one.
        """
        if self.last_extend:
            if not self.running:
                self.batch_is_full = False
            self.running.extend(self.last_extend)
            self.last_extend = []

    @mirrors("_should_defer_prefill")
    def _defer_prefill(self) -> bool:
        """`_should_defer_prefill`; cancelled while the batch is below prefill_decode_interval_min_bs (if it
        exists)."""
        if self.cfg.caps.defer_has_min_bs and len(self.running) < self.cfg.prefill_decode_interval_min_bs:
            self.countdown = 0
            return False
        self.countdown -= 1
        return True

    # -- prefill ----------------------------------------------------------------------------------
    @mirrors("get_new_batch_prefill", "_get_new_batch_prefill_raw")
    def _prefill_plan(self) -> tuple[Plan | None, str]:
        """`get_new_batch_prefill` / `_get_new_batch_prefill_raw` with `PrefillAdder`."""
        cfg = self.cfg
        self._stash_chunked()
        if cfg.queueing.preemption or (cfg.caps.clears_full_when_idle and not self.running):
            self.batch_is_full = False  # priority preemption: every pass tries again
        if self.chunked is None:
            if not self.waiting:
                return None, "the waiting queue is empty"
            if self.batch_is_full:
                return None, ("the batch was marked full (batch_is_full) and stays full until a running "
                              "request leaves: nothing new is tried")
        num_allocatable = self._num_allocatable()
        if num_allocatable <= 0 and self.chunked is None and not cfg.queueing.preemption:
            self.batch_is_full = True
            return None, f"max_running_requests ({cfg.max_running_requests}) are running"
        self._sort_waiting()
        num_mixed = len(self.running) if cfg.is_mixed_chunk else 0
        adder = PrefillAdder(cfg, pool=self.kv_free, running=self.running, ratio=self.ratio.value,
                             num_mixed=num_mixed)
        still_chunked = self._add_chunked(adder) if self.chunked else False
        stop, num_walked = self._admit_waiting(adder, num_allocatable)
        del self.waiting[:num_walked]  # admitted or rejected: always a prefix of the queue (head-of-line)
        preempted = self._requeue_preempted()
        if not adder.admitted:
            return None, stop
        plan = self._build_prefill(adder, still_chunked, stop)
        if preempted and plan.kind is not PassKind.IDLE:
            plan.reason += "; " + preempted
            preempting = "PrefillAdder -> PrefillAdder.preempt_to_schedule"
            plan.mirrors = plan.mirrors.replace("PrefillAdder", preempting, 1)
        return plan, ""

    def _num_allocatable(self) -> int:
        """`get_num_allocatable_reqs`: below the running cap and within the free request slots
        (`req_to_token_pool`, sized max_running_requests), where the chunked request holds one."""
        num_free_slots = self.cfg.max_running_requests - len(self.running) - (self.chunked is not None)
        return min(self.cfg.max_running_requests - len(self.running), num_free_slots)

    @mirrors("calc_priority")
    def _sort_waiting(self) -> None:
        """`SchedulePolicy.calc_priority`, on every prefill attempt: fcfs keeps list order; lof puts the
        longest max_new_tokens first; random shuffles; the cache-aware policies match every waiting request
        against the radix cache first: lpm puts the longest cached prefix first, dfs-weight walks the tree,
        shortest-prefill-first puts the least uncached prefill work first."""
        policy = self.prefix.active_policy(self.cfg.schedule_policy, len(self.waiting))
        if self.cfg.queueing.enabled:  # start-up allows only fcfs and lof with it
            sort_by_priority(self.waiting, self.cfg.queueing, policy, self.entered)
            return
        if policy in CACHE_AWARE:
            deferred = self.prefix.prefix_matches(self.waiting)
            if policy == "lpm":
                self.prefix.sort_longest_prefix(self.waiting, deferred)
            elif policy == "dfs-weight":
                self.prefix.sort_dfs_weight(self.waiting)
            else:
                for req in self.waiting:  # a PD prefill rank queues without _enqueue: in list order
                    if req.rid not in self.entered:
                        self.entered[req.rid] = self.num_entered = self.num_entered + 1
                sort_shortest_prefill_first(self.waiting, self.prefix.num_matched, self.entered, deferred)
            return
        if policy == "lof":
            self.waiting.sort(key=lambda r: -r.max_new_tokens)
        elif policy == "random":
            self.rng.shuffle(self.waiting)
        self.prefix.touch_waiting(self.waiting)

    def _add_chunked(self, adder: PrefillAdder) -> bool:
        """The continuing chunk first (`add_chunked_req`). Under shortest-prefill-first its chunk is capped
        to leave room for the shorter waiting requests (`shortest_prefill_chunk_limit`), and while it stays
        cut no other request may be cut. True if it is still cut after this pass."""
        self.chunk_cap = None
        if self.cfg.schedule_policy != "shortest-prefill-first":
            return adder.add_chunked(self.chunked)
        limit = shortest_prefill_chunk_limit(self.chunked, self.waiting, adder.rem_chunk or 0,
                                             self.cfg.page_size, self.prefix.num_matched)
        self.chunk_cap = limit
        still_chunked = adder.add_chunked(self.chunked, limit)
        adder.no_second_chunk = still_chunked
        return still_chunked

    def _admit_waiting(self, adder: PrefillAdder, num_allocatable: int) -> tuple[str, int]:
        """The admission loop: stops at the first request that does not fit (head-of-line blocking).

        Returns why it stopped and how many requests from the head of the queue it took or rejected.
        """
        held = 1 if self.chunked is not None and self.cfg.caps.chunk_holds_row else 0
        num_walked = 0
        for req in self.waiting:
            if self.cfg.caps.stops_on_spent_budget and adder.state() is Verdict.OTHER:
                return "the token budget is spent", num_walked
            if len(adder.admitted) - held >= num_allocatable or (self.batch_is_full and self.preempted):
                self.batch_is_full = True  # with preemption it stays set: each next one must preempt too
                if not self._preempt_for(adder, req):
                    return f"max_running_requests ({self.cfg.max_running_requests}) reached", num_walked
                num_allocatable = self._num_allocatable()
            req.kv_len = self.prefix.match(req)  # init_next_round_input: the cached prefix is not recomputed
            verdict = adder.add_one(req, self.prefix.newly_locked(req))
            admitted = bool(adder.admitted) and adder.admitted[-1][0] is req
            if admitted:
                self.kv_used += self.prefix.admit(req)
            else:
                req.kv_len = 0
            if verdict is Verdict.CONTINUE:
                num_walked += 1
                continue
            if verdict is Verdict.NO_TOKEN and not admitted and self._never_fits(adder, req):
                need = req.num_uncomputed + min(req.remaining_max_new, CLIP_MAX_NEW_TOKENS)
                self._reject(req, f"needs {need} KV slots (prompt + min(max_new, {CLIP_MAX_NEW_TOKENS})); "
                             f"the whole pool is {self.cfg.max_total_tokens}")
                num_walked += 1
                continue
            num_walked += admitted
            if verdict is Verdict.NO_TOKEN:
                self.batch_is_full = (bool(adder.admitted or self.running)
                                      if self.cfg.caps.latches_full_only_when_busy else True)
                if admitted:
                    return f"the KV budget is spent after {req.rid}", num_walked
                return (f"{req.rid} does not fit the KV budget (its prompt + min(max_new, "
                        f"{CLIP_MAX_NEW_TOKENS}) + the running requests' reservations)", num_walked)
            return ("the token budget is spent" if admitted
                    else f"{req.rid} does not fit the token budget"), num_walked
        return "", num_walked

    def _preempt_for(self, adder: PrefillAdder, req: Request) -> bool:
        """`PrefillAdder.preempt_to_schedule` (priority scheduling, the batch full): running requests far
        enough below `req` in priority are released like a retraction (KV freed, reply kept, to prefill
        again) and re-queued after admission; their reservations leave the budget. True if any were."""
        rules = self.cfg.queueing
        if not rules.preemption:
            return False
        ratio, whole = self.ratio.value, self.cfg.caps.ignore_eos_reserves_all

        def offset(r: Request) -> float:
            return running_offset(r, ratio, whole)

        # `not r.finished()`: with the overlap schedule a request whose last token is in flight leaves anyway
        candidates = [r for r in self.running if r not in self.in_flight]
        cached = self.prefix.match(req)
        need = req.fill_len - cached + min(req.max_new_tokens, CLIP_MAX_NEW_TOKENS) - adder.rem_total
        victims = choose_preempted(req, candidates, rules, self.entered, need=need, offset=offset)
        if not victims:
            return False
        chosen, free_before = set(victims), self.kv_free
        for r in self.running:  # batch order, as SGLang walks running_batch.reqs
            if r in chosen:
                adder.total_offset -= offset(r)
                self._release(r)
        self.running = [r for r in self.running if r not in chosen]
        adder.pool += self.kv_free - free_before
        self.preempted.extend(victims)
        self.preemptions.append(Preemption(
            at=self.now, before_iteration=len(self.iterations), for_rid=req.rid,
            rids=tuple(r.rid for r in victims), num_generated=tuple(r.num_generated for r in victims),
            kv_freed=self.kv_free - free_before))
        return True

    def _requeue_preempted(self) -> str:
        """After admission, the preempted requests go back to the queue (`_add_request_to_queue`, even when
        nothing was admitted). Returns what happened, in words, or ""."""
        if not self.preempted:
            return ""
        done, self.preempted = self.preempted, []
        for req in done:
            req.num_preemptions += 1
            self._enqueue(req)
        rids = ", ".join(r.rid for r in done)
        return (f"preempted {rids} (priority more than {self.cfg.queueing.threshold} below the newcomer's): "
                "KV freed, reply kept, back in the queue to prefill again")

    def _never_fits(self, adder: PrefillAdder, req: Request) -> bool:
        """Our guard, not SGLang's: a head request that cannot fit an empty pool is refused rather than left
        waiting. Intake's clip (`init_req_max_new_tokens`) makes every request fit an empty single-engine
        pool, as in SGLang, so this stays a safety net."""
        alone = not self.running and self.chunked is None and not adder.admitted and self.kv_used == 0
        return alone and not adder.fits_empty_pool(req)

    def _build_prefill(self, adder: PrefillAdder, still_chunked: bool, stop: str) -> Plan:
        continuing = self.chunked
        share = done_share(continuing) if continuing is not None else ""  # before this pass's chunk
        self.chunked = adder.new_chunked or (continuing if still_chunked else None)
        kv_before = self.kv_used
        page = self.cfg.page_size
        need = sum(ceil_page(r.kv_len + e, page) - ceil_page(r.kv_len, page) for r, e in adder.admitted)
        self.prefix.make_room(need, self.kv_free)
        for req, extend in adder.admitted:  # prepare_for_extend allocates the KV now
            self._allocate_prefill(req, extend)
        if self.kv_used > self.cfg.max_total_tokens:
            return self._out_of_memory("Prefill", "prepare_for_extend -> alloc_for_extend", kv_before)
        plan = Plan(PassKind.PREFILL, prefill=list(adder.admitted), num_running=len(self.running))
        mix_note = self._maybe_mix(plan)
        if self.kv_used > self.cfg.max_total_tokens:
            return self._out_of_memory("Decode", "mix_with_running -> alloc_for_decode", kv_before)
        plan.reason = self._prefill_reason(adder, continuing, share, stop, mix_note)
        plan.mirrors = "Scheduler.get_next_batch_to_run -> get_new_batch_prefill -> PrefillAdder"
        if plan.kind is PassKind.MIXED:
            plan.mirrors += " -> ScheduleBatch.mix_with_running"
        return plan

    def _allocate_prefill(self, req: Request, extend: int) -> None:
        page = self.cfg.page_size
        self.kv_used += ceil_page(req.kv_len + extend, page) - ceil_page(req.kv_len, page)
        req.kv_len += extend
        req.state = RequestState.PREFILLING
        if req.first_scheduled_at is None:
            req.first_scheduled_at = self.now

    @mirrors("alloc_for_extend", "alloc_for_decode")
    def _out_of_memory(self, kind: str, where: str, kv_before: int) -> Plan:
        """The pool cannot hold what the pass must allocate: SGLang's allocator raises RuntimeError
        ("{kind} out of memory. Try to lower your batch size.") and the server stops; so does the run.

        It happens when `add_chunked_req` forces a chunk through with the memory budget spent (the running
        requests outgrew their new_token_ratio reservation in decode rounds between chunks, under
        prefill_decode_interval or mixed chunk), or, before 0.5.22, when mixing skips `check_decode_mem`."""
        need, free = self.kv_used - kv_before, self.cfg.max_total_tokens - kv_before
        self.kv_used = kv_before  # the pass never runs
        self.crash = (f"out of KV memory at t={self.now:.3f}s: the next {kind.lower()} pass needs {need} "
                      f"new KV slots and {free} are free; SGLang's {where.split(' -> ')[-1]} raises "
                      "RuntimeError (out of memory) there and the server stops")
        return Plan(PassKind.IDLE, reason=f"crash: {self.crash}", mirrors=f"ScheduleBatch.{where}")

    @mirrors("mix_with_running")
    def _maybe_mix(self, plan: Plan) -> str:
        """Mixed chunk (end of `_get_new_batch_prefill_raw`): running requests ride along as 1-token rows."""
        if not self.cfg.is_mixed_chunk or not self.running:
            return ""
        asking = ([r.rid for r in self.running if r.return_logprob]
                  + [r.rid for r, _ in plan.prefill if r.return_logprob])
        if asking:
            return (f"mixing skipped: {asking[0]} asks for logprobs, so the {len(self.running)} running "
                    "requests wait")
        rows = self._decode_rows()
        needed = self._slots_needed(rows)
        if self.cfg.caps.mixed_checks_decode_mem:
            self.prefix.make_room(needed, self.kv_free)  # check_decode_mem evicts first
        if self.cfg.caps.mixed_checks_decode_mem and self.kv_free < needed:
            return "mixing skipped: not enough KV for the decode rows (check_decode_mem)"
        past = self._allocate_decode(rows)  # before 0.5.22 unchecked: _build_prefill sees if it overflows
        plan.kind, plan.decode, plan.decode_past_kv = PassKind.MIXED, rows, past
        mixed = set(rows)  # requests hash by identity
        self.running = [r for r in self.running if r not in mixed]  # only in-flight finishes stay behind
        return f"mixed chunk: {_the_running(len(rows))} each decode one token in this pass"

    def _prefill_reason(self, adder: PrefillAdder, continuing: Request | None, share: str, stop: str,
                        mix_note: str) -> str:
        parts = []
        if continuing is not None:
            parts.append(f"prefill wins: {continuing.rid} is part-way through its prompt "
                         f"({share} prefilled), so its next chunk runs first")
            if self.chunk_cap is not None:
                parts.append(f"shortest-prefill-first caps that chunk at {self.chunk_cap:,} tokens so "
                             "shorter waiting requests join the pass (shortest_prefill_chunk_limit)")
        else:
            num = len(adder.admitted)
            fit = "fits" if num == 1 else "fit"
            parts.append(f"prefill wins: {count(num, 'waiting request')} {fit} the budgets")
        if self.chunked is not None:
            left = self.chunked.num_uncomputed
            parts.append(f"{self.chunked.rid} is cut at the chunk budget ({count(left, 'token')} still to "
                         "prefill)")
        if stop:
            parts.append(f"admission stopped: {stop}")
        if mix_note:
            parts.append(mix_note)
        elif self.running:
            num = len(self.running)
            parts.append(f"{_the_running(num)} {'gets' if num == 1 else 'get'} no token this pass")
        return "; ".join(parts)

    # -- decode -----------------------------------------------------------------------------------
    @mirrors("update_running_batch")
    def _decode_plan(self, why_not_prefill: str) -> Plan:
        """`update_running_batch`: check decode memory, retract or decay the ratio, then decode everyone."""
        rows = self._decode_rows()
        if not rows:
            why = why_not_prefill or "nothing to run"
            if self.running:
                num = len(self.running)
                why = (f"{count(num, 'running request')} finished in the last pass "
                       f"({'its result lands' if num == 1 else 'their results land'} now)")
            return Plan(PassKind.IDLE, reason=f"idle: {why}", mirrors="Scheduler.on_idle")
        num_before = len(self.running)
        retraction = None
        needed = self._slots_needed(rows)
        self.prefix.make_room(needed, self.kv_free)  # check_decode_mem evicts first
        if self.kv_free < needed:
            finishing = self._finishing_by_length()
            if finishing:
                self.batch_is_full = False
                return Plan(PassKind.IDLE, mirrors="Scheduler.get_next_batch_to_run -> update_running_batch",
                            reason=f"decode skipped: KV is short, but {count(len(finishing), 'request')} "
                                   "finished by length in the last pass free theirs when its result lands")
            retraction = self._retract()
        else:
            self.ratio.decay_step()
        if len(self.running) < num_before:
            self.batch_is_full = False
        if retraction is not None:
            rows = self._decode_rows()
        if not rows:
            return Plan(PassKind.IDLE, reason="idle: the last running request was aborted",
                        mirrors="retract_decode", retraction=retraction)
        past = self._allocate_decode(rows)
        reason = decode_reason(why_not_prefill)
        if retraction is not None:
            by_priority = self.cfg.queueing.retraction_policy == "priority"
            first = ("lowest priority, then fewest tokens generated, first" if by_priority
                     else "fewest tokens generated first")
            reason = f"KV pool full: retracted {', '.join(retraction.rids)} ({first}); " + reason
        mirrors = DECODE_MIRRORS
        if retraction is not None:
            mirrors += " -> ScheduleBatch.retract_decode"
        if self.spec is not None:
            mirrors += " -> eagle_prepare_for_decode"
            spec = self.spec
            reason = reason.replace("gets one token", f"verifies {spec.num_draft_tokens} draft tokens "
                                    f"({spec.algorithm}) and commits {spec.accept_length:g} on average "
                                    "(an assumption)", 1)
        if len(rows) < len(self.running) or self.in_flight:
            reason += "; " + self._in_flight_note(rows)
        return Plan(PassKind.DECODE, decode=rows, reason=reason, mirrors=mirrors,
                    num_running=len(self.running), retraction=retraction, decode_past_kv=past)

    def _decode_rows(self) -> list[Request]:
        """The running requests that get a decode row. With the overlap schedule a request finished by the
        last pass is still in the batch: from 0.5.22 one finished by length leaves it
        (`_reqs_finishing_inflight`); one that stopped on EOS, or any before 0.5.22, takes a row whose token
        is thrown away."""
        if not self.in_flight or not self.cfg.caps.sees_inflight_finishes:
            return list(self.running)
        finishing = self._finishing_by_length()
        return [r for r in self.running if r not in finishing]

    @mirrors("_reqs_finishing_inflight")
    def _finishing_by_length(self) -> list[Request]:
        """`_reqs_finishing_inflight` (0.5.22+, overlap schedule): the running requests whose result still
        in flight finishes them by length (max_new_tokens); one that stopped on EOS is not among them."""
        if not self.cfg.caps.sees_inflight_finishes:
            return []
        return [r for r in self.in_flight if r.num_generated >= r.max_new_tokens]

    def _in_flight_note(self, rows: list[Request]) -> str:
        wasted = len(set(self.in_flight).intersection(rows))
        left = len(self.in_flight) - wasted
        take = "takes" if wasted == 1 else "take"
        parts = ([f"{count(wasted, 'request')} that finished last pass (EOS) still {take} a row, "
                  f"{'its token' if wasted == 1 else 'their tokens'} thrown away"] if wasted else [])
        leave = "leaves" if left == 1 else "leave"
        parts += [f"{count(left, 'request')} finished by length {leave} the batch (_reqs_finishing_inflight)"
                  ] if left else []
        return "overlap schedule: " + ", ".join(parts) if parts else ""

    def pass_seconds(self, plan: Plan) -> float:
        """The pass's time on the cost model; with speculative decoding a decode pass is the draft steps
        and one verify over every row's draft tokens (speculative.verify_shape, draft_seconds)."""
        shape = plan.shape()
        if self.spec is None or plan.kind is not PassKind.DECODE:
            return self.cost.seconds(shape)
        return (self.cost.seconds(verify.verify_shape(self.spec, shape))
                + verify.draft_seconds(self.spec, self.cost, shape))

    def _slots_needed(self, rows: list[Request]) -> int:
        """`check_decode_mem`'s count of new KV slots for the next decode step."""
        if self.spec is None:
            return num_decode_slots_needed(rows, self.cfg.page_size)
        return speculative.slots_needed(self.spec, rows, self.spec_extra, self.cfg.page_size)

    def _allocate_decode(self, reqs: list[Request]) -> int:
        """`prepare_for_decode`: one new KV slot per request. Returns their KV before it. With speculative
        decoding each request is allocated up to its committed tokens + the reserve
        (`eagle_prepare_for_decode`), and a verify commits its tokens from there (`_apply_decode`)."""
        past = sum(map(KV_LEN, reqs))
        page = self.cfg.page_size
        self.prefix.make_room(self._slots_needed(reqs), self.kv_free)
        if self.spec is not None:
            self.kv_used += speculative.allocate(self.spec, reqs, self.spec_extra, page)
            return past
        if page == 1:
            self.kv_used += len(reqs)
        else:
            self.kv_used += sum(page for r in reqs if r.kv_len % page == 0)
        for req in reqs:
            req.kv_len += 1
        return past

    @mirrors("retract_decode")
    def _retract(self) -> Retraction:
        """`ScheduleBatch.retract_decode`: at least one, fewest generated first, never the last one."""
        before_ratio, before_free, num_before = self.ratio.value, self.kv_free, len(self.running)
        ranked = (priority_retraction_order(self.running, self.cfg.queueing)
                  if self.cfg.queueing.retraction_policy == "priority" else retraction_order(self.running))
        order = [r for r in ranked if r not in self.in_flight]  # those leave anyway
        survivors = list(self.running)
        retracted: list[Request] = []
        while not retracted or not self._decode_fits(survivors):
            if len(survivors) == 1 or not order:
                break
            req = order.pop(0)
            survivors.remove(req)
            retracted.append(req)
            self._release(req)
            # release_req: "we should use the newly evictable memory instantly"
            self.prefix.make_room(len(survivors) * RETRACT_DECODE_STEPS, self.kv_free)
        if not self._decode_fits(survivors):
            last = survivors.pop()  # "Out of memory even after retracting all other requests": aborted
            self._release(last)
            self._reject(last, "out of KV memory even after retracting every other request")
        self.running = survivors
        self.ratio.value = ratio_after_retraction(survivors)
        for req in retracted:  # back of the queue, keeping its output (_add_request_to_queue, is_retracted)
            req.num_retractions += 1
            self._enqueue(req)
        event = Retraction(
            at=self.now, before_iteration=len(self.iterations), rids=tuple(r.rid for r in retracted),
            num_generated=tuple(r.num_generated for r in retracted), num_running_before=num_before,
            num_running_after=len(survivors), ratio_before=before_ratio, ratio_after=self.ratio.value,
            kv_free_before=before_free, kv_free_after=self.kv_free,
        )
        self.retractions.append(event)
        return event

    @mirrors("check_decode_mem")
    def _decode_fits(self, reqs: list[Request]) -> bool:
        """`check_decode_mem`: evict cache for the rows' new slots, then check they fit."""
        needed = self._slots_needed(reqs)
        self.prefix.make_room(needed, self.kv_free)
        return self.kv_free >= needed

    def _release(self, req: Request, checkpoint: bool = False) -> None:
        """`release_kv_cache`: the request's own KV slots go back to the pool; with `checkpoint` (it
        finished) its tokens stay in the radix cache as evictable."""
        self.kv_used += self.prefix.release(req, checkpoint=checkpoint)
        if self.spec is not None:  # the speculative over-allocation goes back too
            self.kv_used -= self.spec_extra.pop(req.rid, 0)
        req.kv_len = 0

    # -- apply and record -------------------------------------------------------------------------
    def apply(self, plan: Plan, end: float) -> None:
        """`process_batch_result`: stamp tokens at the end of the pass, release finished requests (with the
        overlap schedule, a finished request waits in `in_flight` until the next pass is launched)."""
        dropped = False
        for req, _ in plan.prefill:
            if req is self.chunked:
                dropped = True  # a truncated chunk yields no token and is kept out of the merge
                self.to_stash = req
                continue
            req.add_token(end)
            if req.is_done and not self.cfg.overlap_schedule:
                self._finish(req, end)
                dropped = True
            else:
                req.state = RequestState.RUNNING
                self.last_extend.append(req)
                self._hold_if_done(req)
                if req.is_done:
                    pass
                elif self.cfg.overlap_schedule:
                    self.to_checkpoint.append((req, req.kv_len))  # its result lands after the next launch
                else:
                    self.kv_used += self.prefix.checkpoint(req)
        finished = self._apply_decode(plan, end)
        if plan.kind is PassKind.DECODE and finished:  # only a finish changes a running request's state
            self.running = [r for r in self.running if r.state is RUNNING]
        dropped = dropped or finished
        if dropped:
            self.batch_is_full = False  # filter_batch shrank the batch

    def _apply_decode(self, plan: Plan, end: float) -> bool:
        """Each decode row's token (the hot loop: `add_token` and `is_done` written out). True if a request
        finished and left the batch (without the overlap schedule; with it, it waits in `in_flight`)."""
        dropped, overlap, mixed = False, self.cfg.overlap_schedule, plan.kind is PassKind.MIXED
        spec, page = self.spec, self.cfg.page_size
        for req in plan.decode:
            if req.state is FINISHED:  # its result landed at this pass's launch: a wasted row
                continue
            if spec is None:
                req.token_times.append(end)
                req.num_generated += 1
            else:  # a verify commits its accepted tokens; a mixed pass's row one plain token
                num = 1 if mixed else min(speculative.accepted(spec, req),
                                          req.output_len - req.num_generated)
                speculative.commit(req, num, self.spec_extra, page)
                req.token_times.extend([end] * num)
                req.num_generated += num
            if req.num_generated >= req.output_len:
                if not overlap:
                    self._finish(req, end)
                    dropped = True
                    continue
                self.in_flight.append(req)
            if mixed:
                self.last_extend.append(req)
        return dropped

    def _hold_if_done(self, req: Request) -> None:
        if req.is_done:
            self.in_flight.append(req)

    @mirrors("pop_and_process")
    def _land(self) -> None:
        """Overlap schedule (`event_loop_overlap`): the last pass's results are processed only now, after the
        next pass was scheduled and launched; its prefilled requests go into the radix cache, its finished
        requests leave the batch and free their KV."""
        for req, extend_end in self.to_checkpoint:
            if req.state is RUNNING:  # not retracted meanwhile
                self.kv_used += self.prefix.checkpoint(req, extend_end)
        self.to_checkpoint.clear()
        if not self.in_flight:
            if self.landed:
                self.landed = []
            return
        self.landed, self.in_flight = self.in_flight, []
        for req in self.landed:
            for batch in (self.running, self.last_extend):
                if req in batch:
                    batch.remove(req)
            self._finish(req, req.token_times[-1])
            self.batch_is_full = False  # filter_batch shrank the batch

    def _finish(self, req: Request, end: float) -> None:
        req.state, req.finished_at = RequestState.FINISHED, end
        self._release(req, checkpoint=True)
        self.finished.append(req)
        self.done.append(req)

    def launch_view(self, plan: Plan) -> dict:
        """What the pass looks like when it is launched (KV already allocated, nothing released yet)."""
        return {
            "prefill_rows": tuple([Row(r.rid, e, r.kv_len - e) for r, e in plan.prefill]),
            "decode_rids": tuple(map(RID, plan.decode)),
            "decode_past_kv": plan.decode_past_kv,
            "kv_used": self.kv_used,
            "num_waiting": len(self.waiting),
        }

    def record(self, plan: Plan, view: dict, end: float) -> Iteration:
        landed = self.landed
        finished = [r.rid for r, _ in plan.prefill if r.state is FINISHED]
        finished += [r.rid for r in plan.decode if r.state is FINISHED and r not in landed]
        finished += [r.rid for r in landed]
        it = Iteration(
            index=len(self.iterations),
            kind=plan.kind,
            start_at=self.now,
            end_at=end,
            reason=plan.reason,
            mirrors=plan.mirrors,
            chunked_rid=self.chunked.rid if self.chunked else None,
            finished_rids=tuple(finished),
            wasted_rids=tuple([r.rid for r in plan.decode if r in landed]) if landed else (),
            kv_capacity=self.cfg.max_total_tokens,
            num_running=plan.num_running,
            new_token_ratio=self.ratio.value,
            retraction=plan.retraction,
            **view,
        )
        self.iterations.append(it)
        return it


def _the_running(num: int) -> str:
    """'the running request' or 'the 40 running requests'."""
    return "the running request" if num == 1 else f"the {num:,} running requests"


def done_share(req: Request) -> str:
    """How much of a request's prefill is done, in words: '82 %' (never 100 % while a chunk is left)."""
    share = min(req.kv_len / req.fill_len, 0.99) if req.fill_len and req.kv_len < req.fill_len else 1.0
    return f"{share:.0%}".replace("%", " %")
