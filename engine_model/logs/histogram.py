"""A Prometheus histogram as SGLang exports it: cumulative counts at upper bounds, and what they tell.

Percentiles are interpolated inside a bucket, as Prometheus's `histogram_quantile` does: the observations
of a bucket are taken as spread evenly between its lower and upper bound. So a percentile is only known
to lie in its bucket; `Quantile` carries that bucket beside the interpolated value.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from dataclasses import dataclass

INF = math.inf
PERCENTILES = {"p50": 0.50, "p90": 0.90, "p95": 0.95, "p99": 0.99, "p99_9": 0.999}


@dataclass(frozen=True)
class Histogram:
    """One series: `counts[i]` observations at or below `bounds[i]`, and `counts[-1]` in all (+Inf)."""

    bounds: tuple[float, ...]  # finite upper bounds, increasing
    counts: tuple[float, ...]  # cumulative, one per bound and one for +Inf
    total: float | None  # the sum of the observed values; None when the scrape's _sum was not finite

    @property
    def count(self) -> float:
        return self.counts[-1]

    @property
    def mean(self) -> float | None:
        return self.total / self.count if self.total is not None and self.count > 0 else None

    def above(self, bound: float) -> float:
        """Observations greater than `bound` (a bucket bound of this histogram)."""
        return self.count - self.counts[self.bounds.index(bound)]

    def top_bucket(self) -> tuple[float, float] | None:
        """(lower, upper) of the highest bucket holding an observation; None when empty."""
        if self.count <= 0:
            return None
        i = bisect_left(self.counts, self.count)
        return bucket(self.bounds, i)


@dataclass(frozen=True)
class Quantile:
    """A percentile interpolated inside the bucket (lower, upper] it falls in; upper is inf above the last."""

    value: float
    lower: float
    upper: float

    @property
    def is_above_last(self) -> bool:
        return self.upper == INF


def bucket(bounds: tuple[float, ...], i: int) -> tuple[float, float]:
    upper = bounds[i] if i < len(bounds) else INF
    lower = bounds[i - 1] if i > 0 else min(0.0, upper)
    return lower, upper


def quantile(hist: Histogram, q: float) -> Quantile | None:
    """The q-quantile (0 < q < 1), as Prometheus's histogram_quantile computes it; None with no observation.

    Above the last finite bound the value is that bound (Prometheus does the same): it is a floor then.
    """
    if hist.count <= 0:
        return None
    rank = q * hist.count
    i = bisect_left(hist.counts, rank)
    lower, upper = bucket(hist.bounds, i)
    if upper == INF:
        return Quantile(lower, lower, INF)
    below = hist.counts[i - 1] if i > 0 else 0.0
    inside = hist.counts[i] - below
    if i == 0 and upper <= 0 or inside <= 0:
        return Quantile(upper, lower, upper)
    return Quantile(lower + (upper - lower) * (rank - below) / inside, lower, upper)


def minus(later: Histogram, earlier: Histogram) -> tuple[Histogram, bool]:
    """What was observed between two scrapes, and whether the series reset in between.

    A count that went down (the server restarted) or bounds that changed mean a reset: then the later
    scrape's counts are what accrued since, as Prometheus's `increase()` takes them.
    """
    pairs = list(zip(later.counts, earlier.counts, strict=False))
    if later.bounds != earlier.bounds or any(a < b for a, b in pairs):
        return later, True
    total = None if later.total is None or earlier.total is None else max(later.total - earlier.total, 0.0)
    counts = tuple(a - b for a, b in pairs)
    return Histogram(later.bounds, counts, total), False


def added(parts: list[Histogram]) -> Histogram | None:
    """Series with the same bounds added into one (e.g. streaming and not, two models); None if empty.

    Series whose bounds differ from the most-observed series' cannot be added; they are left out (the
    caller says so: `num_left_out`).
    """
    if not parts:
        return None
    main = max(parts, key=lambda h: h.count).bounds
    same = [h for h in parts if h.bounds == main]
    counts = tuple(map(sum, zip(*(h.counts for h in same), strict=True)))
    totals = [h.total for h in same]
    return Histogram(main, counts, None if None in totals else sum(totals))


def num_left_out(parts: list[Histogram]) -> int:
    if not parts:
        return 0
    main = max(parts, key=lambda h: h.count).bounds
    return sum(h.bounds != main for h in parts)
