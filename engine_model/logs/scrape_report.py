"""What a set of scrapes says: latency tails from the histograms, what happened between scrapes, gauges.

One scrape holds everything since the server started. Two or more: each interval is the later scrape
minus the earlier (a counter that went down was reset, and the later counts are what accrued since, as
Prometheus's `increase()` reads them), and the window is the sum of the intervals. Percentiles are
interpolated inside buckets (`histogram.quantile`); each carries its bucket.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine_model.logs.histogram import PERCENTILES, Histogram, Quantile, added, minus, num_left_out, quantile
from engine_model.logs.scrape import COUNTERS, GAUGES, HISTOGRAMS, Labels, Scrape, ScrapeSet

LONG_GAP_S = 0.5  # an inter-token gap a reader notices (an assumption); counted above the bound below it
SCHEDULER_SIDE = {"queue_time_s"}  # the others are the tokenizer's (facts §8.5)
SUMMED = {"num_running_reqs", "num_queue_reqs", "gen_throughput", "num_used_tokens", "max_total_num_tokens",
          "num_retracted_reqs", "num_paused_reqs"}  # added over DP ranks; the others: the highest rank's
NAMES = dict(HISTOGRAMS)


@dataclass(frozen=True)
class Tail:
    """One histogram over a window: how many, the mean, interpolated percentiles and the longest bucket."""

    count: float
    mean: float | None
    quantiles: dict[str, Quantile | None]  # p50, p90, p95, p99
    top: tuple[float, float] | None  # the highest bucket holding an observation
    long_bound: float | None  # the largest bucket bound at or below LONG_GAP_S
    num_long: float  # observations above long_bound


@dataclass(frozen=True)
class Interval:
    """What happened between two scrapes (index: the later one's)."""

    index: int
    start_at: float | None
    end_at: float | None
    tails: dict[str, Tail]  # by report name: itl_s, ttft_s, ...
    counters: dict[str, float]  # increase
    gauges: dict[str, float]  # at the later scrape
    reset: bool


@dataclass(frozen=True)
class MetricsReport:
    num_scrapes: int
    window: str  # in words: since the server started, or between the first and last scrape
    tails: dict[str, Tail]
    counters: dict[str, float]  # over the window
    gauges: dict[str, list[tuple[float | None, float]]]  # (scrape time, value) per scrape
    intervals: list[Interval]
    notes: list[str]


def tail_of(hist: Histogram | None) -> Tail | None:
    if hist is None or hist.count <= 0:
        return None
    low = [b for b in hist.bounds if b <= LONG_GAP_S]
    bound = low[-1] if low else None
    return Tail(hist.count, hist.mean, {name: quantile(hist, q) for name, q in PERCENTILES.items()},
                hist.top_bucket(), bound, hist.above(bound) if bound is not None else hist.count)


def is_rank_zero(labels: Labels) -> bool:
    """The scheduler rank SGLang logs stats on: every *_rank label 0 but dp_rank; a priority total ('')."""
    return all(v in ("0", "") for k, v in labels if k.endswith("_rank") and k != "dp_rank") and all(
        v == "" for k, v in labels if k == "priority")


def family(scrape: Scrape, name: str, report_name: str) -> list[Histogram]:
    series = scrape.histograms.get(name, {})
    if report_name in SCHEDULER_SIDE:
        return [h for labels, h in series.items() if is_rank_zero(labels)]
    return list(series.values())


def gauge_value(scrape: Scrape, name: str) -> float | None:
    values = [v for labels, v in scrape.gauges.get(name, {}).items() if is_rank_zero(labels)]
    if not values:
        return None
    return sum(values) if name in SUMMED else max(values)


def between(later: Scrape, earlier: Scrape | None) -> tuple[dict[str, list[Histogram]], dict, bool]:
    """Per histogram family, the series' differences; per counter, its increase; whether anything reset."""
    hists, counters, reset = {}, {}, False
    for name, report_name in HISTOGRAMS:
        parts = []
        before = earlier.histograms.get(name, {}) if earlier else {}
        for labels, hist in later.histograms.get(name, {}).items():
            if report_name in SCHEDULER_SIDE and not is_rank_zero(labels):
                continue
            diff, was_reset = minus(hist, before[labels]) if labels in before else (hist, False)
            parts.append(diff)
            reset |= was_reset
        hists[report_name] = parts
    for name in COUNTERS:
        before = earlier.counters.get(name, {}) if earlier else {}
        total = 0.0
        for labels, value in later.counters.get(name, {}).items():
            old = before.get(labels, 0.0)
            reset |= value < old
            total += value - old if value >= old else value
        counters[name] = total
    return hists, counters, reset


def report(found: ScrapeSet) -> MetricsReport:
    scrapes, notes = found.scrapes, []
    intervals = []
    for earlier, later in zip(scrapes, scrapes[1:], strict=False):
        hists, counters, reset = between(later, earlier)
        intervals.append(Interval(later.index, earlier.at, later.at,
                                  {k: t for k, parts in hists.items() if (t := tail_of(added(parts)))},
                                  counters, gauges_at(later), reset))
    window_parts: dict[str, list[Histogram]] = {}
    if len(scrapes) == 1:
        window_parts, counters, _ = between(scrapes[0], None)
        window = "since the server started (one scrape)"
    else:
        for earlier, later in zip(scrapes, scrapes[1:], strict=False):
            hists, _, _ = between(later, earlier)
            for key, parts in hists.items():
                window_parts.setdefault(key, []).extend(parts)
        counters = {name: sum(i.counters[name] for i in intervals) for name in COUNTERS}
        window = f"between the first and the last of {len(scrapes)} scrapes"
    notes += [f"counters went down between scrapes {i.index - 1} and {i.index} (a restart?): that interval "
              "counts what accrued since the reset" for i in intervals if i.reset]
    notes += label_notes(scrapes)
    tails = {}
    for _, report_name in HISTOGRAMS:
        parts = window_parts.get(report_name, [])
        tails[report_name] = tail_of(added(parts))
        if num_left_out(parts):
            notes.append(f"{report_name}: {num_left_out(parts)} series with other bucket bounds left out")
    gauges = {name: [(s.at, v) for s in scrapes if (v := gauge_value(s, name)) is not None]
              for name in GAUGES}
    return MetricsReport(len(scrapes), window, {k: t for k, t in tails.items() if t}, counters,
                         {k: v for k, v in gauges.items() if v}, intervals, notes)


def gauges_at(scrape: Scrape) -> dict[str, float]:
    return {name: v for name in GAUGES if (v := gauge_value(scrape, name)) is not None}


def label_notes(scrapes: list[Scrape]) -> list[str]:
    """Several models or DP ranks in the scrapes: how they were combined."""
    models, dp_ranks = set(), set()
    for scrape in scrapes:
        for series in [*scrape.histograms.values(), *scrape.gauges.values()]:
            for labels in series:
                found = dict(labels)
                models.add(found.get("model_name"))
                dp_ranks.add(found.get("dp_rank"))
    notes = []
    models, dp_ranks = models - {None}, dp_ranks - {None}
    if len(models) > 1:
        notes.append(f"{len(models)} models ({', '.join(sorted(models))}): their histograms are added")
    if len(dp_ranks) > 1:
        notes.append(f"{len(dp_ranks)} DP ranks: requests and throughput are added over them; token usage "
                     "and other ratios are the highest rank's")
    return notes


def streaming_share(found: ScrapeSet) -> tuple[float, float] | None:
    """(streamed, not streamed) requests finished over the scrapes, from num_requests_total{is_streaming}."""
    if not found.scrapes:
        return None
    first, last = found.scrapes[0], found.scrapes[-1]
    counts = {"true": 0.0, "false": 0.0}
    for labels, value in last.counters.get("num_requests", {}).items():
        old = first.counters.get("num_requests", {}).get(labels, 0.0) if len(found.scrapes) > 1 else 0.0
        key = dict(labels).get("is_streaming")
        if key in counts:
            counts[key] += value - old if value >= old else value
    return (counts["true"], counts["false"]) if sum(counts.values()) else None
