"""Headline cards: the story's numbers under your settings against SGLang's defaults on the same seed,
and p50 / p95 / p99 / max per group, before -> after."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app.charts.frames import RunFrames
from app.ui.fmt import fmt_count, fmt_seconds
from engine_model import Headline, Story

GROUP_METRICS = {"ttft_s": "first token (TTFT)", "itl_s": "gap between tokens (ITL)",
                 "max_itl_s": "longest pause per request"}


def headline_value(run: RunFrames, headline: Headline):
    return run.summary.metrics.value(headline.group, headline.metric, headline.stat)


def headline_label(headline: Headline, run: RunFrames) -> str:
    count = run.summary.metrics.value(headline.group or "", "num_requests")
    count = "" if count is None else count
    return headline.label.format(group_count=count)


def headline_fmt(headline: Headline):
    return fmt_seconds if headline.unit == "s" else fmt_count


def headline_ui(story: Story, current: RunFrames, base: RunFrames) -> list[dict]:
    """Cards: 'before -> after' against SGLang defaults on the same seed. Returns the numbers shown."""
    shown = []
    same = current.summary.config == base.summary.config
    st.markdown("#### Your settings vs SGLang defaults" + (" (you are on the defaults)" if same else ""))
    cols = st.columns(len(story.headlines))
    for col, headline in zip(cols, story.headlines, strict=True):
        now, before = headline_value(current, headline), headline_value(base, headline)
        value, delta = _card(headline, before, now, same)
        col.metric(headline_label(headline, current), value, delta, delta_color="inverse", border=True,
                   help=headline.help or None)
        shown.append({"label": headline_label(headline, current), "before": before, "after": now})
    with st.expander("p50 / p95 / p99 per group, before → after"):
        st.dataframe(group_table(current, base), hide_index=True, width="stretch")
    return shown


def _card(headline: Headline, before, now, same: bool) -> tuple[str, str | None]:
    """A card's value ('before → after', or one number when nothing moved) and its delta."""
    fmt = headline_fmt(headline)
    if same or now is None or before is None or abs(now - before) < 1e-9:
        return fmt(now), None
    diff = now - before
    pct = f" ({diff / before:+.1%})" if before and abs(diff / before) < 0.1 else (
        f" ({diff / before:+.0%})" if before else "")
    delta = f"{'-' if diff < 0 else '+'}{fmt(abs(diff))}{pct}" if headline.unit == "s" else f"{diff:+,}"
    return f"{fmt(before)} → {fmt(now)}", delta


def group_table(current: RunFrames, base: RunFrames) -> pd.DataFrame:
    rows = []
    for group, metrics in current.summary.metrics.groups.items():
        for metric, title in GROUP_METRICS.items():
            for stat in ("p50", "p95", "p99", "max"):
                now, was = metrics.value(metric, stat), base.summary.metrics.value(group, metric, stat)
                if now is None and was is None:
                    continue
                rows.append({"group": group, "metric": title, "stat": stat, "SGLang defaults": fmt_seconds(was),
                             "your settings": fmt_seconds(now),
                             "change": "" if now is None or was is None else f"{now - was:+.3f} s"})
    return pd.DataFrame(rows)
