"""Where the evidence is thin, a band (engine_model/band.py): on Hopper and Blackwell a long prompt's numbers
come with the range the published attention measurements allow, the same object on every surface (cards,
the figure's tables, slides, export notes); none where the figure is measured, edited or linear."""

from __future__ import annotations

import pytest
from markup import read

from app.charts.frames import build
from app.present.numbers import headline_rows
from app.story.headline import headline_cards
from app.ui.cards import row_html
from engine_model import STORIES, simulate, summary
from engine_model.band import BOUNDS, band_of, ranged

FORTY = STORIES["forty_replies"]


def pause(s) -> float:
    return s.metrics.value("streams", "max_itl_s", "max")


@pytest.mark.parametrize("gpu, sm", [("h100-sxm", 90), ("h200", 90), ("b200", 100)])
def test_hopper_and_blackwell_carry_their_published_attention_range(gpu, sm):
    band = band_of(FORTY.scenario({**FORTY.defaults, "gpu": gpu}))
    assert band is not None and band.bounds == BOUNDS[sm]
    slow, fast = band.bounds
    assert slow.mfu < band.mfu < fast.mfu  # the priced figure sits inside what the evidence allows
    assert band.slow.cost.roofline["attention_mfu"] == slow.mfu
    assert band.fast.cost.roofline["attention_mfu"] == fast.mfu
    assert f"between {slow.kernel} ({slow.mfu:g}) and {fast.kernel} ({fast.mfu:g})" in band.words()


@pytest.mark.parametrize("change", [{"gpu": "a100-80gb"}, {"attn_mfu": 0.5}])
def test_no_band_where_the_attention_figure_is_measured_or_set_by_hand(change):
    assert band_of(FORTY.scenario({**FORTY.defaults, **change})) is None


def test_no_band_on_the_linear_predictor():
    scenario = FORTY.scenario(FORTY.defaults, ("cost.kind=linear",))
    assert band_of(scenario) is None


def test_the_band_is_the_setting_rerun_at_each_end_and_only_the_numbers_that_move_carry_it():
    values = FORTY.defaults
    scenario = FORTY.scenario(values)
    ends = ranged(scenario)
    now = build(simulate(scenario))
    slow = summary(simulate(FORTY.scenario(values, ("cost.roofline.attention_mfu=0.35",))))
    fast = summary(simulate(FORTY.scenario(values, ("cost.roofline.attention_mfu=0.75",))))
    assert pause(ends.slow) == pause(slow) and pause(ends.fast) == pause(fast)
    assert pause(slow) > pause(now.summary) > pause(fast)  # the long prompt's stall is mostly attention
    rows = headline_rows(FORTY, now, now, ends)
    by_label = {r.label: r for r in rows}
    stall = by_label["Longest pause, the 40 streams"]
    assert stall.band and stall.band.endswith("s") and stall.now_banded == f"{stall.now} (range {stall.band})"
    gap = by_label["Streams' p99 gap between tokens"]  # a decode gap: attention over short contexts
    assert gap.band == "" and gap.now_banded == gap.now


def test_the_cards_show_the_band_the_tables_show():
    values = {**FORTY.defaults, "mixed": True}
    scenario = FORTY.scenario(values)
    ends = ranged(scenario)
    now, base = build(simulate(scenario)), build(simulate(FORTY.scenario(FORTY.defaults)))
    rows = headline_rows(FORTY, now, base, ends)
    cards = headline_cards(FORTY, base, now, ranges=ends)
    assert [c.band for c in cards] == [r.band for r in rows]
    html = row_html(cards)
    shown = read(html)
    assert shown[0].band == f"range {rows[0].band}" and rows[0].band, shown
    assert "Where the evidence is thin" in cards[0].help


def test_a_pd_layout_carries_the_band_of_its_gpus():
    """The ten o'clock rush's today → PD cards: PD's own runs at each end (its workers price attention with
    the same figure, cost.roofline reaching every role)."""
    from app.pd.presets import policy_runs, preset_data

    shaped, runs, _ = policy_runs(preset_data("rush", {}), None, 1, 1, 0, lambda s: summary(simulate(s)))
    ends = ranged(shaped["early"])
    first = [s.metrics.value("questions", "ttft_s", "p95") for s in (ends.slow, runs["early"], ends.fast)]
    assert first[0] > first[1] > first[2]  # a slower attention kernel, a later first token, on PD as well
