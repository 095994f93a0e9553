"""Replays every trace recorded from SGLang 0.5.23's own scheduler and compares pass by pass."""

import json

import pytest
from engine_cli import cli

from engine_model.reference import read_jsonl, scenario_from_workload
from engine_model.simulation import simulate

from conftest import DATA, REFERENCE

WORKLOADS = sorted(p.parent.name for p in REFERENCE.glob("*/workload.json"))
EXTRA = DATA / "sglang_reference_extra"


def test_all_six_reference_workloads_are_found():
    assert WORKLOADS == ["fcfs_hol", "forty_long_mixed", "forty_long_mixed_logprob", "forty_long_nomixed",
                         "pd_interval_3", "retraction"]


@pytest.mark.parametrize("name", WORKLOADS)
def test_replay_matches_the_real_scheduler_pass_by_pass(name, tmp_path):
    ref = REFERENCE / name
    cli("reference", str(ref / "workload.json"), "--out", str(tmp_path), check=True)
    report = json.loads(cli("compare-reference", str(ref), str(tmp_path), check=True).stdout)
    assert report["ok"], report
    assert (report["pass_agreement"], report["num_passes_ours"]) == (1.0, report["num_passes_ref"])
    assert report["worst_ttft_error"] < 1e-9 and report["worst_max_itl_error"] < 1e-9


@pytest.mark.parametrize("name", sorted(p.parent.name for p in EXTRA.glob("*/workload.json")))
def test_replay_matches_our_own_extra_reference_traces(name, tmp_path):
    """Workloads we recorded with the reference tool to probe rules the stored traces do not reach."""
    cli("reference", str(EXTRA / name / "workload.json"), "--out", str(tmp_path), check=True)
    report = json.loads(cli("compare-reference", str(EXTRA / name), str(tmp_path), check=True).stdout)
    assert (report["pass_agreement"], report["num_passes_ours"]) == (1.0, report["num_passes_ref"]), report
    assert report["worst_ttft_error"] < 1e-9 and report["worst_max_itl_error"] < 1e-9


def test_new_token_ratio_follows_the_real_scheduler_through_retractions():
    ref = REFERENCE / "retraction"
    ours = [it for it in simulate(scenario_from_workload(ref / "workload.json")).iterations]
    theirs = read_jsonl(ref / "iteration.jsonl")
    assert [round(it.new_token_ratio, 6) for it in ours] == [round(it["new_token_ratio"], 6) for it in theirs]
    assert [it.num_waiting for it in ours] == [it["waiting"] for it in theirs]


def test_compare_exits_non_zero_when_traces_disagree(tmp_path):
    ref = REFERENCE
    cli("reference", str(ref / "forty_long_mixed/workload.json"), "--out", str(tmp_path), check=True)
    proc = cli("compare-reference", str(ref / "forty_long_nomixed"), str(tmp_path), process=True)
    assert proc.returncode == 1 and json.loads(proc.stdout)["ok"] is False


def test_a_bad_workload_file_exits_2_with_one_line(tmp_path):
    bad = tmp_path / "workload.json"
    bad.write_text(json.dumps({"server_args": {"enable_turbo": True}, "requests": []}))
    proc = cli("reference", str(bad), "--out", str(tmp_path / "out"), process=True)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1
    assert "server_args.enable_turbo" in proc.stderr and "chunked_prefill_size" in proc.stderr
