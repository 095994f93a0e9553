"""Priority scheduling, preemption and the queue's limits (engine_model/priority.py): what SGLang 0.5.23's own
scheduler did in the recorded traces (tests/data/sglang_reference_extra/priority_preempt, queue_limit*:
`priority_events.jsonl`, written by bench/sglang_reference/run_priority.py), and the rules at their edges.
tests/test_reference.py replays the same traces pass for pass."""

import json

import pytest

from engine_model.config import EngineConfig, Scenario
from engine_model.core import RequestState
from engine_model.errors import InputError
from engine_model.priority import PRIORITY_DISABLED, QUEUE_FULL, WAITING_TIMEOUT
from engine_model.reference import scenario_from_workload
from engine_model.report import summary
from engine_model.resolve import resolve
from engine_model.rules import rules_of
from engine_model.simulation import simulate
from engine_model.stories import STORIES

from conftest import DATA
from specs import by_rid, passes, req, run

EXTRA = DATA / "sglang_reference_extra"


def events(name: str, kind: str) -> list[dict]:
    lines = (EXTRA / name / "priority_events.jsonl").read_text().splitlines()
    return [e for e in map(json.loads, lines) if e["type"] == kind]


def test_the_model_preempts_whom_sglang_preempted_when_it_did():
    """16 preemptions in SGLang's trace: each question (priority 20) over the 8-slot cap releases the
    lowest-priority, newest running request (the request without priority never runs early: it is the
    lowest there is). The model commits the same ones, at the same moments, with the same replies kept."""
    result = simulate(scenario_from_workload(EXTRA / "priority_preempt" / "workload.json"))
    theirs = events("priority_preempt", "preempt")
    ours = [{"t": round(p.at, 7), "for": p.for_rid, "rids": list(p.rids), "out_so_far": list(p.num_generated)}
            for p in result.preemptions]
    assert len(theirs) == 16
    assert ours == [{k: e[k] for k in ("t", "for", "rids", "out_so_far")} for e in theirs]
    reqs = by_rid(result)
    assert reqs["anon"].first_scheduled_at > max(reqs[f"q{i:02d}"].first_scheduled_at for i in range(20))
    counts = summary(result).iterations
    assert (counts.num_preemptions, counts.num_preempted_requests) == (16, 16)


def test_a_preempted_request_keeps_its_prompt_in_the_cache_and_prefills_only_the_rest():
    """n0 is preempted after 6 tokens: SGLang frees its reply's KV but its prompt stays in the radix tree, so
    the re-prefill computes 6 tokens over 863 cached (the trace's row), not 869."""
    result = simulate(scenario_from_workload(EXTRA / "priority_preempt" / "workload.json"))
    n0 = by_rid(result)["n0"]
    rows = [row for it in result.iterations for row in it.prefill_rows if row.rid == "n0"]
    assert rows[0].extend == n0.prompt_len and rows[1].past_kv == n0.prompt_len and rows[1].extend == 6
    assert n0.num_preemptions == 3 and n0.state is RequestState.FINISHED


@pytest.mark.parametrize("name", ["queue_limit", "queue_limit_priority"])
def test_the_queue_limit_aborts_the_requests_sglang_aborted_with_its_message(name):
    result = simulate(scenario_from_workload(EXTRA / name / "workload.json"))
    theirs = {e["rid"]: e["message"] for e in events(name, "abort")}
    ours = {r.rid: r.reject_reason for r in result.requests if r.state is RequestState.REJECTED}
    assert ours == theirs and len(theirs) == 12
    if name == "queue_limit_priority":  # a better newcomer aborts the worst waiting request instead
        assert sum(m != QUEUE_FULL for m in theirs.values()) == 4


def scenario_with(**engine) -> Scenario:
    base = scenario_from_workload(EXTRA / "priority_preempt" / "workload.json")
    return base.model_copy(update={"engine": base.engine.model_copy(update=engine)})


def test_low_values_first_with_negated_priorities_runs_the_same_passes():
    base = scenario_from_workload(EXTRA / "priority_preempt" / "workload.json")
    flipped = [r.model_copy(update={"priority": None if r.priority is None else -r.priority})
               for r in base.workload.requests]
    mirrored = base.model_copy(update={
        "engine": base.engine.model_copy(update={"schedule_low_priority_values_first": True}),
        "workload": base.workload.model_copy(update={"requests": flipped})})
    assert passes(simulate(mirrored)) == passes(simulate(base))


def test_no_preemption_below_the_threshold_and_none_when_disabled():
    assert simulate(scenario_with(priority_scheduling_preemption_threshold=20)).preemptions == []
    off = simulate(scenario_with(disable_priority_preemption=True))
    assert off.preemptions == [] and all(r.num_preemptions == 0 for r in off.requests)
    on = simulate(scenario_with(priority_scheduling_preemption_threshold=4))  # notes (5) now preempt too
    assert {rid for p in on.preemptions for rid in p.rids} > {"c0", "c1"}


def test_the_default_priority_value_is_given_to_requests_without_one():
    reqs = by_rid(simulate(scenario_with(default_priority_value=30)))
    assert reqs["anon"].priority == 30 and reqs["anon"].first_scheduled_at < 1.0


def test_a_request_waiting_past_the_timeout_is_aborted():
    """SGLANG_REQ_WAITING_TIMEOUT: one slot, a long reply running; the second waits past 1 s and is
    aborted with SGLang's message; the third arrives at 1.5 s, just before the slot frees, and gets in."""
    result = run([req("long", 1000, 150), req("late", 100, 10, at=0.1), req("later", 100, 10, at=1.5)],
                 max_running=1, req_waiting_timeout_s=1.0)
    reqs = by_rid(result)
    assert reqs["late"].state is RequestState.REJECTED and reqs["late"].reject_reason == WAITING_TIMEOUT
    assert 1.1 < reqs["late"].finished_at < 1.2
    assert reqs["later"].state is RequestState.FINISHED


@pytest.mark.parametrize(("engine", "field", "says"), [
    ({"enable_priority_scheduling": True, "schedule_policy": "shortest-prefill-first"},
     "engine.schedule_policy", "schedule_policy must be 'fcfs' or 'lof'"),
    ({"retraction_policy": "priority"}, "engine.retraction_policy", "requires --enable-priority-scheduling"),
])
def test_start_up_refuses_what_sglang_refuses(engine, field, says):
    with pytest.raises(InputError) as err:
        resolve(Scenario(engine=EngineConfig(**engine)))
    assert err.value.where == field and says in str(err.value)


def test_retraction_by_priority_takes_whom_sglang_took():
    """`retraction_policy = priority`: SGLang retracts c12 (priority 0), where the length rule would take
    c13 (priority 7, as few tokens generated); the model takes c12 and matches every pass only with it."""
    scenario = scenario_from_workload(EXTRA / "retract_priority" / "workload.json")
    theirs = [json.loads(line)["rids"] for line in (EXTRA / "retract_priority" / "events.jsonl").open()]
    by_priority = simulate(scenario)
    assert [list(e.rids) for e in by_priority.retractions] == theirs == [["c12"]]
    by_length = simulate(scenario.model_copy(update={
        "engine": scenario.engine.model_copy(update={"retraction_policy": "length"})}))
    assert [list(e.rids) for e in by_length.retractions] == [["c13"]]


@pytest.mark.parametrize("seed", [0, 1])
def test_on_the_ten_oclock_rush_questions_outrank_contracts_halves_their_p95_first_token(seed):
    """Issue 42's bar: with priority scheduling and the questions above the contracts, the questions' p95
    first token is below half of FCFS's on the same seed; the contracts wait longer instead."""
    rush = STORIES["ten_oclock_rush"]
    fcfs, outrank = (summary(simulate(rush.scenario({**rush.defaults, "seed": seed, "outrank": on}))).metrics
                     for on in (False, True))
    assert outrank.value("questions", "ttft_s", "p95") < 0.5 * fcfs.value("questions", "ttft_s", "p95")
    assert outrank.value("contracts", "ttft_s", "p95") > fcfs.value("contracts", "ttft_s", "p95")


def test_with_16_request_slots_questions_preempt_contracts_and_the_contracts_pay():
    rush = STORIES["ten_oclock_rush"]
    wide, capped = (simulate(rush.scenario({**rush.defaults, "outrank": True, **extra}))
                    for extra in ({}, {"slots": 16}))
    assert wide.preemptions == [] and capped.preemptions
    assert {rid for p in capped.preemptions for rid in p.rids} <= {f"contracts-{i:02d}" for i in range(6)}
    assert all(p.for_rid.startswith("questions-") for p in capped.preemptions)
    slowest = [summary(r).metrics.value("contracts", "e2e_s", "max") for r in (wide, capped)]
    assert slowest[1] > slowest[0]


def test_a_preempting_pass_names_the_rule_and_says_who_was_preempted():
    result = simulate(scenario_from_workload(EXTRA / "priority_preempt" / "workload.json"))
    first = result.preemptions[0]
    it = next(it for it in result.iterations if any(r.rid == first.for_rid for r in it.prefill_rows))
    assert "PrefillAdder -> PrefillAdder.preempt_to_schedule" in it.mirrors
    assert f"preempted {first.rids[0]}" in it.reason
    assert [r.qualname for r in rules_of(it.mirrors)][-1] == "engine_model.priority.choose_preempted"


def test_the_rush_refuses_outranking_under_shortest_prefill_first_as_sglang_does():
    rush = STORIES["ten_oclock_rush"]
    with pytest.raises(InputError, match="schedule_policy must be 'fcfs' or 'lof'"):
        rush.scenario({**rush.defaults, "outrank": True, "policy": "shortest-prefill-first"})


def test_a_pd_cluster_ignores_the_queue_limit_as_sglang_does_and_refuses_priority_scheduling():
    pd = Scenario.model_validate({**PD_BASE, "engine": {"max_queued_requests": 4}})
    assert resolve(pd).queueing.max_queued is None
    with pytest.raises(InputError, match="not in a PD cluster"):
        resolve(Scenario.model_validate({**PD_BASE, "engine": {"enable_priority_scheduling": True}}))


PD_BASE = {"pd": {"prefill": {"num_workers": 1}, "decode": {"num_workers": 1}}}


def test_without_priority_scheduling_a_priority_is_ignored_or_refused_when_told():
    reqs = [req("plain", 100, 5), req("ranked", 100, 5, priority=3)]
    assert all(r.state is RequestState.FINISHED for r in run(reqs).requests)
    refused = by_rid(run(reqs, abort_on_priority_when_disabled=True))
    assert refused["plain"].state is RequestState.FINISHED
    assert refused["ranked"].reject_reason == PRIORITY_DISABLED
