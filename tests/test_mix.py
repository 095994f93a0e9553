"""The request mix (engine_model/mix.py): presets, link text, bad input named by field, the words, the rate a
deployment sustains against the model's own runs, and the story on a mix — its queue order, PD section,
exports, standalone page and slides follow it (issue 41)."""

from __future__ import annotations

import random

import pytest

from app.pd.presets import preset_data
from app.present import story_of, story_page
from app.present.export import scenario_toml
from app.present.grid import _run as grid_run
from app.present.settings import run_settings
from app.present.slides import step_slide
from engine_model import (
    MIX,
    MIX_PRESETS,
    STORIES,
    InputError,
    checked_mix,
    decode_mix,
    encode_mix,
    load_scenario,
    mix_words,
    sampled,
    simulate,
    summary,
    sustain_of,
)
from engine_model.config import WorkloadConfig
from engine_model.mix import MAX_LINK_CHARS, mix_workload
from engine_model.workload import build

RUSH = STORIES["ten_oclock_rush"]
SUPPORT = MIX_PRESETS["support"].mix


def rush_on(text: str, **values):
    story = RUSH.with_mix(text)
    return story, {**story.defaults, MIX: text, **values}


def run(scenario):
    return summary(simulate(scenario))


def test_every_preset_is_a_valid_mix_labelled_as_an_assumption_and_its_link_text_is_its_key():
    for key, preset in MIX_PRESETS.items():
        assert "assumptions" in preset.about
        assert encode_mix(preset.mix) == key and decode_mix(key) == preset.mix
        work = WorkloadConfig.model_validate(mix_workload(preset.mix))
        assert sum(g.count for g in work.groups) == preset.mix.requests


def test_an_edited_mix_round_trips_through_its_link_text():
    edited = SUPPORT.model_copy(update={"rate": 2.5, "arrival": "burst"})
    text = encode_mix(edited)
    assert text.startswith("c.") and len(text) < MAX_LINK_CHARS
    assert decode_mix(text) == edited
    assert RUSH.controls[-1].parse(text) == text  # the URL's value as the page keeps it


@pytest.mark.parametrize(("text", "says"), [
    ("nonsense", "expected a preset"), ("c.!!!", "expected a preset"),
    ("c." + "A" * MAX_LINK_CHARS, f"at most {MAX_LINK_CHARS:,} characters"),
])
def test_a_bad_link_text_is_refused_saying_what_is_allowed(text, says):
    with pytest.raises(ValueError, match=says):
        RUSH.controls[-1].parse(text)


@pytest.mark.parametrize(("change", "where"), [
    ({"share": 0}, "mix.groups.0.share"),
    ({"prompt_high": 10}, "mix.groups.0"),
    ({"name": "two words"}, "mix.groups.0.name"),
    ({"shape": "zipf"}, "mix.groups.0.shape"),
])
def test_a_bad_group_is_refused_naming_the_field(change, where):
    data = SUPPORT.model_dump()
    data["groups"][0].update(change)
    with pytest.raises(InputError) as err:
        checked_mix(data)
    assert err.value.where == where


def test_duplicate_names_and_too_many_requests_are_refused():
    data = SUPPORT.model_dump()
    data["groups"][1]["name"] = "chats"
    with pytest.raises(InputError, match="group names must differ"):
        checked_mix(data)
    with pytest.raises(InputError) as err:
        checked_mix({**SUPPORT.model_dump(), "requests": 10**6})
    assert err.value.where == "mix.requests"


def test_the_workload_is_deterministic_for_a_seed_and_follows_shares_rate_and_patterns():
    def draws(mix, seed):
        work = build(WorkloadConfig.model_validate(mix_workload(mix)), random.Random(seed),
                     max_requests=10**4)
        return [(r.rid, r.prompt_len, r.output_len, r.arrival_at) for r in work.open_loop]
    assert draws(SUPPORT, 3) == draws(SUPPORT, 3) != draws(SUPPORT, 4)
    groups = mix_workload(SUPPORT)["groups"]
    assert [g["count"] for g in groups] == [291, 9]
    assert sum(g["arrival"]["rate_per_s"] for g in groups) == pytest.approx(SUPPORT.rate)
    closed = mix_workload(MIX_PRESETS["summarise"].mix)
    assert closed["clients"][0]["concurrency"] == 16 and closed["groups"][0]["arrival"]["kind"] == "closed"
    mid = SUPPORT.model_copy(update={"groups": [SUPPORT.groups[0].model_copy(update={"mid_reply": True,
                                                                                      "logprobs": 0.5})]})
    group = mix_workload(mid)["groups"][0]
    assert group["already_generated"] > 0 and group["num_return_logprob"] == 150


def test_the_words_count_the_requests_the_run_draws():
    story, values = rush_on("support")
    result = run(story.scenario(values))
    reqs = [r for r in simulate(story.scenario(values)).requests]
    docs = [r for r in reqs if r.group == "documents"]
    share = sum(r.prompt_len for r in docs) / sum(r.prompt_len for r in reqs)
    found = {s.name: s for s in sampled(SUPPORT, 0)}
    assert found["documents"].count == len(docs) == result.metrics.groups["documents"].num_requests
    assert found["documents"].prompt_share == pytest.approx(share)
    words = mix_words(SUPPORT, 0)
    assert f"{len(docs) / len(reqs):.0%} of requests (documents) carry {share:.0%} of prompt tokens" in words


def test_the_sustained_rate_said_before_the_run_agrees_with_the_run():
    """Closed loop (batch summarisation): the run's throughput is within 20 % of the estimate. Support at
    3/s: said not to keep up, and the run's queue grows (median wait > 5 s); at half the sustained rate it
    keeps up (median wait under a second)."""
    story, values = rush_on("summarise")
    scenario = story.scenario(values)
    estimate = sustain_of(scenario, MIX_PRESETS["summarise"].mix).rate_per_s
    done = run(scenario)
    assert done.metrics.overall.num_requests / done.end_at == pytest.approx(estimate, rel=0.2)
    story, values = rush_on("support")
    found = sustain_of(story.scenario(values), SUPPORT)
    assert found.rate_per_s < SUPPORT.rate and "cannot keep up" in found.words(SUPPORT)
    assert run(story.scenario(values)).metrics.overall.queue_s.p50 > 5
    calm = encode_mix(SUPPORT.model_copy(update={"rate": round(found.rate_per_s / 2, 2)}))
    story, values = rush_on(calm)
    assert "keeps up" in sustain_of(story.scenario(values), decode_mix(calm)).words(decode_mix(calm))
    assert run(story.scenario(values)).metrics.overall.queue_s.p50 < 1


def test_the_story_on_a_mix_reads_its_groups_and_queue_order_follows_it():
    """On 2 GPUs (on one, shortest-prefill-first runs this mix out of KV memory at 23 s, as SGLang would, and
    the page says so): the chats' p95 first token falls under shortest-prefill-first."""
    story, values = rush_on("support", tp=2)
    assert {h.group for h in story.headlines} == {"chats", "documents"}
    assert all(c.key not in ("contracts", "qps", "qprompt") for c in story.controls)
    assert story.baseline_values({**values, "policy": "shortest-prefill-first"})[MIX] == "support"
    fcfs = run(story.scenario(values))
    spf = run(story.scenario({**values, "policy": "shortest-prefill-first"}))
    assert fcfs.cut_off is None and spf.cut_off is None
    assert set(fcfs.metrics.groups) == {"chats", "documents"}
    assert spf.metrics.groups["chats"].ttft_s.p95 < fcfs.metrics.groups["chats"].ttft_s.p95 / 2


@pytest.mark.parametrize("key", list(MIX_PRESETS))
def test_the_sustained_rate_is_within_a_quarter_of_the_runs_throughput_on_a_burst(key):
    """Every request at once: the run's requests per second against the estimate (support: 1.9 run, 2.33
    said; RAG 2.98 / 3.1; coding 2.74 / 2.78; summarisation 0.89 / 0.85 on one H100, Llama-3.1-8B)."""
    mix = MIX_PRESETS[key].mix.model_copy(update={"arrival": "burst"})
    story, values = rush_on(encode_mix(mix))
    scenario = story.scenario(values)
    done = run(scenario)
    assert done.cut_off is None
    assert sustain_of(scenario, mix).rate_per_s == pytest.approx(mix.requests / done.end_at, rel=0.25)


def test_the_pd_section_and_the_exports_follow_the_mix():
    story, values = rush_on("support")
    data = preset_data("rush", values)
    assert [g["name"] for g in data["workload"]["groups"]] == ["chats", "documents"]
    scenario = story.scenario(values)
    toml = scenario_toml(scenario)
    assert 'name = "chats"' in toml and 'name = "documents"' in toml
    config = run(scenario).config
    assert "Request mix: support assistant" in run_settings(story, values, config)[1]


def test_the_standalone_page_and_a_slide_follow_the_mix():
    """A small edited mix (40 requests: the page precomputes its runs and their seed band)."""
    small = encode_mix(SUPPORT.model_copy(update={"requests": 40}))
    values = {**RUSH.defaults, MIX: small}
    html = story_page("ten_oclock_rush", vary=("mixed",), start=values)
    assert "request mix: custom: chats, documents, 40 requests" in html
    assert "chats: p95 first token" in html and "Questions' p95" not in html
    story = story_of("ten_oclock_rush", values)
    slide = step_slide(story, 4, story.tour[3], grid_run, values)  # the tour's mixed-chunk step
    assert "On your mix" in slide.caption and "Request mix: custom: chats" in slide.settings


def test_a_built_mix_reads_as_a_trace_and_a_closed_loop_is_refused():
    from engine_model import load_trace, mix_jsonl

    trace = load_trace(mix_jsonl(SUPPORT, 0), fmt="jsonl")
    drawn = sampled(SUPPORT, 0)
    assert len(trace.requests) == SUPPORT.requests and trace.num_skipped == 0
    assert sum(r.prompt_len for r in trace.requests) == pytest.approx(
        sum(s.mean_prompt * s.count for s in drawn))
    with pytest.raises(InputError) as err:
        mix_jsonl(MIX_PRESETS["summarise"].mix, 0)
    assert err.value.where == "mix.arrival"


def test_the_trace_view_runs_its_queue_order_and_its_bucket_chart_ends_above_the_tallest_bar():
    from app.server import charts as server_charts
    from app.server import frames as server_frames
    from app.server.controls import CONTROLS
    from app.server.trace_ui import trace_data
    from engine_model import validate

    values = {c.key: c.default for c in CONTROLS}
    scenario = validate(trace_data({**values, "policy": "shortest-prefill-first"}, 10))
    assert scenario.engine.schedule_policy == "shortest-prefill-first"
    story, on = rush_on("support", tp=2)
    frame = server_frames.bucket_latency(run(story.scenario(on)))
    spec = server_charts.bucket_latency(frame).to_dict()
    for panel in spec["hconcat"]:
        top = frame[frame["metric"] == panel["title"]]["seconds"].max()
        assert panel["encoding"]["y"]["scale"]["domain"][1] > top * 1.1
        assert panel["width"] * len(spec["hconcat"]) <= 600  # three panels and their axes fit the column


def test_the_ten_oclock_questions_take_their_median_prompt_from_the_control():
    def prompts(median):
        scenario = RUSH.scenario({**RUSH.defaults, "qprompt": median})
        return sorted(r.prompt_len for r in simulate(scenario).requests if r.group == "questions")
    short, long = prompts(600), prompts(2400)
    assert short == prompts(600)  # the same draws for the seed
    assert short[len(short) // 2] < 1000 < 2000 < long[len(long) // 2] and max(long) > 4000


def test_compares_load_sweep_on_a_mix_scales_the_mixs_own_load():
    from app.compare.sweep import MIX_LOADS, mix_loads

    points, title, now = mix_loads("support")
    assert now == SUPPORT.rate and "requests per second" in title
    assert [x for x, _ in points] == [round(SUPPORT.rate * t, 3) for t in MIX_LOADS]
    assert [decode_mix(change[MIX]).rate for _, change in points] == [x for x, _ in points]
    closed, _, clients = mix_loads("summarise")
    assert clients == 16 and [x for x, _ in closed] == [4, 8, 16, 24, 32]


def test_a_link_with_a_bad_mix_gets_a_note_and_the_storys_own_workload():
    from test_app import cards_of, open_page

    at = open_page("app_pages/ten_oclock_rush.py", {"mix": "c.not-a-mix"})
    notes = " ".join(w.value for w in at.warning)
    assert "mix=c.not-a-mix" in notes and "expected a preset (support, rag, summarise, coding)" in notes
    assert cards_of(at)[0].label.startswith("Questions' p95 first token")
    assert "mix" not in at.query_params


def test_the_cli_runs_a_scenario_on_a_mix_and_refuses_a_bad_one_naming_the_option(capsys):
    from engine_model.cli import main
    from engine_model.mix import on_mix

    rush = load_scenario("ten_oclock_rush")
    mixed = on_mix(rush, "support")
    assert [g.name for g in mixed.workload.groups] == [g.name for g in MIX_PRESETS["support"].mix.groups]
    assert mixed.engine == rush.engine and mixed.hardware == rush.hardware  # only the workload is the mix's
    assert on_mix(rush, None) is rush
    with pytest.raises(InputError) as err:
        on_mix(rush, "banana")
    assert err.value.where == "--mix" and "expected a preset" in err.value.problem
    assert main(["run", "ten_oclock_rush", "--mix", "banana"]) == 2
    assert capsys.readouterr().err.startswith("error: --mix:")
