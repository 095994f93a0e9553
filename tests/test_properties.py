"""Properties that hold for any workload and configuration (hypothesis)."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine_model.config import (
    CostConfig,
    EngineConfig,
    LimitsConfig,
    RequestConfig,
    Scenario,
    WorkloadConfig,
)
from engine_model.core import RequestState
from engine_model.simulation import Run, simulate

requests = st.lists(
    st.builds(
        dict,
        prompt_len=st.integers(1, 20_000),
        output_len=st.integers(1, 200),
        arrival_at=st.floats(0, 3, allow_nan=False).map(lambda x: round(x, 3)),
        return_logprob=st.booleans(),
        ignore_eos=st.booleans(),
        slack=st.integers(0, 300),
        mid_reply=st.integers(0, 50),
        prefix_group=st.sampled_from([None, None, "a", "b"]),
    ),
    min_size=1, max_size=25,
)

engines = st.builds(
    dict,
    version=st.sampled_from(["0.5.20", "0.5.22", "0.5.23"]),
    page_size=st.sampled_from([1, 1, 16]),
    chunk_pages=st.sampled_from([-1, 32, 128, 512]),
    enable_mixed_chunk=st.booleans(),
    max_total_tokens=st.integers(3_000, 120_000),
    max_running_requests=st.integers(1, 48),
    prefill_decode_interval=st.integers(0, 3),
    schedule_policy=st.sampled_from(["fcfs", "fcfs", "lof", "random"]),
)


def build(reqs, engine, seed=0) -> Scenario:
    engine = dict(engine)
    pages = engine.pop("chunk_pages")
    engine["chunked_prefill_size"] = -1 if pages < 0 else pages * engine["page_size"]
    configs = []
    for i, r in enumerate(reqs):
        mid = min(r["mid_reply"], r["output_len"] - 1)
        configs.append(RequestConfig(
            rid=f"r{i}", prompt_len=r["prompt_len"], output_len=r["output_len"], arrival_at=r["arrival_at"],
            max_new_tokens=r["output_len"] + (0 if r["ignore_eos"] else r["slack"]),
            return_logprob=r["return_logprob"], ignore_eos=r["ignore_eos"], already_generated=mid,
            prefix_group=r["prefix_group"]))
    return Scenario(seed=seed, engine=EngineConfig(context_length=32768, **engine), cost=CostConfig(kind="linear"),
                    workload=WorkloadConfig(requests=configs), limits=LimitsConfig(max_iterations=200_000))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(requests, engines)
def test_invariants_hold_for_any_workload(reqs, engine):
    sim = Run(build(reqs, engine))
    result = sim.run()
    assert result.cut_off is None
    assert sim.topology.scheduler.kv_used == 0  # every slot comes back (shared prefixes stay only as free cache)
    its = result.iterations
    # KV used never exceeds capacity
    assert all(it.kv_used <= it.kv_capacity for it in its)
    # times never go backwards
    assert all(it.start_at <= it.end_at for it in its)
    assert all(a.end_at <= b.start_at + 1e-12 for a, b in zip(its, its[1:], strict=False))
    for req in result.requests:
        # every request finishes with exactly its tokens, each produced once, or is rejected with a reason
        if req.state is RequestState.REJECTED:
            assert req.reject_reason
            continue
        assert req.state is RequestState.FINISHED
        assert req.num_generated == req.output_len
        assert req.token_times == sorted(req.token_times)
        assert req.kv_len == 0
    # every token of every request comes from exactly one pass row
    produced = {}
    for it in its:
        for rid in it.decode_rids:
            produced[rid] = produced.get(rid, 0) + 1
    for req in result.requests:
        if req.state is RequestState.FINISHED:
            prefill_tokens = len(req.token_times) - produced.get(req.rid, 0)
            assert prefill_tokens == 1 + req.num_retractions - (1 if req.is_mid_reply else 0)


@settings(max_examples=25, deadline=None)
@given(requests, engines, st.integers(0, 2**31))
def test_the_same_seed_gives_an_identical_trace(reqs, engine, seed):
    first, second = simulate(build(reqs, engine, seed)), simulate(build(reqs, engine, seed))
    assert first.iterations == second.iterations
    assert [r.token_times for r in first.requests] == [r.token_times for r in second.requests]
