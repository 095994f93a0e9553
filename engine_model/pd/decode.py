"""One decode DP rank (`SchedulerDisaggregationDecodeMixin`, disaggregation/decode.py).

Queues (sglang-scheduler-facts.md 7.2): the prealloc queue (handshake, then a KV reservation), the
retracted queue (KV backed up to host), the transfer queue (KV reserved, bytes in flight) and the
joiners (transfer done). Joiners enter the running batch without a memory check and decode in the
same iteration; then the single engine's `update_running_batch` runs: check memory, retract, decode.

A pass that merges joiners (a prebuilt batch) can cost its host time. Before 0.5.23 `prepare_for_prebuilt`
builds three index tensors with blocking host-to-device copies on the schedule stream; it runs before
`_get_new_prebuilt_batch`'s own `schedule_stream.wait_stream(forward_stream)`, so what the copies wait for
is the write-after-read barrier set when the forward now in flight was launched (`_apply_war_barrier`):
the event a decode CUDA-graph replay records inside the graph once its metadata is read (early in that
forward), else, for an eager forward, the whole forward stream. Only behind an eager forward does the
host wait until that forward ends, and the scheduler's CPU time of that pass is then not hidden behind
the GPU (`held_host_s`).
"""

from __future__ import annotations

from engine_model.core import PassKind, Request, RequestState
from engine_model.cost import PassShape, RooflineCost
from engine_model.pd.messages import ALLOCATED, FINISHED, JOINED, REJECTED, RESUMED, RETRACTED, Message
from engine_model.policy import CLIP_MAX_NEW_TOKENS, ceil_page
from engine_model.rules import mirrors
from engine_model.scheduler import Plan, Scheduler

MIRRORS = "Scheduler.get_next_disagg_decode_batch_to_run"


class DecodeRank(Scheduler):
    def __init__(self, name: str, cfg, cost, rng, num_reserved: int):
        super().__init__(cfg, cost, rng)
        self.name = name
        self.num_reserved = num_reserved  # num_reserved_decode_tokens
        self.prealloc: list[Request] = []  # DecodePreallocQueue.queue, FIFO
        self.ready: set[str] = set()  # receiver reports WaitingForInput
        self.transfer: list[Request] = []  # DecodeTransferQueue: KV reserved, waiting for the bytes
        self.delivered: set[str] = set()  # transfer succeeded
        self.joining: list[Request] = []  # waiting_queue: transferred or resumed, joins the running batch
        self.retracted_queue: list[Request] = []
        self.outbox: list[Message] = []
        self.stop_reason = ""
        self.num_joined = 0  # requests merged as a prebuilt batch in this iteration
        self.forward_in_flight: PassShape | None = None  # the decode forward launched last iteration, if any

    # -- budgets ------------------------------------------------------------------------------------
    def allocatable(self, *, count_retracted: bool = True) -> int:
        """`_allocatable_tokens`: free KV less a 512-token headroom per active request (or the worst single
        running request, if larger) less what the retracted requests need to come back."""
        num_active = len(self.running) + len(self.transfer) + len(self.joining)
        retractable = sum(r.prompt_len + r.num_generated for r in self.running)
        worst = max((min(r.max_new_tokens, CLIP_MAX_NEW_TOKENS) + r.prompt_len for r in self.running),
                    default=0)
        headroom = max(self.num_reserved * num_active, worst - retractable)
        owed = sum(self.restore_tokens(r) for r in self.retracted_queue) if count_retracted else 0
        return self.kv_free - headroom - owed

    def admission_tokens(self, req: Request) -> int:
        """`_required_admission_tokens`: the prompt plus headroom, or its whole clipped budget."""
        retractable = sum(r.prompt_len + r.num_generated for r in self.running)
        whole = req.prompt_len + min(req.max_new_tokens, CLIP_MAX_NEW_TOKENS) - retractable
        return max(ceil_page(req.prompt_len, self.cfg.page_size) + self.num_reserved, whole)

    def restore_tokens(self, req: Request) -> int:
        return req.fill_len + self.num_reserved

    def fits_empty_pool(self, req: Request) -> bool:
        """Could this request ever be preallocated, with the whole pool free? (our guard, not SGLang's)"""
        whole = req.prompt_len + min(req.max_new_tokens, CLIP_MAX_NEW_TOKENS)
        return (max(ceil_page(req.prompt_len, self.cfg.page_size) + self.num_reserved, whole)
                <= self.cfg.max_total_tokens)

    @property
    def kv_reserved(self) -> int:
        """Slots reserved for requests still in prefill or transfer."""
        return sum(ceil_page(r.kv_len, self.cfg.page_size) for r in self.transfer + self.joining
                   if not r.token_times)

    @property
    def num_rows(self) -> int:
        """`DecodeReqToTokenPool`: max_running_requests rows plus the extra rows for requests in transfer
        (`pre_alloc_size`, pd.decode_extra_slots); the prebuilt merge still caps the running batch at
        max_running_requests."""
        return self.cfg.max_running_requests + self.cfg.decode_extra_slots

    @property
    def num_rows_words(self) -> str:
        extra = self.cfg.decode_extra_slots
        return (f"{self.cfg.max_running_requests} + {extra} extra for requests in transfer" if extra
                else str(self.cfg.max_running_requests))

    @property
    def num_holding(self) -> int:
        return (len(self.prealloc) + len(self.transfer) + len(self.joining) + len(self.retracted_queue)
                + len(self.running))

    # -- one loop turn ------------------------------------------------------------------------------
    def poll(self) -> None:
        """`process_decode_queue`: resume retracted requests, then (only if none is left) preallocate
        and collect finished transfers."""
        self._resume_retracted()
        if self.retracted_queue:
            self.stop_reason = f"{len(self.retracted_queue)} retracted request(s) wait: no new preallocation"
            return
        self.stop_reason = ""
        self._pop_preallocated()
        for req in [r for r in self.transfer if r.rid in self.delivered]:  # pop_transferred
            self.transfer.remove(req)
            self.delivered.discard(req.rid)
            self.joining.append(req)

    def _resume_retracted(self) -> None:
        """`resume_retracted_reqs`: KV comes back from host, no recompute, once prompt + output + 512 fit."""
        for req in list(self.retracted_queue):
            if self.restore_tokens(req) > self.allocatable(count_retracted=False):
                return
            self.retracted_queue.remove(req)
            req.kv_len = req.fill_len - 1  # the newest token's KV is written by its decode step
            self.kv_used += ceil_page(req.kv_len, self.cfg.page_size)
            self.joining.append(req)
            self.outbox.append(Message(RESUMED, req, self.now))

    def _pop_preallocated(self) -> None:
        """`pop_preallocated`: FIFO; a request whose handshake is not done is passed over; the first ready
        request that does not fit stops the loop (head-of-line blocking)."""
        for req in list(self.prealloc):
            if req.rid not in self.ready:
                continue
            num_rows = len(self.running) + len(self.transfer) + len(self.joining)
            if num_rows >= self.num_rows:
                self.stop_reason = f"no free req_to_token row ({self.num_rows_words})"
                return
            need, room = self.admission_tokens(req), self.allocatable()
            if need > room:
                self.stop_reason = f"{req.rid} waits for decode KV: needs {need}, {max(room, 0)} allocatable"
                return
            self.prealloc.remove(req)
            self.ready.discard(req.rid)
            req.kv_len = req.prompt_len  # _pre_alloc_fill_len: the prompt; decode tokens come one per step
            self.kv_used += ceil_page(req.kv_len, self.cfg.page_size)
            self.transfer.append(req)
            self.outbox.append(Message(ALLOCATED, req, self.now))

    @mirrors("get_next_disagg_decode_batch_to_run")
    def schedule(self) -> Plan:
        """`get_next_disagg_decode_batch_to_run`: joiners become a prebuilt batch merged into the running
        batch (up to max_running_requests), then `update_running_batch` decodes everyone."""
        room = self.cfg.max_running_requests - len(self.running)
        joiners, self.joining = self.joining[:room], self.joining[room:]
        self.num_joined = len(joiners)
        for req in joiners:
            self._join(req)
        plan = self._decode_plan("this is a decode worker")
        for req in self.waiting:  # release_req backed their KV up to host first
            self.retracted_queue.append(req)
            self.outbox.append(Message(RETRACTED, req, self.now))
        self.waiting = []
        plan.mirrors = (plan.mirrors.replace("Scheduler.get_next_batch_to_run", MIRRORS)
                        .replace("Scheduler.on_idle", MIRRORS))
        if joiners:
            plan.mirrors = plan.mirrors.replace(MIRRORS, f"{MIRRORS} -> _get_new_prebuilt_batch", 1)
        notes = [self._joined_note(plan)] if joiners else []
        notes += [self.stop_reason] if self.stop_reason else []
        if plan.kind is PassKind.IDLE and plan.retraction is None:
            plan.reason = "idle: nothing is decoding"
        plan.reason = ("; ".join([plan.reason, *notes])
                       .replace("; no prefill because this is a decode worker", ""))
        return plan

    def _joined_note(self, plan: Plan) -> str:
        note = f"{self.num_joined} request(s) joined after their transfer (a prebuilt batch merged)"
        held = self.held_host_s(plan)
        if held:
            return (note + f"; SGLang {self.cfg.version} copies it with blocking H2D copies that wait for "
                    f"the eager forward in flight, so this pass's {held * 1e3:.2f} ms of scheduling is not "
                    "hidden")
        return note

    @mirrors("_get_new_prebuilt_batch", "prepare_for_prebuilt", "_apply_war_barrier")
    def held_host_s(self, plan: Plan) -> float:
        """Host time this pass cannot hide: with joiners, before 0.5.23, when the decode forward in flight
        ran eagerly (more rows than cuda_graph_max_bs_decode, or graphs off). `prepare_for_prebuilt`'s
        blocking copies then wait at `_apply_war_barrier`'s `wait_stream(forward_stream)` until it ends; a
        graph replay releases them at its in-graph read-done event (`_publish_read_done`), early in the
        forward, which we count as nothing held. What is held is the rank's scheduling CPU time
        (cost.per_pass_s + cost.per_request_s x rows, joiners counted twice, an assumption: their prebuilt
        batch is built and processed, then decoded; both figures editable). 0 otherwise, or on the linear
        predictor."""
        cost = self.cost.whole
        if not self.num_joined or self.cfg.caps.prebuilt_copies_async or not isinstance(cost, RooflineCost):
            return 0.0
        if not cost.overlap:
            return 0.0  # without the overlap schedule every pass already pays its CPU time
        if self.forward_in_flight is None or cost.graph_of(self.forward_in_flight):
            return 0.0
        return cost.per_pass_s + cost.per_request_s * (len(plan.decode) + self.num_joined)

    def apply(self, plan: Plan, end: float) -> None:
        """The forward just run is the one in flight when the next iteration schedules (overlap loop)."""
        super().apply(plan, end)
        self.forward_in_flight = plan.shape() if plan.kind is PassKind.DECODE else None

    def _join(self, req: Request) -> None:
        """`process_batch_result_prebuilt`: a transferred request commits the first token prefill made."""
        req.state = RequestState.RUNNING
        if not req.token_times:
            req.add_token(self.now)
            self.outbox.append(Message(JOINED, req, self.now))
            if req.is_done:
                return self._finish(req, self.now)
        self.running.append(req)

    def _finish(self, req: Request, end: float) -> None:
        super()._finish(req, end)
        self.outbox.append(Message(FINISHED, req, end))

    def _reject(self, req: Request, reason: str) -> None:
        super()._reject(req, reason)
        self.outbox.append(Message(REJECTED, req, self.now))
