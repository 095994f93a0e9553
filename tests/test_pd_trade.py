"""early -> prefill_complete beside the maintainers' four figures: the bands, the sentences, and that what the
app and the tour say about the upstream replica is true of its runs (recomputed here from token times)."""

import numpy as np
import pytest

from app.charts.frames import build
from app.pd.narration import step_words
from app.pd.presets import pd_scenario
from engine_model import STORIES, policy_trade, simulate, summary, trade_statement
from engine_model.pd.trade import FIGURES, Trade

BY_KEY = {f.key: f for f in FIGURES}


def one(key: str, early: float, late: float) -> Trade:
    return Trade(BY_KEY[key], early, late)


def test_upstreams_four_figures_and_their_factor_two_bands():
    assert [(f.key, f.upstream) for f in FIGURES] == [
        ("throughput", 0.27), ("ttft", -0.49), ("tpot", 0.02), ("itl", 0.93)]
    assert [one(k, 1, 1).band for k in BY_KEY] == [
        pytest.approx(b) for b in ((0.135, 0.54), (-0.98, -0.245), (-0.04, 0.04), (0.465, 1.86))]


def test_a_figure_matches_inside_its_band_and_only_there():
    inside = [False, True, True, False]
    assert [one("throughput", 100, late).matches for late in (110, 127, 150, 160)] == inside
    assert [one("ttft", 100, late).matches for late in (80, 51, 3, 1)] == inside
    assert [one("tpot", 100, late).matches for late in (95, 97, 103.9, 105)] == inside
    assert [one("itl", 100, late).matches for late in (100, 150, 280, 300)] == inside
    assert one("itl", 0, 10).model is None and not one("itl", 0, 10).matches  # nothing to compare


def test_the_statement_names_what_matches_and_what_each_other_figure_lacks():
    trades = [one("throughput", 100, 185), one("ttft", 100, 59), one("tpot", 100, 103), one("itl", 100, 100)]
    said = trade_statement(trades)
    assert said[0] == ("Within a factor 2 of upstream: p95 time to first token (model −41 %, upstream "
                       "−49 %); Mean time per output token (model +3 %, upstream +2 %).")
    assert [s.split(":")[0] for s in said[1:]] == ["Not reproduced"] * 2
    assert said[1].startswith("Not reproduced: Output throughput, model +85 % against upstream's +27 %")
    assert said[2].startswith("Not reproduced: p99 gap between tokens, model ±0 % against upstream's +93 %")
    assert "not modelled" in said[2] and "_tokenize_texts" in said[2]
    assert "_coalesce_streaming_chunks" in said[2]


def bench_figures(result) -> dict[str, float]:
    """The four figures of the benchmark requests, straight from the times the client receives each token
    (not via engine metrics); each gap as bench_serving's sglang backend counts a chunk: its gap over its
    tokens."""
    reqs = [r for r in result.requests if r.group != "warmup" and r.token_times]
    seen = {r.rid: r.client_times for r in reqs}
    assert all(seen.values())  # the front end is on by default
    start = min(r.arrival_at for r in reqs)
    tokens = sum(len(t) for t in seen.values())
    gaps = []
    for times in seen.values():
        at = np.unique(times)  # one receive time per chunk
        size = np.array([times.count(t) for t in at])
        gaps += [g / k for g, k in zip(np.diff(at), size[1:], strict=True) for _ in range(k)]
    tpot = [(t[-1] - t[0]) / (len(t) - 1) for t in seen.values() if len(t) > 1]
    return {"throughput": tokens / (max(t[-1] for t in seen.values()) - start),
            "ttft": float(np.percentile([seen[r.rid][0] - r.arrival_at for r in reqs], 95)),
            "tpot": float(np.mean(tpot)), "itl": float(np.percentile(gaps, 99))}


@pytest.fixture(scope="session")
def upstream_runs():
    """The runs the PD section shows for the upstream preset (its own seed)."""
    rush = STORIES["ten_oclock_rush"]
    return {p: simulate(pd_scenario("upstream", rush.defaults, p, 0, 1, 1))
            for p in ("early", "prefill_complete")}


@pytest.mark.slow
def test_what_the_app_says_about_the_upstream_replica_is_true_of_its_runs(upstream_runs):
    early, late = upstream_runs["early"], upstream_runs["prefill_complete"]
    trades = policy_trade(summary(early), summary(late))
    mine_e, mine_l = bench_figures(early), bench_figures(late)
    for t in trades:
        change = mine_l[t.figure.key] / mine_e[t.figure.key] - 1
        assert t.model == pytest.approx(change, rel=1e-6, abs=1e-6), t.figure.key
        low, high = t.band
        assert t.matches == (low <= change <= high), t.figure.key
    said = trade_statement(trades)
    for t in trades:
        sentence = next(s for s in said if t.figure.label in s)
        assert sentence.startswith("Within" if t.matches else "Not reproduced"), sentence
        assert t.words[0] in sentence and t.words[1] in sentence
    assert "model" in said[0] and "maintainers" not in " ".join(said)  # never the model's as theirs


@pytest.mark.slow
def test_the_tours_pd_step_says_only_what_the_replica_shows(upstream_runs):
    """The step's own text states upstream's figures and claims nothing of the model's; the sentence the app
    adds from the runs (app.pd.narration) puts each of the four figures under reproduced or not, as
    the box does, with the model's change recomputed from token times."""
    step = STORIES["ten_oclock_rush"].tour[5]
    assert step.section == {"preset": "upstream"} and step.title.startswith("Upstream's test")
    assert "maintainers" not in step.say and "PR #40703" in step.say
    words = step_words("upstream", STORIES["ten_oclock_rush"].defaults, lambda s: build(simulate(s)))
    assert words.startswith("This step runs upstream's deployment (2 prefill × TP 4")
    reproduced, _, missed = words.partition("Not reproduced:")
    early, late = (bench_figures(upstream_runs[p]) for p in ("early", "prefill_complete"))
    for t in policy_trade(summary(upstream_runs["early"]), summary(upstream_runs["prefill_complete"])):
        change = late[t.figure.key] / early[t.figure.key] - 1
        low, high = t.band
        said = f"{t.figure.label.lower()} ({t.words[0]} here, {t.words[1]} upstream)"
        assert said in (reproduced if low <= change <= high else missed), said
