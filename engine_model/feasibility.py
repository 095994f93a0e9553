"""The one check every entry point calls before it simulates (story pages, Compare, Your server, the CLI's
`run`, a log replay, `who-waits figure`): one engine's deployment (engine_model/deployment.py), or, for a PD
scenario, each role's workers on their own GPUs and then what SGLang checks before PD traffic flows
(engine_model/pd/roles.py `check`: the policies, prefill_complete's attention TP). Its own module, above both,
so that the engine's arithmetic imports nothing of PD and PD's fix can use that arithmetic without a cycle."""

from __future__ import annotations

from engine_model.config import Scenario
from engine_model.core import Request
from engine_model.deployment import check_engine, fits, fixes, say_or, tp_problem, tp_sizes, weights_problem
from engine_model.errors import InputError
from engine_model.pd.roles import check as check_roles
from engine_model.pd.shape import role_scenario
from engine_model.resolve import model_of


def check(scenario: Scenario, requests: list[Request] | None = None) -> None:
    """Raise InputError, naming the fix, when this scenario's deployment cannot run its workload; `requests`:
    the run's requests when already built (else built from the same seed)."""
    if scenario.pd is not None:
        check_pd(scenario)
    else:
        check_engine(scenario, requests)


def check_pd(scenario: Scenario) -> None:
    """PD workers: each role's TP (attention TP under DP attention) and weights, on the role's own GPU; then
    what SGLang checks before PD traffic flows (the policies, prefill_complete's needs: pd.roles.check)."""
    model = model_of(scenario)
    for name in ("prefill", "decode"):
        role = getattr(scenario.pd, name)
        whole = role_scenario(scenario, name)
        tp = whole.hardware.tp_size
        problem = tp_problem(model, tp, tp // role.dp_size if tp % role.dp_size == 0 else tp)
        if problem:
            sizes = say_or(tp_sizes(model, max(8, tp)))
            raise InputError(f"pd.{name}.tp_size", f"{problem}. Fix: TP {sizes}.")
        problem = weights_problem(whole)
        if problem:
            fix = fixes(whole, fits, tp_key=f"pd.{name}.tp_size")
            raise InputError(f"pd.{name}", f"{problem}. Fix: {fix}.")
    check_roles(scenario)
