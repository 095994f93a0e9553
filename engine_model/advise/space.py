"""What the advisor searches: a deployment budget (N GPUs of a kind, a model), the settings SGLang takes on
it (mixed chunk, chunk size, queue order, conservativeness, max running requests) and the ways to lay the N
GPUs out (engines × TP, or PD: prefill : decode workers of one TP under a decode allocation policy).

A `Candidate` is one point of that space. It is written as the `--set` list `run` takes (`sets`), so what the
advisor ran is what `python -m engine_model run SCENARIO --set ...` runs, and its `key` is that list joined:
a string that names it in a cache, a table, a URL and across processes.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field, replace
from typing import get_args

from engine_model.config import EngineConfig, Scenario
from engine_model.deployment import tp_sizes
from engine_model.errors import InputError
from engine_model.hardware import GPUS, MODELS
from engine_model.pd.config import AllocationPolicy
from engine_model.scenario_io import apply_sets, validate

# The queue orders the advisor tries, where this model's config accepts them (lpm arrives with prefix reuse).
WANTED_POLICIES = ("fcfs", "lpm", "shortest-prefill-first")
POLICIES = tuple(
    p for p in WANTED_POLICIES if p in get_args(EngineConfig.model_fields["schedule_policy"].annotation)
)
ALLOCATION_POLICIES: tuple[str, ...] = get_args(AllocationPolicy)
SPECULATIVE = ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM")  # what --space speculative= takes
FIRST = 20  # the priority the group put first is sent with (the others send none: the lowest there is)


def first_value(index: int | str, name: str) -> str:
    """`Candidate.first` for a group: "INDEX:NAME" (the index for `--set`, the name for words)."""
    return f"{index}:{name}"


@dataclass(frozen=True)
class Budget:
    """N GPUs of one kind and the model they serve (presets: engine_model.hardware)."""

    gpus: int
    gpu: str
    model: str

    def check(self) -> None:
        if not 1 <= self.gpus <= 64:
            raise InputError("--gpus", f"{self.gpus}: expected a whole number of GPUs from 1 to 64")
        if self.gpu not in GPUS:
            raise InputError("--gpu", f"{self.gpu!r}: expected one of {', '.join(GPUS)}")
        if self.model not in MODELS:
            raise InputError("--model", f"{self.model!r}: expected one of {', '.join(MODELS)}")

    @property
    def words(self) -> str:
        return f"{self.gpus} × {GPUS[self.gpu].name} · {MODELS[self.model].name}"


@dataclass(frozen=True)
class Layout:
    """How the N GPUs are laid out: `engines` whole engines of TP `tp` (engine.dp_size × hardware.tp_size), or
    PD (`prefill` : `decode` workers of TP `tp` each, under `policy`)."""

    tp: int
    engines: int = 1
    prefill: int = 0
    decode: int = 0
    policy: str = ""
    attn_dp: int = 0  # one engine with DP attention over this many ranks (engine_model/dp_attention.py)

    @property
    def is_pd(self) -> bool:
        return self.prefill > 0

    @property
    def gpus(self) -> int:
        return (self.prefill + self.decode) * self.tp if self.is_pd else self.engines * self.tp

    @property
    def words(self) -> str:
        if self.is_pd:
            return f"PD {self.prefill} prefill : {self.decode} decode × TP {self.tp}, {self.policy}"
        if self.attn_dp:
            return f"1 engine × TP {self.tp}, DP attention {self.attn_dp}"
        return f"{self.engines} engine{'s' if self.engines > 1 else ''} × TP {self.tp}"

    def sets(self) -> list[str]:
        if self.attn_dp:
            return [f"hardware.tp_size={self.tp}", f"engine.dp_size={self.attn_dp}",
                    "engine.enable_dp_attention=true"]
        if not self.is_pd:
            return [f"hardware.tp_size={self.tp}", f"engine.dp_size={self.engines}"]
        return [
            f"hardware.tp_size={self.tp}",
            "engine.dp_size=1",
            f"pd.prefill.num_workers={self.prefill}",
            f"pd.decode.num_workers={self.decode}",
            f"pd.prefill.tp_size={self.tp}",
            f"pd.decode.tp_size={self.tp}",
            f'pd.decode_allocation_policy="{self.policy}"',
        ]


@dataclass(frozen=True)
class Candidate:
    """One setting: SGLang's flags and a layout of the budget's GPUs."""

    layout: Layout
    mixed: bool = False
    chunk: int | str = "auto"  # "auto" (SGLang's, from GPU memory) or prompt tokens per pass
    policy: str = "fcfs"
    conservativeness: float = 1.0
    max_running: int | None = None  # None: SGLang's, from the KV pool
    speculative: str | None = None  # --speculative-algorithm (engine_model/speculative.py); None: off
    first: str | None = None  # "INDEX:NAME": that group outranks the rest (--enable-priority-scheduling)

    def sets(self, budget: Budget | None = None) -> list[str]:
        """The `--set` list `run` takes; with a budget, the GPU and model first."""
        head = [f'hardware.gpu="{budget.gpu}"', f'model.name="{budget.model}"'] if budget else []
        flags = [
            f"engine.enable_mixed_chunk={'true' if self.mixed else 'false'}",
            f"engine.chunked_prefill_size={json.dumps(self.chunk)}",
            f'engine.schedule_policy="{self.policy}"',
            f"engine.schedule_conservativeness={self.conservativeness:g}",
        ]
        if self.max_running is not None:
            flags.append(f"engine.max_running_requests={self.max_running}")
        if self.speculative is not None:
            flags.append(f'engine.speculative_algorithm="{self.speculative}"')
        if self.first is not None:
            index, _, name = self.first.partition(":")
            flags += ["engine.enable_priority_scheduling=true",  # the name set to itself: the key says whose
                      f"workload.groups.{index}.name={json.dumps(name)}",
                      f"workload.groups.{index}.priority={FIRST}"]
        return [*head, *self.layout.sets(), *flags]

    @property
    def key(self) -> str:
        return " ".join(self.sets())

    @property
    def words(self) -> str:
        chunk = "auto" if self.chunk == "auto" else f"{self.chunk:,}"
        running = "auto" if self.max_running is None else f"{self.max_running:,}"
        more = (f", speculative {self.speculative}" if self.speculative else "") + (
            f", {self.first.partition(':')[2]} first" if self.first else "")
        return (
            f"{self.layout.words}; mixed chunk {'on' if self.mixed else 'off'}, chunk {chunk}, "
            f"{self.policy}, conservativeness {self.conservativeness:g}, max running {running}{more}"
        )

    def scenario(self, base: Scenario, budget: Budget) -> Scenario:
        """The base scenario (its workload and seed) on this setting; raises InputError where the config
        refuses it."""
        data = base.model_dump(mode="json", exclude_none=True)
        data.pop("pd", None)
        return validate(apply_sets(data, self.sets(budget)))


@dataclass(frozen=True)
class Space:
    """The values searched for each setting. Every combination is a candidate (`size`, `candidates`)."""

    layouts: tuple[Layout, ...]
    mixed: tuple[bool, ...] = (False, True)
    chunk: tuple[int | str, ...] = ("auto", 2048, 4096, 8192)
    policy: tuple[str, ...] = POLICIES
    conservativeness: tuple[float, ...] = (1.0, 1.5)
    max_running: tuple[int | None, ...] = (None, 64)
    speculative: tuple[str | None, ...] = (None,)  # searched where asked: --space speculative=off,EAGLE
    first: tuple[str | None, ...] = (None,)  # searched where asked: --space first=none,questions
    extra: dict = field(default_factory=dict, compare=False)

    AXES = ("mixed", "chunk", "policy", "conservativeness", "max_running", "speculative", "first")

    @property
    def size(self) -> int:
        num = len(self.layouts)
        for axis in self.AXES:
            num *= len(getattr(self, axis))
        return num

    def candidates(self) -> list[Candidate]:
        """Every combination, in a fixed order: layout first, then each flag in AXES order."""
        return [
            Candidate(layout, *values)
            for layout in self.layouts
            for values in itertools.product(*(getattr(self, axis) for axis in self.AXES))
        ]

    def to_json(self) -> str:
        """What a cache keys on."""
        return json.dumps(
            {
                "layouts": [vars(layout) for layout in self.layouts],
                **{axis: list(getattr(self, axis)) for axis in self.AXES},
            },
            sort_keys=True,
        )

    def narrowed(self, **values) -> Space:
        return replace(self, **{k: tuple(v) for k, v in values.items()})


def layouts(budget: Budget, pd: bool = True, dp_attention: bool = False) -> tuple[Layout, ...]:
    """Every way to lay out exactly the budget's GPUs: k engines × TP t (k·t = N), with `dp_attention` one
    engine of TP N with DP attention over each d > 1 that divides N, and PD with P : D workers of TP t
    (P + D = N / t, both at least one) under each decode allocation policy. TP sizes are those that split the
    model's heads; those whose weights do not fit are kept for feasibility to refuse."""
    sizes = [t for t in tp_sizes(MODELS[budget.model], budget.gpus) if budget.gpus % t == 0]
    out = [Layout(t, engines=budget.gpus // t) for t in sorted(sizes, reverse=True)]
    if dp_attention and budget.gpus in sizes:
        out += [Layout(budget.gpus, attn_dp=d) for d in range(2, budget.gpus + 1) if budget.gpus % d == 0]
    if pd:
        for t in sorted(sizes, reverse=True):
            workers = budget.gpus // t
            for p in range(1, workers):
                out += [
                    Layout(t, prefill=p, decode=workers - p, policy=policy) for policy in ALLOCATION_POLICIES
                ]
    return tuple(out)


def default_space(budget: Budget, pd: bool = True, dp_attention: bool = False) -> Space:
    return Space(layouts(budget, pd, dp_attention))
