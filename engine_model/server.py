"""One SGLang server as a topology of the run: a single scheduler on a single clock, one lane.

The run loop (simulation.py) asks every topology the same things: `next_at()`, `advance(at)`, `arrive`,
`step()`, `now`, `done`, `crash` and its `lanes`. A PD cluster (pd/cluster.py) answers them for many workers.
"""

from __future__ import annotations

import random

from engine_model.config import Scenario
from engine_model.core import Iteration, PassKind, Request
from engine_model.cost import cost_of
from engine_model.resolve import resolve
from engine_model.rules import mirrors
from engine_model.scheduler import Plan, Scheduler


class Server:
    lane = "engine"

    def __init__(self, scenario: Scenario, rng: random.Random):
        self.resolved = resolve(scenario)
        self.cost = cost_of(scenario)
        self.scheduler = Scheduler(self.resolved, self.cost, rng)

    @property
    def now(self) -> float:
        return self.scheduler.now

    @property
    def done(self) -> list[Request]:
        return self.scheduler.done

    @property
    def crash(self) -> str | None:
        """Why the server stopped (SGLang's allocator ran out of KV memory), or None."""
        return self.scheduler.crash

    @property
    def lanes(self) -> dict[str, list[Iteration]]:
        return {self.lane: self.scheduler.iterations}

    @property
    def num_iterations(self) -> int:
        return len(self.scheduler.iterations)

    def next_at(self) -> float | None:
        """Now, while there is work; None when only a new arrival can give it some."""
        return self.scheduler.now if self.scheduler.has_work else None

    def arrive(self, req: Request) -> None:
        self.scheduler.arrive(req)

    def frontend_s(self, req: Request) -> float:
        """HTTP and tokenizer time before the scheduler sees the request (0 on the linear predictor)."""
        return self.cost.frontend_seconds(req.prompt_len)

    def advance(self, at: float) -> list[Iteration]:
        """Idle until `at` when nothing runs before then: one idle iteration on the lane."""
        if at <= self.scheduler.now:
            return []
        return [self._idle_until(at)]

    @mirrors("on_idle")
    def _idle_until(self, at: float) -> Iteration:
        """`on_idle`: nothing waits or runs, so the new-token ratio resets and the clock jumps to `at`."""
        sched = self.scheduler
        sched.ratio.reset()  # on_idle: fully idle
        plan = Plan(PassKind.IDLE, reason="idle: nothing waiting or running until the next arrival",
                    mirrors="Scheduler.on_idle")
        it = sched.record(plan, sched.launch_view(plan), at)
        sched.now = at
        return it

    def step(self) -> list[Iteration]:
        """One iteration of the scheduler: schedule -> cost -> apply -> record."""
        return [self.scheduler.step()] if self.scheduler.has_work else []

    def fast_forward(self, horizon: float, max_passes: int) -> list[Iteration]:
        """The decode passes nothing can interrupt before `horizon`, at most `max_passes`
        (`Scheduler.decode_streak`)."""
        return self.scheduler.decode_streak(horizon, max_passes)

    def record(self) -> dict:
        """What the result keeps of this topology beyond its lanes."""
        return {"resolved": self.resolved, "cost_model": self.cost.describe(),
                "retractions": self.scheduler.retractions, "pd": None,
                "preemptions": self.scheduler.preemptions}
