"""Headline cards: the story's numbers before -> after (before: the story as it opened, on the same GPU,
model and seed), what the change costs (throughput, run length, reply time per group), the percentile trap
when p99 and the longest pause disagree, and p50 / p95 / p99 / max per group."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app import state
from app.charts.frames import RunFrames
from app.charts.words import NO_TOKEN, never_got_a_token
from app.story.numbers import headline_value, percentile_trap, prices
from app.ui.fmt import fmt_count, fmt_seconds, seconds_cell, shown_value
from app.ui.fold import folded
from engine_model import Headline, InputError, Story, attention_note

GROUP_METRICS = {"ttft_s": "first token (TTFT)", "itl_s": "gap between tokens (ITL)",
                 "max_itl_s": "longest pause per request"}


def headline_label(headline: Headline, run: RunFrames) -> str:
    count = run.summary.metrics.value(headline.group or "", "num_requests")
    count = "" if count is None else count
    return headline.label.format(group_count=count)


def headline_fmt(headline: Headline):
    return fmt_seconds if headline.unit == "s" else fmt_count


def changes_words(story: Story, values: dict | None) -> str:
    """'Changed: Mixed chunk off → on; KV pool (tokens) 60,000 → 120,000.' or that nothing changed."""
    found = story.changes(values) if values is not None else []
    if not found:
        return ("You are on the story's defaults: change a setting above, or take the tour, to see "
                "before → after.")
    return "Changed: " + "; ".join(f"{c.label} {shown_value(c, was)} → {shown_value(c, now)}"
                                   for c, was, now in found) + "."


def _attention_note(story: Story, values: dict | None) -> str:
    """Whether the GPU's prefill attention figure is an assumption (engine_model.attention_note)."""
    try:
        return attention_note(story.scenario(values)) if values is not None else ""
    except InputError:
        return ""


def headline_ui(story: Story, current: RunFrames, base: RunFrames, values: dict | None = None) -> list[dict]:
    """Cards 'before → after', the price of the change and the percentile trap. Returns the numbers shown.
    In presenter mode the gains and their price share one row, so the token streams fit the first screen."""
    shown = []
    same = current.summary.config == base.summary.config
    presenting = state.is_presenting()
    if not presenting:  # the presenter says it; the room sees "before → after" on the cards
        st.markdown("#### Before → after")
        st.caption("Before: the story as it opened (SGLang's defaults for ⚑ flags, the story's own "
                   f"workload), on the GPU, model and seed you chose. {changes_words(story, values)}")
        note = _attention_note(story, values)
        if note:
            st.caption(note)
    items = prices(story, base, current)
    cols = st.columns(len(story.headlines) + (len(items) if presenting else 0))
    for col, headline in zip(cols, story.headlines, strict=False):
        now, before = headline_value(current, headline), headline_value(base, headline)
        value, delta = card(before, now, headline_fmt(headline), same, headline.unit == "count")
        col.metric(headline_label(headline, current), value, delta, delta_color="inverse", border=True,
                   help=headline.help or None)
        shown.append({"label": headline_label(headline, current), "before": before, "after": now})
    if presenting:
        price_cards(cols[len(story.headlines):], items, same)
    trap = percentile_trap(story.stream_group, base, current)
    if trap:
        st.info(trap, icon=":material/troubleshoot:")
    if not presenting:
        st.markdown("##### What it costs")
        price_cards(st.columns(len(items)), items, same)
    with folded("p50 / p95 / p99 / max per group, before → after", "groups.open") as is_open:
        if not is_open:
            return shown
        st.dataframe(group_table(current, base), hide_index=True, width="stretch")
        for sentence in dict.fromkeys(never_got_a_token(base.requests) + never_got_a_token(current.requests)):
            st.caption(sentence)
    return shown


def price_ui(story: Story, before: RunFrames, after: RunFrames, same: bool = False, title: str = "") -> None:
    """The price of the change beside its gain: throughput, run length and reply time per group."""
    st.markdown(title or "##### What it costs")
    items = prices(story, before, after)
    price_cards(st.columns(len(items)), items, same)


def price_cards(cols: list, items: list, same: bool) -> None:
    for col, price in zip(cols, items, strict=True):
        value, delta = card(price.before, price.after, price.fmt, same)
        col.metric(price.label, value, delta, border=True, help=price.help or None,
                   delta_color="normal" if price.better == "higher" else "inverse")


def card(before, now, fmt, same: bool = False, is_count: bool = False) -> tuple[str, str | None]:
    """A card's value ('before → after', or one number when nothing moved) and its delta."""
    if same or now is None or before is None or abs(now - before) < 1e-9:
        return fmt(now) if now is not None else NO_TOKEN, None
    diff = now - before
    if is_count:
        return f"{fmt(before)} → {fmt(now)}", f"{diff:+,}"
    pct = f" ({diff / before:+.1%})" if before and abs(diff / before) < 0.1 else (
        f" ({diff / before:+.0%})" if before else "")
    return f"{fmt(before)} → {fmt(now)}", f"{'-' if diff < 0 else '+'}{fmt(abs(diff))}{pct}"


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


def signed_seconds(diff: float) -> str:
    return ("+" if diff > 0 else "−" if diff < 0 else "±") + fmt_seconds(abs(diff))

