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
