"""Every number a guided tour says is the run's: figures in `{now:...}` / `{before:...}` are filled from the
runs on screen, and every number written into the narration is checked here against a run."""

import re

import numpy as np
import pytest
from story_runs import run

from app.charts import frames
from app.pd import tables
from app.pd.presets import pd_scenario
from app.present.fmt import fmt_seconds
from app.present.numbers import FIGURE, narrate, percentile_trap, prices
from app.story import cursor
from engine_model import STORIES, simulate


def step_runs(story_key: str, i: int):
    story = STORIES[story_key]
    step = story.tour[i]
    now = run(story_key, tuple(sorted(step.settings.items())))
    return story, step, run(story_key), now


STEPS = [(key, i) for key, story in STORIES.items() for i in range(len(story.tour))]


@pytest.mark.parametrize(("story_key", "i"), STEPS, ids=lambda v: str(v))
def test_every_figure_of_every_step_is_filled_from_the_runs(story_key, i):
    story, step, before, now = step_runs(story_key, i)
    text = narrate(step.say, story, before, now)
    assert "{" not in text and "}" not in text, text
    for when, group, metric, stat in FIGURE.findall(step.say):
        assert (now if when == "now" else before).summary.metrics.value(
            None if group == "all" else group, metric, stat or None) is not None


def test_more_kv_reads_before_to_after_and_conservativeness_alone_still_retracts():
    story, step, before, now = step_runs("other_stall", 5)
    text = narrate(step.say, story, before, now)
    was, got = (r.summary.metrics for r in (before, now))
    assert f"drop from {was.value(None, 'num_retracted')} to {got.value(None, 'num_retracted')}" in text
    assert got.value(None, "num_retracted") < was.value(None, "num_retracted")  # "more KV is the fix"
    pause = (f"from {fmt_seconds(was.value('chats', 'max_itl_s', 'max'))} "
             f"to {fmt_seconds(got.value('chats', 'max_itl_s', 'max'))}")
    assert pause in text
    alone = run("other_stall", (("conservativeness", 3.0),)).summary.metrics
    assert alone.value(None, "num_retracted") == 7  # "still pushes 7 back here"
    halved = (alone.value("chats", "max_itl_s", "max")
              / before.summary.metrics.value("chats", "max_itl_s", "max"))
    assert 0.4 < halved < 0.6  # "it halves the longest pause"


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
    split = {p: frames.build(simulate(pd_scenario("rush", rush.defaults, p, 0, 1, 1)))
             for p in ("early", "prefill_complete")}
    assert single > 10 and split["early"].summary.metrics.value("questions", "max_itl_s", "max") < 0.1
    assert tables.little_difference(split["early"], split["prefill_complete"], "questions")  # says why
    assert rush.tour[5].section == {"preset": "upstream"} and rush.tour[5].focus == "pd"


@pytest.mark.slow
def test_on_the_upstream_preset_prefill_complete_raises_throughput_and_lowers_ttft():
    """(Whether the p99 gap follows upstream's rise: tests/test_pd_trade.py checks what the app says.)"""
    rush = STORIES["ten_oclock_rush"]
    early, late = (frames.build(simulate(pd_scenario("upstream", rush.defaults, p, 0, 1, 1)))
                   for p in ("early", "prefill_complete"))
    trade = {row["key"]: (row["early"], row["prefill_complete"]) for row in tables.tradeoff(early, late)}
    assert list(trade) == ["throughput", "ttft", "tpot", "itl"]
    assert trade["throughput"][1] > trade["throughput"][0]
    assert trade["ttft"][1] < trade["ttft"][0]
    assert tables.little_difference(early, late, "short") is None


def test_real_traffic_numbers_and_the_cursor_lands_on_the_burst():
    base = run("real_traffic")
    prompts = base.requests["prompt_len"].to_numpy()
    assert np.mean(prompts >= 8192) > 0.5 and (prompts > 32768).any()  # "more than half", "some above 32k"
    longest = base.stalls.sort_values("gap_s").iloc[-1]
    assert 325 < longest.start_at < 340  # "at about 330 s"
    for i in (1, 2, 3):
        story, step, _, now = step_runs("real_traffic", i)
        t = now.iterations["start_at"].iloc[cursor.resolve(now.iterations, step.cursor)]
        assert 325 < t < 340, (step.title, t)


def test_the_percentile_trap_is_said_only_where_p99_and_the_longest_pause_disagree():
    off, on = run("forty_replies"), run("forty_replies", (("mixed", True),))
    trap = percentile_trap("streams", off, on)
    p99, longest = ([fmt_seconds(r.summary.metrics.value("streams", m, s)) for r in (off, on)]
                    for m, s in (("itl_s", "p99"), ("max_itl_s", "max")))
    assert trap.startswith(f"Read p99 with care: the streams' p99 gap went {p99[0]} → {p99[1]} "
                           f"while their longest pause went {longest[0]} → {longest[1]}.")
    assert (on.summary.metrics.value("streams", "itl_s", "p99")
            > 10 * off.summary.metrics.value("streams", "itl_s", "p99"))
    assert re.search(r"Before, 40 of [\d,]+ gaps .* too few for p99 to see; now \d+ of", trap)
    small = run("forty_replies", (("chunk", 2048), ("mixed", True)))
    assert percentile_trap("streams", small, small) is None  # p99 0.38 s, longest 0.40 s: they agree


def test_the_price_of_mixed_chunk_is_throughput_run_length_and_reply_time_per_group():
    off, on = run("forty_replies"), run("forty_replies", (("mixed", True),))
    found = {p.label: (p.before, p.after) for p in prices(STORIES["forty_replies"], off, on)}
    assert list(found) == ["Output, tokens/s", "Run length", "Reply time, streams (median)",
                           "Reply time, log (median)"]
    assert found["Run length"] == (off.summary.end_at, on.summary.end_at)
    assert found["Reply time, log (median)"][1] == on.summary.metrics.value("log", "e2e_s", "p50")
