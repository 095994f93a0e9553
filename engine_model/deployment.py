"""Can this deployment run at all? One check, called by every entry point before it simulates: the story
pages, Compare and Your server (through `Story.scenario` and the replay), `python -m engine_model run`, a log
replay (`scenario_from_log`) and `who-waits figure`. A combination SGLang could not start, or one whose KV
pool could not hold the workload's longest prompt, is refused with one message that names the fix.

What SGLang 0.5.23 itself requires (read in the wheel):
- tensor parallel splits every attention layer's heads: `num_attention_heads % tp_size == 0`, and the KV heads
  either split evenly (`num_kv_heads % tp_size == 0`) or, when TP exceeds them, are copied
  (`tp_size % num_kv_heads == 0`) — the attention constructors of models/llama.py, qwen3.py, qwen3_moe.py,
  glm4_moe.py; MLA (deepseek_v2.py) asserts the heads only. Column- and row-parallel layers divide their
  width by tp_size (layers/linear.py `divide`), so the MLP width must split too, and the fused MoE asserts
  `intermediate_size % moe_tp_size == 0` for its experts (moe_tp_size = tp_size on one engine: no EP).
- the weights fit: weights / tp_size per GPU below memory x mem_fraction_static - reserve
  (hardware.kv_budget_bytes), else no KV pool is left.
- the KV pool holds the longest prompt: `validate_input_length` refuses a prompt of max_req_input_len tokens
  or more (engine_model/scheduler.py), and max_req_input_len is the pool less six tokens when the pool is
  below the context length. (A prompt beyond the model's context is refused by SGLang too, request by
  request; that is the model's limit, not the deployment's, so the run goes on and shows it rejected.)

This module is one engine's arithmetic and imports nothing of PD (engine_model/pd/attention.py uses it for
its fix); `engine_model.feasibility.check` is the entry points' one call. One engine has no data-parallel
attention: `hardware.tp_size` GPUs run one scheduler (PD workers have DP ranks: engine_model/pd).
"""

from __future__ import annotations

import random
from collections.abc import Callable

from engine_model import hardware
from engine_model.config import Scenario
from engine_model.core import Request
from engine_model.errors import InputError
from engine_model.hardware import GPU, Model
from engine_model.resolve import chunk_of, gpu_of, mem_fraction_of, model_of, resolve
from engine_model.workload import build, trace_requests

TP_SIZES = (1, 2, 4, 8, 16, 32, 64)  # what a scenario may ask for (the app offers one 8-GPU node: 1-8)
WEIGHT_DTYPES = ("bf16", "fp8", "nvfp4")  # largest first
KV_DTYPES = ("bf16", "fp8")


# -- the three requirements -----------------------------------------------------------------------------
def tp_problem(model: Model, tp_size: int, attn_tp_size: int | None = None) -> str | None:
    """Why SGLang could not split this model over tp_size GPUs; None when it can. `attn_tp_size`: attention
    TP under DP attention (tp_size / dp_size; PD workers), else tp_size."""
    attn = attn_tp_size or tp_size
    kv = model.num_kv_heads
    if model.num_heads % attn:
        return (f"{model.name}'s {model.num_heads} attention heads do not split over TP {attn} "
                "(SGLang asserts num_attention_heads % tp_size == 0)")
    if model.attention == "gqa" and kv % attn and attn % kv:
        return (f"{model.name}'s {kv} KV heads and TP {attn}: one must divide the other (SGLang splits the "
                "KV heads over the GPUs, or copies them when TP exceeds them)")
    for what, width in mlp_widths(model):
        if width % tp_size:
            return f"{model.name}'s {what} of {width:,} does not split over TP {tp_size} (SGLang divides it)"
    return None


def mlp_widths(model: Model) -> list[tuple[str, int]]:
    """The MLP widths tensor parallel divides: the dense MLP's (where the model has dense layers) and an
    expert's."""
    widths = []
    if model.num_layers > model.num_moe_layers:
        widths.append(("MLP width (intermediate_size)", model.intermediate_size))
    if model.is_moe:
        widths.append(("expert width (moe_intermediate_size)", model.moe_intermediate_size))
    return widths


def tp_sizes(model: Model, limit: int = 8) -> list[int]:
    """The TP sizes up to `limit` that split this model."""
    return [t for t in TP_SIZES if t <= limit and tp_problem(model, t) is None]


def weights_problem(scenario: Scenario) -> str | None:
    """Why the weights leave no room for a KV pool on one GPU; None when they fit."""
    gpu, model = gpu_of(scenario), model_of(scenario)
    fraction, _ = mem_fraction_of(scenario, gpu, model, chunk_of(scenario, gpu)[0])
    tp, dtype = scenario.hardware.tp_size, scenario.model.weight_dtype
    return hardware.weights_problem(gpu, model, tp, dtype, fraction)


def pool_problem(scenario: Scenario, requests: list[Request]) -> str | None:
    """Why the KV pool cannot hold the longest prompt, which SGLang would refuse; None when it can (or when
    the model's context, not the pool, is the limit)."""
    if not requests:
        return None
    res = resolve(scenario)
    longest = max(requests, key=lambda r: r.prompt_len)
    if longest.prompt_len < res.max_req_input_len or longest.prompt_len >= res.context_len - 6:
        return None  # it fits, or the context refuses it whatever the pool
    where = ("as set: engine.max_total_tokens" if res.max_total_tokens_source.startswith("set") else
             f"what fits on {res.tp_size} × {res.gpu_name} at TP {res.tp_size} beside {res.model_name}'s "
             f"{scenario.model.weight_dtype} weights, {scenario.model.kv_dtype} KV")
    return (f"the KV pool holds {res.max_total_tokens:,} tokens ({where}), and the longest prompt, "
            f"{longest.rid}'s {longest.prompt_len:,} tokens, needs more: SGLang refuses a prompt of "
            f"max_req_input_len ({res.max_req_input_len:,}) tokens or more")


# -- the check ------------------------------------------------------------------------------------------
def check_engine(scenario: Scenario, requests: list[Request] | None = None) -> None:
    """Raise InputError, naming the fix, when one engine's deployment cannot run its workload; `requests`:
    the run's requests when already built (else built here, from the same seed). Every entry point calls
    engine_model.feasibility.check, which sends PD scenarios to their workers' check."""
    model, tp = model_of(scenario), scenario.hardware.tp_size
    problem = tp_problem(model, tp)
    if problem:
        sizes = tp_sizes(model, limit=max(8, tp))
        raise InputError("hardware.tp_size", f"{problem}. Fix: TP {say_or(sizes)}.")
    requests = requests_of(scenario) if requests is None else requests
    problem = weights_problem(scenario)
    if problem:  # a fix must also give the pool room for the longest prompt
        raise InputError("deployment", f"{problem}. Fix: {fixes(scenario, runs(requests))}.")
    problem = pool_problem(scenario, requests)
    if problem:
        raise InputError("KV pool", f"{problem}. Fix: {pool_fixes(scenario, requests)}.")


def requests_of(scenario: Scenario) -> list[Request]:
    """The requests a run of this scenario serves, drawn exactly as the run draws them (same seed); none for
    an empty workload (the run says so)."""
    workload = scenario.workload
    if not (workload.groups or workload.requests or workload.trace):
        return []
    work = build(scenario.workload, random.Random(scenario.seed), max_requests=scenario.limits.max_requests,
                 trace_requests=trace_requests(scenario.workload, scenario.seed))
    return [*work.open_loop, *(r for pool in work.pools for r in pool.queue)]


# -- what would fix it ----------------------------------------------------------------------------------
def fits(scenario: Scenario) -> bool:
    is_split = tp_problem(model_of(scenario), scenario.hardware.tp_size) is None
    return is_split and weights_problem(scenario) is None


def runs(requests: list[Request]) -> Callable[[Scenario], bool]:
    """Whether a deployment passes the whole check for these requests."""
    return lambda scenario: fits(scenario) and pool_problem(scenario, requests) is None


def fixes(scenario: Scenario, works: Callable[[Scenario], bool], kv: bool = False,
          tp_key: str = "hardware.tp_size") -> str:
    """The nearest changes that make `works` true: a larger TP (set by `tp_key`), a smaller weight (or KV)
    dtype, a GPU with more memory; 'a smaller model' when none does."""
    found = []
    tp = scenario.hardware.tp_size
    for size in (t for t in TP_SIZES if tp < t <= max(8, tp)):
        if works(changed(scenario, tp_size=size)):
            found.append(f"TP {size} ({size} × {gpu_of(scenario).name}; {tp_key}={size})")
            break
    dtypes = ("model.kv_dtype", scenario.model.kv_dtype, KV_DTYPES) if kv else (
        "model.weight_dtype", scenario.model.weight_dtype, WEIGHT_DTYPES)
    key, now, order = dtypes
    for dtype in order[order.index(now) + 1:]:
        if works(changed(scenario, **{key.split(".")[1]: dtype})):
            found.append(f"{dtype} {'KV cache' if kv else 'weights'} ({key}={dtype})")
            break
    memory = gpu_of(scenario).memory_gib
    for name, gpu in sorted(hardware.GPUS.items(), key=lambda item: item[1].memory_gib):
        if gpu.memory_gib > memory and not is_custom(gpu) and works(changed(scenario, gpu=name)):
            found.append(f"{tp} × {gpu.name} (hardware.gpu={name})")
            break
    return say_or(found) if found else "a smaller model, or a GPU with more memory"


def pool_fixes(scenario: Scenario, requests: list[Request]) -> str:
    """For a pool too small: a larger pool setting when the scenario sets one (and more memory when even
    all of it would not do), else more memory for the KV cache."""
    need = max(r.prompt_len for r in requests) + 7  # prompt < pool - 1 - 5 (max_req_input_len)
    holds = runs(requests)
    if scenario.engine.max_total_tokens is None:
        return fixes(scenario, holds, kv=True) + ", or a shorter prompt"
    engine = scenario.engine.model_copy(update={"max_total_tokens": None})
    unset = scenario.model_copy(update={"engine": engine})
    said = f"a KV pool of at least {need:,} tokens (engine.max_total_tokens)"
    if not holds(unset):
        said += f" with more memory for it: {fixes(unset, holds, kv=True)}"
    return said + ", or a shorter prompt"


def changed(scenario: Scenario, *, tp_size: int | None = None, gpu: str | None = None,
            weight_dtype: str | None = None, kv_dtype: str | None = None) -> Scenario:
    """The scenario on another deployment (a GPU change drops the old GPU's edited figures)."""
    hw, model = scenario.hardware, scenario.model
    hw = hw.model_copy(update={k: v for k, v in (("tp_size", tp_size), ("gpu", gpu)) if v is not None}
                       | ({"gpu_overrides": {}} if gpu else {}))
    model = model.model_copy(update={k: v for k, v in (("weight_dtype", weight_dtype), ("kv_dtype", kv_dtype))
                                     if v is not None})
    return scenario.model_copy(update={"hardware": hw, "model": model})


def is_custom(gpu: GPU) -> bool:
    return gpu.name.lower().startswith("custom")


def say_or(items: list) -> str:
    """'a', 'a or b', 'a, b or c'."""
    words = [str(i) for i in items]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


# -- in words -------------------------------------------------------------------------------------------
def gpus_words(config: dict) -> str:
    """'8 × H100 SXM 80GB, TP 8' from a run's config (`Summary.config`); 'k engines of TP t' when the
    scenario runs k data-parallel engines (`engine.dp_size`, where the engine has it)."""
    res, dp = config["resolved"], config["engine"].get("dp_size", 1)
    tp, gpu = res["tp_size"], res["gpu_name"]
    return f"{tp} × {gpu}, TP {tp}" if dp == 1 else f"{dp * tp} × {gpu}: {dp} engines of TP {tp}"


def pool_words(config: dict) -> str:
    """'KV pool 1,238,605 tokens: 47.2 GiB on each of the 8 GPUs, 378 GiB in all (each GPU holds 1 KV head of
    every token)'. One engine's GPUs hold the same tokens, each its share of their KV."""
    res, dp = config["resolved"], config["engine"].get("dp_size", 1)
    num, per_gpu = res["tp_size"] * dp, res["kv_pool_gib_per_gpu"]
    tokens = f"KV pool {res['max_total_tokens']:,} tokens" + (" per engine" if dp > 1 else "")
    if num == 1:
        return f"{tokens}: {per_gpu:,.1f} GiB on its GPU"
    heads = res["kv_heads_per_gpu"]
    share = ("every GPU holds each token's whole latent (MLA)" if not heads
             else f"each GPU holds {heads} KV head{'s' if heads > 1 else ''} of every token")
    in_all = per_gpu * num
    return f"{tokens}: {per_gpu:,.1f} GiB on each of the {num} GPUs, {in_all:,.0f} GiB in all ({share})"
