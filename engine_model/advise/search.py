"""The advisor: given a scenario (the request mix), a budget and targets per group, search the settings and
GPU layouts (space.py), run each candidate (runner.py), and return every candidate with its numbers, the
Pareto front of output per GPU against each wait, the setting that meets every target with the most output
per GPU, and today's setting for the trade (words.py).

How it searches: every combination where the space holds at most `grid_limit` of them (exhaustive, in a fixed
order); else Optuna's NSGA-II (seeded, with the targets as constraints) over `trials` distinct candidates, in
generations of POPULATION, so which candidates run never depends on the backend or the number of workers.
Deterministic for a seed: the same scenario, budget, targets, space and seed give the same outcomes.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from engine_model.advise.evaluate import Outcome, candidate_of
from engine_model.advise.runner import Progress, run_all
from engine_model.advise.space import Budget, Candidate, Layout, Space, default_space, first_value
from engine_model.advise.targets import WAITS, Target
from engine_model.config import Scenario
from engine_model.errors import InputError

MAX_CANDIDATES = 2000  # runs one search may make (--max-candidates lowers it; above it the search refuses)
GRID_LIMIT = 300  # an exhaustive grid up to this many candidates; Optuna above it
DEFAULT_TRIALS = 200  # candidates Optuna runs when the grid is too large
POPULATION = 20  # candidates per NSGA-II generation
STALE_GENERATIONS = 10  # NSGA-II stops after this many generations in a row propose nothing new
REFUSED_VIOLATION = 1e6  # a refused or unfinished candidate's constraint value: never feasible


@dataclass(frozen=True)
class Advice:
    """Every candidate run (refused ones with their reason), the recommendation and today's setting."""

    scenario: str
    budget: Budget
    targets: tuple[Target, ...]
    outcomes: tuple[Outcome, ...]
    today: Outcome
    method: str  # "grid" or "optuna"
    space_size: int
    seed: int
    best: Outcome | None = None  # meets every target with the most output per GPU
    closest: Outcome | None = None  # when none meets them all: the least over its worst target
    groups: tuple[str, ...] = field(default=())

    @property
    def ran(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.runs]

    @property
    def refused(self) -> list[Outcome]:
        return [o for o in self.outcomes if not o.runs]

    def front(self, group: str | None, wait: str) -> list[Outcome]:
        """The Pareto front of output per GPU (more is better) against one wait (less is better):
        a group's, or the most-waiting group's (group None)."""
        return pareto(self.ran, lambda o: o.wait(group, wait) if group else o.worst(wait))

    def meets(self, outcome: Outcome) -> bool:
        return meets(outcome, self.targets)


# -- the pieces, pure ---------------------------------------------------------------------------------------
def complete(outcome: Outcome) -> bool:
    """It ran, and every request finished (a candidate that drops requests is never recommended)."""
    return outcome.runs and outcome.unfinished == 0 and outcome.cut_off is None


def violations(outcome: Outcome, targets: Sequence[Target]) -> list[float]:
    """Per target, value / limit − 1 (≤ 0: met); a refused, unfinished or unmeasured one:
    REFUSED_VIOLATION."""
    if not complete(outcome):
        return [REFUSED_VIOLATION] * max(1, len(targets))
    out = []
    for t in targets:
        value = outcome.wait(t.group, t.wait)
        out.append(REFUSED_VIOLATION if value is None else value / t.limit_s - 1)
    return out or [0.0]


def meets(outcome: Outcome, targets: Sequence[Target]) -> bool:
    return all(v <= 0 for v in violations(outcome, targets))


def pareto(outcomes: Sequence[Outcome], wait_of) -> list[Outcome]:
    """Candidates no other beats on both output per GPU (higher) and `wait_of` (lower), by output per GPU
    descending; ties keep the first in order."""
    points = [(o, o.output_per_gpu, wait_of(o)) for o in outcomes]
    points = [p for p in points if p[1] is not None and p[2] is not None]
    front = []
    for o, out, w in points:
        beaten = any((out2 >= out and w2 <= w) and (out2 > out or w2 < w) for _, out2, w2 in points)
        duplicate = any(out2 == out and w2 == w for f, out2, w2 in front)
        if not beaten and not duplicate:
            front.append((o, out, w))
    return [o for o, _, _ in sorted(front, key=lambda p: (-p[1], p[2]))]


def recommend(
    outcomes: Sequence[Outcome], targets: Sequence[Target]
) -> tuple[Outcome | None, Outcome | None]:
    """(best, closest): the complete candidate meeting every target with the most output per GPU (ties: the
    most headroom, then the first in order); when none meets them all, the one least over its worst target."""
    ok = [o for o in outcomes if meets(o, targets)]
    if ok:
        return max(
            ok, key=lambda o: (round(o.output_per_gpu, 6), -max(violations(o, targets)), -outcomes.index(o))
        ), None
    ran = [o for o in outcomes if complete(o)]
    if not ran:
        return None, None
    return None, min(ran, key=lambda o: (max(violations(o, targets)), -o.output_per_gpu, outcomes.index(o)))


def today_candidate(scenario: Scenario, budget: Budget) -> Candidate:
    """The scenario's own flags on the budget: its own layout where that uses the budget's GPUs, else one
    engine over them all at the largest TP that splits the model (what a person starts from)."""
    eng = scenario.engine
    chunk = eng.chunked_prefill_size
    tp = scenario.hardware.tp_size
    if scenario.pd is not None:
        pd = scenario.pd
        layout = Layout(
            pd.prefill.tp_size or tp,
            prefill=pd.prefill.num_workers,
            decode=pd.decode.num_workers,
            policy=pd.decode_allocation_policy,
        )
    elif eng.enable_dp_attention:
        layout = Layout(tp, attn_dp=eng.dp_size)
    else:
        layout = Layout(tp, engines=eng.dp_size)
    if layout.gpus != budget.gpus:
        from engine_model.deployment import tp_sizes
        from engine_model.hardware import MODELS

        sizes = [t for t in tp_sizes(MODELS[budget.model], budget.gpus) if budget.gpus % t == 0] or [1]
        layout = Layout(max(sizes), engines=budget.gpus // max(sizes))
    return Candidate(
        layout,
        eng.enable_mixed_chunk,
        chunk,
        eng.schedule_policy,
        eng.schedule_conservativeness,
        eng.max_running_requests,
        eng.speculative_algorithm,
        first_of(scenario),
    )


def first_of(scenario: Scenario) -> str | None:
    """Today's group put first: with priority scheduling on, the one group of the highest priority."""
    if not scenario.engine.enable_priority_scheduling:
        return None
    ranked = [(g.priority, i, g.name) for i, g in enumerate(scenario.workload.groups)
              if g.priority is not None]
    top = max(ranked, default=None)
    if top is None or sum(1 for r in ranked if r[0] == top[0]) > 1 or " " in top[2]:
        return None
    return first_value(top[1], top[2])


# -- the search ---------------------------------------------------------------------------------------------
MAX_CACHED = 20_000  # outcomes kept in memory (a few kB each)
_CACHE: dict[str, Outcome] = {}  # (scenario JSON, budget, candidate key) -> outcome, this process


def _cache_key(scenario_json: str, budget: Budget, key: str) -> str:
    """The scenario by its SHA-256 (a key per candidate need not carry the whole workload), the budget, the
    candidate."""
    digest = hashlib.sha256(scenario_json.encode()).hexdigest()
    return json.dumps([digest, list(vars(budget).values()), key])


class Evaluator:
    """Runs keys through a backend, each key once: this process's cache first, then an optional disk cache
    (a JSON Lines file of outcomes), then the backend. Counts distinct runs against the limit."""

    def __init__(
        self,
        scenario: Scenario,
        budget: Budget,
        backend: str,
        workers: int | None,
        scheduler: str | None,
        progress: Progress | None,
        cancel,
        total: int,
        cache_dir=None,
    ):
        self.scenario_json = scenario.model_dump_json()
        self.budget, self.backend, self.workers, self.scheduler = budget, backend, workers, scheduler
        self.progress, self.cancel, self.total = progress, cancel, total
        self.num_done = 0
        self.disk = None
        if cache_dir is not None:
            from engine_model.advise.cache import DiskCache

            self.disk = DiskCache(cache_dir)

    def __call__(self, keys: Sequence[str]) -> list[Outcome]:
        found: dict[str, Outcome] = {}
        todo = []
        for key in dict.fromkeys(keys):
            ck = _cache_key(self.scenario_json, self.budget, key)
            hit = _CACHE.get(ck) or (self.disk.get(ck, key) if self.disk else None)
            if hit is not None:
                found[key] = _CACHE.setdefault(ck, hit)
            else:
                todo.append(key)
        base = self.num_done + len(found)

        def step(done: int, _total: int) -> None:
            if self.progress:  # Optuna's refusals do not count against its runs: the bar stops at its end
                self.progress(min(base + done, self.total), self.total)

        finished: dict[str, Outcome] = {}
        try:
            ran = run_all(
                self.scenario_json,
                tuple(vars(self.budget).values()),
                todo,
                self.backend,
                self.workers,
                self.scheduler,
                step,
                self.cancel,
                finished,
            )
        finally:  # a cancel, or the app's script stopped by a click: what finished is kept for the next run
            self._keep(finished.values())
        found.update({o.key: o for o in ran})
        self.num_done = base + len(ran)
        if self.progress and not todo:
            self.progress(min(self.num_done, self.total), self.total)
        return [found[key] for key in keys]

    def _keep(self, outcomes) -> None:
        for o in outcomes:
            ck = _cache_key(self.scenario_json, self.budget, o.key)
            _CACHE[ck] = o
            while len(_CACHE) > MAX_CACHED:  # the oldest first: a server's memory stays bounded
                del _CACHE[next(iter(_CACHE))]
            if self.disk:
                self.disk.put(ck, o)


def advise(
    scenario: Scenario,
    budget: Budget,
    targets: Sequence[Target] = (),
    space: Space | None = None,
    seed: int = 0,
    backend: str = "processes",
    workers: int | None = None,
    scheduler: str | None = None,
    max_candidates: int = MAX_CANDIDATES,
    trials: int = DEFAULT_TRIALS,
    method: str = "auto",
    progress: Progress | None = None,
    cancel=None,
    cache_dir=None,
) -> Advice:
    """Search, run and recommend. Raises InputError on a bad budget or target, or a search past
    `max_candidates`; `runner.Cancelled` when `cancel` is set."""
    budget.check()
    groups = tuple(dict.fromkeys(g.name for g in scenario.workload.groups)) or ("requests",)
    for t in targets:
        if scenario.workload.groups and t.group not in groups:
            raise InputError(
                f"--target {t.text}", f"no group {t.group!r}; this workload's groups: {', '.join(groups)}"
            )
    space = space or default_space(budget)
    if not 1 <= max_candidates <= MAX_CANDIDATES:
        raise InputError("--max-candidates", f"{max_candidates:,}: expected 1 to {MAX_CANDIDATES:,}")
    if method not in ("auto", "grid", "optuna"):
        raise InputError("method", f"{method!r}: expected auto, grid or optuna")
    if not 1 <= trials <= MAX_CANDIDATES:
        raise InputError("--trials", f"{trials:,}: expected 1 to {MAX_CANDIDATES:,}")
    if not 0 <= seed < 2**32:
        raise InputError("--seed", f"{seed}: expected a whole number from 0 to {2**32 - 1:,}")
    if space.size == 0:
        raise InputError("--space", "no candidate: every axis needs at least one value")
    use_grid = method == "grid" or (method == "auto" and space.size <= GRID_LIMIT)
    planned = space.size if use_grid else min(trials, space.size)
    if planned > max_candidates:
        raise InputError(
            "--max-candidates",
            (
                f"this search would run {planned:,} candidates, above the limit of {max_candidates:,}: "
                f"narrow the "
                f"space (fewer chunk sizes, layouts or flags)"
                + (", or let Optuna sample it (method auto)" if use_grid else ", or ask for fewer trials")
            ),
        )
    today = today_candidate(scenario, budget)
    run = Evaluator(scenario, budget, backend, workers, scheduler, progress, cancel, planned + 1, cache_dir)
    today_outcome = run([today.key])[0]
    if use_grid:
        outcomes = run([c.key for c in space.candidates()])
    else:
        outcomes = _optuna(space, targets, seed, planned, max_candidates, run)
    best, closest = recommend(outcomes, targets)
    return Advice(
        scenario.name,
        budget,
        tuple(targets),
        tuple(outcomes),
        today_outcome,
        "grid" if use_grid else "optuna",
        space.size,
        seed,
        best,
        closest,
        groups,
    )


def _optuna(
    space: Space, targets: Sequence[Target], seed: int, num: int, cap: int, run: Evaluator
) -> list[Outcome]:
    """NSGA-II over the space's axes, seeded; objectives: output per GPU (up), the most-waiting group's p95
    first token and longest pause (down); the targets as constraints. Generations of POPULATION trials are
    asked, run together, and told in order; a candidate asked twice is told its first outcome. `num`
    candidates that run (SGLang's refusals, a few milliseconds each, are kept beside them and do not count),
    at most `cap` in all; fewer where STALE_GENERATIONS generations in a row propose nothing new (fewer than
    `num` of the space run at all)."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    layouts = {lay.words: lay for lay in space.layouts}
    sampler = optuna.samplers.NSGAIISampler(population_size=POPULATION, seed=seed)
    study = optuna.create_study(directions=["maximize", "minimize", "minimize"], sampler=sampler)
    choices = {"layout": list(layouts), **{axis: list(getattr(space, axis)) for axis in Space.AXES}}
    seen: dict[str, Outcome] = {}
    order: list[str] = []
    num_ran, stale = 0, 0
    while num_ran < num and len(seen) < min(cap, space.size) and stale < STALE_GENERATIONS:
        batch = [study.ask() for _ in range(POPULATION)]
        keys = []
        for trial in batch:
            picked = {name: trial.suggest_categorical(name, values) for name, values in choices.items()}
            keys.append(Candidate(layouts[picked.pop("layout")], **picked).key)
        new = [k for k in dict.fromkeys(keys) if k not in seen][: cap - len(seen)]
        stale = 0 if new else stale + 1  # generations in a row that proposed nothing new: converged
        for outcome in run(new):
            seen[outcome.key] = outcome
            if not outcome.runs or num_ran < num:  # past `num` runs: run together, not reported
                order.append(outcome.key)
                num_ran += outcome.runs
        for trial, key in zip(batch, keys, strict=True):
            outcome = seen.get(key)
            if outcome is None:  # past the cap: not run, not told
                study.tell(trial, state=optuna.trial.TrialState.FAIL)
                continue
            for i, value in enumerate(violations(outcome, targets)):
                trial.set_constraint(f"target{i}", value)
            if complete(outcome):
                objectives = [
                    outcome.output_per_gpu,
                    _finite(outcome.worst("ttft_p95")),
                    _finite(outcome.worst("longest_pause")),
                ]
                study.tell(trial, objectives)
            else:
                study.tell(trial, state=optuna.trial.TrialState.FAIL)
    return [seen[key] for key in order]


def _finite(value: float | None) -> float:
    return value if value is not None and math.isfinite(value) else 1e9


__all__ = [
    "Advice",
    "MAX_CANDIDATES",
    "WAITS",
    "advise",
    "candidate_of",
    "meets",
    "pareto",
    "recommend",
    "today_candidate",
    "violations",
]
