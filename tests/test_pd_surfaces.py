"""One run, one set of numbers: the upstream replica's four figures and the ten o'clock verdict read the same
on every surface that shows them — the page's cards, its upstream table and its verdict, the tour's
narration, the PD figure, the section's image, the slides and the per-request CSV — and every percentage in
a sentence follows from the numbers beside it."""

import io
import re

import numpy as np
import pandas as pd
import pytest
from markup import cards_of
from story_runs import scenario_run
from streamlit.testing.v1 import AppTest
from test_app_deployment import open_page

from app.pd import tables
from app.pd.narration import step_words
from app.pd.presets import preset_data, shape
from app.present import pd as figure
from app.present.export import csv_bytes
from app.present.slides import pd_pair
from app.story.headline import tradeoff_cards
from engine_model import STORIES, policy_trade, trade_statement

RUSH = STORIES["ten_oclock_rush"]
POLICIES = ("early", "prefill_complete")
PERCENT = re.compile(r"[+−-]?\d+ %|±0 %")


def open_section(params: dict) -> AppTest:
    """The ten o'clock page opened by a link with `params` (its PD section's among them)."""
    return open_page("ten_oclock_rush", params)


def sides(card: str) -> tuple[str, str]:
    """A card's two numbers: '343 → 701' -> ('343', '701'); one number (they print alike) stands for both."""
    parts = [p.strip() for p in card.split("→")]
    return parts[0], parts[-1]


@pytest.fixture(scope="module")
def upstream():
    """The upstream replica's two runs as the section runs them, and the four figures (benchmark requests)."""
    data = preset_data("upstream", RUSH.defaults)
    scenarios = {p: shape(data, p, 0, 1, 1) for p in POLICIES}
    runs = {p: scenario_run(s) for p, s in scenarios.items()}
    return scenarios, runs, policy_trade(runs["early"].summary, runs["prefill_complete"].summary)


@pytest.mark.xdist_group("upstream")
@pytest.mark.slow
def test_the_upstream_replicas_four_figures_are_the_same_on_every_surface(upstream):
    scenarios, runs, trades = upstream
    cards = tradeoff_cards(tables.tradeoff(runs["early"], runs["prefill_complete"]))
    printed = [card.value.replace("\u00a0", " ") for card in cards]  # "343 → 701", as the cards print them
    changes = [t.words[0] for t in trades]  # "+104 %"
    # the page: its cards, and the table that sets the model's changes beside upstream's
    at = open_section({"pd": "1", "preset": "upstream"})
    shown = {m.label: m.value.replace("\u00a0", " ") for m in cards_of(at)}
    assert [shown[c.label] for c in cards] == printed
    table = next(df.value for df in at.dataframe if "this model" in df.value.columns)
    assert list(table["this model"]) == changes
    # the sentences: the box under the table, the tour's narration
    said = " ".join(trade_statement(trades))
    narration = step_words("upstream", RUSH.defaults, scenario_run)
    for t, change in zip(trades, changes, strict=True):
        assert f"model {change}" in said and f"({change} here, {t.words[1]} upstream)" in narration
    # the PD figure: its table's two PD columns and the sentence computed from them
    found = figure.arms("upstream", runs=scenario_run)
    numbers = figure.numbers_table(found, 0)
    at_ = [1 + [a.name for a in found].index(f"PD, {p}") for p in POLICIES]
    rows = numbers["rows"][figure.TRADE_ROWS]
    assert [(row[at_[0]], row[at_[1]]) for row in rows] == [sides(p) for p in printed]
    assert PERCENT.findall(figure.tradeoff_words(numbers, found)) == changes
    assert numbers["head"][0] == runs["early"].summary.population
    # the section's image (cards and table) and the slide
    image = figure.section_spec({f"PD, {p}": (scenarios[p], runs[p]) for p in POLICIES}, runs)
    text = str(image)
    for value, change in zip(printed, changes, strict=True):
        before, after = sides(value)
        assert before in text and after in text and change in text
    _, _, slide_numbers, _ = pd_pair(RUSH.defaults, "upstream", scenario_run)
    for value in printed:
        assert value in slide_numbers.replace("\u00a0", " ")
    # the per-request CSV: the benchmark requests' p95 first token, recomputed from the exported rows
    for policy, trade in zip(POLICIES, (lambda t: t.early, lambda t: t.prefill_complete), strict=True):
        rows = pd.read_csv(io.BytesIO(csv_bytes(runs[policy].requests)))
        bench = rows[rows["group"] != "warmup"]
        ttft = next(t for t in trades if t.figure.key == "ttft")
        assert float(np.percentile(bench["ttft_s"].dropna(), 95)) == pytest.approx(trade(ttft), rel=1e-9)


@pytest.mark.slow
def test_the_ten_oclock_verdict_is_the_same_on_the_page_the_figure_and_the_tour():
    buyer = {"model": "llama-3.1-70b", "tp": "8"}
    at = open_section({"pd": "1", **buyer})
    [page] = [m.value for m in at.markdown if m.value.startswith("**On 8 × H100 SXM 80GB: PD (")]
    values = {**RUSH.defaults, "model": "llama-3.1-70b", "tp": 8}
    found = figure.arms("rush", values, runs=scenario_run)
    text = figure.verdict_text(found, figure.today_arm("rush", values, runs=scenario_run))
    plain = page.replace("**", "").replace("\n\n", " ")
    head, rest = plain.split(" PD, early: ")
    early = rest.split(" PD, prefill_complete")[0]
    assert head in text and early in text  # the figure repeats the page's verdict, number for number
    tour = step_words("rush", values, scenario_run)
    assert early.split(".")[0] in tour  # the tour's sentence: the same summary for early
    cards = {m.label: m.value.replace("\u00a0", " ") for m in cards_of(at)}
    today = scenario_run(RUSH.scenario(values))
    p95 = today.summary.metrics.value("questions", "ttft_s", "p95")
    assert cards["Questions' p95 first token"].startswith(f"{p95:.1f} s → ")  # today → PD on the cards
