"""Whether PD workers fit: each role's TP (attention TP under DP attention), the weight precision on the
role's GPU (engine_model/precision.py), the weights, then each role's KV pool per DP rank against the longest
request. The arithmetic of engine_model.feasibility's PD check, below engine_model/pd/roles.py so that
prefill_complete's fix (engine_model/pd/attention.py) checks its candidates with it too.

A rank's settings come from `rank_of(scenario, role)`: the feasibility check passes `roles.resolve_role`'s
(`_per_rank`: the DP ranks' share of the pool, then `pd.decode_kv_cap_per_rank`); a worker without DP
attention may use `lone_rank`, the same figures without roles (tests/test_feasibility.py checks they agree).

A rank's KV pool must hold:
- on prefill, the longest prompt: the same `validate_input_length` as one engine (a prompt of
  max_req_input_len, the rank's pool less six, or more is refused);
- on decode, the longest prompt and its reply: the decode worker preallocates a request only when
  max(ceil_page(prompt) + num_reserved_decode_tokens, prompt + min(max_new_tokens, 4096)) slots fit
  (`_required_admission_tokens`, docs/pd.md "Decode admission"; engine_model/pd/decode.py), and an empty
  pool is the most it ever has: a request beyond it waits forever.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from engine_model.config import Scenario
from engine_model.core import Request
from engine_model.deployment import Problem, admitted, precision_problem, tp_problem, weights_problem
from engine_model.pd.shape import ROLES, role_scenario, role_shape
from engine_model.policy import CLIP_MAX_NEW_TOKENS, ceil_page
from engine_model.resolve import Resolved, model_of, resolve

RankOf = Callable[[Scenario, str], Resolved]


def lone_rank(scenario: Scenario, name: str) -> Resolved:
    """The one rank of a worker without DP attention: the engine's settings on the role's GPU and TP, with
    the decode cap applied (what roles._per_rank resolves at dp_size 1, for the pool)."""
    base = resolve(role_scenario(scenario, name))
    cap = scenario.pd.decode_kv_cap_per_rank if name == "decode" else None
    if cap is None:
        return base
    pool = min(base.max_total_tokens, cap)
    max_req_len = min(base.context_len - 1, pool - 1)
    return replace(base, max_total_tokens=pool, max_req_len=max_req_len, max_req_input_len=max_req_len - 5,
                   max_total_tokens_source=f"{base.max_total_tokens_source}; capped at {cap} "
                                           "(pd.decode_kv_cap_per_rank)")


def pd_problem(scenario: Scenario, requests: list[Request], rank_of: RankOf | None) -> Problem | None:
    """The first reason a role's workers cannot run: TP (attention TP under DP attention), the precision on
    the role's GPU, the weights; then each role's KV pool per DP rank against the longest request (not
    checked when `rank_of` is None)."""
    model = model_of(scenario)
    for name in ROLES:
        whole = role_scenario(scenario, name)
        tp, dp = role_shape(scenario, name)
        if tp % dp:
            return Problem(f"pd.{name}.dp_size", f"{dp} DP ranks do not divide tp_size {tp} (each rank runs "
                           "tp_size / dp_size GPUs of attention)", "tp", name)
        problem = tp_problem(model, tp, tp // dp)
        if problem:
            return Problem(f"pd.{name}.tp_size", problem, "tp", name)
        problem = precision_problem(whole)
        if problem:
            return Problem("model.weight_dtype", f"the {name} workers: {problem}", "precision", name)
        problem = weights_problem(whole)
        if problem:
            return Problem(f"pd.{name}", problem, "weights", name)
    if rank_of is None:
        return None
    ranks = {name: rank_of(scenario, name) for name in ROLES}
    for name in ROLES:
        problem = pool_problem(scenario, name, requests, ranks[name], ranks["prefill"])
        if problem:
            return problem
    return None


def pool_problem(scenario: Scenario, name: str, requests: list[Request], rank: Resolved,
                 prefill: Resolved) -> Problem | None:
    """A role's KV pool per DP rank (`rank`) that cannot hold the longest prompt (prefill), or the longest
    prompt and its reply as the decode worker preallocates them (decode; `prefill`: a prefill rank, whose
    intake clips the reply)."""
    held = [r for r in admitted(requests, rank.context_len) if not r.is_mid_reply]  # PD rejects mid-reply
    if not held:
        return None
    pool, source = rank.max_total_tokens, rank.max_total_tokens_source
    per = "" if role_shape(scenario, name)[1] == 1 else " per DP rank"
    if name == "prefill":
        longest = max(held, key=lambda r: r.prompt_len)
        if longest.prompt_len < rank.max_req_input_len:
            return None
        return Problem(f"pd.{name}", (
            f"a prefill worker's KV pool holds {pool:,} tokens{per} ({source}), and the longest prompt, "
            f"{longest.rid}'s {longest.prompt_len:,} tokens, needs more: SGLang refuses a prompt of "
            f"max_req_input_len ({rank.max_req_input_len:,}) tokens or more"), "pool", name,
            longest.prompt_len + 7)
    reserved = scenario.pd.num_reserved_decode_tokens
    need, reply, longest = max((decode_need(r, prefill, rank.page_size, reserved) + (r,) for r in held),
                               key=lambda item: item[0])
    if need <= pool:
        return None
    return Problem(f"pd.{name}", (
        f"a decode worker's KV pool holds {pool:,} tokens{per} ({source}), and {longest.rid}, a "
        f"{longest.prompt_len:,}-token prompt with {reply:,} tokens of reply, needs {need:,} to be "
        f"preallocated: max(prompt to whole pages + {reserved:,} reserved, prompt + min(max_new_tokens, "
        f"{CLIP_MAX_NEW_TOKENS:,})), SGLang's decode admission (_required_admission_tokens); an empty pool "
        "is the most it ever gets, so it would wait forever"), "pool", name, need)


def decode_need(req: Request, prefill, page_size: int, reserved: int) -> tuple[int, int]:
    """The decode slots a request needs on an empty pool, and its reply as admission counts it: max_new_tokens
    as intake clips it on the prefill rank (engine_model/scheduler.py `intake`), then at 4096."""
    empty = prefill.max_total_tokens - ceil_page(req.prompt_len, prefill.page_size) - prefill.page_size - 1
    max_new = max(0, min(req.max_new_tokens, prefill.max_req_len - req.prompt_len - 1, empty))
    reply = min(max_new, CLIP_MAX_NEW_TOKENS)
    return max(ceil_page(req.prompt_len, page_size) + reserved, req.prompt_len + reply), reply


def set_pool_need(scenario: Scenario, requests: list[Request], rank: Resolved) -> int:
    """The pool both roles need when engine.max_total_tokens sets it: the longest prompt on prefill, and on
    decode (`rank`: a decode rank) each prompt with its whole reply up to 4096 (what admission asks before
    intake clips it)."""
    reserved = scenario.pd.num_reserved_decode_tokens
    return max((max(r.prompt_len + 7, ceil_page(r.prompt_len, rank.page_size) + reserved,
                    r.prompt_len + min(r.max_new_tokens, CLIP_MAX_NEW_TOKENS))
                for r in admitted(requests, rank.context_len) if not r.is_mid_reply), default=0)
