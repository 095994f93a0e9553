"""Find the model's own code for the SGLang function an iteration mirrors ("show the rule").

`Iteration.mirrors` names SGLang functions, e.g. "Scheduler.get_next_batch_to_run -> update_running_batch
-> ScheduleBatch.retract_decode". Each name maps to the model method that implements it: first from an
explicit table, else from any Scheduler / PrefillAdder / policy function whose docstring names it in
backticks. New engine modules (e.g. the PD model) are searched the same way.
"""

from __future__ import annotations

import importlib
import inspect
from functools import cache

# SGLang name -> "module:qualname" in the model
KNOWN = {
    "get_next_batch_to_run": "engine_model.scheduler:Scheduler.schedule",
    "get_new_batch_prefill": "engine_model.scheduler:Scheduler._prefill_plan",
    "PrefillAdder": "engine_model.policy:PrefillAdder.add_one",
    "add_chunked_req": "engine_model.policy:PrefillAdder.add_chunked",
    "add_one_req": "engine_model.policy:PrefillAdder.add_one",
    "mix_with_running": "engine_model.scheduler:Scheduler._maybe_mix",
    "update_running_batch": "engine_model.scheduler:Scheduler._decode_plan",
    "retract_decode": "engine_model.scheduler:Scheduler._retract",
    "on_idle": "engine_model.simulation:Run._idle_until",
    "_should_defer_prefill": "engine_model.scheduler:Scheduler._defer_prefill",
}
SEARCHED_MODULES = ("engine_model.scheduler", "engine_model.policy", "engine_model.simulation", "engine_model.pd",
                    "engine_model.disaggregation")


def chain(mirrors: str) -> list[str]:
    """'Scheduler.get_next_batch_to_run -> update_running_batch' -> the SGLang names, outermost first."""
    return [part.strip() for part in mirrors.split("->") if part.strip()]


def _resolve(path: str):
    module_name, _, qualname = path.partition(":")
    obj = importlib.import_module(module_name)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


@cache
def _docstring_index() -> dict[str, object]:
    index: dict[str, object] = {}
    for name in SEARCHED_MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ != module.__name__:
                continue
            for _, fn in inspect.getmembers(cls, inspect.isfunction):
                for token in (inspect.getdoc(fn) or "").split("`")[1::2]:
                    index.setdefault(token.split(".")[-1].split("(")[0], fn)
        for _, fn in inspect.getmembers(module, inspect.isfunction):
            if fn.__module__ == module.__name__:
                for token in (inspect.getdoc(fn) or "").split("`")[1::2]:
                    index.setdefault(token.split(".")[-1].split("(")[0], fn)
    return index


def find(sglang_name: str):
    """The model function for one SGLang name, or None."""
    short = sglang_name.split(".")[-1]
    if short in KNOWN:
        try:
            return _resolve(KNOWN[short])
        except (ImportError, AttributeError):
            pass
    return _docstring_index().get(short)


@cache
def source(sglang_name: str) -> tuple[str, str] | None:
    """(model qualname, its source code) for one SGLang name, or None when the model has no such rule."""
    fn = find(sglang_name)
    if fn is None:
        return None
    try:
        return f"{fn.__module__}.{fn.__qualname__}", inspect.getsource(fn)
    except (OSError, TypeError):
        return None

