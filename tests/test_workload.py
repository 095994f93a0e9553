"""Workloads: groups, arrivals, closed-loop clients, seeded draws, and clear errors."""

import pytest

from engine_model import InputError, simulate, validate
from engine_model.core import RequestState

from conftest import trace_head


def scenario(workload, **extra):
    return validate({"engine": {"max_total_tokens": 100_000}, "cost": {"kind": "linear"},
                     "workload": workload, **extra})


def test_groups_name_requests_and_space_arrivals():
    result = simulate(scenario({"groups": [
        {"name": "streams", "count": 3, "prompt_len": 100, "output_len": 5,
         "arrival": {"kind": "at", "interval_s": 0.5}},
        {"name": "log", "prompt_len": 1000, "output_len": 2, "arrival": {"kind": "at", "start_at": 0.2}}]}))
    assert [(r.rid, r.arrival_at) for r in result.requests] == [
        ("streams-00", 0.0), ("log", 0.2), ("streams-01", 0.5), ("streams-02", 1.0)]


def test_poisson_and_lognormal_draws_are_seeded_and_within_bounds():
    workload = {"groups": [{"name": "q", "count": 200, "arrival": {"kind": "poisson", "rate_per_s": 10},
                            "prompt_len": {"dist": "lognormal", "median": 500, "sigma": 1.0, "low": 100,
                                           "high": 2000},
                            "output_len": {"dist": "uniform", "low": 1, "high": 10}}]}
    a, b = simulate(scenario(workload, seed=3)), simulate(scenario(workload, seed=3))
    c = simulate(scenario(workload, seed=4))
    assert ([(r.arrival_at, r.prompt_len) for r in a.requests]
            == [(r.arrival_at, r.prompt_len) for r in b.requests])
    assert [r.prompt_len for r in a.requests] != [r.prompt_len for r in c.requests]
    assert all(100 <= r.prompt_len <= 2000 for r in a.requests)
    assert 15 < a.requests[-1].arrival_at < 25  # 200 arrivals at 10/s


def test_closed_loop_keeps_concurrency_in_flight_and_starts_after_warmup():
    result = simulate(scenario({
        "clients": [{"name": "warmup", "concurrency": 2},
                    {"name": "main", "concurrency": 3, "start_after": "warmup"}],
        "groups": [{"name": "w", "count": 4, "prompt_len": 100, "output_len": 5,
                    "arrival": {"kind": "closed", "client": "warmup"}},
                   {"name": "m", "count": 6, "prompt_len": 100, "output_len": 5,
                    "arrival": {"kind": "closed", "client": "main"}}]}))
    reqs = result.requests
    assert all(r.state is RequestState.FINISHED for r in reqs)
    warm_end = max(r.finished_at for r in reqs if r.group == "w")
    assert min(r.arrival_at for r in reqs if r.group == "m") == warm_end
    events = sorted([(r.arrival_at, 1) for r in reqs] + [(r.finished_at, -1) for r in reqs],
                    key=lambda e: (e[0], e[1]))
    in_flight, peak = 0, 0
    for _, delta in events:
        in_flight += delta
        peak = max(peak, in_flight)
    assert peak == 3


def test_mid_reply_requests_start_in_the_running_batch():
    result = simulate(scenario({"groups": [{"name": "s", "count": 2, "prompt_len": 1000, "output_len": 10,
                                            "already_generated": 4}]}))
    first = result.iterations[0]
    assert (first.kind.value, first.decode_rids) == ("decode", ("s-00", "s-01"))
    assert all(len(r.token_times) == 6 for r in result.requests)


@pytest.mark.parametrize(("workload", "where"), [
    ({"groups": [{"name": "x", "prompt_len": 10, "output_len": 5, "already_generated": 5}]},
     "already_generated"),
    ({"groups": [{"name": "x", "prompt_len": 10, "output_len": 5, "max_new_tokens": 2}]}, "max_new_tokens"),
    ({"groups": [{"name": "x", "prompt_len": 10, "output_len": 5,
                  "arrival": {"kind": "closed", "client": "nope"}}]}, "client"),
    ({"groups": [{"name": "x", "prompt_len": 10, "output_len": 5},
                 {"name": "x", "prompt_len": 10, "output_len": 5}]}, "used twice"),
    ({}, "no requests"),
])
def test_bad_workloads_name_the_problem(workload, where):
    with pytest.raises(InputError, match=where):
        simulate(scenario(workload))


def test_a_trace_becomes_the_workload():
    path = trace_head("AzureLLMInferenceTrace_code.csv").path
    sc = scenario({"trace": str(path)})
    sc = sc.model_copy(update={"workload": sc.workload.model_copy(
        update={"trace": sc.workload.trace.model_copy(
            update={"max_requests": 300, "window_start_s": 10.0})})})
    result = simulate(sc)
    assert len(result.requests) == 300 and result.requests[0].rid == "trace-000"
    assert (result.requests[0].arrival_at == 0.0
            and all(r.state is RequestState.FINISHED for r in result.requests))


def test_a_missing_trace_file_is_named():
    with pytest.raises(InputError, match="workload.trace"):
        simulate(scenario({"trace": "/no/such/trace.csv"}))
