"""Metrics: pure functions of a run's requests. Each is defined once, in docs/metrics.md.

For request r with arrival a_r, first token f_r, token times t_r,1 < ... < t_r,n and finish e_r:
  TTFT_r    = f_r - a_r                         (ttft_s; not defined for a request that starts mid-reply)
  ITL       = every gap t_r,k+1 - t_r,k         (itl_s, pooled per token; a mid-reply stream's first gap
                                                 is measured from a_r, when it was already streaming)
  max ITL_r = the longest of r's gaps           (max_itl_s: the longest pause a reader sees)
  TPOT_r    = (e_r - f_r) / (n - 1)             (tpot_s, requests with n >= 2)
  E2E_r     = e_r - a_r                         (e2e_s)
  queue_r   = first scheduled - a_r             (queue_s)
  throughput = sum of tokens produced / (last finish - first arrival)   (output_throughput_tok_s)
  cache hit  = sum of cached prompt tokens / sum of prompt tokens, over the requests admitted, each at its
               first admission (prefix_cache_share; SGLang's cache_hit_rate counts every prefill batch)
Where the run models the server's front end (engine_model/frontend.py), the times are the client's: a
token's receive time, a finish when the last token is received, and each gap as bench_serving's default
backend counts it (a chunk of k tokens after a gap g: k gaps of g / k); max ITL_r stays the whole g.
"""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, ConfigDict

from engine_model.core import Request, RequestState
from engine_model.frontend import itls

STATS = ("mean", "p50", "p90", "p95", "p99", "max")
QUANTILES = {"p50": 50, "p90": 90, "p95": 95, "p99": 99}


class Typed(BaseModel):
    """A frozen result record: attributes in code, the same names as keys in the CLI's JSON."""

    model_config = ConfigDict(frozen=True, extra="forbid")


class Stats(Typed):
    """One metric's distribution; every field None when no request has the metric."""

    mean: float | None = None
    p50: float | None = None
    p90: float | None = None
    p95: float | None = None
    p99: float | None = None
    max: float | None = None


class GroupMetrics(Typed):
    """Every metric of docs/metrics.md over one set of requests (a group, a bucket, or all)."""

    num_requests: int
    num_finished: int
    num_rejected: int
    num_retracted: int
    num_output_tokens: int
    num_preempted: int = 0  # requests preempted at least once (priority scheduling)
    num_cached_tokens: int  # prompt tokens the radix cache held when each request was first admitted
    prefix_cache_share: float | None  # num_cached_tokens / the admitted requests' prompt tokens
    output_throughput_tok_s: float | None
    ttft_s: Stats
    itl_s: Stats
    max_itl_s: Stats
    tpot_s: Stats
    e2e_s: Stats
    queue_s: Stats

    def value(self, metric: str, stat: str | None = None) -> float | int | None:
        """One number: a count (`num_retracted`) or one statistic of a distribution (`ttft_s`, "p95")."""
        field = getattr(self, metric)
        return getattr(field, stat) if isinstance(field, Stats) else field


class Metrics(Typed):
    overall: GroupMetrics
    groups: dict[str, GroupMetrics]
    buckets: dict[str, GroupMetrics]  # by prompt length: "0-8191", "8192-32767", ">=32768"

    def value(self, group: str | None, metric: str, stat: str | None = None) -> float | int | None:
        """One number of one group (None: all requests); None when the run has no such group."""
        block = self.overall if group is None else self.groups.get(group)
        return None if block is None else block.value(metric, stat)


def summarize(values) -> Stats:
    """mean, p50, p90, p95, p99 and max (linear interpolation between order statistics)."""
    arr = np.asarray(values, dtype=float)
    if arr.size == 0:
        return Stats()
    quantiles = {name: float(np.percentile(arr, q)) for name, q in QUANTILES.items()}
    return Stats(mean=float(arr.mean()), **quantiles, max=float(arr.max()))


def seen(req: Request) -> list[float]:
    """Token times as the client sees them: after the server's front end (engine_model/frontend.py)
    where the run modelled it, else as the scheduler produced them."""
    return req.token_times if req.client_times is None else req.client_times


def finish(req: Request) -> float | None:
    """When the client has the whole reply (bench_serving's latency): its last token, as seen."""
    if req.state is not RequestState.FINISHED:
        return None
    if not req.client_times:
        return req.finished_at
    return max(req.finished_at, req.client_times[-1])


def gaps(req: Request) -> np.ndarray:
    """Inter-token latencies as bench_serving's default (`sglang`) backend counts them: a chunk's gap
    spread over its tokens. Without a front end every chunk is one token: the scheduler's gaps."""
    start = req.arrival_at if req.is_mid_reply else None
    if req.client_times is not None:
        return itls(req.client_times, start)
    times = req.token_times
    if start is not None and times:
        times = [start, *times]
    return np.diff(np.asarray(times, dtype=float)) if len(times) > 1 else np.empty(0)


def pauses(req: Request) -> np.ndarray:
    """Each token's wait since the token before it, as a reader sees it: tokens that arrive in one chunk
    wait 0 after the first (the chunk's gap is the first one's). A mid-reply stream counts from a_r."""
    times = seen(req)
    if req.is_mid_reply and times:
        times = [req.arrival_at, *times]
    return np.diff(np.asarray(times, dtype=float)) if len(times) > 1 else np.empty(0)


def ttft(req: Request) -> float | None:
    if req.is_mid_reply or not req.token_times:
        return None
    return seen(req)[0] - req.arrival_at


def max_itl(req: Request) -> float | None:
    """The longest pause a reader sees (a whole chunk's gap, not spread over its tokens)."""
    g = pauses(req)
    return float(g.max()) if g.size else None


def tpot(req: Request) -> float | None:
    if req.state is not RequestState.FINISHED or len(req.token_times) < 2:
        return None
    return (finish(req) - seen(req)[0]) / (len(req.token_times) - 1)


def e2e(req: Request) -> float | None:
    return finish(req) - req.arrival_at if req.state is RequestState.FINISHED else None


def queue(req: Request) -> float | None:
    return None if req.first_scheduled_at is None else req.first_scheduled_at - req.arrival_at


def group_metrics(reqs: list[Request]) -> GroupMetrics:
    def present(fn):
        return [v for v in map(fn, reqs) if v is not None]

    all_gaps = [g for r in reqs if (g := gaps(r)).size]
    finished = [r for r in reqs if r.state is RequestState.FINISHED]
    num_tokens = sum(len(r.token_times) for r in reqs)
    ends = [finish(r) for r in finished]
    span = (max(ends) - min(r.arrival_at for r in reqs)) if ends else 0.0
    admitted = [r for r in reqs if r.num_cached is not None]
    num_cached, num_prompt = sum(r.num_cached for r in admitted), sum(r.prompt_len for r in admitted)
    return GroupMetrics(
        num_requests=len(reqs),
        num_finished=len(finished),
        num_rejected=sum(r.state is RequestState.REJECTED for r in reqs),
        num_retracted=sum(r.num_retractions > 0 for r in reqs),
        num_preempted=sum(r.num_preemptions > 0 for r in reqs),
        num_output_tokens=num_tokens,
        num_cached_tokens=num_cached,
        prefix_cache_share=num_cached / num_prompt if num_prompt else None,
        output_throughput_tok_s=num_tokens / span if span > 0 else None,
        ttft_s=summarize(present(ttft)),
        itl_s=summarize(np.concatenate(all_gaps) if all_gaps else []),
        max_itl_s=summarize(present(max_itl)),
        tpot_s=summarize(present(tpot)),
        e2e_s=summarize(present(e2e)),
        queue_s=summarize(present(queue)),
    )


def bucket_label(prompt_len: int, edges: list[int]) -> str:
    lower = 0
    for edge in edges:
        if prompt_len < edge:
            return f"{lower}-{edge - 1}"
        lower = edge
    return f">={lower}"


def bucket_labels(edges: list[int]) -> list[str]:
    lows = [0, *edges]
    return [f"{lo}-{hi - 1}" for lo, hi in zip(lows, edges, strict=False)] + [f">={lows[-1]}"]


def all_metrics(reqs: list[Request], edges: list[int]) -> Metrics:
    """metrics.overall, metrics.groups.<group>, metrics.buckets.<prompt-length bucket>."""
    groups: dict[str, list[Request]] = {}
    for r in reqs:
        groups.setdefault(r.group, []).append(r)
    buckets: dict[str, list[Request]] = {label: [] for label in bucket_labels(edges)}
    for r in reqs:
        buckets[bucket_label(r.prompt_len, edges)].append(r)
    return Metrics(
        overall=group_metrics(reqs),
        groups={name: group_metrics(members) for name, members in groups.items()},
        buckets={label: group_metrics(members) for label, members in buckets.items() if members},
    )
