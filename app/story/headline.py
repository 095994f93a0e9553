"""Headline cards: the story's numbers before -> after (before: the story as it opened, on the same GPU,
model and seed), what the change costs (throughput, run length, reply time per group), the percentile trap
when p99 and the longest pause disagree, and p50 / p95 / p99 / max per group."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app import compute, state
from app.charts.frames import RunFrames
from app.charts.words import never_got_a_token
from app.pd import tables
from app.pd.params import PRESETS as PD_PRESETS
from app.pd.presets import pd_scenario
from app.present.fmt import fmt_seconds, seconds_cell, signed_seconds
from app.present.numbers import (
    Price,
    band_text,
    card,
    fmt_rate,
    headline_fmt,
    headline_label,
    headline_value,
    percentile_trap,
    prices,
    split_stall,
)
from app.present.settings import changes_words
from app.ui.cards import Card, cards_ui
from app.ui.fold import folded
from engine_model import InputError, Ranged, Scenario, Story, attention_note, ranged

GROUP_METRICS = {"ttft_s": "first token (TTFT)", "itl_s": "gap between tokens (ITL)",
                 "max_itl_s": "longest pause per request"}


def _scenario(story: Story, values: dict | None) -> Scenario | None:
    try:
        return story.scenario(values) if values is not None else None
    except InputError:
        return None


def _attention_note(scenario: Scenario | None, ranges: Ranged | None) -> str:
    """The band's sentence, else whether the GPU's prefill attention figure is an assumption
    (engine_model.attention_note)."""
    if ranges is not None:
        return ranges.band.words()
    return attention_note(scenario) if scenario is not None else ""


def headline_ui(story: Story, current: RunFrames, base: RunFrames, values: dict | None = None) -> list[dict]:
    """Cards 'before → after', the price of the change and the percentile trap. Returns the numbers shown.
    In presenter mode the gains and their price share one row, so the token streams fit the first screen."""
    same = current.summary.config == base.summary.config
    presenting = state.is_presenting()
    scenario = _scenario(story, values)
    ranges = ranged(scenario) if scenario is not None else None  # the current setting's band, or None
    if not presenting:  # the presenter says it; the room sees "before → after" on the cards
        st.markdown("#### Before → after")
        st.caption(f"{before_words(story, values)} {changes_words(story, values)}")
        note = _attention_note(scenario, ranges)
        if note:
            st.caption(note)
    items = price_cards(prices(story, base, current), same)
    row = headline_cards(story, base, current, same, ranges=ranges)
    shown = [{"label": c.label, "before": headline_value(base, h), "after": headline_value(current, h)}
             for c, h in zip(row, story.headlines, strict=True)]
    cards_ui(row + items if presenting else row)
    trap = percentile_trap(story.stream_group, base, current)
    if trap:
        st.info(trap, icon=":material/troubleshoot:")
    if not presenting:
        cards_ui(items, "##### What it costs")
    with folded("p50 / p95 / p99 / max per group, before → after", "groups.open") as is_open:
        if not is_open:
            return shown
        st.dataframe(group_table(current, base), hide_index=True, width="stretch")
        for sentence in dict.fromkeys(never_got_a_token(base.requests) + never_got_a_token(current.requests)):
            st.caption(sentence)
    return shown


def before_words(story: Story, values: dict | None) -> str:
    """What "before" is on the cards: the story as it opened, or the tour step this step compares with."""
    active = st.session_state.get(state.keys(story.key).tour_step)
    if values is not None and story.compared_with(active, values):
        j = story.versus_step(active)
        named = f"step {j + 1}, {story.tour[j].title.lower()}" if j is not None else "the step's own baseline"
        return (f"Before: {named} — the step these numbers compare with — on the deployment and seed you "
                "chose.")
    return ("Before: the story as it opened (SGLang's defaults for ⚑ flags, the story's own workload), on "
            "the deployment and seed you chose.")


def price_ui(story: Story, before: RunFrames, after: RunFrames, same: bool = False, title: str = "") -> None:
    """The price of the change beside its gain: throughput, run length and reply time per group."""
    cards_ui(price_cards(prices(story, before, after), same), title or "##### What it costs")


def headline_cards(story: Story, before: RunFrames, after: RunFrames, same: bool = False,
                   both: bool = False, ranges: Ranged | None = None) -> list[Card]:
    """The story's headline numbers as cards, 'before → after', a lower number the better. `both`: a card
    whose two numbers print alike still shows both (Compare's A → B names each side). `ranges`: the
    after-number's band (app.present.numbers.band_text), on the card and in its note."""
    out = []
    for headline in story.headlines:
        was, now = headline_value(before, headline), headline_value(after, headline)
        fmt = headline_fmt(headline)
        value, delta = card(was, now, fmt, same, headline.unit == "count")
        if both and delta is None and was is not None:
            value = f"{fmt(was)} → {fmt(now)}"
        band = band_text(ranges, headline, now)
        note = " ".join(p for p in (headline.help or "", ranges.band.words() if band else "") if p)
        why = split_stall(headline, before, after) if delta else ""
        out.append(Card(headline_label(headline, after), value, delta, "lower", note, band, why))
    return out


def price_cards(items: list[Price], same: bool) -> list[Card]:
    """Each price of a change as a card, 'before → after'."""
    return [Card(p.label, *card(p.before, p.after, p.fmt, same), p.better, p.help) for p in items]


def tradeoff_cards(rows: list[dict]) -> list[Card]:
    """PD's trade-off rows (app.pd.tables.tradeoff) as cards, early → prefill_complete."""
    items = [Price(r["label"], r["early"], r["prefill_complete"],
                   fmt_seconds if r["unit"] == "s" else fmt_rate, r["better"]) for r in rows]
    return price_cards(items, False)


def group_table(current: RunFrames, base: RunFrames) -> pd.DataFrame:
    """Every group's p50 / p95 / p99 / max, before and after, in words; a value a run lacks reads 'no token'
    (the sentences under the table say why)."""
    rows = []
    for group, metrics in current.summary.metrics.groups.items():
        for metric, title in GROUP_METRICS.items():
            for stat in ("p50", "p95", "p99", "max"):
                now, was = metrics.value(metric, stat), base.summary.metrics.value(group, metric, stat)
                if now is None and was is None:
                    continue
                rows.append({"group": group, "measure": title, "statistic": stat,
                             "before": seconds_cell(was), "after": seconds_cell(now),
                             "change": "" if now is None or was is None else signed_seconds(now - was)})
    return pd.DataFrame(rows)


def pd_headline_ui(preset: str, values: dict) -> None:
    """A PD tour step's cards: the preset's own early -> prefill_complete (not the single engine's numbers,
    which the step is not about)."""
    scenarios = [pd_scenario(preset, values, policy, 0, 1, 1) for policy in ("early", "prefill_complete")]
    early, late = (compute.run_scenario(s) for s in scenarios)
    st.markdown(f"#### early → prefill_complete, {PD_PRESETS[preset].lower()}")
    st.caption(f"On {tables.deployment(scenarios[0])}, {tables.model_words(scenarios[0])}: the preset's own "
               "deployment, not the settings above. These cards are the PD section's runs below, the same "
               f"requests under each decode allocation policy, over {early.summary.population}.")
    rows = tables.tradeoff(early, late)
    cards_ui(tradeoff_cards(rows))
