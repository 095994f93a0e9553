"""'Simulate this server' builds a runnable scenario from a real log."""

import pytest

from engine_model import load_scenario, simulate
from engine_model.core import RequestState
from engine_model.logs.parse import parse_log_file
from engine_model.logs.replay import scenario_from_log

from conftest import LOGS


def test_a_retraction_log_becomes_a_runnable_scenario_with_its_settings():
    parsed = parse_log_file(LOGS / "01_docsci_2025-04-30_qwen05b_batch_retract_decode_oom.log")
    scenario, notes = scenario_from_log(parsed, load_scenario("forty_replies"))
    assert (scenario.engine.max_total_tokens, scenario.engine.chunked_prefill_size,
            scenario.engine.max_running_requests) == (20480, 8192, 200)
    assert len(scenario.workload.requests) > 100 and any("each reply 103 tokens" in n for n in notes)
    # 113,680 decode tokens / 1,108 requests
    assert {r.output_len for r in scenario.workload.requests} == {103}
    result = simulate(scenario)
    assert all(r.state in (RequestState.FINISHED, RequestState.REJECTED) for r in result.requests)


@pytest.mark.parametrize("text", ["", "hello\nworld\n"])
def test_a_log_without_prefill_lines_says_so(text):
    from engine_model.logs.parse import parse_log

    scenario, notes = scenario_from_log(parse_log(text), load_scenario("forty_replies"))
    assert scenario.workload.requests == [] and any("nothing to simulate" in n for n in notes)


def test_a_cache_aware_policy_from_the_log_runs_as_fcfs_with_a_note():
    from engine_model.logs.parse import parse_log

    text = ("[2026-01-01 00:00:00] server_args={'schedule_policy': 'lpm', 'chunked_prefill_size': 4096}\n"
            "[2026-01-01 00:00:01] Prefill batch, #new-seq: 1, #new-token: 100, #cached-token: 0, "
            "token usage: 0.00, #running-req: 0, #queue-req: 0, \n")
    scenario, notes = scenario_from_log(parse_log(text), load_scenario("forty_replies"))
    assert (scenario.engine.schedule_policy, scenario.engine.chunked_prefill_size) == ("fcfs", 4096)
    assert any("'lpm' runs as fcfs" in note for note in notes)


def test_without_decode_lines_the_reply_length_is_the_stated_assumption():
    parsed = parse_log_file(LOGS / "07_issue11970_prefill_chunk8192_v0.5.3.log")
    scenario, notes = scenario_from_log(parsed, load_scenario("forty_replies"))
    assert {r.output_len for r in scenario.workload.requests} == {256}
    assert any("assumed 256 tokens" in n for n in notes)
    scenario, notes = scenario_from_log(parsed, load_scenario("forty_replies"), output_len=64)
    assert {r.output_len for r in scenario.workload.requests} == {64}


def test_the_issue_11970_replay_runs_the_logs_nine_back_to_back_passes():
    """Its first line says 114 requests were queued, so the 70 its lines admit were all waiting at 0 s; at
    their Prefill lines' own times (to the second) the replay ran four passes, not the log's nine."""
    parsed = parse_log_file(LOGS / "07_issue11970_prefill_chunk8192_v0.5.3.log")
    scenario, notes = scenario_from_log(parsed, load_scenario("forty_replies"))
    requests = scenario.workload.requests
    assert (len(requests), {r.arrival_at for r in requests}) == (70, {0.0})
    assert scenario.engine.chunked_prefill_size == 8192 and any("8,192 inferred" in n for n in notes)
    passes = [it.kind.name for it in simulate(scenario).iterations if it.kind.name != "IDLE"]
    assert passes[:10] == ["PREFILL"] * 9 + ["DECODE"]


# -- the log's deployment ------------------------------------------------------------------------------------
TP8_LOG = LOGS.parent / "sglang_logs_written" / "llama70b_tp8.log"


def test_a_tp8_70b_log_replays_as_70b_on_8_gpus():
    from engine_model import resolve

    scenario, notes = scenario_from_log(parse_log_file(TP8_LOG), load_scenario("forty_replies"))
    res = resolve(scenario)
    assert (scenario.model.name, scenario.hardware.tp_size, res.gpu_name) == (
        "llama-3.1-70b", 8, "H100 SXM 80GB")
    assert (res.max_total_tokens, res.max_total_tokens_source) == (1_301_512, "set (max_total_tokens)")
    assert any("model_path 'meta-llama/Llama-3.1-70B-Instruct' → Llama-3.1-70B; tp_size=8 → 8 GPUs" in n
               for n in notes)
    assert [n for n in notes if n.startswith("Not matched: ")] == [
        "Not matched: the GPU: a log does not name it; the replay runs on H100 SXM 80GB (pick yours)"]
    result = simulate(scenario)
    assert result.cut_off is None and len(result.requests) == 25


def test_a_data_parallel_log_replays_its_ranks_requests_on_one_engine_and_says_so(tmp_path):
    """A log's lines are one DP rank's: its requests run on one engine, not split again over dp_size."""
    log = tmp_path / "dp2.log"
    log.write_text(TP8_LOG.read_text().replace("dp_size=1", "dp_size=2", 1))
    scenario, notes = scenario_from_log(parse_log_file(log), load_scenario("forty_replies"))
    assert scenario.engine.dp_size == 1 and len(scenario.workload.requests) == 25
    assert any(n.startswith("Not matched: dp_size=2: 2 copies of the server") for n in notes)


def test_a_picked_deployment_overrides_the_logs_and_says_so():
    scenario, notes = scenario_from_log(parse_log_file(TP8_LOG), load_scenario("forty_replies"),
                                        picked={"tp_size": 4, "kv_dtype": "fp8"})
    assert (scenario.hardware.tp_size, scenario.model.kv_dtype) == (4, "fp8")
    assert any("tp_size 4 picked (the log's: 8)" in n for n in notes)


@pytest.mark.parametrize(("path", "key", "is_preset"), [
    ("meta-llama/Meta-Llama-3.1-8B-Instruct", "llama-3.1-8b", True),
    ("Qwen/Qwen3-235B-A22B-Instruct-2507", "qwen3-235b-a22b", True),
    ("qwen/qwen2.5-0.5b-instruct", "qwen2.5-0.5b", True),
    ("zai-org/GLM-5", "glm-5", True),
    ("meta-llama/Llama-3.3-70B-Instruct", "llama-3.1-70b", False),
    ("deepseek-ai/DeepSeek-R1", "deepseek-v3", False),
    ("zai-org/GLM-5.1-FP8", "glm-5", False),
    ("mistralai/Mistral-7B-Instruct-v0.3", "llama-2-7b", False),
])
def test_model_path_picks_its_preset_or_the_closest_with_a_note(path, key, is_preset):
    from engine_model import match_model

    found, note = match_model(path)
    assert found == key and (note is None) == is_preset
    if note:
        assert note.startswith(f"model_path {path!r} is not a preset: replayed as ")


def test_dtypes_parallelism_and_what_cannot_be_matched_are_read_from_server_args():
    from engine_model import deployment_from_log

    found = deployment_from_log({"model_path": "zai-org/GLM-5.1-FP8", "tp_size": 8, "dp_size": 8,
                                 "enable_dp_attention": True, "kv_cache_dtype": "fp8_e5m2",
                                 "speculative_algorithm": "EAGLE", "pp_size": 2})
    assert (found.model, found.tp_size, found.weight_dtype, found.kv_dtype) == ("glm-5", 8, "fp8", "fp8")
    said = " | ".join(found.unmatched)
    for words in ("DP attention (dp_size=8, enable_dp_attention)", "pp_size=2",
                  "speculative_algorithm='EAGLE'", "model_path 'zai-org/GLM-5.1-FP8' is not a preset"):
        assert words in said
    assert deployment_from_log({"quantization": "modelopt_fp4"}).weight_dtype == "nvfp4"
    assert deployment_from_log({"model_path": "deepseek-ai/DeepSeek-V3"}).weight_dtype == "fp8"
    assert "dtype='float32': not modelled" in deployment_from_log({"dtype": "float32"}).unmatched[-1]


def test_a_replay_says_which_numbers_came_from_the_log_and_which_were_assumed():
    from engine_model.logs.parse import parse_log

    lines = ["Prefill batch, #new-seq: 1, #new-token: 900, #cached-token: 0, token usage: 0.00, "
             "#running-req: 0, #queue-req: 0, "] * 3
    scenario, notes = scenario_from_log(parse_log("\n".join(lines)), load_scenario("forty_replies"))
    assert {r.arrival_at for r in scenario.workload.requests} == {0.0}
    assert any(n.startswith("assumed: every request arrives at 0 s — the log has no") for n in notes)
    [where] = [n for n in notes if n.startswith("from the log:")]
    assert "arrival times (all at 0 s)" in where.split("assumed:")[1]
    assert "reply length 256" in where.split("assumed:")[1]
    timed = parse_log_file(LOGS / "01_docsci_2025-04-30_qwen05b_batch_retract_decode_oom.log")
    [where] = [n for n in scenario_from_log(timed, load_scenario("forty_replies"))[1]
               if n.startswith("from the log:")]
    assert "arrival times (the lines' stamps)" in where and "reply length (from the Decode lines)" in where
