"""The one check every entry point calls before it simulates (story pages, Compare, Your server, the CLI's
`run`, a log replay, `who-waits figure`): one engine's deployment (engine_model/deployment.py), or, for a PD
scenario, each role's workers on their own GPUs (engine_model/pd/fit.py: TP, precision, weights, then each
DP rank's KV pool, as roles.resolve_role resolves it, against the longest request) and then what SGLang
checks before PD traffic flows (engine_model/pd/roles.py `check`: the policies, prefill_complete's attention
TP). Its own module, above both, so that the engine's arithmetic imports nothing of PD and PD's fix can use
that arithmetic without a cycle.

Every refusal is a `Refused` (an InputError) whose fixes (`deployment.Fix`: keys, values and words) each pass
this whole check (`passes`); `fixes(scenario)` gives them to a test or a page that applies one.
"""

from __future__ import annotations

from engine_model.config import Scenario
from engine_model.core import Request
from engine_model.deployment import (
    Fix,
    Groups,
    Problem,
    Refused,
    applied,
    engine_problem,
    engine_refusal,
    fix_tiers,
    larger_tps,
    no_fix,
    requests_of,
    said,
    search,
    tp_fix,
    tp_fixes,
)
from engine_model.errors import InputError
from engine_model.pd import attention
from engine_model.pd.fit import pd_problem, set_pool_need
from engine_model.pd.roles import check as check_roles
from engine_model.pd.roles import resolve_role
from engine_model.pd.shape import ROLES, role_scenario, role_shape
from engine_model.resolve import Resolved, gpu_of, model_of


def check(scenario: Scenario, requests: list[Request] | None = None) -> None:
    """Raise `Refused` (an InputError), naming the fix, when this scenario's deployment cannot run its
    workload; `requests`: the run's requests when already built (else built from the same seed)."""
    refused = refusal(scenario, requests)
    if refused is not None:
        raise refused


def fixes(scenario: Scenario, requests: list[Request] | None = None) -> tuple[Fix, ...]:
    """The fixes the refusal of this scenario names, as settings (none when it runs)."""
    refused = refusal(scenario, requests)
    return refused.fixes if refused is not None else ()


def refusal(scenario: Scenario, requests: list[Request] | None = None) -> Refused | None:
    """Why this scenario's deployment cannot run, with its fixes; None when it can."""
    if scenario.pd is None:
        dp = scenario.engine.dp_size
        if scenario.engine.enable_dp_attention and dp > 1 and scenario.hardware.tp_size % dp:
            tp = scenario.hardware.tp_size
            return Refused("engine.dp_size", "with DP attention SGLang asserts tp_size % attn_dp_size == 0 "
                           f"(handle_data_parallelism); TP {tp} does not split into {dp} ranks. Fix: a "
                           f"dp_size that divides {tp}.")
        return engine_refusal(scenario, requests)
    requests = requests_of(scenario) if requests is None else requests
    problem = pd_problem(scenario, requests, rank_of)
    if problem is not None:
        return pd_refusal(scenario, problem, requests)
    try:
        check_roles(scenario)
    except Refused as refused:  # prefill_complete's attention TP, with the fix (pd/attention.py)
        return refused
    except InputError as error:
        return Refused(error.where, error.problem)
    return None


def passes(scenario: Scenario, requests: list[Request]) -> bool:
    """Whether the whole check passes, without searching any fix (what every fix search asks)."""
    try:
        if scenario.pd is None:
            return engine_problem(scenario, requests) is None
        if pd_problem(scenario, requests, rank_of) is not None:
            return False
        if prefill_complete(scenario) and attention.refused_role(scenario) is not None:
            return False  # roles.check would refuse it, naming a fix it searches first
        check_roles(scenario)
    except InputError:
        return False
    return True


def rank_of(scenario: Scenario, name: str) -> Resolved:
    """One DP rank of a role's workers, as the run resolves it (roles.resolve_role, `_per_rank`)."""
    return resolve_role(scenario, name).rank


def prefill_complete(scenario: Scenario) -> bool:
    return "prefill_complete" in (scenario.pd.policy("prefill"), scenario.pd.policy("decode"))


# -- what would fix it ----------------------------------------------------------------------------------
def pd_refusal(scenario: Scenario, problem: Problem, requests: list[Request]) -> Refused:
    """A role's problem with the fixes that pass the whole check: for its TP, the sizes that do; else a larger
    TP (the role's, or both roles'), another precision, another GPU for the role; for a pool, also a larger
    decode cap or fewer DP ranks; then a larger TP with another precision."""
    name = problem.role

    def runs(changed: Scenario) -> bool:
        return passes(changed, requests)

    model, whole = model_of(scenario), role_scenario(scenario, name)
    tp, dp = role_shape(scenario, name)
    gpu = gpu_of(whole)
    if problem.where.endswith("dp_size"):  # the nearest DP size that divides tp and passes
        key = problem.where
        found = [Fix(((key, d),), f"{d} DP ranks ({key}={d})") for d in range(dp - 1, 0, -1)
                 if tp % d == 0 and runs(applied(scenario, ((key, d),)))][:1]
        return Refused(problem.where, f"{problem.words}. Fix: {said(found)}.", found)
    if problem.kind == "tp":
        found, words = tp_fixes(scenario, model, tp, problem.where, runs,
                                lambda changed: refusal(changed, requests))
        return Refused(problem.where, f"{problem.words}. Fix: {words}.", found)
    other = ROLES[1 - ROLES.index(name)]
    other_tp = role_shape(scenario, other)[0]
    tps = [tp_fix(gpu, size, keys) for size in larger_tps(tp)
           for keys in ((f"pd.{name}.tp_size",), (f"pd.{name}.tp_size", f"pd.{other}.tp_size"))
           if len(keys) == 1 or other_tp < size]  # this role's TP, or both roles' where the other's is less
    gpu_key = f"pd.{name}.gpu" if getattr(scenario.pd, name).gpu else "hardware.gpu"
    tiers = fix_tiers(scenario, problem, gpu, tp, tps, gpu_key)
    if problem.kind == "pool":
        tiers[0] = [*tiers[0], *pool_groups(scenario, name, problem.need, tp, dp, requests)]
    found = search(scenario, tiers, runs) or under_early(scenario, requests)
    more = ", or a shorter prompt" if problem.kind == "pool" else ""
    return Refused(problem.where, f"{problem.words}. Fix: {said(found, no_fix(scenario, problem))}{more}.",
                   found)


def under_early(scenario: Scenario, requests: list[Request]) -> list[Fix]:
    """Under prefill_complete, where no change passes because it keeps the workers above attention TP 1: the
    workers of TP 1 the attention refusal names (engine_model/pd/attention.py), or early with the fix early
    needs."""
    if not (prefill_complete(scenario) and attention.refused_role(scenario)):
        return []
    found = search(scenario, [[attention.tp1_workers(scenario)]], lambda changed: passes(changed, requests))
    if found:
        return found
    early = attention.keep_early(scenario)
    refused = refusal(early.apply(scenario), requests)
    if refused is None:
        return [early]
    return [Fix((*early.settings, *fix.settings), f"{early.words} with {fix.words}") for fix in refused.fixes]


def pool_groups(scenario: Scenario, name: str, need: int, tp: int, dp: int,
                requests: list[Request]) -> Groups:
    """A pool set too small raised to what the longest request needs (engine.max_total_tokens, or a decode
    rank's cap); fewer DP ranks (each rank then splits the KV heads over more GPUs, so it holds more
    tokens)."""
    groups = []
    if scenario.engine.max_total_tokens is not None:  # a pool set too small: both roles' ranks hold it
        key, least = "engine.max_total_tokens", set_pool_need(scenario, requests, rank_of(scenario, "decode"))
        larger = Fix(((key, least),), f"a KV pool of at least {least:,} tokens ({key}={least})")
        cap = "pd.decode_kv_cap_per_rank"
        both = Fix((*larger.settings, (cap, least)), f"{larger.words[:-1]}, {cap}={least})")
        groups.append([larger, *([both] if scenario.pd.decode_kv_cap_per_rank is not None else [])])
    if name == "decode" and scenario.pd.decode_kv_cap_per_rank is not None:
        key = "pd.decode_kv_cap_per_rank"
        groups.append([Fix(((key, need),), f"a decode KV cap of at least {need:,} tokens per rank "
                                           f"({key}={need})")])
    if dp > 1:
        key = f"pd.{name}.dp_size"
        groups.append([Fix(((key, d),), f"{d} DP rank{'s' if d > 1 else ''} per {name} worker ({key}={d}; "
                                        f"attention TP {tp // d})")
                       for d in range(dp - 1, 0, -1) if tp % d == 0])
    return groups

