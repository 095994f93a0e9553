"""PD against today's engine on the same GPUs, read as specifications: the default layout splits the
person's GPUs, today is their own engine on those GPUs, each policy's verdict is both waits per prompt-length
bucket over one population, and a policy SGLang would not start carries its refusal instead of numbers."""

import functools
import json

import pytest

from app.charts.frames import build
from app.pd import tables
from app.pd.presets import baseline, preset_data, shape, split_tp
from app.present import verdict as words
from engine_model import STORIES, InputError, check_deployment, simulate, validate
from engine_model.pd.verdict import Bucket, Waits, side, verdict

RUSH = STORIES["ten_oclock_rush"]
BUYER = {**RUSH.defaults, "model": "llama-3.1-70b", "tp": 8}  # Llama-3.1-70B on one 8 × H100 engine


@functools.cache
def run(scenario_json: str):
    return build(simulate(validate(json.loads(scenario_json))))


def runs(scenario):
    return run(scenario.model_dump_json())


def test_the_default_layout_splits_the_persons_gpus_and_today_is_their_engine_on_them():
    data = preset_data("rush", BUYER)
    pd = shape(data, "early", 0, 1, 1)
    assert [(r.num_workers, r.tp_size) for r in (pd.pd.prefill, pd.pd.decode)] == [(1, 4), (1, 4)]
    today = baseline(data, "today", pd)
    assert (today.hardware.tp_size, today.engine.dp_size) == (8, 1)
    assert tables.gpus(pd) == tables.gpus(today) == "8 × H100 SXM 80GB"
    # 8 GPUs over 2 + 2 workers: TP 2 each; one GPU cannot be split, so PD takes two and today is doubled
    assert split_tp(data, 4) == 2 and split_tp(preset_data("rush", RUSH.defaults), 2) == 1
    small = preset_data("rush", RUSH.defaults)
    doubled = baseline(small, "today", shape(small, "early", 0, 1, 1))
    assert (doubled.hardware.tp_size, doubled.engine.dp_size) == (1, 2)


def test_two_waits_are_the_same_within_five_percent_and_unknown_without_a_number():
    assert [side(100, pd) for pd in (94, 96, 104, 106, None)] == [
        "better", "same", "same", "worse", "unknown"]
    bucket = Bucket("0-8191", Waits(10, 80.0, 90.0, 0.03), Waits(10, 150.0, 0.03, 0.03))
    assert (bucket.first_token, bucket.pause) == ("worse", "better")


@pytest.mark.slow
def test_the_buyers_verdict_is_both_waits_per_bucket_and_prefill_complete_is_refused_with_its_fix():
    data = preset_data("rush", BUYER)
    story = RUSH.scenario(BUYER)
    early = shape(data, "early", 0, 1, 1)
    check_deployment(early)
    late = shape(data, "prefill_complete", 0, 1, 1)
    with pytest.raises(InputError) as refused:
        check_deployment(late)
    today_run, early_run = runs(story), runs(early)
    [fix, *_] = refused.value.fixes  # TP 1 workers on the same 8 GPUs, at a precision one GPU holds
    fixed = fix.apply(late)
    check_deployment(fixed)
    assert tables.gpus(fixed) == "8 × H100 SXM 80GB"
    against, found = tables.verdicts(early, {"early": early_run}, {"prefill_complete": refused.value.problem},
                                     ("your engine today", story, today_run),
                                     {"prefill_complete": (fixed, runs(fixed))})
    assert (against.gpus, against.today, against.pd, against.note) == (
        "8 × H100 SXM 80GB", "one engine × TP 8", "1 prefill × TP 4 + 1 decode × TP 4", "")
    assert [(v.policy, v.runs) for v in found] == [("early", True), ("prefill_complete", False),
                                                    ("prefill_complete", True)]
    first, second, third = found
    assert second.refused == refused.value.problem and not second.buckets
    assert third.fixed == "4 prefill × TP 1 + 4 decode × TP 1, nvfp4 weights, fp8 KV"
    # every bucket of the run, each side's numbers straight from its own summary
    assert [b.label for b in first.buckets] == list(today_run.summary.metrics.buckets)
    for b in first.buckets:
        mine, theirs = early_run.summary.metrics.buckets[b.label], today_run.summary.metrics.buckets[b.label]
        assert (b.pd.ttft_p95, b.pd.longest_gap) == (mine.ttft_s.p95, mine.max_itl_s.max)
        assert (b.today.ttft_p95, b.today.longest_gap) == (theirs.ttft_s.p95, theirs.max_itl_s.max)
        assert b.pause == "better"  # no chunk ever runs on the decode worker
    lines = words.lines(against, found)
    assert lines[0].startswith("**On 8 × H100 SXM 80GB: PD (1 prefill × TP 4 + 1 decode × TP 4) against "
                               "today (one engine × TP 8)**")
    assert lines[2].startswith("**PD, prefill_complete: cannot start on this layout.** SGLang refuses to "
                               "start")
    assert lines[3].startswith("**PD, prefill_complete with the fix (4 prefill × TP 1 + 4 decode × TP 1, "
                               "nvfp4 weights, fp8 KV): ")
    for b in first.buckets:
        assert words.bucket_line(b) in lines[1]


@pytest.mark.slow
def test_the_upstream_verdict_reads_the_benchmark_requests_on_both_sides():
    data = preset_data("upstream", RUSH.defaults)
    pd = shape(data, "prefill_complete", 0, 1, 1)
    today = baseline(data, "today", pd)
    found = verdict("prefill_complete", runs(today).summary, runs(pd).summary)
    assert runs(pd).summary.population == "the 256 benchmark requests (without the 64 warm-up)"
    assert sum(b.pd.num_requests for b in found.buckets) == 256
    assert sum(b.today.num_requests for b in found.buckets) == 256
