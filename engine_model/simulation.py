"""The run loop: deliver arrivals, step the scheduler, feed closed-loop clients, stop at the limits.

Like SimPy's `run(until=...)`, the clock, the id counter and the `random.Random(seed)` live on the run,
so the same scenario and seed always give the same trace.
"""

from __future__ import annotations

import heapq
import random
import time
from dataclasses import dataclass

from engine_model.config import Scenario
from engine_model.core import Iteration, PassKind, Request, Retraction
from engine_model.cost import cost_of
from engine_model.resolve import Resolved, resolve
from engine_model.scheduler import Plan, Scheduler
from engine_model.workload import ClientPool, Workload, build
from engine_model.workload import trace_requests as trace_requests_of


@dataclass
class Result:
    """Everything a run recorded. Metrics and charts are pure functions of it."""

    scenario: Scenario
    resolved: Resolved
    cost_model: str
    requests: list[Request]  # in workload order
    iterations: list[Iteration]
    retractions: list[Retraction]
    cut_off: str | None  # which limit stopped the run early, if any
    wall_s: float

    @property
    def end_at(self) -> float:
        return max((it.end_at for its in self.lanes.values() for it in its[-1:]), default=0.0)

    @property
    def lanes(self) -> dict[str, list[Iteration]]:
        """Iterations per GPU worker: one lane for a single engine; PD runs have one per worker."""
        return {"engine": self.iterations}


def make_cost(scenario: Scenario):
    return cost_of(scenario)  # cost-calib: main's cost.cost_of, with the GPU figures, CPU and overlap


class Run:
    """One simulation in progress."""

    def __init__(self, scenario: Scenario, trace_requests: list[Request] = ()):
        self.scenario = scenario
        self.rng = random.Random(scenario.seed)
        traced = list(trace_requests) or trace_requests_of(scenario.workload, scenario.seed)
        self.workload: Workload = build(scenario.workload, self.rng, max_requests=scenario.limits.max_requests,
                                        trace_requests=traced)
        self.scheduler = self.make_scheduler()
        self.arrivals: list[tuple[float, int, Request]] = []
        self.num_pushed = 0
        self.pool_of: dict[str, ClientPool] = {r.rid: p for p in self.workload.pools for r in p.queue}
        self.requests = list(self.workload.open_loop) + [r for p in self.workload.pools for r in p.queue]
        self.num_seen_done = 0
        for req in self.workload.open_loop:
            self._push(req)
        self._start_pools()

    def make_scheduler(self) -> Scheduler:
        """One SGLang server; a PD run puts a cluster of workers here instead."""
        self.resolved = resolve(self.scenario)
        self.cost = make_cost(self.scenario)
        return Scheduler(self.resolved, self.cost, self.rng)

    def _push(self, req: Request) -> None:
        heapq.heappush(self.arrivals, (req.arrival_at, self.num_pushed, req))
        self.num_pushed += 1

    def _start_pools(self) -> None:
        done = {p.name for p in self.workload.pools if p.is_done}
        for pool in self.workload.pools:
            if pool.started or (pool.start_after is not None and pool.start_after not in done):
                continue
            pool.started = True
            start = max(pool.start_at, self.scheduler.now)
            for _ in range(min(pool.concurrency, len(pool.queue))):
                self._send(pool, start)

    def _send(self, pool: ClientPool, at: float) -> None:
        req = pool.queue.popleft()
        req.arrival_at = at
        pool.num_in_flight += 1
        self._push(req)

    def _on_done(self) -> None:
        """Closed-loop clients send their next request when one finishes or is rejected."""
        done = self.scheduler.finished + self.scheduler.rejected
        if len(done) == self.num_seen_done:
            return
        for req in sorted(done[self.num_seen_done:], key=lambda r: r.finished_at):
            pool = self.pool_of.get(req.rid)
            if pool is not None:
                pool.num_in_flight -= 1
                if pool.queue:
                    self._send(pool, req.finished_at + pool.think_s)
        self.num_seen_done = len(done)
        self._start_pools()

    def deliver(self) -> None:
        while self.arrivals and self.arrivals[0][0] <= self.scheduler.now:
            self.scheduler.arrive(heapq.heappop(self.arrivals)[2])
        self._on_done()  # a rejection at arrival frees a client slot too

    def step(self) -> Iteration | None:
        """One iteration (or one idle wait for the next arrival). None when there is nothing left."""
        self.deliver()
        sched = self.scheduler
        if not sched.has_work:
            if not self.arrivals:
                return None
            return self._idle_until(self.arrivals[0][0])
        it = sched.step()
        self._on_done()
        return it

    def _idle_until(self, at: float) -> Iteration:
        sched = self.scheduler
        sched.ratio.reset()  # on_idle: fully idle
        plan = Plan(PassKind.IDLE, reason="idle: nothing waiting or running until the next arrival", mirrors="Scheduler.on_idle")
        it = sched.record(plan, sched.launch_view(plan), at)
        sched.now = at
        return it

    def run(self) -> Result:
        started = time.perf_counter()
        limits = self.scenario.limits
        cut_off = None
        num_still = 0  # consecutive zero-time idle iterations (prefill_decode_interval countdown)
        while True:
            it = self.step()
            if it is None:
                break
            num_still = num_still + 1 if it.kind is PassKind.IDLE and it.duration_s == 0 else 0
            if num_still > self.resolved.prefill_decode_interval + 2:
                cut_off = f"stuck: no pass could run at t={it.start_at:.3f}s with work waiting"
                break
            if len(self.scheduler.iterations) >= limits.max_iterations:
                cut_off = f"limits.max_iterations ({limits.max_iterations}) reached"
                break
            if self.scheduler.now > limits.max_sim_seconds:
                cut_off = f"limits.max_sim_seconds ({limits.max_sim_seconds:g}) reached"
                break
        return Result(
            scenario=self.scenario, resolved=self.resolved, cost_model=self.cost.describe(),
            requests=self.requests, iterations=self.scheduler.iterations,
            retractions=self.scheduler.retractions, cut_off=cut_off, wall_s=time.perf_counter() - started,
        )


def simulate(scenario: Scenario, trace_requests: list[Request] = ()) -> Result:
    if scenario.pd is not None:  # prefill-decode disaggregation: engine_model/pd
        from engine_model.pd.run import simulate_pd

        return simulate_pd(scenario, trace_requests)
    return Run(scenario, trace_requests).run()
