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
Its fix (`fix_of`: workers of TP 1 at the nearest precision, else keep early) comes from the same search as
every refusal's (engine_model.deployment.search), each candidate checked by the same arithmetic as
engine_model.feasibility's (engine_model/pd/fit.py), so the page that shows this refusal and the one that
refuses the TP 1 workers themselves name the same precision.
"""

from __future__ import annotations

from engine_model.config import Scenario
from engine_model.deployment import Fix, Refused, precision_fix, precisions, requests_of, search
from engine_model.errors import InputError
from engine_model.pd.fit import lone_rank, pd_problem
from engine_model.pd.shape import ROLES, role_scenario, role_shape
from engine_model.resolve import gpu_of, kv_dtype_of

SGLANG_WORDS = ("--disaggregation-decode-allocation-policy prefill_complete does not yet support attention "
                "tensor parallelism greater than one")  # the ValueError of _validate_prefill_complete
PUBLISHED_SEES_ATTENTION_DP = False  # 0.5.22, 0.5.23: the check reads the flag the start-up cleared
ATTENTION_DP_MODELS = frozenset({"qwen3-8b", "qwen3-32b", "qwen3-30b-a3b", "qwen3-235b-a22b", "deepseek-v3",
                                 "glm-moe", "glm-5"})  # presets whose SGLang model has attention DP
NO_FIX = ("none on these GPUs: one GPU holds the model and the longest prompt at no precision the model "
          "offers")


def refused_role(scenario: Scenario) -> str | None:
    """The first role whose workers run attention TP above 1 (tp_size != attention DP size); None when none
    does. Cheap: what the fix search asks."""
    if scenario.pd is None:
        return None
    return next((name for name in ROLES if role_shape(scenario, name)[0] != role_shape(scenario, name)[1]),
                None)


def refusal(scenario: Scenario) -> Refused | None:
    """SGLang's refusal of prefill_complete on this PD scenario's attention TP (whichever policy it runs
    now), with the fix; None when every role runs attention TP 1."""
    name = refused_role(scenario)
    if name is None:
        return None
    tp, dp = role_shape(scenario, name)
    found, said = fix_of(scenario)
    return Refused(f"pd.{name}.tp_size", words(name, tp, dp, said, scenario.model.name), found)


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
    """The fix in words: workers of TP 1 on the same GPUs, at the largest precision with which the whole
    check passes (one GPU then holds the model and the longest request); else keep early."""
    return fix_of(scenario)[1]


def fix_of(scenario: Scenario) -> tuple[tuple[Fix, ...], str]:
    """The fixes (as settings) and their words, found by the same search as every refusal's
    (engine_model.deployment.search). Each passes the whole check: the workers' fit (engine_model/pd/fit.py;
    a TP 1 worker has one rank, `lone_rank`; keep early changes no pool), and roles.check's other checks,
    which come before this refusal and which neither change touches."""
    requests = requests_of(scenario)

    def fits(changed: Scenario, rank_of=lone_rank) -> bool:
        try:
            return pd_problem(changed, requests, rank_of) is None
        except InputError:
            return False

    found = search(scenario, [[tp1_workers(scenario)]], fits)
    if found:
        return tuple(found), found[0].words
    keep = keep_early(scenario)
    if fits(keep.apply(scenario), rank_of=None):
        return (keep,), f"{NO_FIX}; {keep.words}"
    return (), NO_FIX


def tp1_workers(scenario: Scenario) -> list[Fix]:
    """Workers of TP 1 on the same GPUs (each worker of TP t becomes t workers), at each precision from the
    scenario's down, nearest first: the candidates of the fix."""
    from engine_model.replicas import num_gpus

    counts = {name: getattr(scenario.pd, name).num_workers * role_shape(scenario, name)[0] for name in ROLES}
    settings = []
    for name in ROLES:
        settings += [(f"pd.{name}.tp_size", 1), (f"pd.{name}.num_workers", counts[name])]
        if getattr(scenario.pd, name).dp_size > 1:
            settings.append((f"pd.{name}.dp_size", 1))
    keys = ", ".join(f"{key}={value}" for key, value in settings)
    workers = (f"workers of TP 1 on the same {num_gpus(scenario)} GPUs: {counts['prefill']} prefill + "
               f"{counts['decode']} decode ({keys})")
    gpu, model = gpu_of(role_scenario(scenario, "prefill")), scenario.model
    candidates = []
    for weights, kv in precisions(model.weight_dtype, kv_dtype_of(role_scenario(scenario, "prefill"))):
        change = precision_fix(scenario, gpu, weights, kv)
        said = (f"{workers}, with {change.words}: then one GPU holds the model and the longest prompt"
                if change.settings else workers)
        candidates.append(Fix((*settings, *change.settings), said))
    return candidates


def keep_early(scenario: Scenario) -> Fix:
    """Both roles back on early (the per-role overrides cleared)."""
    early = ("pd.decode_allocation_policy", "early")
    overrides = tuple((f"pd.{n}.decode_allocation_policy", None) for n in ROLES
                      if getattr(scenario.pd, n).decode_allocation_policy)
    return Fix((early, *overrides), f"keep early ({early[0]}=early)")
