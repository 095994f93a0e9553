"""prefill_complete and attention TP, read as specifications: SGLang's refusal in its own words with a fix
that runs, one message for the run and the checklist, and what the 0.5.22/0.5.23 wheels do with attention
DP (engine_model/pd/attention.py)."""

import pytest

from engine_model import InputError, check_deployment, load_scenario, scenario_checklist, simulate
from engine_model.pd.attention import SGLANG_WORDS, refusal
from engine_model.pd.checklist import checklist, settings_of_log

SEVENTY_TP8 = ["model.name=llama-3.1-70b", "hardware.tp_size=8"]  # the buyer: Llama-3.1-70B on H100s
LATE = ["pd.decode_allocation_policy=prefill_complete"]


def pd_case(*sets: str):
    return load_scenario("ten_oclock_rush_pd", [*sets, *LATE])


def refused(scenario) -> InputError:
    with pytest.raises(InputError) as error:
        check_deployment(scenario)
    return error.value


def test_attention_tp_above_one_is_sglangs_own_refusal_with_the_fix():
    error = refused(pd_case(*SEVENTY_TP8))
    assert error.where == "pd.prefill.tp_size"
    assert f'"{SGLANG_WORDS}" (_validate_prefill_complete)' in error.problem
    assert "Its attention runs at TP 8 (tp_size 8, attention DP 1)" in error.problem
    # one H100 holds 70B only at nvfp4 (fp8 weights: 65.7 GiB of 65.1), SGLang's Marlin W4A16 there, and
    # its pool the 120k contracts only with fp8 KV
    assert ("Fix: workers of TP 1 on the same 16 GPUs: 8 prefill + 8 decode (pd.prefill.tp_size=1, "
            "pd.prefill.num_workers=8, pd.decode.tp_size=1, pd.decode.num_workers=8), with nvfp4 weights via "
            "Marlin W4A16 (4-bit weights, bf16 compute; --fp4-gemm-backend auto picks marlin on SM80–SM90; "
            "model.weight_dtype=nvfp4) and fp8 KV cache (model.kv_dtype=fp8)") in error.problem
    [fix] = error.fixes
    assert fix.sets == ["pd.prefill.tp_size=1", "pd.prefill.num_workers=8", "pd.decode.tp_size=1",
                        "pd.decode.num_workers=8", "model.weight_dtype=nvfp4", "model.kv_dtype=fp8"]
    check_deployment(fix.apply(pd_case(*SEVENTY_TP8)))
    # what is true of attention DP, for this model
    assert "refuse a worker above TP 1 either way" in error.problem
    assert "Llama and Qwen2 models split attention over the whole TP group" in error.problem


def test_the_fix_it_names_runs():
    fixed = pd_case("model.name=llama-3.1-70b", "pd.prefill.tp_size=1", "pd.prefill.num_workers=4",
                    "pd.decode.tp_size=1", "pd.decode.num_workers=4", "model.weight_dtype=nvfp4",
                    "model.kv_dtype=fp8", "workload.groups.0.count=16", "workload.groups.1.count=2")
    check_deployment(fixed)
    result = simulate(fixed)
    assert all(r.finished_at is not None and r.reject_reason is None for r in result.requests)


def test_a_model_that_fits_one_gpu_needs_only_tp1_workers_and_has_no_llama_note():
    error = refused(pd_case("model.name=qwen3-32b", "hardware.tp_size=2"))
    assert ("Fix: workers of TP 1 on the same 4 GPUs: 2 prefill + 2 decode (pd.prefill.tp_size=1, "
            "pd.prefill.num_workers=2, pd.decode.tp_size=1, pd.decode.num_workers=2). Attention DP"
            ) in error.problem
    assert "Llama" not in error.problem


def test_a_model_no_gpu_holds_says_so_and_keeps_early():
    big = ["model.name=llama-3.1-405b", "model.weight_dtype=fp8", "hardware.tp_size=8"]
    error = refused(pd_case(*big))
    assert "Fix: none on these GPUs" in error.problem and "keep early" in error.problem
    [fix] = error.fixes
    assert fix.sets == ["pd.decode_allocation_policy=early"]
    check_deployment(fix.apply(pd_case(*big)))  # early runs


def test_the_checklists_attention_row_fails_with_the_same_message():
    scenario = pd_case(*SEVENTY_TP8)
    row = {c.key: c for c in scenario_checklist(scenario, None)}["attention"]
    message = refused(scenario).problem
    assert row.status == "fail" and row.facts["refusal"] == refusal(scenario).problem == message
    # the row reads the same under early: it is about enabling prefill_complete
    early = load_scenario("ten_oclock_rush_pd", SEVENTY_TP8)
    assert {c.key: c for c in scenario_checklist(early, None)}["attention"].facts["refusal"] == message


def test_attention_dp_runs_in_the_model_and_the_checklist_says_the_releases_refuse_it():
    upstream = load_scenario("upstream_pd_replica", LATE)  # TP 4 with attention DP 4, as upstream ran it
    assert refusal(upstream) is None
    check_deployment(upstream)
    row = {c.key: c for c in scenario_checklist(upstream, None)}["attention"]
    assert row.status == "unknown" and "refuse a worker above TP 1 either way" in row.facts["published"]
    assert "Llama" not in row.facts["published"]  # GLM has attention DP in SGLang


@pytest.mark.parametrize("args, attn_tp", [
    ({"tp_size": 8, "attn_dp_size": 8}, 1),  # 0.5.22+'s spelling
    ({"tp_size": 8, "dp_size": 8, "enable_dp_attention": True}, 1),  # the deprecated one
    ({"tp_size": 8, "dp_size": 1, "attn_dp_size": 1}, 8),
])
def test_a_logs_attention_dp_is_read_in_either_spelling(args, attn_tp):
    settings = settings_of_log({"disaggregation_mode": "prefill", **args})
    assert settings["prefill_attn_tp"] == (attn_tp, "log")
    row = {c.key: c for c in checklist(None, settings=settings)}["attention"]
    if attn_tp > 1:  # worded from the log's own settings, without a fix (a log has no scenario)
        assert row.status == "fail" and row.facts["refusal"].startswith("SGLang refuses to start the prefill")
    else:
        assert row.status == "unknown" and "published" in row.facts
