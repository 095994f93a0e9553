"""A worker: one SGLang server. Its DP ranks schedule on their own and run each forward pass together
(`maybe_prepare_mlp_sync_batch`: an idle rank runs a dummy batch), so a pass lasts as long as the
lockstep cost says. The worker keeps one lane of iterations; each rank keeps its own.
"""

from __future__ import annotations

from dataclasses import replace

from engine_model.core import Iteration, PassKind
from engine_model.pd.decode import DecodeRank
from engine_model.pd.messages import Message
from engine_model.pd.roles import WorkerCost
from engine_model.scheduler import Plan

PARKED_REASON = "idle: nothing to run until a message arrives"


class Worker:
    def __init__(self, name: str, ranks: list, cost: WorkerCost):
        self.name = name
        self.ranks = ranks
        self.cost = cost
        self.now = 0.0
        self.parked_at: float | None = 0.0  # None while it runs passes
        self.parked_plans: list[Plan] = []
        self.iterations: list[Iteration] = []

    @property
    def is_parked(self) -> bool:
        return self.parked_at is not None

    def wake(self, at: float) -> None:
        """A message for this worker: record the idle stretch and run again from `at`."""
        if self.parked_at is None:
            return
        if at > self.parked_at:
            plans = self.parked_plans or [Plan(PassKind.IDLE, reason=PARKED_REASON) for _ in self.ranks]
            self.now = self.parked_at
            self._record(plans, at)
        self.now, self.parked_at = max(at, self.parked_at), None

    def step(self) -> Iteration | None:
        """poll -> schedule -> cost -> apply -> record, every rank in lockstep. None: nothing ran.

        An idle turn that changed nothing parks the worker until a message wakes it; one that changed
        something (a request that finished as it joined frees its row) is followed by another poll at
        once, as SGLang's event loop polls again on its next turn."""
        for rank in self.ranks:
            rank.now = self.now
            rank.poll()
        plans = [rank.schedule() for rank in self.ranks]
        if all(p.kind is PassKind.IDLE for p in plans):
            if not any(rank.outbox for rank in self.ranks):
                self.parked_at, self.parked_plans = self.now, plans
            return None
        held = max((rank.held_host_s(plan) for rank, plan in zip(self.ranks, plans, strict=True)
                    if isinstance(rank, DecodeRank)), default=0.0)
        end = self.now + self.cost.seconds([p.shape() for p in plans], held_host_s=held)
        return self._record(plans, end, apply=True)

    def _record(self, plans: list[Plan], end: float, apply: bool = False) -> Iteration:
        its = []
        for rank, plan in zip(self.ranks, plans, strict=True):
            rank.now = self.now
            view = self.view(rank, plan)
            if apply:
                rank.apply(plan, end)
            its.append(rank.record(plan, view, end))
            rank.now = end
        it = merge(len(self.iterations), its)
        self.iterations.append(it)
        self.now = end
        return it

    @staticmethod
    def view(rank, plan: Plan) -> dict:
        """The rank's launch view; on decode, KV in use by decoding requests and KV reserved, apart."""
        view = rank.launch_view(plan)
        if isinstance(rank, DecodeRank):
            reserved = rank.kv_reserved
            view["kv_used"] -= reserved
            view["kv_reserved"] = reserved
        return view

    def drain(self) -> list[Message]:
        out = [m for rank in self.ranks for m in rank.outbox]
        for rank in self.ranks:
            rank.outbox.clear()
        return out

    @property
    def num_holding(self) -> int:
        return sum(rank.num_holding for rank in self.ranks)


def merge(index: int, its: list[Iteration]) -> Iteration:
    """One worker iteration from its ranks' iterations of the same pass."""
    if len(its) == 1:
        return replace(its[0], index=index)
    kinds = {it.kind for it in its}
    kind = next((k for k in (PassKind.PREFILL, PassKind.MIXED, PassKind.DECODE) if k in kinds), PassKind.IDLE)
    busy = [(i, it) for i, it in enumerate(its) if it.kind is not PassKind.IDLE] or list(enumerate(its[:1]))
    reason = "; ".join(f"dp{i}: {it.reason}" for i, it in busy)
    if len(busy) < len(its) and kind is not PassKind.IDLE:
        reason += f"; {len(its) - len(busy)} idle rank(s) run a dummy batch in lockstep"
    return Iteration(
        index=index, kind=kind, start_at=its[0].start_at, end_at=its[0].end_at,
        prefill_rows=tuple(row for it in its for row in it.prefill_rows),
        decode_rids=tuple(rid for it in its for rid in it.decode_rids),
        decode_past_kv=sum(it.decode_past_kv for it in its),
        reason=reason, mirrors=max((it.mirrors for _, it in busy), key=len),  # the most detailed chain
        chunked_rid=next((it.chunked_rid for it in its if it.chunked_rid), None),
        finished_rids=tuple(rid for it in its for rid in it.finished_rids),
        kv_used=sum(it.kv_used for it in its), kv_capacity=sum(it.kv_capacity for it in its),
        num_waiting=sum(it.num_waiting for it in its), num_running=sum(it.num_running for it in its),
        new_token_ratio=its[0].new_token_ratio,
        retraction=next((it.retraction for it in its if it.retraction), None),
        kv_reserved=sum(it.kv_reserved for it in its),
    )
