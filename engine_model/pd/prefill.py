"""One prefill DP rank (`SchedulerDisaggregationPrefillMixin`, disaggregation/prefill.py).

It is the single engine's `Scheduler` with three differences, each from sglang-scheduler-facts.md 7.1:
- requests wait in a bootstrap queue until decode has reserved their KV (`pop_bootstrapped`), unless
  the policy lets prefill compute first (`prefill_complete`: optimistic prefill);
- every request carries `max_new_tokens = 1` (`_process_req`), so the same `PrefillAdder` reserves one
  decode token per request, and the running batch stays empty: no decode, no mixing;
- a prefilled request keeps its KV in the inflight queue until its transfer succeeds
  (`process_disagg_prefill_inflight_queue`), so pending transfers shrink the admission budget.
"""

from __future__ import annotations

from engine_model.core import PassKind, Request, RequestState
from engine_model.pd.messages import CHUNK, REJECTED, Message
from engine_model.rules import mirrors
from engine_model.scheduler import Plan, Scheduler

MIRRORS = "Scheduler.get_next_disagg_prefill_batch_to_run"


def prefill_copy(req: Request) -> Request:
    """The prefill server's own request: the same prompt, max_new_tokens forced to 1 (`_process_req`)."""
    return Request(rid=req.rid, group=req.group, arrival_at=req.arrival_at, prompt_len=req.prompt_len,
                   output_len=1, max_new_tokens=1, return_logprob=req.return_logprob,
                   ignore_eos=req.ignore_eos)


class PrefillRank(Scheduler):
    def __init__(self, name: str, cfg, cost, rng):
        super().__init__(cfg, cost, rng)
        self.name = name
        self.bootstrap: list[Request] = []  # PrefillBootstrapQueue: decode has not reserved KV yet
        self.inflight: list[Request] = []  # prefilled; KV held until the transfer succeeds
        self.bootstrapped: set[str] = set()  # decode reserved KV (WaitingForInput)
        self.sent: set[str] = set()  # transfer succeeded
        self.outbox: list[Message] = []

    def add(self, req: Request, at: float, *, bootstrapped: bool) -> None:
        """`_add_request_to_queue` -> bootstrap queue; straight to waiting under optimistic prefill."""
        target = self.waiting if bootstrapped else self.bootstrap
        req.state, req.queued_at = RequestState.WAITING, at
        target.append(req)

    def poll(self) -> None:
        """Each loop: free the KV of sent requests, then move bootstrapped requests to the waiting queue."""
        for req in [r for r in self.inflight if r.rid in self.sent]:
            self.inflight.remove(req)
            self.sent.discard(req.rid)
            self._release(req, checkpoint=True)  # release_kv_cache(checkpoint=True)
        for req in [r for r in self.bootstrap if r.rid in self.bootstrapped]:
            self.bootstrap.remove(req)
            self.bootstrapped.discard(req.rid)
            req.queued_at = self.now
            self.waiting.append(req)

    @property
    def num_holding(self) -> int:
        return len(self.bootstrap) + len(self.waiting) + (self.chunked is not None) + len(self.inflight)

    @mirrors("get_next_disagg_prefill_batch_to_run")
    def schedule(self) -> Plan:
        """`get_next_disagg_prefill_batch_to_run`: batch_is_full is reset on every call ("otherwise it
        hangs"), the same `get_new_batch_prefill` builds the batch, and nothing ever decodes here."""
        self.batch_is_full = False
        plan, why_not = self._prefill_plan()
        if plan is None:
            why = (why_not if self.waiting or not self.bootstrap
                   else f"{len(self.bootstrap)} request(s) wait for decode to reserve KV")
            return Plan(PassKind.IDLE, reason=f"idle: {why}", mirrors=MIRRORS)
        plan.mirrors = plan.mirrors.replace("Scheduler.get_next_batch_to_run", MIRRORS)
        return plan

    @mirrors("get_num_allocatable_reqs")
    def _num_allocatable(self) -> int:
        """`get_num_allocatable_reqs` on a prefill rank: its running batch stays empty, so the free request
        rows bound it, and a prefilled request keeps its row until its transfer succeeds
        (`process_disagg_prefill_inflight_queue` -> `release_kv_cache`), as the continuing chunk keeps its
        own. 0.5.20-0.5.22 also set batch_is_full once the admitted list reaches the free rows
        (`len(can_run_list) >= req_to_token_pool.available_size()` in `_get_new_batch_prefill_raw`, removed in
        0.5.23): the same bound as `get_num_allocatable_reqs` there, since neither adds back the continuing
        chunk's row; 0.5.23 adds it back (capability `chunk_holds_row`)."""
        return self.cfg.max_running_requests - len(self.inflight) - (self.chunked is not None)

    def apply(self, plan: Plan, end: float) -> None:
        """`process_batch_result_disagg_prefill`: every chunk's KV can go to decode once it is computed."""
        super().apply(plan, end)
        for req, extend in plan.prefill:
            self.outbox.append(Message(CHUNK, req, end, start_at=self.now, extend=extend,
                                       is_last=req is not self.chunked))

    def _finish(self, req: Request, end: float) -> None:
        """The last chunk ran: the request moves to the inflight queue and keeps its KV."""
        req.state, req.finished_at = RequestState.FINISHED, end
        self.inflight.append(req)

    def _reject(self, req: Request, reason: str) -> None:
        super()._reject(req, reason)
        self.outbox.append(Message(REJECTED, req, self.now))
