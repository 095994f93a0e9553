"""PD against what a person runs today, on the same GPUs: the two waits per prompt-length bucket.

Seed 000 ends on the question a buyer has to answer: which request they are willing to make wait, and
whether the metric that gets worse is one their users notice. So a PD comparison leads with one verdict per
allocation policy against today's engine(s) on the same GPUs, bucket by bucket, for both waits:

  first token   p95 of TTFT (docs/metrics.md `ttft_s`) over the bucket's requests
  pause         the longest gap any of the bucket's requests saw (`max_itl_s` max), and the p99 gap (`itl_s`)

over one population, the run's `Summary.measured` (the benchmark client's requests where the workload has
one, else every request), the same on both sides. A policy SGLang would not start carries its refusal
instead of numbers. Pure functions of run summaries; the words are the app's (app/present/verdict.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from engine_model.metrics import GroupMetrics

Side = Literal["better", "worse", "same", "unknown"]
SAME = 0.05  # two values within 5 % of each other are the same wait (an assumption, like the checklist's)


@dataclass(frozen=True)
class Waits:
    """One bucket's two waits on one deployment."""

    num_requests: int
    ttft_p95: float | None
    longest_gap: float | None
    itl_p99: float | None

    @classmethod
    def of(cls, m: GroupMetrics | None) -> Waits | None:
        if m is None:
            return None
        return cls(m.num_requests, m.ttft_s.p95, m.max_itl_s.max, m.itl_s.p99)


def side(today: float | None, pd: float | None) -> Side:
    """Whether PD's value of a lower-is-better wait is better, worse or the same as today's."""
    if today is None or pd is None:
        return "unknown"
    if abs(pd - today) <= SAME * max(abs(today), abs(pd)):
        return "same"
    return "better" if pd < today else "worse"


@dataclass(frozen=True)
class Bucket:
    """One prompt-length bucket: today's waits beside PD's (None: no request of the bucket on that side)."""

    label: str  # the engine's bucket label, "0-8191"
    today: Waits | None
    pd: Waits | None

    @property
    def first_token(self) -> Side:
        return side(self.today and self.today.ttft_p95, self.pd and self.pd.ttft_p95)

    @property
    def pause(self) -> Side:
        return side(self.today and self.today.longest_gap, self.pd and self.pd.longest_gap)


@dataclass(frozen=True)
class Verdict:
    """One allocation policy against today: per bucket, and output throughput; or why it cannot start."""

    policy: str
    buckets: tuple[Bucket, ...] = ()
    throughput: tuple[float | None, float | None] = (None, None)  # today, PD (output tokens/s)
    refused: str | None = None  # SGLang's refusal of this deployment under the policy, with the fix
    fixed: str = ""  # the refusal's fix it ran on instead, in words ("": the comparison's own deployment)

    @property
    def runs(self) -> bool:
        return self.refused is None


def verdict(policy: str, today, pd) -> Verdict:
    """`today`, `pd`: run summaries (engine_model.Summary) of the same requests."""
    a, b = today.measured, pd.measured
    labels = [label for label in a.buckets if label in b.buckets] + [
        label for label in b.buckets if label not in a.buckets]
    buckets = tuple(Bucket(label, Waits.of(a.buckets.get(label)), Waits.of(b.buckets.get(label)))
                    for label in labels)
    return Verdict(policy, buckets, (a.overall.output_throughput_tok_s, b.overall.output_throughput_tok_s))


def refused(policy: str, reason: str) -> Verdict:
    return Verdict(policy, refused=reason)
