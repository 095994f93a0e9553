"""The advisor (engine_model/advise): feasibility filtering, the Pareto front, the recommendation and its
trade in words, determinism, identical backends, cancel, the limit on runs, and the CLI."""

from __future__ import annotations

import json
import os
import threading

import pytest
from engine_cli import cli

from engine_model import STORIES, load_scenario
from engine_model.advise import (
    Budget,
    Cancelled,
    Candidate,
    Layout,
    Outcome,
    Space,
    advise,
    evaluate,
    headline,
    layouts,
    pareto,
    parse_target,
    recommend,
    trade_lines,
)
from engine_model.advise import search as search_mod
from engine_model.errors import InputError
from engine_model.feasibility import refusal

# The ten o'clock rush, small: 40 questions and two contracts, on two H100s with the 8B model.
SMALL = [
    "workload.groups.0.count=20",
    "workload.groups.1.count=1",
    "workload.groups.1.prompt_len=30000",
    "workload.groups.1.arrival.start_at=2.0",
]
# a layout SGLang refuses: prefill_complete needs attention TP 1 (engine_model/pd/attention.py)
REFUSED = Layout(2, prefill=1, decode=1, policy="prefill_complete")
BUDGET = Budget(2, "h100-sxm", "llama-3.1-8b")
TARGETS = (parse_target("questions.ttft_p95=3s"),)


def small():
    return load_scenario("ten_oclock_rush", SMALL)


def small_space() -> Space:
    return Space(
        (*layouts(BUDGET), REFUSED),
        mixed=(False, True),
        chunk=("auto",),
        policy=("fcfs", "shortest-prefill-first"),
        conservativeness=(1.0,),
        max_running=(None,),
    )


def fresh(space: Space | None = None, **kwargs):
    search_mod._CACHE.clear()
    return advise(small(), BUDGET, TARGETS, space or small_space(), workers=1, **kwargs)


@pytest.fixture(scope="module")
def advice():
    return fresh()


def same(a, b) -> bool:
    def strip(o):
        d = o.to_dict()
        d.pop("wall_s"), d.pop("cpu_s"), d.pop("peak_mib")
        return d

    return [strip(o) for o in a.outcomes] == [strip(o) for o in b.outcomes]


def outcome(
    key: str,
    out: float | None,
    ttft: float,
    pause: float = 0.1,
    unfinished: int = 0,
    refused: str | None = None,
) -> Outcome:
    cand = Candidate(Layout(1, engines=1), policy=key)
    return Outcome(
        key,
        cand,
        1,
        refused=refused,
        output_tok_s=out,
        waits={} if refused else {"q": {"ttft_p95": ttft, "longest_pause": pause, "itl_p99": 0.05}},
        unfinished=unfinished,
    )


# -- feasibility ------------------------------------------------------------------------------------------
def test_a_candidate_sglang_refuses_is_recorded_with_its_reason_and_never_proposed():
    budget = Budget(8, "h100-sxm", "llama-3.1-70b")
    scenario = load_scenario("ten_oclock_rush")
    tp1 = Candidate(Layout(1, engines=8))
    got = evaluate(scenario.model_dump_json(), tuple(vars(budget).values()), tp1.key)
    expected = refusal(tp1.scenario(scenario, budget))
    assert expected is not None and got.refused == f"{expected.where}: {expected.problem}"
    assert "weights" in got.refused and not got.runs and got.output_tok_s is None
    pc = Candidate(Layout(4, prefill=1, decode=1, policy="prefill_complete"))
    assert evaluate(scenario.model_dump_json(), tuple(vars(budget).values()), pc.key).refused


def test_the_search_never_proposes_a_refused_or_unfinished_candidate(advice):
    assert {o.candidate.layout for o in advice.refused} == {REFUSED}
    proposed = {o.key for o in advice.front(None, "ttft_p95")} | {advice.best.key if advice.best else ""}
    for o in advice.outcomes:
        if not search_mod.complete(o):
            assert o.key not in proposed


# -- Pareto and the recommendation -----------------------------------------------------------------------
def test_pareto_keeps_only_the_undominated_by_output_descending():
    outs = [
        outcome("a", 10, 5.0),
        outcome("b", 8, 1.0),
        outcome("c", 9, 6.0),
        outcome("d", 8, 1.0),
        outcome("e", 12, 9.0),
        outcome("f", None, 0, refused="no"),
    ]
    front = pareto(outs, lambda o: o.worst("ttft_p95"))
    assert [o.key for o in front] == ["e", "a", "b"]  # c is beaten by a; d duplicates b; f never ran


def test_recommend_takes_the_most_output_among_those_meeting_every_target():
    targets = [parse_target("q.ttft_p95=2s")]
    outs = [
        outcome("slow", 20, 3.0),
        outcome("ok", 10, 1.5),
        outcome("better", 12, 1.9),
        outcome("dropped", 30, 0.5, unfinished=3),
    ]
    best, closest = recommend(outs, targets)
    assert best.key == "better" and closest is None
    best, closest = recommend(outs, [parse_target("q.ttft_p95=1s")])
    assert best is None and closest.key == "ok"  # least over its target among the complete ones


def test_the_trade_in_words_names_who_waits_more_with_the_runs_numbers(advice):
    assert advice.best is not None
    lines = trade_lines(advice)
    today, best = advice.today, advice.best
    text = "\n".join(lines)
    assert today.candidate.words in text and "Who waits more:" in text
    for group in advice.groups:
        for wait in ("ttft_p95", "longest_pause"):
            a, b = today.wait(group, wait), best.wait(group, wait)
            if a and b and abs(b - a) > 0.05 * max(a, b):
                section = "Who waits more" if b > a else "Who waits less"
                line = next(ln for ln in lines if ln.startswith(section))
                assert group in line
    assert f"{best.output_per_gpu:,.1f} output tokens/s per GPU" in headline(advice)


# -- determinism and backends ----------------------------------------------------------------------------
def test_the_same_inputs_give_the_same_outcomes_and_optuna_is_seeded():
    narrow = small_space().narrowed(mixed=(True,))
    assert same(fresh(narrow), fresh(narrow))
    a = fresh(method="optuna", trials=4, seed=3)
    b = fresh(method="optuna", trials=4, seed=3)
    assert a.method == "optuna" and len(a.ran) == 4 and same(a, b)
    assert len(a.outcomes) == len(a.ran) + len(a.refused)  # refusals are kept beside the four runs


def test_processes_and_dask_give_identical_results():
    try:
        from distributed import LocalCluster
    except ImportError:
        if os.environ.get("CI", "").lower() in ("1", "true"):
            pytest.fail("dask[distributed] is missing and CI is set: the Dask backend must be tested in CI")
        pytest.skip("dask[distributed] is not installed (pip install 'who-waits[cluster]')")
    space = small_space().narrowed(policy=("shortest-prefill-first",), mixed=(True,))
    search_mod._CACHE.clear()
    local = advise(small(), BUDGET, TARGETS, space, workers=2, backend="processes")
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        search_mod._CACHE.clear()
        remote = advise(small(), BUDGET, TARGETS, space, backend="dask", scheduler=cluster.scheduler_address)
    assert same(local, remote) and local.best.key == remote.best.key


# -- cancel, the limit -----------------------------------------------------------------------------------
def test_cancel_stops_between_candidates_and_keeps_what_finished():
    stop = threading.Event()
    seen = []

    def progress(done, total):
        seen.append(done)
        if done >= 2:
            stop.set()

    with pytest.raises(Cancelled) as caught:
        fresh(progress=progress, cancel=stop)
    assert 1 <= len(caught.value.done) < small_space().size
    assert seen == sorted(seen)
    assert len(search_mod._CACHE) >= len(caught.value.done) + 1  # what finished is kept (and today's)
    stop.clear()
    search_mod._CACHE.clear()
    with pytest.raises(Cancelled) as caught:  # in a pool of processes: no new run once it is set
        advise(small(), BUDGET, TARGETS, small_space(), workers=2, progress=progress, cancel=stop)
    assert 1 <= len(caught.value.done) < small_space().size


def test_a_search_past_the_limit_is_refused_with_a_clear_message():
    with pytest.raises(InputError) as caught:
        advise(small(), BUDGET, TARGETS, small_space(), workers=1, max_candidates=5)
    assert f"would run {small_space().size} candidates, above the limit of 5" in caught.value.problem
    with pytest.raises(InputError):
        advise(small(), BUDGET, TARGETS, small_space(), workers=1, max_candidates=5000)


def test_targets_are_parsed_or_refused_by_name():
    assert parse_target("questions.ttft_p95=200ms").limit_s == pytest.approx(0.2)
    assert parse_target("contracts.max_itl=2s").wait == "longest_pause"
    for bad in ("questions.ttft=soon", "ttft_p95=2s", "questions.p50=1s", "questions.ttft_p95=-1s"):
        with pytest.raises(InputError):
            parse_target(bad, ("questions",))
    with pytest.raises(InputError, match="no group"):
        parse_target("answers.ttft_p95=2s", ("questions", "contracts"))


# -- the CLI ---------------------------------------------------------------------------------------------
def test_the_cli_recommends_and_says_how_to_open_it(tmp_path):
    search_mod._CACHE.clear()
    out = tmp_path / "advice.csv"
    args = [
        "advise",
        "ten_oclock_rush",
        *[a for s in SMALL for a in ("--set", s)],
        "--gpus",
        "2",
        "--model",
        "llama-3.1-8b",
        "--target",
        "questions.ttft_p95=3s",
        "--space",
        "chunk=auto",
        "--space",
        "conservativeness=1",
        "--space",
        "max_running=auto",
        "--space",
        "mixed=true",
        "--workers",
        "1",
        "--json",
        "--csv",
        str(out),
    ]
    proc = cli(*args, check=True)
    doc = json.loads(proc.stdout)
    assert doc["recommended"] and doc["headline"].startswith("Set ")
    assert doc["fronts"]["worst.ttft_p95"] == doc["front"] and "questions.longest_pause" in doc["fronts"]
    assert doc["recommended"] in doc["links"] and "--set" in doc["links"][doc["recommended"]]["run"]
    lines = out.read_text().splitlines()
    assert lines[0].startswith("setting,layout") and len(lines) == len(doc["candidates"]) + 1
    bad = cli("advise", "ten_oclock_rush", "--target", "nobody.ttft_p95=1s")
    assert bad.returncode == 2 and "nobody" in bad.stderr


def test_the_lean_waits_agree_with_the_engines_metrics():
    from engine_model import simulate
    from engine_model.advise.evaluate import waits_of
    from engine_model.advise.targets import WAITS
    from engine_model.metrics import group_metrics

    result = simulate(small())
    waits, output = waits_of(result.requests)
    assert output == group_metrics(result.requests).output_throughput_tok_s
    for group in ("questions", "contracts"):
        members = group_metrics([r for r in result.requests if r.group == group])
        for wait, (metric, stat, _) in WAITS.items():
            assert waits[group][wait] == members.value(metric, stat)


def test_outcomes_are_cached_in_memory_and_on_disk(tmp_path):
    narrow = small_space().narrowed(mixed=(True,), policy=("fcfs",))
    first = fresh(narrow, cache_dir=tmp_path)
    again = advise(small(), BUDGET, TARGETS, narrow, workers=1)  # this process's cache: nothing reruns
    assert [o.wall_s for o in again.outcomes] == [o.wall_s for o in first.outcomes]
    from_disk = fresh(narrow, cache_dir=tmp_path)  # the memory cache emptied: read back from the file
    assert [o.to_dict() for o in from_disk.outcomes] == [o.to_dict() for o in first.outcomes]
    (tmp_path / "advise-cache.jsonl").write_text("not json\n", encoding="utf-8")
    assert same(fresh(narrow, cache_dir=tmp_path), first)  # a line that cannot be read is rerun, not trusted


def test_optuna_stops_when_it_proposes_nothing_new():
    from engine_model.advise.evaluate import candidate_of
    from engine_model.advise.search import _optuna
    from engine_model.advise.space import default_space

    budget = Budget(8, "h100-sxm", "llama-3.1-70b")
    space = default_space(budget).narrowed(chunk=("auto",), conservativeness=(1.0,), max_running=(None,),
                                           policy=("fcfs", "shortest-prefill-first"))
    asked = []

    def run(keys):  # SGLang starts only TP 4 and 8, early: 12 of the space's candidates ever run
        asked.extend(keys)
        out = []
        for key in keys:
            c = candidate_of(key)
            if c.layout.tp < 4 or c.layout.policy == "prefill_complete":
                out.append(Outcome(key, c, 8, refused="no"))
            else:
                out.append(
                    Outcome(
                        key,
                        c,
                        8,
                        output_tok_s=600.0 + len(key) % 7,
                        waits={"q": {"ttft_p95": 1.0 + len(key) % 5, "longest_pause": 1.0, "itl_p99": 0.1}},
                    )
                )
        return out

    found = _optuna(space, (), 0, 50, 2000, run)
    assert len(asked) == len(set(asked)) == len(found) <= space.size
    assert sum(o.runs for o in found) <= 12


def test_speculative_decoding_priority_and_dp_attention_are_axes_whose_keys_round_trip_and_run():
    """Issue 42's knobs in the search: a speculative algorithm, a group of the mix put first (priority
    scheduling) and one engine with DP attention; each candidate's key reads back as itself, and SGLang's
    start-up checks still decide what runs."""
    from engine_model.advise.cli import space_of
    from engine_model.advise.evaluate import candidate_of

    budget = Budget(8, "h100-sxm", "llama-3.1-70b")
    groups = ("questions", "contracts")
    space = space_of(budget, ["speculative=off,NGRAM", "first=none,questions", "chunk=auto", "mixed=true",
                              "conservativeness=1", "max_running=auto", "policy=fcfs"], True, groups, True)
    assert {c.speculative for c in space.candidates()} == {None, "NGRAM"}
    assert {c.first for c in space.candidates()} == {None, "0:questions"}
    assert {c.layout.attn_dp for c in space.candidates()} == {0, 2, 4, 8}
    for cand in space.candidates():
        assert candidate_of(cand.key) == cand
    put_first = next(c for c in space.candidates() if c.first and c.speculative and c.layout.attn_dp == 2)
    sets = put_first.sets(budget)
    assert "engine.enable_priority_scheduling=true" in sets and "workload.groups.0.priority=20" in sets
    assert 'engine.speculative_algorithm="NGRAM"' in sets and "engine.enable_dp_attention=true" in sets
    assert put_first.words.endswith(", speculative NGRAM, questions first")
    rush = STORIES["ten_oclock_rush"].scenario(STORIES["ten_oclock_rush"].defaults)
    scenario = put_first.scenario(rush, budget)
    assert scenario.workload.groups[0].priority == 20 and scenario.engine.enable_dp_attention
    with pytest.raises(InputError, match="expected none or a group of the mix"):
        space_of(budget, ["first=banana"], True, groups)
