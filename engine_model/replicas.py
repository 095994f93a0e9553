"""k engines behind a round-robin dispatcher: SGLang's `--dp-size k` without `--enable-dp-attention`.

The DataParallelController starts k schedulers, each a whole engine of `hardware.tp_size` GPUs with its own
waiting queue, running batch and KV pool, and hands each new request to the next one in turn (its
`load_balance_method` `auto` resolves to round_robin outside PD: `handle_load_balance_method`,
`round_robin_scheduler`). Nothing else is shared, so each replica is a `Server` on its own clock; the
topology steps the one whose clock is earliest, as the PD cluster steps its workers.
"""

from __future__ import annotations

import random

from engine_model.config import Scenario
from engine_model.core import Iteration, Request
from engine_model.pd.router import RankPicker
from engine_model.server import Server


def num_gpus(scenario: Scenario) -> int:
    """GPUs a deployment uses: an engine's TP times its DP replicas, or every PD worker's TP."""
    tp = scenario.hardware.tp_size
    if scenario.pd is None:
        return tp if scenario.engine.enable_dp_attention else tp * scenario.engine.dp_size
    return sum(role.num_workers * (role.tp_size or tp) for role in (scenario.pd.prefill, scenario.pd.decode))


class Replicas:
    """The run's topology for `engine.dp_size > 1`: one lane per replica, "engine-0", "engine-1", ..."""

    def __init__(self, scenario: Scenario, rng: random.Random):
        self.servers = [Server(scenario, rng) for _ in range(scenario.engine.dp_size)]
        for i, server in enumerate(self.servers):
            server.lane = f"engine-{i}"
        self.picker = RankPicker(len(self.servers), "round_robin")
        self.now = 0.0
        self.done: list[Request] = []  # finished or rejected, every replica's, in the order they were seen
        self.num_seen = [0] * len(self.servers)

    @property
    def resolved(self):
        return self.servers[0].resolved

    @property
    def crash(self) -> str | None:
        return next((f"{s.lane}: {s.crash}" for s in self.servers if s.crash), None)

    @property
    def lanes(self) -> dict[str, list[Iteration]]:
        return {s.lane: s.scheduler.iterations for s in self.servers}

    @property
    def num_iterations(self) -> int:
        return sum(s.num_iterations for s in self.servers)

    def frontend_s(self, req: Request) -> float:
        return self.servers[0].frontend_s(req)

    def next_at(self) -> float | None:
        return min((at for s in self.servers if (at := s.next_at()) is not None), default=None)

    def advance(self, at: float) -> list[Iteration]:
        self.now = at
        return []

    def arrive(self, req: Request) -> None:
        """The controller's next replica takes it; an idle replica first idles up to now."""
        server = self.servers[self.picker.pick(0)]
        server.advance(self.now)
        server.arrive(req)
        self._collect(server)

    def refused(self, req: Request) -> None:
        """A request refused at intake takes its turn when a scheduler refused it (`handle_generate_request`:
        the KV pool's max_req_input_len, checked after dispatch), not when the tokenizer did (the context
        length, `_validate_one_request`, before dispatch)."""
        if req.prompt_len < self.resolved.context_len:
            self.picker.pick(0)

    def _due(self) -> Server | None:
        due = [s for s in self.servers if s.next_at() is not None and s.now <= self.now]
        return min(due, key=lambda s: s.now) if due else None

    def step(self) -> list[Iteration]:
        server = self._due()
        return self._collect(server, server.step()) if server is not None else []

    def fast_forward(self, horizon: float, max_passes: int) -> list[Iteration]:
        """The due replica's decode passes nothing can interrupt before the next arrival: the other
        replicas share nothing with it."""
        server = self._due()
        return self._collect(server, server.fast_forward(horizon, max_passes)) if server is not None else []

    def _collect(self, server: Server, recorded: list[Iteration] = ()) -> list[Iteration]:
        i = self.servers.index(server)
        self.done += server.done[self.num_seen[i]:]
        self.num_seen[i] = len(server.done)
        return list(recorded)

    def record(self) -> dict:
        retractions = sorted((r for s in self.servers for r in s.scheduler.retractions), key=lambda r: r.at)
        preemptions = sorted((p for s in self.servers for p in s.scheduler.preemptions), key=lambda p: p.at)
        return {"resolved": self.resolved, "cost_model": self.servers[0].cost.describe(),
                "retractions": retractions, "pd": None, "preemptions": preemptions}
