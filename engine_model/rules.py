"""The rule registry: which function of the model mirrors which SGLang function.

A scheduling function is registered with `@mirrors("get_next_batch_to_run", ...)`, naming the SGLang
functions whose rule it implements. `Iteration.mirrors` holds a chain such as
"Scheduler.get_next_batch_to_run -> update_running_batch -> ScheduleBatch.retract_decode"; `rules_of`
turns that chain into the model's own functions, so "show the rule" prints real code, found by object.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass

RULES: dict[str, Callable] = {}  # SGLang function name (without its class) -> the model's function


def mirrors(*sglang_names: str) -> Callable[[Callable], Callable]:
    """Register the decorated function as the model's version of these SGLang functions."""

    def register(fn: Callable) -> Callable:
        for name in sglang_names:
            if name in RULES:
                raise ValueError(f"{name} is already mirrored by {RULES[name].__qualname__}")
            RULES[name] = fn
        return fn

    return register


@dataclass(frozen=True)
class Rule:
    sglang_name: str  # as written in the chain, e.g. "ScheduleBatch.retract_decode"
    qualname: str  # the model's function, e.g. "engine_model.scheduler.Scheduler._retract"
    code: str


def chain(mirrored: str) -> list[str]:
    """'Scheduler.get_next_batch_to_run -> update_running_batch' -> the SGLang names, outermost first."""
    return [part.strip() for part in mirrored.split("->") if part.strip()]


def rule(sglang_name: str) -> Rule | None:
    """The model's rule for one SGLang name (with or without its class), or None if it has none."""
    fn = RULES.get(sglang_name.split(".")[-1])
    if fn is None:
        return None
    return Rule(sglang_name, f"{fn.__module__}.{fn.__qualname__}", inspect.getsource(fn))


def rules_of(mirrored: str) -> list[Rule]:
    """Every rule of a chain the model implements, outermost first."""
    return [found for name in chain(mirrored) if (found := rule(name)) is not None]
