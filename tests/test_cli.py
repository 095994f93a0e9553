"""The CLI contract: `python -m engine_model run SCENARIO --set k=v --json`."""

import json

import pytest
from engine_cli import cli

from engine_model.cli import main

STATS = {"mean", "p50", "p90", "p95", "p99", "max"}


@pytest.fixture(scope="session")
def doc():
    proc = cli("run", "scenarios/forty_replies.toml", "--set", "engine.enable_mixed_chunk=true",
               "--set", "engine.chunked_prefill_size=4096", "--set", "seed=7", "--json", process=True)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_json_has_the_contracted_shape(doc):
    assert doc["scenario"] == "forty_replies"
    assert (doc["config"]["engine"]["chunked_prefill_size"], doc["config"]["engine"]["enable_mixed_chunk"],
            doc["config"]["seed"]) == (4096, True, 7)
    sections = [doc["metrics"]["overall"], *doc["metrics"]["groups"].values(),
                *doc["metrics"]["buckets"].values()]
    assert set(doc["metrics"]["groups"]) == {"streams", "log"}
    assert set(doc["metrics"]["buckets"]) == {"0-8191", ">=32768"}
    for section in sections:
        assert {"num_requests", "num_finished", "output_throughput_tok_s"} <= set(section)
        for metric in ("ttft_s", "itl_s", "tpot_s", "e2e_s"):
            assert set(section[metric]) == STATS
    assert set(doc["iterations"]) >= {"prefill", "decode", "mixed", "idle", "num_retractions"}
    assert doc["iterations"]["mixed"] > 0


def test_auto_chunk_size_is_resolved_in_the_output():
    doc = json.loads(cli("run", "forty_replies", "--json").stdout)
    assert doc["config"]["engine"]["chunked_prefill_size"] == 8192
    assert "79.65 GiB" in doc["config"]["resolved"]["chunked_prefill_size_source"]


@pytest.mark.parametrize(("args", "names"), [
    (["--set", "engine.enable_turbo=true"], ["engine.enable_turbo", "unknown key", "enable_mixed_chunk"]),
    (["--set", "engine.schedule_policy=lpmx"], ["engine.schedule_policy", "fcfs"]),
    (["--set", "hardware.gpu=h1000"], ["hardware.gpu", "h100-sxm"]),
    (["--set", "engine.chunked_prefill_size=1000", "--set", "engine.page_size=64"],
     ["divisible by page_size"]),
    (["--set", "nonsense"], ["dotted.key=value"]),
])
def test_bad_input_exits_2_with_one_line_naming_the_key(args, names):
    proc = cli("run", "forty_replies", *args)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    for name in names:
        assert name in proc.stderr


def test_bad_files_exit_2(tmp_path):
    (tmp_path / "bad.toml").write_text("[engine\nx=")
    assert cli("run", str(tmp_path / "bad.toml"), process=True).returncode == 2
    assert "no such scenario" in cli("run", str(tmp_path / "missing.toml")).stderr


def test_a_run_cut_off_by_a_limit_says_so():
    doc = json.loads(cli("run", "forty_replies", "--set", "limits.max_iterations=50", "--json").stdout)
    assert doc["cut_off"] == "limits.max_iterations (50) reached" and doc["iterations"]["total"] == 50
    assert doc["metrics"]["groups"]["log"]["num_finished"] == 0


# ---- diagnose, trace, scenarios, help ----------------------------------------------------------------

SAMPLES = "app/samples"


def run_main(*argv):
    """(exit status, stdout, stderr) of the command, run in this interpreter."""
    proc = cli(*argv)
    return proc.returncode, proc.stdout, proc.stderr


def test_scenarios_lists_each_with_its_title_and_one_line():
    from engine_model import load_scenario, scenario_names

    status, out, _ = run_main("scenarios")
    lines = out.splitlines()
    assert status == 0 and len(lines) == 2 * len(scenario_names())
    for name, first, second in zip(scenario_names(), lines[::2], lines[1::2], strict=True):
        scenario = load_scenario(name)
        assert first.split() == [name, *scenario.title.split()] and second.strip() == scenario.about != ""


def test_run_help_shows_set_with_an_example():
    help_text = cli("run", "--help").stdout
    assert "--set dotted.key=value" in help_text and "--set engine.enable_mixed_chunk=true" in help_text


def test_plain_run_output_says_why_mid_reply_streams_have_no_ttft():
    status, out, _ = run_main("run", "forty_replies", "--set", "limits.max_iterations=30")
    assert status == 0
    assert "streams: 0/40 finished; TTFT p50 -* p99 -*" in out
    assert "* no TTFT: these replies were already streaming when the run began" in out
    assert "41 not finished, cut off (limits.max_iterations (30) reached) (first: streams-00)" in out


def test_plain_run_output_gives_every_rejection_its_reason():
    """Qwen3-8B's context is 40,960 tokens: SGLang refuses the 100,000-token log, and the run goes on."""
    status, out, _ = run_main("run", "forty_replies", "--set", "model.name=qwen3-8b")
    assert status == 0
    assert "1 not finished, rejected: prompt of 100000 tokens >= max_req_input_len 40954 (first: log)" in out


def test_diagnose_a_chunked_prefill_log():
    log = f"{SAMPLES}/07_issue11970_prefill_chunk8192_v0.5.3.log"
    status, out, _ = run_main("diagnose", log)
    assert status == 0 and out.startswith(f"{log}: verdict: a queue ramp under prefill-first admission")
    assert "  read 9 lines: 9 Prefill, 0 Decode, 0 retraction; skipped 0 unrecognised, 0 malformed" in out
    assert "    try --enable-mixed-chunk: " in out
    status, out, _ = run_main("diagnose", log, "--json")
    doc = json.loads(out)
    assert (doc["verdict"], doc["timeline"]["chunk_size"], doc["timeline"]["longest_chunk_run"]) == (
        "prefill_queue_ramp", 8192, 9)
    assert [f["kind"] for f in doc["findings"]] == ["prefill_queue_ramp"]


def test_diagnose_a_retraction_log_as_json_with_its_settings():
    status, out, _ = run_main("diagnose",
                              f"{SAMPLES}/01_docsci_2025-04-30_qwen05b_batch_retract_decode_oom.log",
                              "--json")
    doc = json.loads(out)
    assert (status, doc["verdict"], doc["settings"]["max_total_tokens"]) == (0, "kv_retraction", 20480)
    assert doc["lines"]["num_retraction"] == 4 and doc["findings"][0]["evidence"][0][0] > 0


def test_diagnose_a_partial_log_says_what_was_skipped(tmp_path):
    log = (tmp_path / "x.log")
    log.write_text("[2026-01-01 12:00:00] Decode batch, #running-req: 4, #token: 9, token usage: 0.1\n"
                   "[2026-01-01 12:00:01] Decode batch, #running-req: " + "9" * 50 + "\nhello\n")
    status, out, _ = run_main("diagnose", str(log))
    assert status == 0 and "skipped 1 unrecognised, 1 malformed, 0 blank" in out
    assert "    malformed line 2: field '#running-req' has a 50-character value" in out


def test_trace_prints_the_mix_by_bucket():
    status, out, _ = run_main("trace", f"{SAMPLES}/mooncake_conversation_trace_head300.jsonl",
                              "--json")
    doc = json.loads(out)
    assert (status, doc["fmt"], doc["num_requests"], doc["num_skipped"]) == (0, "mooncake", 300, 0)
    assert sum(b["num_requests"] for b in doc["buckets"].values()) == 300
    assert set(doc["buckets"]) <= {"0-8191", "8192-32767", ">=32768"}
    assert doc["prompt_len"]["100"] == max(b["prompt_len"]["100"] for b in doc["buckets"].values())


def test_trace_with_a_row_limit_says_where_it_stopped():
    status, out, _ = run_main("trace", f"{SAMPLES}/AzureLLMInferenceTrace_conv_head1500.csv",
                              "--max-requests", "10")
    assert status == 0 and ": azure, 10 requests (10 rows read, 0 skipped)" in out
    assert "note: reading stopped after line 11: max_requests (10) rows were kept" in out


@pytest.mark.parametrize(("argv", "says"), [
    (["diagnose", "scenarios/forty_replies.toml"], "no usable SGLang scheduler line among its"),
    (["trace", "scenarios/forty_replies.toml"], "line 1 (header): found columns"),
    (["diagnose", "/dev/null"], "not a readable file"),
    (["trace", "no/such/file.csv"], "not a readable file"),
    (["reference", "/proc/self/mem", "--out", "/tmp/never-written"], "cannot be read (Input/output error)"),
])
def test_diagnose_and_trace_refuse_what_they_cannot_read_in_one_line(argv, says):
    proc = cli(*argv)
    assert proc.returncode == 2 and proc.stdout == "" and proc.stderr.count("\n") == 1 and says in proc.stderr


def test_every_request_that_does_not_finish_is_counted_with_its_reason(capsys):
    args = ["run", "forty_replies", "--json", "--set", "engine.max_total_tokens=200000",
            "--set", "workload.groups.1.prompt_len=250000"]
    assert main(args) == 0
    doc = json.loads(capsys.readouterr().out)
    overall = doc["metrics"]["overall"]
    assert sum(doc["unfinished"].values()) == overall["num_requests"] - overall["num_finished"] == 1
    (reason,) = doc["unfinished"]
    assert "250000" in reason  # the log's prompt cannot fit a 200,000-token pool, and the reason says so


def test_a_run_stops_at_the_simulated_time_limit_instead_of_idling_up_to_a_far_arrival(capsys):
    args = ["run", "forty_replies", "--json", "--set", "workload.groups.1.arrival.start_at=30000",
            "--set", "limits.max_sim_seconds=100"]
    assert main(args) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["end_at"] < 100 and doc["cut_off"] == "limits.max_sim_seconds (100) reached"
    assert doc["unfinished"] == {"cut off: limits.max_sim_seconds (100) reached": 1}


@pytest.mark.parametrize("argv", [
    ["diagnose", "scenarios/forty_replies.toml", "--json"],
    ["diagnose", "/dev/null", "--json"],
    ["trace", "scenarios/forty_replies.toml", "--json"],
])
def test_json_refusals_are_a_json_error_object_on_stdout_and_exit_2(argv):
    proc = cli(*argv)
    doc = json.loads(proc.stdout)
    assert proc.returncode == 2 and set(doc) == {"error"}
    assert doc["error"]["message"] == f"{doc['error']['where']}: {doc['error']['problem']}"
    assert proc.stderr == f"error: {doc['error']['message']}\n"
