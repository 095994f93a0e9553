"""Workloads on which SGLang 0.5.23's own scheduler runs out of KV memory and crashes: the model runs the
same passes, then stops at the same pass, needing the same number of slots with the same number free."""

import re
from pathlib import Path

import pytest

from engine_model.reference import compare, scenario_from_workload, write_trace
from engine_model.simulation import simulate

CRASHES = Path(__file__).parent / "data/sglang_reference_extra/crashes"
NAMES = sorted(p.parent.name for p in CRASHES.glob("*/workload.json"))


def test_both_recorded_crashes_are_found():
    assert NAMES == ["interval_starves_chunk", "mixed_starves_chunk"]


@pytest.mark.parametrize("name", NAMES)
def test_the_model_crashes_where_the_real_scheduler_does(name, tmp_path):
    ref = CRASHES / name
    result = simulate(scenario_from_workload(ref / "workload.json"))
    write_trace(result, tmp_path)
    report = compare(ref, tmp_path)
    assert (report["pass_agreement"], report["num_passes_ours"]) == (1.0, report["num_passes_ref"]), report
    assert report["worst_ttft_error"] < 1e-9 and report["worst_max_itl_error"] < 1e-9
    crash = (ref / "crash.txt").read_text()
    sglang = re.search(r"Try to allocate (\d+) tokens.\nAvailable full tokens: (\d+)", crash)
    ours = re.search(r"needs (\d+) new KV slots and (\d+) are free", result.cut_off or "")
    assert ours is not None, result.cut_off
    assert ours.groups() == sglang.groups()
    assert all(it.kv_used <= it.kv_capacity for it in result.iterations)
