"""The numbers a story quotes, computed from its runs: headline values and cards, the price of a change, the
percentile trap, and tour narration with its figures filled in. Pure functions: no Streamlit. Every surface
(the page, an exported image, the standalone page, the slides and their notes) takes its numbers and words
from here, so they cannot disagree."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from app.charts.frames import RunFrames
from app.charts.words import NO_TOKEN
from app.present.fmt import fmt_count, fmt_seconds, fmt_share, pair, seconds_finer
from app.story import cursor
from engine_model import Headline, Ranged, Story

TRAP_RATIO = 10  # the longest pause at least this many times p99: p99 hides the stall
FIGURE = re.compile(r"\{(before|now):([\w-]+)\.(\w+)(?:\.(\w+))?\}")


def headline_value(run: RunFrames, headline: Headline):
    return run.summary.metrics.value(headline.group, headline.metric, headline.stat)


def headline_label(headline: Headline, run: RunFrames) -> str:
    count = run.summary.metrics.value(headline.group or "", "num_requests")
    return headline.label.format(group_count="" if count is None else count)


def headline_fmt(headline: Headline) -> Callable[[float | None], str]:
    return fmt_seconds if headline.unit == "s" else fmt_count


def card(before, now, fmt, same: bool = False, is_count: bool = False) -> tuple[str, str | None]:
    """A card's value ('before → after', or one number when nothing moved) and its delta. Numbers that print
    alike get one more digit; alike even then, they read as one number with no delta (never "↓ -0"). A
    number and its unit never part: a narrow card wraps at the arrow, never inside "18.6 s"."""
    if same or now is None or before is None or abs(now - before) < 1e-9:
        return whole(fmt(now)) if now is not None else NO_TOKEN, None
    shown_before, shown_now, unchanged = (whole(v) if isinstance(v, str) else v
                                          for v in pair(before, now, fmt, FINER.get(fmt)))
    if unchanged:
        return shown_now, None
    diff = now - before
    if is_count:
        return f"{shown_before} → {shown_now}", f"{diff:+,}"
    pct = f" ({diff / before:+.1%})" if before and abs(diff / before) < 0.1 else (
        f" ({diff / before:+.0%})" if before else "")
    return f"{shown_before} → {shown_now}", f"{'-' if diff < 0 else '+'}{fmt(abs(diff))}{pct}"


def split_stall(headline: Headline, before: RunFrames, after: RunFrames) -> str:
    """Beside a percentile gap that rose because a stall was split: one long freeze became many short gaps,
    so more of the gaps are long enough to reach p95/p99 while the longest pause fell. "" otherwise (the
    card then reads as any other: a rise is worse)."""
    if headline.metric != "itl_s" or not (headline.stat or "").startswith("p") or headline.group is None:
        return ""
    rose = _rose(before, after, headline.group, "itl_s", headline.stat, by=SPLIT_RISE)
    fell = _rose(after, before, headline.group, "max_itl_s", "max")
    if not (rose and fell):
        return ""
    was, now = (run.summary.metrics.value(headline.group, "max_itl_s", "max") for run in (before, after))
    return f"a stall split into short gaps (longest pause {fmt_seconds(was)} → {fmt_seconds(now)})"


SPLIT_RISE = 1.5  # a percentile at least this many times higher: the split stall moved it, not noise


def _rose(before: RunFrames, after: RunFrames, group: str, metric: str, stat: str, by: float = 1.0) -> bool:
    was, now = (run.summary.metrics.value(group, metric, stat) for run in (before, after))
    return was is not None and now is not None and now > was * by + 1e-9


def whole(text: str) -> str:
    """A number with its unit as one unbreakable word ("18.6\u00a0s")."""
    return text.replace(" ", "\u00a0")


@dataclass(frozen=True)
class HeadlineRow:
    """One headline number as every surface shows it: its label, SGLang's defaults, this setting, the card."""

    label: str
    before: str
    now: str
    card: str
    delta: str | None
    band: str = ""  # "5.8–9.8 s": this setting across its GPU's attention evidence (engine_model.band), or ""
    why: str = ""  # beside a percentile that rose because a stall was split (`split_stall`), or ""

    @property
    def now_banded(self) -> str:
        """This setting's number with its band and why it rose (a split stall), as a table or a sentence
        shows it."""
        said = f"{self.now} (range {self.band})" if self.band else self.now
        return f"{said} ({self.why})" if self.why else said


def headline_rows(story: Story, current: RunFrames, base: RunFrames,
                  ranges: Ranged | None = None) -> list[HeadlineRow]:
    """Each headline as every surface shows it; with `ranges` (engine_model.band.ranged of the current
    setting's scenario), each number that moves across the attention evidence carries its band."""
    same = current.summary.config == base.summary.config
    rows = []
    for h in story.headlines:
        fmt, now, before = headline_fmt(h), headline_value(current, h), headline_value(base, h)
        value, delta = card(before, now, fmt, same, h.unit == "count")
        why = split_stall(h, base, current) if delta else ""
        rows.append(HeadlineRow(headline_label(h, current), *shown_pair(fmt, before, now, same), value,
                                delta, band_text(ranges, h, now), why))
    return rows


def shown_pair(fmt, before, now, same: bool = False) -> tuple[str, str]:
    """Two numbers side by side as the app's cards print them (`card`): one more digit where they differ
    but would print alike ("12.60 s", "12.61 s", not "12.6 s" twice)."""
    if same or before is None or now is None:
        return _shown(fmt, before), _shown(fmt, now)
    shown_before, shown_now, _ = pair(before, now, fmt, FINER.get(fmt))
    return shown_before, shown_now


def band_text(ranges: Ranged | None, headline: Headline, now) -> str:
    """'5.8–9.8 s' (the unit once), or "" where the number does not move across the band."""
    if ranges is None:
        return ""
    found = ranges.range_of(now, lambda s: s.metrics.value(headline.group, headline.metric, headline.stat))
    if found is None:
        return ""
    fmt = headline_fmt(headline)
    lo, hi = fmt(found[0]), fmt(found[1])
    if lo == hi:
        return ""
    unit_lo, unit_hi = lo.rpartition(" ")[2], hi.rpartition(" ")[2]
    if unit_lo == unit_hi and " " in lo:
        lo = lo.rpartition(" ")[0]
    return f"{lo}–{hi}"


def _shown(fmt, value) -> str:
    return NO_TOKEN if value is None else fmt(value)


# -- the price of a change ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Price:
    label: str
    before: float | None
    after: float | None
    fmt: Callable[[float | None], str]
    better: str  # "higher" | "lower"
    help: str = ""


def fmt_rate(value: float | None) -> str:
    """Tokens per second; the unit is in the card's label, so 'before → after' fits a card."""
    return "—" if value is None else f"{value:,.0f}"


def rate_finer(value: float | None) -> str:
    return "—" if value is None else f"{value:,.1f}"


FINER = {fmt_seconds: seconds_finer, fmt_rate: rate_finer}  # each formatter's one-more-digit form


OUTPUT_LABEL = "Output at this load, tokens/s"  # what the offered load got, never read as the GPU's capacity


def prices(story: Story, before: RunFrames, after: RunFrames) -> list[Price]:
    """What a change costs beside what it gains: output throughput, run length, each group's median reply."""
    out = [Price(OUTPUT_LABEL, before.summary.metrics.overall.output_throughput_tok_s,
                 after.summary.metrics.overall.output_throughput_tok_s, fmt_rate, "higher",
                 "Tokens written per second for the requests this story sends, from the first arrival to the "
                 "last reply's end: the throughput of the offered load (a light load gives a low number), "
                 "not what the GPU could do flat out."),
           Price("Run length", before.summary.end_at, after.summary.end_at, fmt_seconds, "lower",
                 "Until the last request finished.")]
    for group in after.summary.metrics.groups:
        out.append(Price(f"Reply time, {group} (median)", before.summary.metrics.value(group, "e2e_s", "p50"),
                         after.summary.metrics.value(group, "e2e_s", "p50"), fmt_seconds, "lower",
                         "From a request's arrival to its last token; the median over the group."))
    return out


# -- the percentile trap -----------------------------------------------------------------------------
def possessive(group: str) -> str:
    return f"{group}'" if group.endswith("s") else f"{group}'s"


def _stalls(run: RunFrames, group: str) -> tuple[int, int]:
    """(gaps at or over the run's stall threshold, every gap) of one group."""
    total = int(run.itl_hist.loc[run.itl_hist["group"] == group, "count"].sum()) if len(run.itl_hist) else 0
    return int((run.stalls["group"] == group).sum()), total


def _share(run: RunFrames, group: str) -> str:
    long, total = _stalls(run, group)
    share = long / total if total else 0.0
    seen = "under 1 %, too few for p99 to see" if share < 0.01 else "1 % or more, so p99 lands on them"
    return (f"{long:,} of {total:,} gaps ({share * 100:.2g} %) last {run.stall_threshold_s:g} s or more "
            f"— {seen}")


def _hides(run: RunFrames, group: str) -> bool:
    p99, longest = (run.summary.metrics.value(group, "itl_s", s) for s in ("p99", "max"))
    return bool(p99 and longest and longest >= TRAP_RATIO * p99)


def percentile_trap(group: str, before: RunFrames, after: RunFrames) -> str | None:
    """One sentence when, in either run, the group's longest pause is at least TRAP_RATIO times its p99 gap:
    p99 then says nothing about the stall, and a p99 that rises can hide a stall that shrank. None
    otherwise."""
    if not (_hides(before, group) or _hides(after, group)):
        return None
    value = after.summary.metrics.value
    p99, longest = fmt_seconds(value(group, "itl_s", "p99")), fmt_seconds(value(group, "max_itl_s", "max"))
    who = possessive(group)
    if before.summary.config == after.summary.config:
        return (f"Read p99 with care: the {who} p99 gap between tokens is {p99}, yet their longest pause is "
                f"{longest}: {_share(after, group)}.")
    was = before.summary.metrics.value
    return (f"Read p99 with care: the {who} p99 gap went {fmt_seconds(was(group, 'itl_s', 'p99'))} → {p99} "
            f"while their longest pause went {fmt_seconds(was(group, 'max_itl_s', 'max'))} → {longest}. "
            f"Before, {_share(before, group)}; now {_share(after, group)}.")


# -- tour narration ----------------------------------------------------------------------------------
CURSOR = "cursor"  # "{now:cursor.duration_s}": the pass under the step's cursor, as the step-through shows it


def figure_value(run: RunFrames, group: str, metric: str, stat: str | None, at: tuple | None = None):
    if group == CURSOR:
        if at is None or metric not in run.iterations:
            raise KeyError(f"{group}.{metric}: no cursor, or the pass has no such number")
        return float(run.iterations.iloc[cursor.resolve(run.iterations, at)][metric])
    try:
        value = run.summary.metrics.value(None if group == "all" else group, metric, stat)
    except AttributeError:
        value = None
    if value is None:
        raise KeyError(f"{group}.{metric}.{stat}: this run has no such number")
    return value


def figure(run: RunFrames, group: str, metric: str, stat: str | None, at: tuple | None = None) -> str:
    """One number of a run as the narration quotes it: seconds for durations, a count otherwise."""
    value = figure_value(run, group, metric, stat, at)
    return figure_fmt(metric)[0](value)


def figure_fmt(metric: str) -> tuple:
    """How a metric prints in narration, and with one more digit: seconds, a share, or a count."""
    if metric.endswith("_s"):
        return fmt_seconds, seconds_finer
    return (fmt_share, None) if metric.endswith("_share") else (fmt_count, None)


# "{before:X} → {now:X}" or "from {before:X} to {now:X}": one number, before and now
PAIR = re.compile(r"\{before:([\w-]+)\.(\w+)(?:\.(\w+))?\}(\s*(?:→|to)\s*)\{now:\1\.\2(?:\.\3)?\}")


def figure_pair(before: RunFrames, now: RunFrames, group: str, metric: str, stat: str | None,
                joint: str) -> str:
    """Before and now of one number: one more digit where they print alike but differ, and "(unchanged)"
    where they are alike even then, so narration never reads "12.9 s → 12.9 s" as a change."""
    a, b = figure_value(before, group, metric, stat), figure_value(now, group, metric, stat)
    fmt, finer = figure_fmt(metric)
    shown_a, shown_b, unchanged = pair(a, b, fmt, finer)
    return f"{shown_a}{joint}{shown_b}" + (" (unchanged)" if unchanged else "")


class NarrationError(ValueError):
    """A narration names a figure the runs do not have, or holds a placeholder nobody fills."""


LEFT_OVER = re.compile(r"\{[^{}]*\}")


def narrate(say: str, story: Story, before: RunFrames, now: RunFrames, at: tuple | None = None) -> str:
    """A tour step's narration with its figures filled in from the runs on screen (see
    engine_model.stories); `at`: the step's cursor (TourStep.cursor), for the figures of the pass under it
    (`{now:cursor.duration_s}`: what the step-through's panel beside the words reads). Raises NarrationError
    rather than print a placeholder."""
    runs = {"before": before, "now": now}
    try:
        text = PAIR.sub(lambda m: figure_pair(before, now, m[1], m[2], m[3], m[4]), say)
        text = FIGURE.sub(lambda m: figure(runs[m[1]], m[2], m[3], m[4], at), text)
    except KeyError as err:
        raise NarrationError(f"{story.key}: {err.args[0]}") from None
    trap = percentile_trap(story.stream_group, before, now) or ""
    text = re.sub(r"\s+", " ", text.replace("{trap}", trap)).strip()
    if LEFT_OVER.search(text):
        raise NarrationError(f"{story.key}: {LEFT_OVER.search(text)[0]} is not a figure narration can fill "
                             "({now:GROUP.METRIC.STAT}, {before:…} or {trap})")
    return text
