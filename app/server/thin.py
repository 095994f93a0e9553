"""Fewer rows for the charts of a long log, never by hiding a stall. Pure functions: no Streamlit.

A production log the size limit accepts (5 MB) holds ~25,000 scheduler lines, five times what a chart may
embed (app.charts.phases.MAX_CHART_ROWS). Above that budget:

- a series over time (token usage, running / queued) keeps, per time bin, the line with the largest value,
  so a peak is never lost;
- Prefill lines keep every full chunk, and per time bin and kind the one with the most new tokens;
- on the pass timeline, a run of back-to-back full chunks becomes one bar (the stall, whole), consecutive
  Decode lines merge into one bar over the same stretch, and lone Prefill marks keep one per time bin.
"""

from __future__ import annotations

import math

import pandas as pd

from app.charts.phases import MAX_CHART_ROWS


def peak_per_bin(frame: pd.DataFrame, value: str, by: tuple[str, ...] = (), budget: int = MAX_CHART_ROWS,
                 at: str = "at", keep: pd.Series | None = None) -> pd.DataFrame:
    """At most ~`budget` rows: per time bin (and per `by` group) the row with the largest `value`. Rows
    marked in `keep` (e.g. full chunks) all stay while they fill at most half the budget."""
    if len(frame) <= budget:
        return frame
    if keep is not None and 0 < keep.sum() <= budget // 2:
        rest = peak_per_bin(frame[~keep], value, by, budget - int(keep.sum()), at)
        return pd.concat([frame[keep], rest]).sort_values(at, kind="stable").reset_index(drop=True)
    groups = frame.groupby(list(by)).ngroups if by else 1
    bins = max(budget // max(groups, 1), 1)
    low, high = float(frame[at].min()), float(frame[at].max())
    width = (high - low) / bins or 1.0
    binned = frame.assign(_bin=((frame[at] - low) / width).astype(int).clip(upper=bins - 1))
    keep = binned.groupby([*by, "_bin"])[value].idxmax()
    return frame.loc[sorted(keep)].reset_index(drop=True)


def merge_bars(rows: list[dict], label: str) -> dict:
    """Consecutive bars of one lane as one: first start to last end, tokens summed, batch range kept."""
    first, last = rows[0], rows[-1]
    return {**first, "end_at": last["end_at"], "duration_s": last["end_at"] - first["start_at"],
            "num_passes": sum(r["num_passes"] for r in rows),
            "num_new_tokens": sum(r["num_new_tokens"] for r in rows),
            "num_prefill_tokens": sum(r["num_prefill_tokens"] for r in rows),
            "num_prefill_rows": sum(r["num_prefill_rows"] for r in rows),
            "max_batch": max(r["max_batch"] for r in rows), "min_batch": min(r["min_batch"] for r in rows),
            "label": f"{label}: {first['label'].split(':')[0]} to {last['label'].split(':')[0]}"}


def merge_streaks(prefills: list[dict], is_streak: list[bool]) -> list[dict]:
    """Each run of back-to-back full chunks as one bar; other Prefill marks as they are."""
    out, run = [], []
    for row, streak in zip(prefills, is_streak, strict=True):
        if streak:
            run.append(row)
            continue
        if run:
            out.append(merge_bars([*run, row], f"{len(run) + 1} Prefill lines back to back"))
            run = []
            continue
        out.append(row)
    if run:
        out.append(merge_bars(run, f"{len(run)} Prefill lines back to back"))
    return out


def merge_runs(rows: list[dict], budget: int, label: str) -> list[dict]:
    """Consecutive bars grouped k at a time so at most `budget` remain (Decode lines cover their stretch)."""
    if len(rows) <= budget:
        return rows
    k = math.ceil(len(rows) / max(budget, 1))
    return [merge_bars(rows[i:i + k], f"{len(rows[i:i + k])} {label}") for i in range(0, len(rows), k)]


def one_mark_per_bin(rows: list[dict], budget: int) -> list[dict]:
    """Lone marks (never a stall: those are merged streaks, kept whole) thinned to one per time bin."""
    lone = [r for r in rows if r["num_passes"] == 1]
    if len(rows) <= budget or not lone:
        return rows
    low, high = rows[0]["start_at"], rows[-1]["start_at"]
    bins = max(budget - (len(rows) - len(lone)), 1)
    width = (high - low) / bins or 1.0
    seen, out = set(), []
    for row in rows:
        if row["num_passes"] > 1:
            out.append(row)
            continue
        b = int((row["start_at"] - low) / width)
        if b not in seen:
            seen.add(b)
            out.append(row)
    return out


def fit_passes(prefills: list[dict], is_streak: list[bool], decodes: list[dict],
               budget: int = MAX_CHART_ROWS) -> list[dict]:
    """The log's pass-timeline bars within `budget`, each stall (a run of full chunks) one whole bar."""
    if len(prefills) + len(decodes) <= budget:
        return prefills + decodes
    prefills = merge_streaks(prefills, is_streak)
    decodes = merge_runs(decodes, budget // 2, "Decode lines")
    return one_mark_per_bin(prefills, budget - len(decodes)) + decodes
