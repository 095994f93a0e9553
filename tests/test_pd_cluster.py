"""PD disaggregation read as specifications: where KV is held, what is rejected, and that every run ends."""

import json
import random

import pytest

from engine_model.cli import main
from engine_model.core import PassKind, Request, RequestState
from engine_model.errors import InputError
from engine_model.pass_cost import pass_shape
from engine_model.pd.cluster import Cluster
from engine_model.pd.roles import resolve_role
from engine_model.scenario_io import load_scenario, validate
from engine_model.simulation import simulate

POLICIES = ("early", "prefill_complete")


def scenario(policy="early", requests=(), groups=(), clients=(), **pd):
    pd = {"decode_allocation_policy": policy, **pd}
    return validate({
        "engine": {"chunked_prefill_size": 4096},
        "hardware": {"gpu": "h100-sxm"}, "model": {"name": "llama-3.1-8b"},
        "workload": {"requests": list(requests), "groups": list(groups), "clients": list(clients)},
        "pd": pd,
    })


def long_and_shorts():
    return [{"rid": "long", "prompt_len": 32768, "output_len": 16},
            *({"rid": f"s{i}", "arrival_at": 0.01 * i, "prompt_len": 500, "output_len": 40}
              for i in range(6))]


def test_every_request_finishes_and_decode_kv_stays_under_its_cap():
    crowd = [{"name": "q", "count": 40, "prompt_len": {"dist": "uniform", "low": 500, "high": 20000},
              "output_len": 64, "arrival": {"kind": "poisson", "rate_per_s": 20.0}}]
    for policy in POLICIES:
        result = simulate(scenario(policy, groups=crowd, decode_kv_cap_per_rank=40000))
        assert result.cut_off is None
        assert {r.state for r in result.requests} == {RequestState.FINISHED}
        for its in result.pd.rank_lanes.values():
            assert all(it.kv_used + it.kv_reserved <= it.kv_capacity for it in its)
        decode = result.pd.rank_lanes["decode-0.dp0"]
        assert max(it.kv_used + it.kv_reserved for it in decode) > 30000  # the cap was actually pressed


def reserved_while_prefilling(result, rid):
    """Decode's reserved KV at the start of each prefill pass that computes a non-final chunk of rid."""
    decode = result.lanes["decode-0"]
    out = []
    for it in result.lanes["prefill-0"]:
        if any(row.rid == rid for row in it.prefill_rows) and it.chunked_rid == rid:
            out.append(next(d.kv_reserved for d in decode if d.start_at <= it.start_at < d.end_at))
    return out


def test_early_reserves_decode_kv_for_the_whole_prefill_and_prefill_complete_for_none_of_it():
    early = simulate(scenario("early", [{"rid": "long", "prompt_len": 32768, "output_len": 8}]))
    deferred = simulate(scenario("prefill_complete", [{"rid": "long", "prompt_len": 32768, "output_len": 8}]))
    assert reserved_while_prefilling(early, "long") == [32768] * 7  # chunks 1-7 of 8
    assert reserved_while_prefilling(deferred, "long") == [0] * 7


def test_kv_is_held_where_the_policy_says():
    for policy in POLICIES:
        result = simulate(scenario(policy, long_and_shorts()))
        for req in result.requests:
            prefill = [(a, b) for phase, a, b in req.spans if phase == "prefill"]
            transfer = next(t for t in result.pd.transfers if t.rid == req.rid)
            if policy == "early":  # decode reserved first; each chunk leaves as soon as it is computed
                assert transfer.started_at == prefill[0][1]
            else:  # prefill computed first and held its KV; the whole KV leaves once decode reserves
                assert transfer.started_at >= prefill[-1][1]
                assert transfer.final_at == transfer.started_at
        assert result.lanes["decode-0"][-1].kv_reserved == 0  # every reservation was taken up


def test_prefill_holds_kv_until_the_transfer_succeeds():
    result = simulate(scenario("prefill_complete", [{"rid": "r", "prompt_len": 8000, "output_len": 4}],
                               link_overrides={"bandwidth_gbps": 1.0}))  # ~8 s on the wire
    transfer = result.pd.transfers[0]
    held = [it.kv_used for it in result.lanes["prefill-0"] if it.start_at < transfer.delivered_at]
    assert held[-1] == 8000  # still held by the last prefill-lane record before delivery
    assert transfer.delivered_at - transfer.final_at == pytest.approx(
        8000 * result.pd.kv_bytes_per_token * 8 / 1e9 + 50e-6)


def test_a_prompt_larger_than_the_decode_pool_is_rejected_with_a_reason_and_the_rest_finish():
    reqs = [{"rid": "huge", "prompt_len": 50000, "output_len": 8},
            {"rid": "ok", "prompt_len": 1000, "output_len": 8}]
    for policy in POLICIES:
        result = simulate(scenario(policy, reqs, decode_kv_cap_per_rank=40000))
        huge, ok = result.requests
        assert (huge.state is RequestState.REJECTED and "decode KV" in huge.reject_reason
                and "40000" in huge.reject_reason)
        assert ok.state is RequestState.FINISHED and result.cut_off is None


def test_decode_retraction_backs_up_to_host_and_resumes_without_recompute():
    reqs = [{"rid": f"r{i}", "prompt_len": 3000, "output_len": 900} for i in range(6)]
    result = simulate(scenario("early", reqs, decode_kv_cap_per_rank=20000, num_reserved_decode_tokens=0))
    assert result.retractions, "the decode pool must run short"
    assert all(r.state is RequestState.FINISHED for r in result.requests)
    retracted = {rid for event in result.retractions for rid in event.rids}
    for req in result.requests:
        phases = [phase for phase, _, _ in req.spans]
        prefilled = sum(row.extend for it in result.lanes["prefill-0"] for row in it.prefill_rows
                        if row.rid == req.rid)
        assert prefilled == req.prompt_len  # never re-prefilled
        assert ("retracted" in phases) == (req.rid in retracted)
        assert len(req.token_times) == 900


def test_decode_admits_fifo_with_head_of_line_blocking():
    reqs = [{"rid": "a", "prompt_len": 30000, "output_len": 100},
            {"rid": "b", "arrival_at": 0.001, "prompt_len": 30000, "output_len": 8},
            # after b's tokenizing (~17 ms)
            {"rid": "c", "arrival_at": 0.030, "prompt_len": 100, "output_len": 8}]
    result = simulate(scenario("early", reqs, decode_kv_cap_per_rank=40000))
    a, b, c = result.requests
    # b cannot be reserved beside a; c could, but waits behind b until a finishes and frees its KV.
    assert a.finished_at <= b.spans[0][2] and a.finished_at <= c.spans[0][2]
    assert [s[0] for s in c.spans][:1] == ["waiting_for_decode_kv"]


def test_same_seed_same_trace():
    crowd = [{"name": "q", "count": 30,
              "prompt_len": {"dist": "lognormal", "median": 3000, "sigma": 1.0, "high": 30000},
              "output_len": 32, "arrival": {"kind": "poisson", "rate_per_s": 10.0}}]

    def trace():
        result = simulate(scenario("early", groups=crowd, router="random", num_reserved_decode_tokens=256,
                                   prefill={"num_workers": 2}, decode={"num_workers": 2}))
        return ({lane: [(it.kind, it.start_at, it.prefill_rows, it.decode_rids) for it in its]
                 for lane, its in result.lanes.items()},
                [(r.rid, r.token_times, r.spans) for r in result.requests])

    first = trace()
    assert first == trace()
    assert set(first[0]) == {"prefill-0", "prefill-1", "decode-0", "decode-1"}


def test_lanes_are_one_per_worker_and_rank():
    result = simulate(scenario("early", long_and_shorts(), prefill={"num_workers": 2}))
    assert list(result.lanes) == ["prefill-0", "prefill-1", "decode-0"]
    assert list(result.pd.rank_lanes) == ["prefill-0.dp0", "prefill-1.dp0", "decode-0.dp0"]
    assert not any(it.kind is PassKind.DECODE for it in result.lanes["prefill-0"])
    assert not any(it.prefill_rows for it in result.lanes["decode-0"])


@pytest.mark.parametrize("pd, key", [
    ({"prefill": {"decode_allocation_policy": "prefill_complete"}}, "pd.prefill.decode_allocation_policy"),
    ({"decode_allocation_policy": "prefill_complete", "transfer_backend": "nixl"}, "pd.transfer_backend"),
    ({"decode_allocation_policy": "prefill_complete", "decode": {"tp_size": 2}}, "pd.decode.tp_size"),
])
def test_policy_requirements_are_checked_like_sglang(pd, key):
    with pytest.raises(InputError) as err:
        simulate(scenario(requests=[{"rid": "r", "prompt_len": 10, "output_len": 2}], **pd))
    assert key in str(err.value)


def test_prefill_complete_needs_0_5_22():
    sc = scenario("prefill_complete", [{"rid": "r", "prompt_len": 10, "output_len": 2}])
    with pytest.raises(InputError, match="engine.version"):
        simulate(sc.model_copy(update={"engine": sc.engine.model_copy(update={"version": "0.5.20"})}))


def test_cli_rejects_the_mismatch_naming_both_keys(capsys):
    code = main(["run", "ten_oclock_rush_pd", "--set", "pd.decode.decode_allocation_policy=prefill_complete"])
    err = capsys.readouterr().err
    assert code == 2
    assert "pd.prefill.decode_allocation_policy" in err and "pd.decode.decode_allocation_policy" in err


def test_pd_rush_has_the_single_engine_rush_workload():
    single, pd = (simulate(load_scenario(name)) for name in ("ten_oclock_rush", "ten_oclock_rush_pd"))
    assert [(r.rid, r.prompt_len, r.output_len, r.arrival_at) for r in single.requests] == \
        [(r.rid, r.prompt_len, r.output_len, r.arrival_at) for r in pd.requests]
    assert all(r.state is RequestState.FINISHED for r in pd.requests)


def test_limits_stop_a_pd_run_and_say_so():
    crowd = [{"name": "q", "count": 30, "prompt_len": 20000, "output_len": 200}]
    sc = scenario("early", groups=crowd)
    result = simulate(sc.model_copy(update={"limits": sc.limits.model_copy(update={"max_sim_seconds": 1.0})}))
    assert result.cut_off == "limits.max_sim_seconds (1) reached"


def test_json_summary_keeps_metrics_and_adds_per_role_figures(capsys):
    assert main(["run", "ten_oclock_rush_pd", "--json", "--set",
                 "pd.decode_allocation_policy=prefill_complete"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc["metrics"]) == {"overall", "groups", "buckets"}
    assert set(doc["pd"]["workers"]) == {"prefill-0", "decode-0"}
    assert doc["pd"]["decode_allocation_policy"] == "prefill_complete"
    overall = doc["metrics"]["overall"]
    served = overall["num_requests"] - overall["num_rejected"]
    # one transfer per request
    assert doc["pd"]["transfer"]["num_transfers"] == served == overall["num_finished"]
    assert set(doc["pd"]["workers"]["decode-0"]) >= {"kv_capacity", "kv_reserved_token_s", "mean_running"}
    assert "num_prefill_tokens" in doc["pd"]["workers"]["prefill-0"]



def test_prefill_dp_rank_follows_the_bootstrap_room_and_decode_takes_turns():
    """SGLang's default `--load-balance-method auto`: prefill rank = bootstrap_room % dp, decode in turn."""
    sc = validate({"hardware": {"gpu": "h100-sxm", "tp_size": 4}, "model": {"name": "llama-3.1-8b"},
                   "pd": {"prefill": {"dp_size": 4}, "decode": {"dp_size": 4}}})
    cluster = Cluster(sc, random.Random(sc.seed))
    for i in range(12):
        cluster.arrive(Request(rid=f"r{i}", group="g", arrival_at=0.0, prompt_len=500, output_len=4,
                               max_new_tokens=4))
    hands = list(cluster.handoffs.values())
    prefill_ranks = [h.prefill[0].ranks.index(h.prefill[1]) for h in hands]
    assert prefill_ranks == [h.bootstrap_room % 4 for h in hands]
    assert len(set(prefill_ranks)) > 1  # the rooms are random draws, not one rank for all
    assert [h.decode[0].ranks.index(h.decode[1]) for h in hands] == [i % 4 for i in range(12)]



def joining_passes(version: str, graph_bs: int | None = None):
    """Two requests on one prefill and one decode worker; b joins while a decodes. graph_bs: the decode
    CUDA graphs' max batch (engine.cuda_graph_max_bs_decode; 0: none, every decode forward eager)."""
    sc = validate({"engine": {"version": version, "cuda_graph_max_bs_decode": graph_bs},
                   "hardware": {"gpu": "h100-sxm"}, "model": {"name": "llama-3.1-8b"},
                   "workload": {"requests": [{"rid": "a", "prompt_len": 2000, "output_len": 200},
                                             {"rid": "b", "arrival_at": 0.3, "prompt_len": 2000,
                                              "output_len": 20}]},
                   "pd": {"decode_allocation_policy": "early"}})
    result = simulate(sc)
    joins = [it for it in result.lanes["decode-0"] if "joined after their transfer" in it.reason]
    return result, joins, resolve_role(sc, "decode").cost


@pytest.mark.parametrize(("version", "graph_bs", "held"), [("0.5.22", 0, True), ("0.5.22", None, False),
                                                            ("0.5.20", 0, True), ("0.5.23", 0, False)])
def test_a_merge_behind_an_eager_forward_cannot_hide_its_scheduling_before_0_5_23(version, graph_bs, held):
    """Before 0.5.23 `prepare_for_prebuilt` copies with blocking H2D copies, before
    `_get_new_prebuilt_batch`'s own `wait_stream`; they wait at the barrier `_apply_war_barrier` set when
    the forward in flight was launched: the whole forward when it ran eagerly (graphs off here), only its
    in-graph read-done event when it replayed a decode graph (the default for one row). 0.5.23 copies
    asynchronously (`async_h2d`)."""
    result, joins, cost = joining_passes(version, graph_bs)
    late = next(it for it in joins if it.decode_rids == ("a", "b"))  # b joins a running decode
    parts = cost.whole.breakdown(pass_shape(late))
    cpu = cost.whole.per_pass_s + cost.whole.per_request_s * (2 + 1)  # two rows, one joiner
    if held:
        assert late.duration_s == pytest.approx(cpu + max(parts["gpu_s"], parts["launch_s"]))
        assert f"so this pass's {cpu * 1e3:.2f} ms of scheduling is not hidden" in late.reason
        assert "_get_new_prebuilt_batch" in late.mirrors
    else:
        assert late.duration_s == pytest.approx(parts["total_s"])
        assert "not hidden" not in late.reason
    steady = [it for it in result.lanes["decode-0"] if it.decode_rids == ("a", "b") and it not in joins]
    assert steady and all(it.duration_s < late.duration_s for it in steady) == held
