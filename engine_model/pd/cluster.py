"""The cluster: router, prefill workers, decode workers and the KV link, and one request's trip through
them. Ranks report what they did as time-stamped messages; the cluster applies each at its time, so
workers with different clocks see each other's effects in the right order.

A request's trip (sglang-scheduler-facts.md 7.1-7.3):
  early:            arrive -> decode reserves KV -> prefill waiting queue -> chunks (each sent as it is
                    computed) -> transfer done -> decode joins, commits the first token, decodes
  prefill_complete: arrive -> prefill waiting queue -> chunks -> decode reserves KV -> the whole KV is
                    sent -> transfer done -> decode joins, commits the first token, decodes
"""

from __future__ import annotations

import heapq
import random
from dataclasses import dataclass, field

from engine_model import hardware
from engine_model.config import Scenario
from engine_model.core import Iteration, Request, RequestState
from engine_model.pd import messages as msg
from engine_model.pd.decode import DecodeRank
from engine_model.pd.prefill import PrefillRank, prefill_copy
from engine_model.pd.roles import Role, check, resolve_role
from engine_model.pd.router import RankPicker, Router, resolve_load_balance
from engine_model.pd.transfer import Network, Transfer
from engine_model.pd.worker import Worker
from engine_model.policy import ceil_page
from engine_model.resolve import Resolved, with_overrides

DELIVERED = "delivered"  # the link's message: the last byte plus latency has landed


@dataclass(eq=False)
class Handoff:
    """One request's trip: the client's request, the prefill server's copy, the two ranks, the transfer."""

    req: Request
    copy: Request
    prefill: tuple[Worker, PrefillRank]
    decode: tuple[Worker, DecodeRank]
    transfer: Transfer | None = None
    allocated_at: float | None = None
    prefilled_at: float | None = None
    decoding_since: float | None = None
    bootstrap_room: int = 0  # the router's draw; prefill's DP rank follows it by default

    def span(self, phase: str, start: float | None, end: float) -> None:
        if start is not None and end > start:
            self.req.spans.append((phase, start, end))


@dataclass
class PDRecord:
    """What a PD run keeps beyond its worker lanes: each DP rank's lane, the roles, the transfers."""

    rank_lanes: dict[str, list[Iteration]]  # "decode-0.dp2": one rank's passes
    roles: dict[str, Resolved]  # "prefill" / "decode": one rank's settings
    policy: str
    transfers: list[Transfer]
    kv_bytes_per_token: float


@dataclass(order=True)
class Event:
    at: float
    seq: int
    message: msg.Message = field(compare=False)


class Cluster:
    def __init__(self, scenario: Scenario, rng: random.Random):
        check(scenario)
        pd = scenario.pd
        self.roles: dict[str, Role] = {name: resolve_role(scenario, name) for name in ("prefill", "decode")}
        self.policy = self.roles["prefill"].policy
        self.prefill = self._workers(self.roles["prefill"], rng)
        self.decode = self._workers(self.roles["decode"], rng, pd.num_reserved_decode_tokens)
        self.pickers = {w.name: RankPicker(len(w.ranks), resolve_load_balance(
            getattr(pd, role).load_balance_method, role)) for role in ("prefill", "decode")
            for w in getattr(self, role)}
        # bootstrap rooms come from their own seeded stream: drawing them changes no other random choice
        self.router = Router(pd.router, rng, random.Random(f"bootstrap_room/{scenario.seed}"))
        link = with_overrides(hardware.link(pd.transfer_backend), pd.link_overrides, "pd.link_overrides")
        self.network = Network(link)
        model = with_overrides(hardware.model(scenario.model.name), scenario.model.overrides,
                               "model.overrides")
        self.kv_bytes_per_token = hardware.kv_bytes_per_token(model, self.roles["prefill"].rank.kv_dtype,
                                                              self.roles["prefill"].attn_tp_size)
        self.now = 0.0
        self.events: list[Event] = []
        self.num_events = 0
        self.handoffs: dict[str, Handoff] = {}
        self.loads: dict[str, int] = {w.name: 0 for w in self.prefill + self.decode}
        self.finished: list[Request] = []  # in finishing order
        self.rejected: list[Request] = []
        # finished or rejected, in that order of events (the run's clients read it)
        self.done: list[Request] = []
        self.transfers: list[Transfer] = []

    @staticmethod
    def _workers(role: Role, rng: random.Random, num_reserved: int = 0) -> list[Worker]:
        workers = []
        for w in range(role.num_workers):
            name = f"{role.name}-{w}"
            if role.name == "prefill":
                ranks = [PrefillRank(f"{name}.dp{r}", role.rank, role.cost, rng) for r in range(role.dp_size)]
            else:
                ranks = [DecodeRank(f"{name}.dp{r}", role.rank, role.cost, rng, num_reserved)
                         for r in range(role.dp_size)]
            workers.append(Worker(name, ranks, role.cost))
        return workers

    @property
    def workers(self) -> list[Worker]:
        return self.prefill + self.decode

    # -- arrivals -----------------------------------------------------------------------------------
    def arrive(self, req: Request) -> None:
        """The router sends the request to one prefill and one decode worker (both at once, as sgl-router
        does)."""
        reason = self._cannot_serve(req)
        if reason:
            req.reject(reason, self.now)
            self.rejected.append(req)
            self.done.append(req)
            return
        p_worker = self.prefill[self.router.pick("prefill", [self.loads[w.name] for w in self.prefill])]
        d_worker = self.decode[self.router.pick("decode", [self.loads[w.name] for w in self.decode])]
        room = self.router.bootstrap_room()
        p_rank = p_worker.ranks[self.pickers[p_worker.name].pick(room)]
        d_rank = d_worker.ranks[self.pickers[d_worker.name].pick(room)]
        h = Handoff(req, prefill_copy(req), (p_worker, p_rank), (d_worker, d_rank), bootstrap_room=room)
        self.handoffs[req.rid] = h
        self.loads[p_worker.name] += 1
        self.loads[d_worker.name] += 1
        p_worker.wake(self.now)
        d_worker.wake(self.now)
        req.state, req.queued_at = RequestState.WAITING, self.now
        is_early = self.policy == "early"
        p_rank.add(h.copy, self.now, bootstrapped=not is_early)  # prefill_complete: optimistic prefill
        d_rank.prealloc.append(req)
        if is_early:
            d_rank.ready.add(req.rid)  # the handshake is done: decode may reserve now

    def _cannot_serve(self, req: Request) -> str:
        """Requests that could never run are rejected at once, with the reason (no silent hang)."""
        p_cfg, d_cfg = self.roles["prefill"].rank, self.roles["decode"].rank
        if req.is_mid_reply:
            return "a request that starts mid-reply is not modelled in PD mode"
        if req.prompt_len + 1 + p_cfg.page_size >= p_cfg.max_total_tokens:
            return (f"prompt of {req.prompt_len} tokens does not fit a prefill rank's KV pool "
                    f"({p_cfg.max_total_tokens})")
        probe = self.decode[0].ranks[0]
        if not probe.fits_empty_pool(req):
            return (f"needs {probe.admission_tokens(req)} decode KV slots "
                    "(prompt + max(512 headroom, min(max_new, 4096)))"
                    f" but a decode rank holds {d_cfg.max_total_tokens}: it could never be preallocated")
        return ""

    # -- the run's view: a topology (see engine_model/server.py) --------------------------------------
    @property
    def resolved(self) -> Resolved:
        return self.roles["prefill"].rank

    @property
    def lanes(self) -> dict[str, list[Iteration]]:
        return {w.name: w.iterations for w in self.workers}

    @property
    def crash(self) -> str | None:
        """Why a worker stopped (its allocator ran out of KV memory), or None."""
        crashed = (f"{rank.name}: {rank.crash}" for w in self.workers for rank in w.ranks if rank.crash)
        return next(crashed, None)

    @property
    def num_iterations(self) -> int:
        return sum(len(w.iterations) for w in self.workers)

    def frontend_s(self, req: Request) -> float:
        """HTTP and tokenizer time before the router sees the request (0 on the linear predictor)."""
        return self.roles["prefill"].cost.whole.frontend_seconds(req.prompt_len)

    def advance(self, at: float) -> list[Iteration]:
        self.now = at
        return []

    def step(self) -> list[Iteration]:
        """Settle every message and transfer due by now, then run the pass of the worker that is due."""
        at = self.now
        self.settle(at)
        it = self.step_due(at)
        return [it] if it is not None else []

    def record(self) -> dict:
        ranks = [rank for w in self.workers for rank in w.ranks]
        return {
            "resolved": self.resolved, "cost_model": self.roles["prefill"].cost.describe(),
            "retractions": [event for rank in ranks for event in rank.retractions],
            "pd": PDRecord(rank_lanes={rank.name: rank.iterations for rank in ranks},
                           roles={name: role.rank for name, role in self.roles.items()}, policy=self.policy,
                           transfers=self.transfers, kv_bytes_per_token=self.kv_bytes_per_token),
        }

    # -- time ---------------------------------------------------------------------------------------
    def next_at(self) -> float | None:
        times = [self.events[0].at] if self.events else []
        sent = self.network.next_sent_at()
        times += [sent] if sent is not None else []
        times += [w.now for w in self.workers if not w.is_parked]
        return min(times, default=None)

    def settle(self, at: float) -> None:
        """Apply every message and transfer landing up to `at`, in time order."""
        while True:
            sent = self.network.next_sent_at()
            head = self.events[0].at if self.events else None
            if sent is not None and sent <= at and (head is None or sent < head):
                for transfer in self.network.pop_sent(sent):
                    self._post(msg.Message(DELIVERED, self.handoffs[transfer.rid].req, transfer.delivered_at))
            elif head is not None and head <= at:
                self._handle(heapq.heappop(self.events).message)
            else:
                return

    def step_due(self, at: float) -> Iteration | None:
        """Run one pass on the worker whose clock is `at` (the earliest). None if none is due or it parked."""
        due = [w for w in self.workers if not w.is_parked and w.now <= at]
        if not due:
            return None
        worker = min(due, key=lambda w: w.now)
        it = worker.step()
        for message in worker.drain():
            self._post(message)
        return it

    def _post(self, message: msg.Message) -> None:
        heapq.heappush(self.events, Event(message.at, self.num_events, message))
        self.num_events += 1

    # -- messages -----------------------------------------------------------------------------------
    def _handle(self, m: msg.Message) -> None:
        self.now = m.at
        h = self.handoffs.get(m.req.rid)
        handler = getattr(self, f"_on_{m.kind}")
        handler(h, m)

    def _on_chunk(self, h: Handoff, m: msg.Message) -> None:
        req = h.req
        if req.first_scheduled_at is None:
            req.first_scheduled_at = m.start_at
            h.span("waiting", h.allocated_at if self.policy == "early" else req.arrival_at, m.start_at)
        h.span("prefill", m.start_at, m.at)
        if self.policy == "early":
            self.network.add(h.transfer, m.extend * self.kv_bytes_per_token, m.is_last, m.at)
        elif m.is_last:
            h.prefilled_at = m.at
            worker, rank = h.decode
            worker.wake(m.at)
            rank.ready.add(req.rid)  # mark_prefill_complete -> the receiver turns WaitingForInput

    def _on_allocated(self, h: Handoff, m: msg.Message) -> None:
        h.allocated_at = m.at
        h.span("waiting_for_decode_kv", h.prefilled_at or h.req.arrival_at, m.at)
        p_worker, p_rank = h.prefill
        h.transfer = self.network.open(h.req.rid, p_rank.name, h.decode[1].name)
        self.transfers.append(h.transfer)
        if self.policy == "early":
            p_worker.wake(m.at)
            p_rank.bootstrapped.add(h.req.rid)  # the sender sees WaitingForInput
        else:
            self.network.add(h.transfer, h.req.prompt_len * self.kv_bytes_per_token, True, m.at)

    def _on_delivered(self, h: Handoff, m: msg.Message) -> None:
        h.span("transfer", h.transfer.started_at, m.at)
        self.loads[h.prefill[0].name] -= 1
        (p_worker, p_rank), (d_worker, d_rank) = h.prefill, h.decode
        p_worker.wake(m.at)
        p_rank.sent.add(h.req.rid)  # process_disagg_prefill_inflight_queue frees the KV at its next poll
        d_worker.wake(m.at)
        d_rank.delivered.add(h.req.rid)  # pop_transferred

    def _on_joined(self, h: Handoff, m: msg.Message) -> None:
        h.decoding_since = m.at

    def _on_retracted(self, h: Handoff, m: msg.Message) -> None:
        h.span("decode", h.decoding_since, m.at)
        h.decoding_since = m.at

    def _on_resumed(self, h: Handoff, m: msg.Message) -> None:
        h.span("retracted", h.decoding_since, m.at)
        h.decoding_since = m.at

    def _on_finished(self, h: Handoff, m: msg.Message) -> None:
        h.span("decode", h.decoding_since, m.at)
        self.loads[h.decode[0].name] -= 1
        self.finished.append(h.req)
        self.done.append(h.req)

    def _on_rejected(self, h: Handoff, m: msg.Message) -> None:
        """Decode aborted the last running request (out of KV even after retracting every other), or
        prefill found the copy can never fit (the intake check makes that unreachable)."""
        req, d_rank = h.req, h.decode[1]
        if m.req is not req:
            req.reject(m.req.reject_reason, m.at)
            self.loads[h.prefill[0].name] -= 1
            for queue in (d_rank.prealloc, d_rank.transfer):
                if req in queue:
                    queue.remove(req)
                    d_rank.kv_used -= (ceil_page(req.kv_len, d_rank.cfg.page_size)
                                       if queue is d_rank.transfer else 0)
        self.loads[h.decode[0].name] -= 1
        self.rejected.append(req)
        self.done.append(req)

