"""A PD run: the single engine's arrivals and closed-loop clients (inherited from `Run`), with a cluster
where `Run` has one scheduler. The loop, like a discrete-event simulator's:

    t = the earliest of: next arrival, next message, next transfer landing, a worker's next pass
    deliver arrivals up to t -> settle messages and transfers up to t -> run the due worker's pass
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from engine_model.config import Scenario
from engine_model.core import Iteration, Request
from engine_model.pd.cluster import Cluster
from engine_model.pd.transfer import Transfer
from engine_model.resolve import Resolved
from engine_model.simulation import Result, Run


@dataclass
class PDResult(Result):
    """A `Result` with one lane per worker ("prefill-0", "decode-0", ...), one per DP rank, and the transfers."""

    worker_lanes: dict[str, list[Iteration]] = field(default_factory=dict)
    rank_lanes: dict[str, list[Iteration]] = field(default_factory=dict)  # "decode-0.dp2": one rank's passes
    roles: dict[str, Resolved] = field(default_factory=dict)  # "prefill" / "decode": one rank's settings
    policy: str = "early"
    transfers: list[Transfer] = field(default_factory=list)
    kv_bytes_per_token: float = 0.0

    @property
    def lanes(self) -> dict[str, list[Iteration]]:
        return self.worker_lanes


class PDRun(Run):
    def make_scheduler(self) -> Cluster:
        """The workers replace the single scheduler; `Run`'s client code talks to it as `scheduler`."""
        self.cluster = Cluster(self.scenario, self.rng)
        self.resolved = self.cluster.roles["prefill"].rank
        return self.cluster

    def next_at(self) -> float | None:
        times = [self.arrivals[0][0]] if self.arrivals else []
        cluster_at = self.cluster.next_at()
        return min(times + ([cluster_at] if cluster_at is not None else []), default=None)

    def run(self) -> PDResult:
        started = time.perf_counter()
        cluster, limits = self.cluster, self.scenario.limits
        cut_off = None
        while (at := self.next_at()) is not None:
            cluster.now = at
            self.deliver()
            cluster.settle(at)
            cluster.step_due(at)
            self._on_done()
            if sum(len(w.iterations) for w in cluster.workers) >= limits.max_iterations:
                cut_off = f"limits.max_iterations ({limits.max_iterations}) reached"
                break
            if at > limits.max_sim_seconds:
                cut_off = f"limits.max_sim_seconds ({limits.max_sim_seconds:g}) reached"
                break
        else:
            cut_off = self._stuck()
        return self._result(cut_off, time.perf_counter() - started)

    def _stuck(self) -> str | None:
        """Every worker parked, no message or arrival left, yet requests remain: say which, never hang."""
        done = {r.rid for r in self.cluster.finished + self.cluster.rejected}
        left = [r.rid for r in self.requests if r.rid not in done]
        if not left:
            return None
        return f"stuck: {len(left)} request(s) can make no progress (first: {left[0]}) at t={self.cluster.now:.3f}s"

    def _result(self, cut_off: str | None, wall_s: float) -> PDResult:
        cluster = self.cluster
        lanes = {w.name: w.iterations for w in cluster.workers}
        ranks = [rank for w in cluster.workers for rank in w.ranks]
        return PDResult(
            scenario=self.scenario, resolved=self.resolved, cost_model=cluster.roles["prefill"].cost.describe(),
            requests=self.requests,
            iterations=sorted((it for its in lanes.values() for it in its), key=lambda it: it.start_at),
            retractions=[event for rank in ranks for event in rank.retractions], cut_off=cut_off, wall_s=wall_s,
            worker_lanes=lanes, rank_lanes={rank.name: rank.iterations for rank in ranks},
            roles={name: role.rank for name, role in cluster.roles.items()}, policy=cluster.policy,
            transfers=cluster.transfers, kv_bytes_per_token=cluster.kv_bytes_per_token,
        )


def simulate_pd(scenario: Scenario, trace_requests: list[Request] = ()) -> PDResult:
    return PDRun(scenario, trace_requests).run()
