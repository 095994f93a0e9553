"""Properties of PD disaggregation that hold for any small cluster and workload (hypothesis).

Decode KV in use plus reserved stays within each rank's pool, every request's KV crosses the link
exactly once, every token is produced exactly once, time runs forward on every lane, and the same
seed gives the same trace. WHO_WAITS_SOAK=1 runs them at 10,000 examples (tests/conftest.py).
"""

from collections import Counter

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from engine_model.core import RequestState
from engine_model.scenario_io import validate
from engine_model.simulation import simulate

from conftest import examples

requests = st.lists(
    st.builds(
        dict,
        prompt_len=st.integers(1, 12_000),
        output_len=st.one_of(st.integers(1, 64), st.integers(300, 1000)),  # long replies press decode KV
        arrival_at=st.floats(0, 2, allow_nan=False).map(lambda x: round(x, 3)),
        slack=st.integers(0, 200),
        ignore_eos=st.booleans(),
    ),
    min_size=1, max_size=16,
)

clusters = st.builds(
    dict,
    policy=st.sampled_from(["early", "prefill_complete"]),
    version=st.sampled_from(["0.5.22", "0.5.23"]),
    chunk=st.sampled_from([512, 2048, 8192]),
    page_size=st.sampled_from([1, 1, 16]),
    prefill_pool=st.integers(14_000, 60_000),
    decode_cap=st.integers(2_000, 24_000),
    reserved=st.sampled_from([0, 0, 64, 512]),
    max_running=st.integers(1, 32),
    prefill_workers=st.integers(1, 2),
    decode_workers=st.integers(1, 2),
    decode_dp=st.sampled_from([1, 1, 2]),
    prefill_dp=st.sampled_from([1, 1, 2]),  # > 1: the rank follows the bootstrap room
    cost=st.sampled_from(["linear", "linear", "roofline"]),  # roofline: the prebuilt merge's held host time
    router=st.sampled_from(["round_robin", "random", "least_loaded", "power_of_two"]),
)


def build(reqs, c, seed=0):
    """A small PD scenario: the linear predictor or the roofline, the llama-3.1-8b KV size, and the cluster's
    settings (attention TP 1 per rank, as `prefill_complete` requires)."""
    workload = [{"rid": f"r{i}", "prompt_len": r["prompt_len"], "output_len": r["output_len"],
                 "arrival_at": r["arrival_at"], "ignore_eos": r["ignore_eos"],
                 "max_new_tokens": r["output_len"] + (0 if r["ignore_eos"] else r["slack"])}
                for i, r in enumerate(reqs)]
    return validate({
        "seed": seed,
        "engine": {"version": c["version"], "chunked_prefill_size": c["chunk"] * c["page_size"],
                   "page_size": c["page_size"], "max_total_tokens": c["prefill_pool"],
                   "max_running_requests": c["max_running"], "context_length": 32768},
        "cost": {"kind": c.get("cost", "linear")},
        "hardware": {"gpu": "h100-sxm"}, "model": {"name": "llama-3.1-8b"},
        "workload": {"requests": workload},
        "limits": {"max_iterations": 200_000},
        "pd": {"decode_allocation_policy": c["policy"], "router": c["router"],
               "decode_kv_cap_per_rank": c["decode_cap"], "num_reserved_decode_tokens": c["reserved"],
               "prefill": {"num_workers": c["prefill_workers"], "tp_size": c.get("prefill_dp", 1),
                           "dp_size": c.get("prefill_dp", 1)},
               "decode": {"num_workers": c["decode_workers"], "tp_size": c["decode_dp"],
                          "dp_size": c["decode_dp"]}},
    })


# Found by the soak: with one request row on decode, r0 finished as it joined (one output token) and freed
# the row, but the decode worker parked and nothing woke it to preallocate r1: "stuck" at t=0.010 s.
ONE_ROW_TWO_ONE_TOKEN_REPLIES = (
    [{"prompt_len": 1, "output_len": 1, "arrival_at": 0.0, "slack": 0, "ignore_eos": False}] * 2,
    {"policy": "early", "version": "0.5.22", "chunk": 512, "page_size": 1, "prefill_pool": 14000,
     "decode_cap": 2000, "reserved": 0, "max_running": 1, "prefill_workers": 1, "decode_workers": 1,
     "decode_dp": 1, "router": "round_robin"})


def test_a_decode_worker_polls_again_when_a_request_finishes_as_it_joins():
    result = simulate(build(*ONE_ROW_TWO_ONE_TOKEN_REPLIES))
    assert result.cut_off is None
    assert [(r.rid, r.state, len(r.token_times)) for r in result.requests] == \
        [("r0", RequestState.FINISHED, 1), ("r1", RequestState.FINISHED, 1)]


def is_decode(lane: str) -> bool:
    return lane.startswith("decode")


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(requests, clusters)
@example(*ONE_ROW_TWO_ONE_TOKEN_REPLIES)
def test_pd_invariants_hold_for_any_small_cluster(reqs, cluster):
    result = simulate(build(reqs, cluster))
    assert result.cut_off is None, result.cut_off
    for lane, its in {**result.lanes, **result.pd.rank_lanes}.items():
        # time runs forward on every worker's and every rank's lane
        assert all(it.start_at <= it.end_at for it in its), lane
        assert all(a.end_at <= b.start_at + 1e-12 for a, b in zip(its, its[1:], strict=False)), lane
    for lane, its in result.pd.rank_lanes.items():
        # a rank's KV in use, plus (decode) what it reserved for requests still in prefill or transfer
        assert all(it.kv_used + it.kv_reserved <= it.kv_capacity for it in its), lane
        assert is_decode(lane) or all(it.kv_reserved == 0 for it in its), lane
    transfers = Counter(t.rid for t in result.pd.transfers)
    delivered = {t.rid for t in result.pd.transfers if t.delivered_at is not None}
    prefilled = Counter()
    decoded = Counter()
    for its in result.pd.rank_lanes.values():
        for it in its:
            for row in it.prefill_rows:
                prefilled[row.rid] += row.extend
            decoded.update(it.decode_rids)
    for req in result.requests:
        if req.state is RequestState.REJECTED:
            assert req.reject_reason and transfers[req.rid] <= 1
            continue
        assert req.state is RequestState.FINISHED
        # the KV crossed once, the prompt was prefilled once (a retracted request resumes from host)
        assert transfers[req.rid] == 1 and req.rid in delivered
        assert prefilled[req.rid] == req.prompt_len
        # every token once: the first from prefill (committed when decode joins), the rest from decode rows
        assert len(req.token_times) == req.num_generated == req.output_len
        assert decoded[req.rid] == req.output_len - 1
        assert req.token_times == sorted(req.token_times) and req.token_times[0] >= req.arrival_at
    assert all(rid in {r.rid for r in result.requests} for rid in transfers)


def trace(result):
    passes = {lane: [(it.kind, it.start_at, it.end_at, it.prefill_rows, it.decode_rids, it.kv_used,
                      it.kv_reserved) for it in its] for lane, its in result.pd.rank_lanes.items()}
    return (passes,
            [(r.rid, r.state, r.token_times, r.spans) for r in result.requests],
            [(t.rid, t.src, t.dst, t.started_at, t.delivered_at) for t in result.pd.transfers])


@settings(max_examples=examples(15), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(requests, clusters, st.integers(0, 2**31))
def test_pd_same_seed_gives_an_identical_trace(reqs, cluster, seed):
    assert trace(simulate(build(reqs, cluster, seed))) == trace(simulate(build(reqs, cluster, seed)))
