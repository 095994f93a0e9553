"""prefill_complete and attention TP: SGLang's rule, its refusal in its own words, and the fix that works.

`_validate_prefill_complete` (arg_groups/pd_disaggregation_hook.py, 0.5.22 and 0.5.23) refuses a worker
whose tp_size is not its attention DP size: every rank must run one GPU's attention. What is true of the
ways there, read in both wheels:
- a worker of TP 1 passes;
- attention DP (`--attn-dp-size N`; `--dp-size N --enable-dp-attention` is its deprecated spelling) is the
  rule's other way, but the check reads `enable_dp_attention` after the start-up's first step
  (`handle_deprecated_dp_attention`) has moved the width to attn_dp_size and cleared the flag: run on
  such arguments, the two steps refuse a worker above TP 1 whichever spelling is used. The model follows
  the rule as written, as upstream ran it (TP 4 with attention DP 4); the checklist says what the
  releases do (`PUBLISHED_SEES_ATTENTION_DP`);
- SGLang's Llama and Qwen2 models (models/llama.py, qwen2.py) split attention over the worker's whole TP
  group: they have no attention DP. Qwen3, Qwen3-MoE, DeepSeek-V3 and GLM build their attention on the
  attention-TP group (qwen3.py, qwen3_moe.py, deepseek_v2.py, glm4_moe.py).

`refusal(scenario)` is the one message: roles.check raises it, and the checklist's attention row shows it.
"""

from __future__ import annotations

from engine_model.config import Scenario
from engine_model.deployment import KV_DTYPES, WEIGHT_DTYPES, changed, requests_of, runs
from engine_model.errors import InputError
from engine_model.pd.shape import ROLES, role_scenario, role_shape

SGLANG_WORDS = ("--disaggregation-decode-allocation-policy prefill_complete does not yet support attention "
                "tensor parallelism greater than one")  # the ValueError of _validate_prefill_complete
PUBLISHED_SEES_ATTENTION_DP = False  # 0.5.22, 0.5.23: the check reads the flag the start-up cleared
ATTENTION_DP_MODELS = frozenset({"qwen3-8b", "qwen3-32b", "qwen3-30b-a3b", "qwen3-235b-a22b", "deepseek-v3",
                                 "glm-moe", "glm-5"})  # presets whose SGLang model has attention DP


def refusal(scenario: Scenario) -> InputError | None:
    """SGLang's refusal of prefill_complete on this PD scenario's attention TP (whichever policy it runs
    now), with the fix; None when every role runs attention TP 1."""
    if scenario.pd is None:
        return None
    for name in ROLES:
        tp, dp = role_shape(scenario, name)
        if tp != dp:
            return InputError(f"pd.{name}.tp_size", words(name, tp, dp, fix(scenario), scenario.model.name))
    return None


def words(role: str, tp: int, dp: int, fixed: str | None = None, model: str | None = None) -> str:
    """SGLang's refusal, why, and (when known) the fix; the note on attention DP for this model."""
    said = (f"SGLang refuses to start the {role} worker: \"{SGLANG_WORDS}\" (_validate_prefill_complete). "
            f"Its attention runs at TP {tp // dp} (tp_size {tp}, attention DP {dp}), and prefill_complete "
            "needs attention TP 1 on every rank.")
    if fixed:
        said += f" Fix: {fixed}."
    return f"{said} {attention_dp_words(model)}"


def published_words(model: str | None) -> str:
    """What SGLang's releases do with attention DP under prefill_complete, and whether this model (a preset
    key; None: unknown) has attention DP at all."""
    said = ("SGLang 0.5.22 and 0.5.23 check after their start-up has turned --enable-dp-attention into "
            "--attn-dp-size, and refuse a worker above TP 1 either way")
    if model is not None and model not in ATTENTION_DP_MODELS and model.startswith(("llama", "qwen2")):
        said += ("; and SGLang's Llama and Qwen2 models split attention over the whole TP group (no "
                 "attention DP)")
    return said


def attention_dp_words(model: str | None) -> str:
    """Why attention DP is not the fix."""
    return f"Attention DP (--attn-dp-size = tp_size) does not get there: {published_words(model)}."


def fix(scenario: Scenario) -> str:
    """Workers of TP 1 on the same GPUs, at the largest precision that fits one GPU with room for the longest
    prompt; else that none does."""
    from engine_model.replicas import num_gpus

    counts = {name: getattr(scenario.pd, name).num_workers * role_shape(scenario, name)[0] for name in ROLES}
    keys = ", ".join(f"pd.{n}.tp_size=1, pd.{n}.num_workers={counts[n]}" for n in ROLES)
    workers = (f"workers of TP 1 on the same {num_gpus(scenario)} GPUs: {counts['prefill']} prefill + "
               f"{counts['decode']} decode ({keys})")
    holds, model = runs(requests_of(scenario)), scenario.model
    for weights, kv in precisions(model.weight_dtype, model.kv_dtype):
        one_gpu = [changed(role_scenario(scenario, n, 1), weight_dtype=weights, kv_dtype=kv) for n in ROLES]
        if all(map(holds, one_gpu)):
            changes = [f"{new} {what} (model.{key}={new})" for new, now, what, key in (
                (weights, model.weight_dtype, "weights", "weight_dtype"),
                (kv, model.kv_dtype, "KV", "kv_dtype")) if new != now]
            if not changes:
                return workers
            return f"{workers}, with {' and '.join(changes)}: then one GPU holds the model and the longest " \
                   "prompt"
    return ("none on these GPUs: one GPU holds the model and the longest prompt at no precision the model "
            "offers; keep early, or take a GPU with more memory")


def precisions(weights: str, kv: str) -> list[tuple[str, str]]:
    """(weight dtype, KV dtype) from these down, nearest first: the weights' before the KV's."""
    return [(w, k) for w in WEIGHT_DTYPES[WEIGHT_DTYPES.index(weights):]
            for k in KV_DTYPES[KV_DTYPES.index(kv):]]
