"""k engines behind round-robin dispatch (`engine.dp_size`, SGLang's --dp-size without DP attention), read as
specifications: who gets which request, that replicas share nothing, and how many GPUs each deployment
uses."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_properties import assert_time_is_monotone, build, engines
from test_properties import requests as any_requests

from engine_model import InputError, load_scenario, simulate, summary, validate
from engine_model.core import RequestState
from engine_model.replicas import num_gpus

from conftest import examples


def scenario(dp_size=1, requests=(), **engine):
    return validate({"engine": {"dp_size": dp_size, **engine}, "hardware": {"gpu": "h100-sxm"},
                     "model": {"name": "llama-3.1-8b"}, "workload": {"requests": list(requests)}})


def lane_of(result, rid):
    return next(lane for lane, its in result.lanes.items()
                if any(row.rid == rid for it in its for row in it.prefill_rows))


def test_requests_are_dealt_to_the_replicas_in_turn():
    requests = [{"rid": f"r{i}", "arrival_at": 0.01 * i, "prompt_len": 1000, "output_len": 8}
                for i in range(7)]
    result = simulate(scenario(3, requests))
    assert list(result.lanes) == ["engine-0", "engine-1", "engine-2"]
    assert [lane_of(result, f"r{i}") for i in range(7)] == [f"engine-{i % 3}" for i in range(7)]


def test_a_replica_runs_its_requests_exactly_as_one_engine_would_alone():
    """Nothing is shared: the long prompt on engine-0 does not stall the short one on engine-1."""
    long = {"rid": "long", "prompt_len": 60000, "output_len": 16}
    short = {"rid": "short", "arrival_at": 0.5, "prompt_len": 500, "output_len": 64}
    both = {r.rid: r for r in simulate(scenario(2, [long, short], chunked_prefill_size=4096)).requests}
    for alone in (long, short):
        ref = simulate(scenario(1, [alone], chunked_prefill_size=4096)).requests[0]
        assert both[alone["rid"]].token_times == ref.token_times
    one_engine = {r.rid: r for r in simulate(scenario(1, [long, short], chunked_prefill_size=4096)).requests}
    assert one_engine["short"].token_times[0] - 0.5 > 10 * (both["short"].token_times[0] - 0.5)


def test_the_same_seed_gives_the_same_run():
    rush = load_scenario("ten_oclock_rush", ["engine.dp_size=2", "workload.groups.0.count=40"])
    a, b = simulate(rush), simulate(rush)
    assert [r.token_times for r in a.requests] == [r.token_times for r in b.requests]
    assert summary(a).metrics.overall.num_finished == 46


def test_gpus_count_every_replica_and_every_pd_worker():
    assert num_gpus(scenario(1)) == 1
    assert num_gpus(load_scenario("ten_oclock_rush", ["engine.dp_size=3", "hardware.tp_size=2"])) == 6
    assert num_gpus(load_scenario("ten_oclock_rush_pd", ["pd.decode.num_workers=3"])) == 4
    assert num_gpus(load_scenario("upstream_pd_replica")) == 12


def test_a_pd_scenario_refuses_engine_dp_size():
    with pytest.raises(InputError) as err:
        load_scenario("ten_oclock_rush_pd", ["engine.dp_size=2"])
    assert err.value.where == "engine.dp_size" and "pd.prefill.dp_size" in err.value.problem


def test_the_equal_gpu_preset_is_the_pd_sections_comparison_on_pds_gpus():
    """scenarios/ten_oclock_rush_engines.toml runs what the ten o'clock page's PD section puts beside PD."""
    from app.pd.presets import baseline, preset_data, split
    from engine_model import STORIES

    data = preset_data("rush", STORIES["ten_oclock_rush"].defaults)
    page = baseline(data, "engines", split(data, "early", 0, 1, 1))
    preset = load_scenario("ten_oclock_rush_engines")
    assert num_gpus(preset) == num_gpus(page) == num_gpus(load_scenario("ten_oclock_rush_pd")) == 2
    ours, theirs = simulate(preset), simulate(page)
    assert [r.token_times for r in ours.requests] == [r.token_times for r in theirs.requests]


# -- properties: any workload on k replicas is k single engines, each on the requests dealt to it ------------


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(any_requests, engines.filter(lambda e: e["schedule_policy"] != "random"), st.integers(2, 3))
def test_k_replicas_run_each_dealt_request_as_a_single_engine_would(reqs, engine, k):
    """The linear predictor has no front-end time, so requests are dealt in arrival order (ties: as listed);
    `random` is left out (the replicas share the run's random stream, as one process would)."""
    scenario = build(reqs, engine)
    many = scenario.model_copy(update={"engine": scenario.engine.model_copy(update={"dp_size": k})})
    result = simulate(many)
    for lane in result.lanes.values():
        assert all(it.kv_used <= it.kv_capacity for it in lane)
        assert_time_is_monotone(lane)
    order = sorted(range(len(reqs)), key=lambda i: (scenario.workload.requests[i].arrival_at, i))
    got = {r.rid: r for r in result.requests}
    for replica in range(k):
        dealt = [scenario.workload.requests[i] for i in order[replica::k]]
        if not dealt:
            continue
        alone = simulate(scenario.model_copy(update={"workload": scenario.workload.model_copy(
            update={"requests": dealt})}))
        if alone.cut_off is not None or result.cut_off is not None:
            continue  # a crash stops the whole run (every replica), as the engine's allocator stops it
        for req in alone.requests:
            mine = got[req.rid]
            assert (mine.state, mine.token_times) == (req.state, req.token_times)
            assert mine.state is RequestState.FINISHED or mine.reject_reason


def test_a_request_the_scheduler_refuses_still_takes_its_turn_and_one_the_tokenizer_refuses_does_not():
    pool, context = 3000, 2048  # a prompt of 2,500 fits the context but not a scheduler's pool
    reqs = [{"rid": "a", "prompt_len": 10, "output_len": 2},
            {"rid": "too-long-for-the-pool", "arrival_at": 0.01, "prompt_len": 2990, "output_len": 2},
            {"rid": "b", "arrival_at": 0.02, "prompt_len": 10, "output_len": 2},
            {"rid": "c", "arrival_at": 0.03, "prompt_len": 10, "output_len": 2}]
    result = simulate(scenario(2, reqs, max_total_tokens=pool))
    assert [lane_of(result, rid) for rid in "abc"] == ["engine-0", "engine-0", "engine-1"]
    reqs[1]["prompt_len"] = context  # the whole context: the tokenizer refuses it before dispatch
    result = simulate(scenario(2, reqs, max_total_tokens=100_000, context_length=context))
    assert [lane_of(result, rid) for rid in "abc"] == ["engine-0", "engine-1", "engine-0"]
    assert all(r.reject_reason for r in result.requests if r.rid.startswith("too-long"))
