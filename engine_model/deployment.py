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
- the GPU runs the weight precision: engine_model/precision.py says how (Marlin W4A16 for nvfp4 below
  Blackwell, ...) or why not (fp8 experts on SM80-SM88, nvfp4 experts on ROCm), with the SGLang source.
- the weights fit: weights / tp_size per GPU below memory x mem_fraction_static - reserve
  (hardware.kv_budget_bytes), else no KV pool is left.
- the KV pool holds the longest prompt: `validate_input_length` refuses a prompt of max_req_input_len tokens
  or more (engine_model/scheduler.py), and max_req_input_len is the pool less six tokens when the pool is
  below the context length. (A prompt beyond the model's context is refused by SGLang too, request by
  request; that is the model's limit, not the deployment's, so the run goes on and shows it rejected.)

A refusal names its fixes (`Fix`: scenario keys and values, and the words), found by one search (`search`)
that keeps, of each kind of change (a larger TP, another precision, another GPU; then TP and precision
together), the nearest one that passes the whole check. engine_model/feasibility.py runs the same search for
PD workers, and engine_model/pd/attention.py for prefill_complete's TP 1 workers, so every page names the
same fix for the same hardware.

This module is one engine's arithmetic and imports nothing of PD; `engine_model.feasibility.check` is the
entry points' one call. One engine has no data-parallel attention: `hardware.tp_size` GPUs run one scheduler
(PD workers have DP ranks: engine_model/pd).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

from engine_model import hardware
from engine_model.config import Scenario
from engine_model.core import Request
from engine_model.errors import InputError
from engine_model.hardware import GPU, Model
from engine_model.precision import weight_path
from engine_model.resolve import chunk_of, gpu_of, kv_dtype_of, mem_fraction_of, model_of, resolve
from engine_model.workload import build, trace_requests

TP_SIZES = (1, 2, 4, 8, 16, 32, 64)  # what a scenario may ask for (the app offers one 8-GPU node: 1-8)
WEIGHT_DTYPES = ("bf16", "fp8", "nvfp4")  # largest first
KV_DTYPES = ("bf16", "fp8")
NO_FIX = "a smaller model, or a GPU with more memory"


# -- the requirements -----------------------------------------------------------------------------------
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


def precision_problem(scenario: Scenario) -> str | None:
    """Why SGLang cannot run the weight precision on this GPU (engine_model/precision.py); None if it can."""
    model = model_of(scenario)
    path = weight_path(gpu_of(scenario), scenario.model.weight_dtype, scenario.engine.version, model.is_moe)
    return None if path.runs else f"{model.name}'s {path.words}"


def weights_problem(scenario: Scenario) -> str | None:
    """Why the weights leave no room for a KV pool on one GPU; None when they fit."""
    gpu, model = gpu_of(scenario), model_of(scenario)
    fraction, _ = mem_fraction_of(scenario, gpu, model, chunk_of(scenario, gpu)[0])
    tp, dtype = scenario.hardware.tp_size, scenario.model.weight_dtype
    return hardware.weights_problem(gpu, model, tp, dtype, fraction)


def admitted(requests: list[Request], context_len: int) -> list[Request]:
    """The requests a pool must hold: those whose prompt the model's context does not refuse first (SGLang
    refuses a prompt of context - 6 tokens or more request by request, whatever the pool)."""
    return [r for r in requests if r.prompt_len < context_len - 6]


def pool_problem(scenario: Scenario, requests: list[Request]) -> str | None:
    """Why the KV pool cannot hold the longest prompt, which SGLang would refuse; None when it can (or when
    the model's context, not the pool, is the limit)."""
    res = resolve(scenario)
    held = admitted(requests, res.context_len)
    if not held:
        return None
    longest = max(held, key=lambda r: r.prompt_len)
    if longest.prompt_len < res.max_req_input_len:
        return None
    where = ("as set: engine.max_total_tokens" if res.max_total_tokens_source.startswith("set") else
             f"what fits on {res.tp_size} × {res.gpu_name} at TP {res.tp_size} beside {res.model_name}'s "
             f"{scenario.model.weight_dtype} weights, {res.kv_dtype} KV")
    return (f"the KV pool holds {res.max_total_tokens:,} tokens ({where}), and the longest prompt, "
            f"{longest.rid}'s {longest.prompt_len:,} tokens, needs more: SGLang refuses a prompt of "
            f"max_req_input_len ({res.max_req_input_len:,}) tokens or more")


def requests_of(scenario: Scenario) -> list[Request]:
    """The requests a run of this scenario serves, drawn exactly as the run draws them (same seed); none for
    an empty workload (the run says so)."""
    workload = scenario.workload
    if not (workload.groups or workload.requests or workload.trace):
        return []
    work = build(scenario.workload, random.Random(scenario.seed), max_requests=scenario.limits.max_requests,
                 trace_requests=trace_requests(scenario.workload, scenario.seed))
    return [*work.open_loop, *(r for pool in work.pools for r in pool.queue)]


class Problem(NamedTuple):
    """Why a deployment cannot run, before any fix is searched. `kind` decides which changes the search tries:
    "tp" (TP does not split the model), "precision", "weights", "pool"; `role`: a PD role's problem; `need`:
    the pool, in tokens, that the longest request needs."""

    where: str
    words: str
    kind: str
    role: str | None = None
    need: int = 0


def engine_problem(scenario: Scenario, requests: list[Request]) -> Problem | None:
    """The first reason one engine cannot run these requests; None when it can."""
    model, tp = model_of(scenario), scenario.hardware.tp_size
    for kind, where, problem in (("tp", "hardware.tp_size", lambda: tp_problem(model, tp)),
                                 ("precision", "model.weight_dtype", lambda: precision_problem(scenario)),
                                 ("weights", "deployment", lambda: weights_problem(scenario)),
                                 ("pool", "KV pool", lambda: pool_problem(scenario, requests))):
        words = problem()
        if words:
            return Problem(where, words, kind, need=pool_need(scenario, requests) if kind == "pool" else 0)
    return None


def pool_need(scenario: Scenario, requests: list[Request]) -> int:
    """The pool the longest prompt needs: prompt < pool - 1 - 5 (max_req_input_len)."""
    return max(r.prompt_len for r in admitted(requests, resolve(scenario).context_len)) + 7


# -- a fix, and the one search for fixes ----------------------------------------------------------------
@dataclass(frozen=True)
class Fix:
    """One change that makes a refused deployment run: scenario keys and their values (`settings`, in the
    order they apply), and the words a page shows. Every fix a refusal names passes the whole check."""

    settings: tuple[tuple[str, Any], ...]
    words: str

    @property
    def sets(self) -> list[str]:
        """The settings as `--set key=value` words (a None value unsets an optional key)."""
        return [f"{key}={value}" for key, value in self.settings]

    def apply(self, scenario: Scenario) -> Scenario:
        return applied(scenario, self.settings)


class Refused(InputError):
    """A deployment that cannot run: where, why (with the fix in words), and the fixes as settings."""

    def __init__(self, where: str, problem: str, fixes: Iterable[Fix] = ()):
        super().__init__(where, problem)
        self.fixes = tuple(fixes)


def applied(scenario: Scenario, settings: Iterable[tuple[str, Any]]) -> Scenario:
    """The scenario with each dotted key set (`pd.prefill.tp_size`, `model.kv_dtype`, ...)."""
    for key, value in settings:
        scenario = _set(scenario, key.split("."), value)
    return scenario


def _set(node, path: list[str], value):
    head, *rest = path
    return node.model_copy(update={head: _set(getattr(node, head), rest, value) if rest else value})


Groups = list[list[Fix]]


def search(scenario: Scenario, tiers: list[Groups], passes: Callable[[Scenario], bool]) -> list[Fix]:
    """The one fix search: of each group of candidates (nearest first), the first whose changed scenario
    passes; a later tier (changes combined) is searched only when no group of the earlier ones found one."""
    for groups in tiers:
        found = [next((fix for fix in group if passes(fix.apply(scenario))), None) for group in groups]
        if any(found):
            return [fix for fix in found if fix is not None]
    return []


def said(fixes: list[Fix], otherwise: str = NO_FIX) -> str:
    return say_or([fix.words for fix in fixes]) if fixes else otherwise


def no_fix(scenario: Scenario, problem: Problem) -> str:
    """What a refusal says when no change here runs."""
    if problem.kind == "precision":
        return f"a GPU that runs {scenario.model.weight_dtype} weights, or a smaller model"
    return NO_FIX


# -- the changes a search tries -------------------------------------------------------------------------
def larger_tps(tp: int) -> list[int]:
    """The TP sizes a fix may grow to: up to one 8-GPU node, or the TP asked for."""
    return [size for size in TP_SIZES if tp < size <= max(8, tp)]


def tp_fix(gpu: GPU, size: int, keys: tuple[str, ...]) -> Fix:
    """TP `size`, set at every key: 'TP 4 (4 × H100 SXM 80GB; hardware.tp_size=4)'."""
    settings = tuple((key, size) for key in keys)
    return Fix(settings, f"TP {size} ({size} × {gpu.name}; {settings_words(settings)})")


def settings_words(settings: Iterable[tuple[str, Any]]) -> str:
    return ", ".join(f"{key}={value}" for key, value in settings)


def engine_tps(scenario: Scenario, gpu: GPU) -> list[Fix]:
    return [tp_fix(gpu, size, ("hardware.tp_size",)) for size in larger_tps(scenario.hardware.tp_size)]


def precisions(weights: str, kv: str, dtypes: tuple[str, ...] = WEIGHT_DTYPES) -> list[tuple[str, str]]:
    """(weight dtype, KV dtype) from these down, nearest first: the weights' before the KV's."""
    return [(w, k) for w in dtypes[dtypes.index(weights):] if w in WEIGHT_DTYPES
            for k in KV_DTYPES[KV_DTYPES.index(kv):]]


def precision_fix(scenario: Scenario, gpu: GPU, weights: str, kv: str) -> Fix:
    """Weights and KV at these dtypes, each change worded with how SGLang runs it on `gpu`."""
    model, settings, words = scenario.model, [], []
    if weights != model.weight_dtype:
        path = weight_path(gpu, weights, scenario.engine.version, model_of(scenario).is_moe)
        settings.append(("model.weight_dtype", weights))
        words.append(f"{path.words[:-1]}; model.weight_dtype={weights})")
    if kv != kv_dtype_of(scenario):
        settings.append(("model.kv_dtype", kv))
        words.append(f"{kv} KV cache (model.kv_dtype={kv})")
    return Fix(tuple(settings), " and ".join(words))


def precision_group(scenario: Scenario, gpu: GPU, pairs: list[tuple[str, str]]) -> list[Fix]:
    now = (scenario.model.weight_dtype, kv_dtype_of(scenario))
    return [precision_fix(scenario, gpu, w, kv) for w, kv in pairs if (w, kv) != now]


def gpu_group(scenario: Scenario, now: GPU, tp: int, key: str, larger: bool = True) -> list[Fix]:
    """Each other GPU preset (with more memory, unless `larger` is False), smallest first, set at `key`; a
    GPU change drops the edited figures of the old one."""
    drop = (("hardware.gpu_overrides", {}),) if scenario.hardware.gpu_overrides else ()
    fixes = []
    for name, gpu in sorted(hardware.GPUS.items(), key=lambda item: item[1].memory_gib):
        if is_custom(gpu) or gpu.name == now.name or (larger and gpu.memory_gib <= now.memory_gib):
            continue
        weights = scenario.model.weight_dtype
        path = weight_path(gpu, weights, scenario.engine.version, model_of(scenario).is_moe)
        via = f"; {weights} weights via {path.backend}" if weights != "bf16" and path.runs else ""
        fixes.append(Fix(((key, name), *drop), f"{tp} × {gpu.name} ({key}={name}{via})"))
    return fixes


def combined_group(tp_fixes: list[Fix], precision_fixes: list[Fix]) -> list[Fix]:
    """A larger TP with another precision, the smallest TP first."""
    return [Fix(t.settings + p.settings, f"{t.words} with {p.words}")
            for t in tp_fixes for p in precision_fixes]


def fix_tiers(scenario: Scenario, problem: Problem, gpu: GPU, tp: int, tps: list[Fix],
              gpu_key: str) -> list[Groups]:
    """The changes a search tries for a precision, weights or pool problem: a larger TP (`tps`), another
    precision, another GPU (set at `gpu_key`; for a precision, any GPU that runs it); then a larger TP with
    another precision, or on another GPU."""
    model, larger = scenario.model, problem.kind != "precision"
    if larger:
        by_dtype = [precision_group(scenario, gpu, precisions(model.weight_dtype, kv_dtype_of(scenario)))]
    else:  # each other weight dtype, at this KV dtype or a smaller one
        by_dtype = [precision_group(scenario, gpu, precisions(w, kv_dtype_of(scenario), (w,)))
                    for w in WEIGHT_DTYPES if w != model.weight_dtype]
    other = [fix for group in by_dtype for fix in group]
    on_gpus = [Fix(t.settings + g.settings, f"{g.words[:-1]}; {settings_words(t.settings)})")
               for t in tps for g in gpu_group(scenario, gpu, t.settings[0][1], gpu_key, larger)]
    return [[*([tps] if larger else []), *by_dtype, gpu_group(scenario, gpu, tp, gpu_key, larger)],
            [combined_group(tps, other), on_gpus]]


def tp_fixes(scenario: Scenario, model: Model, tp: int, key: str, passes: Callable[[Scenario], bool],
             refusal: Callable[[Scenario], InputError | None]) -> tuple[list[Fix], str]:
    """For a TP that does not split the model: the TP sizes that split it and pass the whole check ('TP 1, 2
    or 4'); when none does alone, the nearest one with the fix its own refusal names."""
    sizes = tp_sizes(model, limit=max(8, tp))
    runs = [size for size in sizes if passes(applied(scenario, ((key, size),)))]
    if runs:
        return [Fix(((key, size),), f"TP {size}") for size in runs], f"TP {say_or(runs)}"
    if not sizes:
        return [], NO_FIX
    size = min(sizes, key=lambda s: (abs(s - tp), -s))
    sub = refusal(applied(scenario, ((key, size),)))
    subs = getattr(sub, "fixes", ())
    fixes = [Fix(((key, size), *fix.settings), f"TP {size} with {fix.words}") for fix in subs]
    return fixes, said(fixes)


# -- the check ------------------------------------------------------------------------------------------
def engine_refusal(scenario: Scenario, requests: list[Request] | None = None) -> Refused | None:
    """Why one engine's deployment cannot run its workload, naming the fixes; None when it can. `requests`:
    the run's requests when already built (else built here, from the same seed)."""
    requests = requests_of(scenario) if requests is None else requests
    problem = engine_problem(scenario, requests)
    if problem is None:
        return None

    def passes(changed_scenario: Scenario) -> bool:
        try:
            return engine_problem(changed_scenario, requests) is None
        except InputError:
            return False

    model, gpu, tp = model_of(scenario), gpu_of(scenario), scenario.hardware.tp_size
    if problem.kind == "tp":
        fixes, words = tp_fixes(scenario, model, tp, problem.where, passes,
                                lambda changed_scenario: engine_refusal(changed_scenario, requests))
        return Refused(problem.where, f"{problem.words}. Fix: {words}.", fixes)
    if problem.kind == "pool" and scenario.engine.max_total_tokens is not None:
        fixes, words = pool_setting_fixes(scenario, problem, gpu, passes)
    else:
        tiers = fix_tiers(scenario, problem, gpu, tp, engine_tps(scenario, gpu), "hardware.gpu")
        fixes = search(scenario, tiers, passes)
        words = said(fixes, no_fix(scenario, problem))
    more = ", or a shorter prompt" if problem.kind == "pool" else ""
    return Refused(problem.where, f"{problem.words}. Fix: {words}{more}.", fixes)


def pool_setting_fixes(scenario: Scenario, problem: Problem, gpu: GPU,
                       passes: Callable[[Scenario], bool]) -> tuple[list[Fix], str]:
    """A pool set too small: a larger engine.max_total_tokens, with more memory for it when even all of it
    would not do."""
    need = problem.need
    larger = Fix((("engine.max_total_tokens", need),),
                 f"a KV pool of at least {need:,} tokens (engine.max_total_tokens)")
    if passes(larger.apply(scenario)):
        return [larger], larger.words
    unset = applied(scenario, (("engine.max_total_tokens", None),))
    tp = scenario.hardware.tp_size
    tiers = fix_tiers(unset, problem, gpu, tp, engine_tps(scenario, gpu), "hardware.gpu")
    more = search(unset, tiers, lambda changed: passes(larger.apply(changed)))
    fixes = [Fix(larger.settings + fix.settings, f"{larger.words} with {fix.words}") for fix in more]
    return fixes, f"{larger.words} with more memory for it: {said(more)}"


def check_engine(scenario: Scenario, requests: list[Request] | None = None) -> None:
    """Raise `Refused` (an InputError), naming the fix, when one engine's deployment cannot run its
    workload. Every entry point calls engine_model.feasibility.check, which sends PD scenarios to their
    workers' check."""
    refused = engine_refusal(scenario, requests)
    if refused is not None:
        raise refused


# -- small words ----------------------------------------------------------------------------------------
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
    if dp > 1 and config["engine"].get("enable_dp_attention"):  # res is one rank's: attention TP
        return f"{dp * tp} × {gpu}, TP {dp * tp}, attention DP {dp}"
    return f"{tp} × {gpu}, TP {tp}" if dp == 1 else f"{dp * tp} × {gpu}: {dp} engines of TP {tp}"


def pool_words(config: dict) -> str:
    """'KV pool 1,238,605 tokens: 47.2 GiB on each of the 8 GPUs, 378 GiB in all (each GPU holds 1 KV head of
    every token)'. One engine's GPUs hold the same tokens, each its share of their KV."""
    res, dp = config["resolved"], config["engine"].get("dp_size", 1)
    num, per_gpu = res["tp_size"] * dp, res["kv_pool_gib_per_gpu"]
    per = " per DP rank" if config["engine"].get("enable_dp_attention") else " per engine"
    tokens = f"KV pool {res['max_total_tokens']:,} tokens" + (per if dp > 1 else "")
    if num == 1:
        return f"{tokens}: {per_gpu:,.1f} GiB on its GPU"
    heads = res["kv_heads_per_gpu"]
    whose = "its rank's tokens" if config["engine"].get("enable_dp_attention") and dp > 1 else "every token"
    share = (f"every GPU holds the whole latent of {whose} (MLA)" if not heads
             else f"each GPU holds {heads} KV head{'s' if heads > 1 else ''} of {whose}")
    in_all = per_gpu * num
    return f"{tokens}: {per_gpu:,.1f} GiB on each of the {num} GPUs, {in_all:,.0f} GiB in all ({share})"
