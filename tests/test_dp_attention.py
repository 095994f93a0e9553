"""DP attention on one engine (`engine.enable_dp_attention` with `engine.dp_size`), read as
specifications: one scheduler per rank, every pass run by all ranks together (idle batches where a rank has
nothing), the per-rank settings SGLang's `handle_data_parallelism` makes, round-robin dispatch, and the
per-rank picture."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_properties import build, engines
from test_properties import requests as any_requests

from engine_model import check_deployment, load_scenario, resolve, simulate, summary, validate
from engine_model.core import PassKind, RequestState
from engine_model.dp_attention import rank_settings
from engine_model.replicas import num_gpus
from engine_model.simulation import Run

from conftest import examples


def scenario(requests=(), dp=2, tp=2, **engine):
    return validate({"engine": {"enable_dp_attention": True, "dp_size": dp, **engine},
                     "hardware": {"tp_size": tp}, "cost": {"kind": "linear"},
                     "workload": {"requests": list(requests)}})


def rank_of(result, rid) -> str:
    return next(lane for lane, its in result.lanes.items()
                if any(row.rid == rid for it in its for row in it.prefill_rows))


def test_one_rank_gets_a_third_of_the_conservativeness_a_share_of_the_chunk_and_the_running_cap():
    base, rank = rank_settings(scenario(dp=4, tp=4, max_running_requests=100))
    assert rank.chunked_prefill_size == base.chunked_prefill_size // 4  # 8,192 on an H100 -> 2,048
    assert rank.ratio_init == pytest.approx(base.ratio_init * 0.3)  # 0.7 -> 0.21
    assert rank.max_running_requests == 25
    assert rank.tp_size == 1  # attention TP


def test_requests_go_to_the_ranks_in_turn_and_each_rank_has_its_lane():
    reqs = [{"rid": f"r{i}", "arrival_at": 0.01 * i, "prompt_len": 500, "output_len": 4} for i in range(6)]
    result = simulate(scenario(reqs, dp=2))
    assert list(result.lanes) == ["dp-0", "dp-1"]
    assert [rank_of(result, f"r{i}") for i in range(6)] == ["dp-0", "dp-1"] * 3


def test_every_rank_runs_every_pass_together_and_an_idle_rank_runs_an_idle_batch():
    """One long prompt on dp-0, nothing on dp-1: dp-1 records an idle batch for each of dp-0's passes, with
    the same start and end."""
    result = simulate(scenario([{"rid": "long", "prompt_len": 9000, "output_len": 3}], dp=2))
    zero, one = result.lanes["dp-0"], result.lanes["dp-1"]
    assert [(it.start_at, it.end_at) for it in zero] == [(it.start_at, it.end_at) for it in one]
    busy = [(a, b) for a, b in zip(zero, one, strict=True) if a.kind is not PassKind.IDLE]
    assert busy and all(b.kind is PassKind.IDLE and "idle batch" in b.reason for _, b in busy)


def test_a_pass_lasts_as_long_as_the_slowest_rank_needs():
    """Linear predictor: the lockstep pass is the slowest rank's pass. A short prompt on dp-1 waits out the
    long prompt's chunks on dp-0 before its first decode token."""
    reqs = [{"rid": "long", "prompt_len": 8000, "output_len": 2},
            {"rid": "short", "prompt_len": 10, "output_len": 3}]
    result = simulate(scenario(reqs, dp=2))
    first = result.lanes["dp-0"][0]
    assert result.lanes["dp-1"][0].end_at == first.end_at
    extend = first.prefill_rows[0].extend
    assert first.end_at - first.start_at == pytest.approx(0.010 + 5e-5 * extend, rel=1e-9)


def test_tp_not_divisible_by_dp_is_refused_as_sglang_asserts():
    refused = scenario(dp=3, tp=4)
    with pytest.raises(Exception) as err:
        check_deployment(refused)
    assert "tp_size % attn_dp_size" in str(err.value)


def test_dp_attention_uses_the_engines_gpus_not_dp_times_tp():
    assert num_gpus(scenario(dp=4, tp=4)) == 4
    assert resolve(scenario(dp=2, tp=2)).chunked_prefill_size == 8192  # the engine's; the rank's is halved


def test_forty_replies_on_two_ranks_stall_only_the_logs_rank():
    """The log lands on one rank: its twenty streams wait out the whole prefill; the other rank's twenty get
    a token with every lockstep pass (each as long as a chunk of the log)."""
    result = simulate(load_scenario("forty_replies", ["hardware.tp_size=2", "engine.enable_dp_attention=true",
                                                      "engine.dp_size=2"]))
    log_rank = rank_of(result, "log")
    streams = [r for r in result.requests if r.group == "streams"]
    decoded_there = {rid for it in result.lanes[log_rank] for rid in it.decode_rids}
    on_log = [r for r in streams if r.rid in decoded_there]
    others = [r for r in streams if r not in on_log]
    gap = lambda r: max(b - a for a, b in zip(r.token_times, r.token_times[1:], strict=False))  # noqa: E731
    assert len(on_log) == len(others) == 20
    assert min(map(gap, on_log)) > 3 * max(map(gap, others))
    # the headline (at the client, through the front end) is the log's rank's streams' pause
    headline = summary(result).metrics.groups["streams"].max_itl_s.max
    assert headline == pytest.approx(max(map(gap, on_log)), rel=0.05)


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(any_requests, engines.filter(lambda e: e["speculative_algorithm"] in (None, "EAGLE")),
       st.sampled_from([2, 4]))
def test_invariants_hold_on_every_rank_for_any_workload(reqs, engine, dp):
    base = build(reqs, engine)
    many = base.model_copy(update={
        "engine": base.engine.model_copy(update={"enable_dp_attention": True, "dp_size": dp}),
        "hardware": base.hardware.model_copy(update={"tp_size": dp})})
    run = Run(many)
    result = run.run()
    lanes = list(result.lanes.values())
    assert len(lanes) == dp
    times = [(it.start_at, it.end_at) for it in lanes[0]]
    assert all([(it.start_at, it.end_at) for it in lane] == times for lane in lanes)  # lockstep
    assert all(a[1] <= b[0] + 1e-12 and a[0] <= a[1] for a, b in zip(times, times[1:], strict=False))
    for lane in lanes:
        assert all(it.kv_used <= it.kv_capacity for it in lane)
    if result.cut_off is not None:
        assert result.cut_off.startswith("dp-") and "out of KV memory" in result.cut_off
        return
    for req in result.requests:
        assert req.state in (RequestState.FINISHED, RequestState.REJECTED)
        if req.state is RequestState.FINISHED:
            assert req.num_generated == req.output_len and req.kv_len == 0
        else:
            assert req.reject_reason
    assert all(rank.kv_used == 0 for rank in run.topology.ranks)


def test_the_launch_line_gives_the_engines_chunk_which_sglang_divides_by_the_ranks():
    from engine_model.benchtest import launch_lines

    sets = ["hardware.tp_size=2", "engine.enable_dp_attention=true", "engine.dp_size=2",
            "engine.speculative_algorithm=EAGLE"]
    line = launch_lines(load_scenario("forty_replies", sets))[0]
    assert "--chunked-prefill-size 8192 --dp-size 2 --enable-dp-attention" in line
    assert "--speculative-algorithm EAGLE" in line
