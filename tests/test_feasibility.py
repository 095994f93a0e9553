"""The one check, read as specifications (engine_model/feasibility.py): every refusal on the presets names
fixes as settings, and each fix passes the whole check; a PD worker's KV pool per DP rank must hold the
longest prompt (prefill) and the longest prompt with its reply as SGLang's decode admission counts it
(decode); one fix search serves every refusal, so the same hardware gets the same fix on every page."""

from functools import cache

import pytest

from engine_model import GPUS, MODELS, InputError, Refused, check_deployment, load_scenario
from engine_model.deployment import applied, requests_of
from engine_model.feasibility import check, fixes, refusal
from engine_model.pd.attention import refusal as attention_refusal
from engine_model.precision import WEIGHT_DTYPES, weight_path

# The ten o'clock rush (240 questions, six 120,000-token contracts) on one engine at the default TP, on the
# PD split of scenarios/ten_oclock_rush_pd.toml (1 + 1 workers), and on 1 + 1 workers of TP 8 under
# prefill_complete (whose attention TP SGLang refuses, with its own fix)
BASES = {"engine": ("ten_oclock_rush", []), "pd": ("ten_oclock_rush_pd", []),
         "pd_tp8_prefill_complete": ("ten_oclock_rush_pd", ["hardware.tp_size=8",
                                                             "pd.decode_allocation_policy=prefill_complete"])}


@cache
def base(kind: str):
    name, sets = BASES[kind]
    return load_scenario(name, sets)


@cache
def requests():
    return requests_of(base("engine"))  # the same seed and workload for all three


def on(kind: str, gpu: str, model: str, weights: str):
    return applied(base(kind), (("hardware.gpu", gpu), ("model.name", model),
                                ("model.weight_dtype", weights)))


@cache
def refusals(kind: str) -> dict[tuple[str, str, str], Refused]:
    found = {}
    for gpu in GPUS:
        for model in MODELS:
            for weights in WEIGHT_DTYPES:
                refused = refusal(on(kind, gpu, model, weights), requests())
                if refused is not None:
                    found[gpu, model, weights] = refused
    return found


@pytest.mark.parametrize("kind", list(BASES))
def test_every_refusal_on_the_presets_names_fixes_and_each_fix_passes_the_whole_check(kind):
    """Every GPU preset x model preset x weight dtype: a refusal names at least one fix as settings, and the
    scenario with any one of them applied passes `check` (not only the part that refused it)."""
    found = refusals(kind)
    assert found  # 70B and up on one H100 cannot run: the test exercises the fixes
    assert [key for key, refused in found.items() if not refused.fixes] == []
    for (gpu, model, weights), refused in found.items():
        assert refused.problem.count("Fix: ") >= 1
        for fix in refused.fixes:
            check(fix.apply(on(kind, gpu, model, weights)), requests())


def test_a_precision_sglang_refuses_is_refused_with_its_reason_where_the_table_says():
    """fp8 MoE experts on SM80-SM88 (A100, A40) and NVFP4 experts on ROCm (MI300X), one engine or PD."""
    for kind in BASES:
        precision = {key for key, refused in refusals(kind).items() if refused.where == "model.weight_dtype"}
        expected = {(gpu, model, weights) for gpu in GPUS for model in MODELS for weights in WEIGHT_DTYPES
                    if not weight_path(GPUS[gpu], weights, moe=MODELS[model].is_moe).runs}
        assert precision == expected, kind
    refused = refusal(on("engine", "a100-80gb", "qwen3-30b-a3b", "fp8"), requests())
    assert refused.problem.startswith("Qwen3-30B-A3B's fp8 weights cannot run on A100 80GB SXM: SGLang's fp8 "
                                      "experts have no Marlin fallback")
    assert [fix.sets for fix in refused.fixes] == [["model.weight_dtype=bf16"], ["model.weight_dtype=nvfp4"],
                                                   ["hardware.gpu=l40s"]]
    assert "nvfp4 weights via Marlin W4A16 (4-bit weights, bf16 compute" in refused.problem


def test_a_prefill_worker_whose_pool_cannot_hold_the_longest_prompt_is_refused_with_the_fix():
    """Llama-3.1-70B nvfp4 with bf16 KV on TP 1 H100 workers: a 105,696-token pool against 120,000-token
    contracts. SGLang would refuse every contract; the check says so before the run."""
    sets = ["model.name=llama-3.1-70b", "model.weight_dtype=nvfp4", "pd.prefill.num_workers=4",
            "pd.decode.num_workers=4"]
    with pytest.raises(InputError) as error:
        check_deployment(load_scenario("ten_oclock_rush_pd", sets))
    assert error.value.where == "pd.prefill"
    assert error.value.problem.startswith("a prefill worker's KV pool holds 105,696 tokens (from GPU memory: "
                                          "H100 SXM 80GB x TP1, Llama-3.1-70B")
    assert ("and the longest prompt, contracts-00's 120,000 tokens, needs more: SGLang refuses a prompt of "
            "max_req_input_len (105,690) tokens or more. Fix: TP 2 (2 × H100 SXM 80GB; "
            "pd.prefill.tp_size=2, pd.decode.tp_size=2), fp8 KV cache (model.kv_dtype=fp8) or "
            "1 × H200 SXM 141GB (hardware.gpu=h200; nvfp4 weights via Marlin W4A16), or a shorter prompt."
            ) in error.value.problem
    # both roles' TP: the decode workers' pool is as short (its admission needs 120,600)
    assert [fix.sets for fix in error.value.fixes] == [
        ["pd.prefill.tp_size=2", "pd.decode.tp_size=2"], ["model.kv_dtype=fp8"], ["hardware.gpu=h200"]]


def test_a_decode_worker_needs_the_prompt_and_its_reply_and_a_larger_cap_fixes_it():
    """The decode admission on an empty pool: max(prompt + 512 reserved, prompt + min(max_new, 4096))."""
    scenario = load_scenario("ten_oclock_rush_pd", ["pd.decode_kv_cap_per_rank=120300"])
    refused = refusal(scenario)
    assert refused.where == "pd.decode"
    assert refused.problem.startswith("a decode worker's KV pool holds 120,300 tokens (from GPU memory")
    assert ("capped at 120300 (pd.decode_kv_cap_per_rank)), and contracts-00, a 120,000-token prompt with "
            "600 tokens of reply, needs 120,600 to be preallocated") in refused.problem
    assert refused.problem.endswith("Fix: a decode KV cap of at least 120,600 tokens per rank "
                                    "(pd.decode_kv_cap_per_rank=120600), or a shorter prompt.")
    check_deployment(refused.fixes[0].apply(scenario))


def test_dp_attention_shares_a_workers_pool_and_fewer_dp_ranks_is_a_fix():
    """GLM-4.5 shapes on 8 H200s, attention DP 8: each decode rank holds all 8 KV heads, 120,345 tokens, and
    the contract's reply is clipped to what the prefill rank's pool leaves (343 tokens)."""
    sets = ["model.name=glm-moe", "hardware.gpu=h200", "hardware.tp_size=8", "pd.prefill.dp_size=8",
            "pd.decode.dp_size=8"]
    refused = refusal(load_scenario("ten_oclock_rush_pd", sets))
    assert refused.where == "pd.decode"
    assert refused.problem.startswith("a decode worker's KV pool holds 120,345 tokens per DP rank")
    assert "a 120,000-token prompt with 343 tokens of reply, needs 120,512" in refused.problem
    assert [fix.sets for fix in refused.fixes] == [["model.kv_dtype=fp8"], ["hardware.gpu=b200"],
                                                   ["pd.decode.dp_size=4"]]
    assert "4 DP ranks per decode worker (pd.decode.dp_size=4; attention TP 2)" in refused.problem


def test_the_attention_fix_and_a_weights_fix_on_the_same_gpus_name_the_same_precision():
    """The ten o'clock page's prefill_complete fix (TP 1 workers) and the refusal of those TP 1 workers
    themselves come from one search: nvfp4 weights with fp8 KV, not nvfp4 alone (whose pool is short)."""
    seventy = ["model.name=llama-3.1-70b", "hardware.tp_size=8"]
    late = load_scenario("ten_oclock_rush_pd", [*seventy, "pd.decode_allocation_policy=prefill_complete"])
    [attention_fix] = attention_refusal(late).fixes
    precision = [s for s in attention_fix.settings if s[0].startswith("model.")]
    assert precision == [("model.weight_dtype", "nvfp4"), ("model.kv_dtype", "fp8")]
    tp1 = load_scenario("ten_oclock_rush_pd", ["model.name=llama-3.1-70b", "pd.prefill.num_workers=8",
                                              "pd.decode.num_workers=8"])
    assert [f.settings for f in fixes(tp1) if f.settings[0][0].startswith("model.")] == [tuple(precision)]
    check_deployment(attention_fix.apply(late))


def test_a_pd_pool_set_too_small_names_the_pool_both_roles_need():
    """engine.max_total_tokens is every rank's pool: it must hold the contract and its 600-token reply."""
    scenario = load_scenario("ten_oclock_rush_pd", ["engine.max_total_tokens=50000",
                                                    "pd.decode_kv_cap_per_rank=60000"])
    refused = refusal(scenario)
    assert refused.where == "pd.prefill" and refused.problem.startswith(
        "a prefill worker's KV pool holds 50,000 tokens (set (max_total_tokens))")
    assert [fix.sets for fix in refused.fixes] == [["engine.max_total_tokens=120600",
                                                    "pd.decode_kv_cap_per_rank=120600"]]
    check_deployment(refused.fixes[0].apply(scenario))


def test_a_worker_without_dp_attention_has_one_rank_as_the_run_resolves_it():
    """pd/fit.py `lone_rank` (what prefill_complete's fix checks its TP 1 workers with) gives the pool figures
    roles.resolve_role gives the run, with and without a decode cap."""
    from engine_model.pd.fit import lone_rank
    from engine_model.pd.roles import resolve_role

    fields = ("max_total_tokens", "max_req_len", "max_req_input_len", "context_len", "page_size")
    for sets in ([], ["pd.decode_kv_cap_per_rank=100000"], ["model.name=llama-3.1-70b", "hardware.tp_size=4",
                                                            "model.kv_dtype=fp8"]):
        scenario = load_scenario("ten_oclock_rush_pd", sets)
        for role in ("prefill", "decode"):
            run, lone = resolve_role(scenario, role).rank, lone_rank(scenario, role)
            assert [getattr(lone, f) for f in fields] == [getattr(run, f) for f in fields], (sets, role)
