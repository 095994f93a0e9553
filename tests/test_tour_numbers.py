"""Every number a guided tour says is the run's: figures in `{now:...}` / `{before:...}` are filled from the
runs on screen, and every number written into the narration is checked here against a run."""

import re

import numpy as np
import pytest
from story_runs import run, scenario_run

from app.pd import tables
from app.pd.presets import pd_scenario
from app.present.fmt import fmt_seconds
from app.present.numbers import FIGURE, NarrationError, narrate, percentile_trap, prices
from app.story import cursor
from engine_model import STORIES


def step_runs(story_key: str, i: int):
    story = STORIES[story_key]
    step = story.tour[i]
    now = run(story_key, tuple(sorted(step.settings.items())))
    return story, step, run(story_key, tuple(sorted(step.versus.items()))), now


STEPS = [(key, i) for key, story in STORIES.items() for i in range(len(story.tour))]


@pytest.mark.parametrize(("story_key", "i"), STEPS, ids=lambda v: str(v))
def test_every_figure_of_every_step_is_filled_from_the_runs(story_key, i):
    story, step, before, now = step_runs(story_key, i)
    text = narrate(step.say, story, before, now, step.cursor)
    assert "{" not in text and "}" not in text, text
    for when, group, metric, stat in FIGURE.findall(step.say):
        if group == "cursor":
            assert metric in now.iterations, metric
            continue
        assert (now if when == "now" else before).summary.metrics.value(
            None if group == "all" else group, metric, stat or None) is not None


def test_the_first_step_says_the_pass_time_its_panel_reads():
    """Forty step 1: "one decode pass every N ms" is the pass under the step's cursor (what the step-through's
    pass-cost panel beside it reads), not the run's median gap, which the slower passes after the log's
    100,000 tokens raise."""
    story, step, before, now = step_runs("forty_replies", 0)
    its = now.iterations
    shown = its.iloc[cursor.resolve(its, step.cursor)]
    assert shown["kind"] == "decode" and shown["start_at"] < 0.5  # before the log arrives
    text = narrate(step.say, story, before, now, step.cursor)
    assert f"one decode pass every {fmt_seconds(shown['duration_s'])} " in text, text
    with pytest.raises(NarrationError):  # a cursor figure needs the step's cursor
        narrate(step.say, story, before, now)


def test_more_kv_reads_before_to_after():
    story, step, before, now = step_runs("other_stall", 5)
    text = narrate(step.say, story, before, now)
    was, got = (r.summary.metrics for r in (before, now))
    assert f"drop from {was.value(None, 'num_retracted')} to {got.value(None, 'num_retracted')}" in text
    assert got.value(None, "num_retracted") < was.value(None, "num_retracted")  # "more KV is the fix"
    pause = (f"from {fmt_seconds(was.value('chats', 'max_itl_s', 'max'))} "
             f"to {fmt_seconds(got.value('chats', 'max_itl_s', 'max'))}")
    assert pause in text


def test_conservativeness_saturates_so_1_5_and_3_are_the_same_server():
    """min(0.7 x c, 1): the step says 1.5 and 3 are the same; the runs agree to the last token."""
    story, step, before, now = step_runs("other_stall", 6)
    assert step.settings == {"conservativeness": 1.5} and "1.5 and 3" in step.say
    three = run("other_stall", (("conservativeness", 3.0),))
    assert now.summary.metrics == three.summary.metrics
    assert now.iterations.equals(three.iterations)
    text = narrate(step.say, story, before, now)
    was, got = (r.summary.metrics.value(None, "num_retracted") for r in (before, now))
    assert f"Requests pushed back: {was} → {got}" in text


@pytest.mark.parametrize("gpu", ["h100-sxm", "h200"])
def test_shortest_prefill_first_lowers_the_questions_p95_first_token(gpu):
    story = STORIES["ten_oclock_rush"]
    step = next(s for s in story.tour if s.settings == {"policy": "shortest-prefill-first"})
    for seed in (0, 3):
        fcfs, spf = (run("ten_oclock_rush", tuple(sorted({"gpu": gpu, "seed": seed, **extra}.items())))
                     for extra in ({}, step.settings))
        p95 = [r.summary.metrics.value("questions", "ttft_s", "p95") for r in (fcfs, spf)]
        assert p95[1] < p95[0] / 10, (gpu, seed, p95)
        # The contracts' p95 moves either way: on the H200 they pay (49 -> 52 s); on the H100, since issue 37
        # priced Hopper attention on FlashAttention-3, fcfs's contract tail is the longer one (67 -> 18 s)
        contracts = [r.summary.metrics.value("contracts", "ttft_s", "p95") for r in (fcfs, spf)]
        assert (contracts[1] > contracts[0]) == (gpu == "h200"), (gpu, seed, contracts)


def test_the_forty_replies_numbers():
    story, step, before, now = step_runs("forty_replies", 3)
    text = narrate(step.say, story, before, now)
    gap = [fmt_seconds(r.summary.metrics.value("streams", "max_itl_s", "max")) for r in (before, now)]
    assert f"shrinks from {gap[0]} to {gap[1]}" in text and "Read p99 with care" in text
    log = next(r for r in run("forty_replies").requests.itertuples() if r.rid == "log")
    assert log.arrival_at == pytest.approx(0.5)  # "At 0.5 s a 100,000-token log is pasted"
    assert log.prompt_len == 100_000


def test_the_rush_numbers_and_the_pd_step_lands_on_a_visible_trade_off():
    rush = STORIES["ten_oclock_rush"]
    assert rush.defaults["qps"] == 4.0 and rush.defaults["contracts"] == 6  # "about four a second", "six"
    single = run("ten_oclock_rush").summary.metrics.value("questions", "max_itl_s", "max")
    split = {p: scenario_run(pd_scenario("rush", rush.defaults, p, 0, 1, 1))
             for p in ("early", "prefill_complete")}
    # decode never runs a prefill: what still holds a question's reply is the decode server's front end
    # tokenizing the six contracts back to back (engine_model/frontend.py), and nothing else
    held = max(b.seconds for b in split["early"].front_end)
    pause = split["early"].summary.metrics.value("questions", "max_itl_s", "max")
    assert single > 10 and held <= pause < held + 0.1
    early = pd_scenario("rush", rush.defaults, "early", 0, 1, 1)
    scheduler_only = scenario_run(early.model_copy(update={"cost": early.cost.model_copy(
        update={"front_end": False})}))
    assert scheduler_only.summary.metrics.value("questions", "max_itl_s", "max") < 0.1
    assert tables.little_difference(split["early"], split["prefill_complete"], "questions")  # says why
    assert rush.tour[5].section == {"preset": "upstream"} and rush.tour[5].focus == "pd"


@pytest.mark.xdist_group("upstream")  # the upstream replica's PD runs, the slowest, made once a run
@pytest.mark.slow
def test_on_the_upstream_preset_prefill_complete_raises_throughput_and_lowers_ttft():
    """(Whether the p99 gap follows upstream's rise: tests/test_pd_trade.py checks what the app says.)"""
    rush = STORIES["ten_oclock_rush"]
    early, late = (scenario_run(pd_scenario("upstream", rush.defaults, p, 0, 1, 1))
                   for p in ("early", "prefill_complete"))
    trade = {row["key"]: (row["early"], row["prefill_complete"]) for row in tables.tradeoff(early, late)}
    assert list(trade) == ["throughput", "ttft", "tpot", "itl"]
    assert trade["throughput"][1] > trade["throughput"][0]
    assert trade["ttft"][1] < trade["ttft"][0]
    assert tables.little_difference(early, late, "short") is None


def test_real_traffic_numbers_and_the_cursor_lands_on_the_burst():
    base = run("real_traffic")
    requests = next(c for c in STORIES["real_traffic"].controls if c.key == "requests")
    for count in requests.options:  # at any "Requests"
        prompts = run("real_traffic", (("requests", count),)).requests["prompt_len"].to_numpy()
        assert 0.45 <= np.mean(prompts >= 8192) <= 0.6 and (prompts > 32768).any()  # "about half", "some"
    longest = base.stalls.sort_values("gap_s").iloc[-1]
    assert 325 < longest.start_at < 340  # "at about 330 s"
    for i in (1, 2, 3):
        story, step, _, now = step_runs("real_traffic", i)
        t = now.iterations["start_at"].iloc[cursor.resolve(now.iterations, step.cursor)]
        assert 325 < t < 340, (step.title, t)


def repeated_block_tokens(path, num: int) -> tuple[int, int]:
    """From the trace file alone: the prompt tokens of the first `num` requests whose leading hash_ids
    chain an earlier request already had (at most input length - 1), and all their prompt tokens."""
    import json

    seen, cached, total = set(), 0, 0
    for line in path.read_text().splitlines()[:num]:
        row = json.loads(line)
        ids, n = row["hash_ids"], 0
        while n < len(ids) and tuple(ids[: n + 1]) in seen:
            n += 1
        cached += min(n * 512, row["input_length"] - 1)
        total += row["input_length"]
        seen.update(tuple(ids[: i + 1]) for i in range(len(ids)))
    return cached, total


def test_real_traffic_reuses_the_blocks_its_hash_ids_repeat():
    """The prefix-reuse step: without the overlap schedule the cache's hit on the first 120 requests is
    every repeated block the trace's hash_ids name (nothing is evicted before it is asked for again); with
    it (the story's default) a prompt's blocks are cached only when its pass's result lands, after the next
    pass was launched, so a request admitted in that pass computes them again. Switching the cache off
    computes them all, so no request gets its first token sooner."""
    from engine_model.metrics import group_metrics
    from engine_model.scenario_io import load_scenario
    from engine_model.simulation import simulate

    from conftest import REPO

    story, step, before, now = step_runs("real_traffic", len(STORIES["real_traffic"].tour) - 1)
    assert step.settings == {"prefix_cache": False}
    cached, total = repeated_block_tokens(REPO / "app/samples/mooncake_conversation_trace_head300.jsonl", 120)
    plain = load_scenario(REPO / "scenarios/real_traffic.toml", ["engine.disable_overlap_schedule=true"])
    assert group_metrics(simulate(plain).requests).num_cached_tokens == cached > 0
    on, off = before.summary.metrics, now.summary.metrics
    assert 0.9 * cached < on.value("requests", "num_cached_tokens") <= cached
    assert on.value("requests", "prefix_cache_share") <= cached / total
    assert off.value("requests", "num_cached_tokens") == 0
    assert on.value("requests", "ttft_s", "p50") < off.value("requests", "ttft_s", "p50")
    assert on.value("requests", "ttft_s", "p95") < off.value("requests", "ttft_s", "p95")


def test_the_percentile_trap_is_said_only_where_p99_and_the_longest_pause_disagree():
    off, on = run("forty_replies"), run("forty_replies", (("mixed", True),))
    trap = percentile_trap("streams", off, on)
    p99, longest = ([fmt_seconds(r.summary.metrics.value("streams", m, s)) for r in (off, on)]
                    for m, s in (("itl_s", "p99"), ("max_itl_s", "max")))
    assert trap.startswith(f"Read p99 with care: the streams' p99 gap went {p99[0]} → {p99[1]} "
                           f"while their longest pause went {longest[0]} → {longest[1]}.")
    assert (on.summary.metrics.value("streams", "itl_s", "p99")
            > 10 * off.summary.metrics.value("streams", "itl_s", "p99"))
    assert re.search(r"Before, \d+ of [\d,]+ gaps .* too few for p99 to see; now \d+ of", trap)
    small = run("forty_replies", (("chunk", 2048), ("mixed", True)))
    assert percentile_trap("streams", small, small) is None  # p99 0.38 s, longest 0.40 s: they agree


def test_the_price_of_mixed_chunk_is_throughput_run_length_and_reply_time_per_group():
    off, on = run("forty_replies"), run("forty_replies", (("mixed", True),))
    found = {p.label: (p.before, p.after) for p in prices(STORIES["forty_replies"], off, on)}
    assert list(found) == ["Output at this load, tokens/s", "Run length", "Reply time, streams (median)",
                           "Reply time, log (median)"]
    assert found["Run length"] == (off.summary.end_at, on.summary.end_at)
    assert found["Reply time, log (median)"][1] == on.summary.metrics.value("log", "e2e_s", "p50")


# Numbers a tour may write out: the story's own settings and workload, formula constants, release numbers
# and upstream's measured figures. A run's result never (issue 19: "still pushes 7 back" was true on one
# GPU and seed only); it goes in a {now:...} or {before:...} figure.
WRITTEN_OUT = {
    "forty_replies": {"0.5", "100,000", "2,048"},
    "other_stall": {"120,000", "0.7", "1", "1.43", "1.5", "3", "4,096"},
    "ten_oclock_rush": {"120,000", "163,840", "64", "131,072", "4,096", "27", "49", "93", "0.5.21", "40703",
                        "20", "0", "10", "16"},  # the last four: the priorities, threshold and slots set
    "real_traffic": {"120", "8,192", "32", "330", "2,048", "512"},
}


@pytest.mark.parametrize("story_key", sorted(STORIES))
def test_a_tour_writes_out_no_number_of_a_run(story_key):
    said = set()
    for step in STORIES[story_key].tour:
        text = re.sub(r"\{[^}]*\}", "", step.say)
        text = re.sub(r"\bp(50|95|99)\b", "", text)  # a percentile's name
        said |= {n.rstrip(".,") for n in re.findall(r"\d[\d,.]*", text)}
    assert said <= WRITTEN_OUT[story_key], said - WRITTEN_OUT[story_key]


def test_a_client_that_sends_no_max_tokens_is_pushed_back_less_and_waits_longer():
    """The other stall's last step: with no max_tokens SGLang reserves min(max_req_len - prompt - 1, 4096)
    x new_token_ratio per request, more than the replies need, so fewer are admitted at once."""
    story, step, before, now = step_runs("other_stall", len(STORIES["other_stall"].tour) - 1)
    assert step.settings == {"client": "none"}
    was, got = (r.summary.metrics for r in (before, now))
    assert got.value(None, "num_retracted") < was.value(None, "num_retracted")
    assert got.value("chats", "ttft_s", "p95") > was.value("chats", "ttft_s", "p95")
    text = narrate(step.say, story, before, now)
    assert f"({was.value(None, 'num_retracted')} → {got.value(None, 'num_retracted')})" in text


def test_each_step_compares_with_the_step_its_words_compare_with():
    """The logprob step undoes mixed chunk's point: its cards and words compare with mixed chunk on (the
    longest pause from ~1.8 s back to ~12.6 s), not with the defaults (12.55 s → 12.56 s says nothing)."""
    for story in STORIES.values():
        for i, step in enumerate(story.tour):
            if step.versus:
                assert story.versus_step(i) is not None, (story.key, step.title)  # an earlier step's settings
    story = STORIES["forty_replies"]
    i = next(i for i, s in enumerate(story.tour) if s.settings.get("logprob"))
    assert story.versus_step(i) == next(j for j, s in enumerate(story.tour) if s.settings == {"mixed": True})
    _, step, before, now = step_runs("forty_replies", i)
    text = narrate(step.say, story, before, now)
    was, is_now = (r.summary.metrics.value("streams", "max_itl_s", "max") for r in (before, now))
    assert is_now > 3 * was, (was, is_now)  # the stall is back, against mixed chunk on
    assert f"{fmt_seconds(was)} (mixed chunk on, no logprobs) to {fmt_seconds(is_now)}" in text, text
    on_screen = {**story.defaults, **step.settings}
    assert story.compared_with(i, on_screen) == {"mixed": True}
    assert story.compared_with(i, {**on_screen, "logprob": False}) == {}  # a setting moved: the defaults
    assert story.compared_with(None, on_screen) == {}


# what a step's words describe -> the chart that draws it (the step's "Look here" must land there)
DRAWN_IN = {"dark grey rules": "kv", "purple band": "tokens", "the stall is back": "tokens",
            "pink gaps": "tokens", "orange bars": "passes", "kv used (blue)": "kv", "two stalls": "why"}


@pytest.mark.parametrize(("story_key", "i"), STEPS, ids=lambda v: str(v))
def test_look_here_lands_on_the_chart_the_words_describe(story_key, i):
    step = STORIES[story_key].tour[i]
    said = step.say.lower()
    named = {chart for phrase, chart in DRAWN_IN.items() if phrase in said}
    if named:
        assert step.focus in named, (story_key, step.title, step.focus, named)
    if step.focus == "why":  # the two-stalls table, only where the words tell the two stalls apart
        assert "two stalls" in said, (story_key, step.title)


def test_the_shade_the_words_name_is_the_shade_drawn():
    """"The dark purple band" was drawn in the 5–20 s shade (a mid magenta) once calibration shortened the
    pause: a step names the darkest shade only where its stall is drawn in it."""
    from app.charts.request_frames import gap_band, gap_bands

    for story_key, i in STEPS:
        step = STORIES[story_key].tour[i]
        if "dark purple" not in step.say:
            continue
        now = run(story_key, tuple(sorted(step.settings.items())))
        longest = now.summary.metrics.value(STORIES[story_key].stream_group, "max_itl_s", "max")
        assert gap_band(longest, now.stall_threshold_s) == gap_bands(now.stall_threshold_s)[-1][2], step.title
