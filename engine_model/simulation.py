"""The run loop: one loop for every topology, like SimPy's `run(until=...)`.

    at = the earliest of: the next arrival, the topology's next event (`next_at()`)
    advance the topology to `at` -> deliver arrivals up to its clock -> step it -> feed closed-loop clients

A topology is one SGLang server (`server.Server`), k of them behind round-robin dispatch
(`replicas.Replicas`) or a PD cluster (`pd.cluster.Cluster`); each answers
`next_at()`, `advance(at)`, `arrive(req)`, `step()`, `now`, `done`, `crash` and `lanes`. The limits, the
"stuck" check, a server's crash and the length checks at intake live here, once. The clock, the id
counter and the `random.Random(seed)` live on the run, so the same scenario and seed always give the same
trace.
"""

from __future__ import annotations

import heapq
import math
import random
import time
from dataclasses import dataclass, field

from engine_model.config import Scenario
from engine_model.core import Iteration, PassKind, Request, Retraction
from engine_model.dp_attention import AttentionDP, is_dp_attention
from engine_model.frontend import OUTPUT_ROW_S, TOKENIZE_S_PER_TOKEN, Block, deliver
from engine_model.pd.cluster import Cluster, PDRecord
from engine_model.priority import Preemption
from engine_model.replicas import Replicas
from engine_model.resolve import Resolved
from engine_model.scheduler import intake
from engine_model.server import Server
from engine_model.workload import ClientPool, Workload, build
from engine_model.workload import trace_requests as trace_requests_of

WALL_CHECK_EVERY = 256  # loop turns between looks at the wall clock
MAX_STREAK = 256  # decode passes one turn may fast-forward (Scheduler.decode_streak)


@dataclass
class Result:
    """Everything a run recorded. Metrics and charts are pure functions of it."""

    scenario: Scenario
    resolved: Resolved  # the engine's settings (a PD run: one prefill rank's)
    cost_model: str
    requests: list[Request]  # in workload order
    lanes: dict[str, list[Iteration]]  # one per engine or worker: "engine", "engine-0", "prefill-0", ...
    retractions: list[Retraction]
    cut_off: str | None  # which limit stopped the run early, if any
    wall_s: float
    pd: PDRecord | None = None  # a PD run's ranks, roles and transfers
    front_end: list[Block] = field(default_factory=list)  # where tokenizing held replies back (frontend.py)
    preemptions: list[Preemption] = field(default_factory=list)  # priority scheduling (priority.py)
    iterations: list[Iteration] = field(init=False)  # every lane's, by start time

    def __post_init__(self) -> None:
        lanes = list(self.lanes.values())
        merged = (lanes[0] if len(lanes) == 1
                  else sorted((it for its in lanes for it in its), key=lambda it: it.start_at))
        self.iterations = merged

    @property
    def end_at(self) -> float:
        return max((it.end_at for its in self.lanes.values() for it in its[-1:]), default=0.0)


class Run:
    """One simulation in progress."""

    def __init__(self, scenario: Scenario, trace_requests: list[Request] = ()):
        self.scenario = scenario
        self.rng = random.Random(scenario.seed)
        traced = list(trace_requests) or trace_requests_of(scenario.workload, scenario.seed)
        self.workload: Workload = build(scenario.workload, self.rng,
                                        max_requests=scenario.limits.max_requests, trace_requests=traced)
        self.topology = topology(scenario, self.rng)
        self.arrivals: list[tuple[float, int, Request]] = []  # when each request reaches the scheduler
        self.sent: list[tuple[float, int, Request]] = []  # sent, waiting for the front end's tokenizer
        self.tokenize_s = front_figures(scenario)[0] if front_figures(scenario) else None
        self.tokenizer_free = 0.0  # when the server's event loop has tokenized every prompt it was sent
        self.num_pushed = 0
        self.pool_of: dict[str, ClientPool] = {r.rid: p for p in self.workload.pools for r in p.queue}
        self.requests = list(self.workload.open_loop) + [r for p in self.workload.pools for r in p.queue]
        self.turned_away: list[Request] = []  # refused at intake, not yet seen by the clients
        self.num_seen_done = 0
        self.at = 0.0  # the moment of the last turn
        for req in self.workload.open_loop:
            self._push(req)
        self._start_pools()

    # -- arrivals and closed-loop clients ---------------------------------------------------------------
    def _push(self, req: Request) -> None:
        """A client sends `req` at its arrival_at; the scheduler sees it after the front end's time
        (HTTP and tokenizer: `cost.frontend_s`). A reply already streaming needs no front end. With the
        front-end loop modelled, prompts are tokenized one at a time (`_tokenize`)."""
        if self.tokenize_s is not None and not req.is_mid_reply:
            heapq.heappush(self.sent, (req.arrival_at, self.num_pushed, req))
        else:
            delay = 0.0 if req.is_mid_reply else self.topology.frontend_s(req)
            heapq.heappush(self.arrivals, (req.arrival_at + delay, self.num_pushed, req))
        self.num_pushed += 1

    def _tokenize(self, at: float, num: int, req: Request) -> None:
        """`TokenizerManager._tokenize_texts` runs inline on the server's one event loop: a prompt waits
        for those sent before it (frontend.py; one queue for the server that streams the replies)."""
        start = max(at, self.tokenizer_free)
        self.tokenizer_free = start + self.tokenize_s * req.prompt_len
        heapq.heappush(self.arrivals, (start + self.topology.frontend_s(req), num, req))

    def _start_pools(self) -> None:
        done = {p.name for p in self.workload.pools if p.is_done}
        for pool in self.workload.pools:
            if pool.started or (pool.start_after is not None and pool.start_after not in done):
                continue
            pool.started = True
            start = max(pool.start_at, self.topology.now)
            for _ in range(min(pool.concurrency, len(pool.queue))):
                self._send(pool, start)

    def _send(self, pool: ClientPool, at: float) -> None:
        req = pool.queue.popleft()
        req.arrival_at = at
        pool.num_in_flight += 1
        self._push(req)

    def _on_done(self) -> None:
        """Closed-loop clients send their next request when one finishes or is refused."""
        done = self.topology.done
        if len(done) == self.num_seen_done and not self.turned_away:
            return
        new = done[self.num_seen_done:] + self.turned_away
        self.num_seen_done, self.turned_away = len(done), []
        for req in sorted(new, key=lambda r: r.finished_at):
            pool = self.pool_of.get(req.rid)
            if pool is not None:
                pool.num_in_flight -= 1
                if pool.queue:
                    self._send(pool, req.finished_at + pool.think_s)
        self._start_pools()

    def deliver(self) -> None:
        """Arrivals up to the topology's clock pass intake's length checks and reach the topology."""
        now = self.topology.now
        while self.sent and self.sent[0][0] <= now:  # every prompt sent by now is tokenized (or queued) first
            self._tokenize(*heapq.heappop(self.sent))
        while self.arrivals and self.arrivals[0][0] <= now:
            req = heapq.heappop(self.arrivals)[2]
            reason = intake(req, self.topology.resolved)
            if reason:
                req.reject(reason, now)
                self.turned_away.append(req)
                refused = getattr(self.topology, "refused", None)  # replicas: the dispatcher dealt it first
                if refused is not None:
                    refused(req)
            else:
                self.topology.arrive(req)
        self._on_done()  # a refusal at arrival frees a client slot too

    # -- the loop -------------------------------------------------------------------------------------
    def next_at(self) -> float | None:
        at = self.topology.next_at()
        while self.sent:  # tokenize, in the order sent, every prompt sent before anything else happens
            bound = min((t for t in (at, self.arrivals[0][0] if self.arrivals else None) if t is not None),
                        default=None)
            if bound is not None and self.sent[0][0] > bound:
                break
            self._tokenize(*heapq.heappop(self.sent))
        if not self.arrivals:
            return at
        first = self.arrivals[0][0]
        return first if at is None or first <= at else at

    def step(self) -> list[Iteration] | None:
        """One turn of the loop: the iterations it recorded (maybe none), or None when nothing is left."""
        at = self.next_at()
        return None if at is None else self._turn(at, math.inf, MAX_STREAK)

    def _turn(self, at: float, until: float, max_passes: int) -> list[Iteration]:
        """Idle up to `at`, or deliver what arrived and step; a turn whose next passes nothing can
        interrupt runs them all (`fast_forward`), each starting no later than `until`."""
        self.at = at
        recorded = self.topology.advance(at)  # a single server records its idle wait as an iteration
        if not recorded:
            self.deliver()
            recorded = self._fast_forward(until, max_passes) or self.topology.step()
            self._on_done()
        return recorded

    def _fast_forward(self, until: float, max_passes: int) -> list[Iteration]:
        """A single server's uninterruptible decode passes: until the next arrival, at most `max_passes`,
        none starting after `until` (PD clusters have none)."""
        fast_forward = getattr(self.topology, "fast_forward", None)
        if fast_forward is None:
            return []
        horizon = math.nextafter(until, math.inf)  # a pass may start at `until`, not after it
        for queue in (self.arrivals, self.sent):
            if queue:
                horizon = min(horizon, queue[0][0])
        return fast_forward(horizon, max_passes)

    def run(self, until: float | None = None) -> Result:
        """Run to the end, to a limit, or to simulated time `until` (default: limits.max_sim_seconds)."""
        started = time.perf_counter()
        limits = self.scenario.limits
        bound = "limits.max_sim_seconds" if until is None else "until"
        until = limits.max_sim_seconds if until is None else until
        topology, max_still = self.topology, self.topology.resolved.prefill_decode_interval + 2
        cut_off, num_still, num_turns = None, 0, 0
        while (at := self.next_at()) is not None:
            if at > until:  # the next thing happens past the limit: stop here, do not idle up to it
                cut_off = f"{bound} ({until:g}) reached"
                break
            max_passes = min(MAX_STREAK, limits.max_iterations - topology.num_iterations)
            recorded = self._turn(at, until, max_passes)
            for it in recorded:  # zero-time idle iterations in a row: prefill_decode_interval's countdown
                num_still = num_still + 1 if it.kind is PassKind.IDLE and it.end_at == it.start_at else 0
            num_turns += 1
            if topology.crash:
                cut_off = topology.crash
            elif num_still > max_still:
                cut_off = f"stuck: no pass could run at t={topology.now:.3f}s with work waiting"
            elif topology.num_iterations >= limits.max_iterations:
                cut_off = f"limits.max_iterations ({limits.max_iterations}) reached"
            elif max(self.at, topology.now) > until:
                cut_off = f"{bound} ({until:g}) reached"
            elif (num_turns % WALL_CHECK_EVERY == 0
                  and time.perf_counter() - started > limits.max_wall_seconds):
                cut_off = f"limits.max_wall_seconds ({limits.max_wall_seconds:g}) reached"
            if cut_off:
                break
        else:
            cut_off = self._stuck()
        lanes = self.topology.lanes
        return Result(scenario=self.scenario, requests=self.requests, lanes=lanes, cut_off=cut_off,
                      front_end=front_end(self.scenario, self.requests, lanes),
                      wall_s=time.perf_counter() - started, **self.topology.record())

    def _stuck(self) -> str | None:
        """Nothing left to run and no arrival left, yet requests remain: say which, never hang."""
        left = [r.rid for r in self.requests if r.finished_at is None]
        if not left:
            return None
        return (f"stuck: {len(left)} request(s) can make no progress (first: {left[0]}) "
                f"at t={self.topology.now:.3f}s")


def front_figures(scenario: Scenario) -> tuple[float, float] | None:
    """(seconds per prompt token, seconds per stream per output batch) of the front-end loop; None where
    it is not modelled: cost.front_end false, or the linear predictor of the reference traces, which
    times the scheduler only."""
    cost = scenario.cost
    if cost.kind != "roofline" or not cost.front_end:
        return None
    return (TOKENIZE_S_PER_TOKEN if cost.tokenize_s is None else cost.tokenize_s,
            OUTPUT_ROW_S if cost.output_row_s is None else cost.output_row_s)


def front_end(scenario: Scenario, requests: list[Request], lanes: dict) -> list[Block]:
    """The client's view of every token through the server's front end."""
    figures = front_figures(scenario)
    return deliver(requests, lanes, *figures) if figures else []


def topology(scenario: Scenario, rng: random.Random) -> Server | Replicas | AttentionDP | Cluster:
    """One engine, `engine.dp_size` engines behind round-robin dispatch, one engine of `engine.dp_size`
    attention DP ranks in lockstep (`engine.enable_dp_attention`), or a PD cluster."""
    if scenario.pd is not None:
        return Cluster(scenario, rng)
    if is_dp_attention(scenario):
        return AttentionDP(scenario, rng)
    return Replicas(scenario, rng) if scenario.engine.dp_size > 1 else Server(scenario, rng)


def simulate(scenario: Scenario, trace_requests: list[Request] = ()) -> Result:
    return Run(scenario, trace_requests).run()
