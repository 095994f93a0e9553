"""The CLI contract: `python -m engine_model run SCENARIO --set k=v --json`."""

import json
import subprocess
import sys

import pytest

STATS = {"mean", "p50", "p90", "p95", "p99", "max"}


def cli(*args):
    return subprocess.run([sys.executable, "-m", "engine_model", *args], capture_output=True, text=True)


@pytest.fixture(scope="module")
def doc():
    proc = cli("run", "scenarios/forty_replies.toml", "--set", "engine.enable_mixed_chunk=true",
               "--set", "engine.chunked_prefill_size=4096", "--set", "seed=7", "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_json_has_the_contracted_shape(doc):
    assert doc["scenario"] == "forty_replies"
    assert (doc["config"]["engine"]["chunked_prefill_size"], doc["config"]["engine"]["enable_mixed_chunk"],
            doc["config"]["seed"]) == (4096, True, 7)
    sections = [doc["metrics"]["overall"], *doc["metrics"]["groups"].values(), *doc["metrics"]["buckets"].values()]
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
    (["--set", "engine.chunked_prefill_size=1000", "--set", "engine.page_size=64"], ["divisible by page_size"]),
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
    assert cli("run", str(tmp_path / "bad.toml")).returncode == 2
    assert "no such scenario" in cli("run", str(tmp_path / "missing.toml")).stderr


def test_a_run_cut_off_by_a_limit_says_so():
    doc = json.loads(cli("run", "forty_replies", "--set", "limits.max_iterations=50", "--json").stdout)
    assert doc["cut_off"] == "limits.max_iterations (50) reached" and doc["iterations"]["total"] == 50
    assert doc["metrics"]["groups"]["log"]["num_finished"] == 0
