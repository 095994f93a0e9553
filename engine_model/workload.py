"""Turn a workload config into requests: explicit lists, groups with arrival patterns, closed-loop clients
and request traces. All randomness comes from the run's seeded `random.Random`.
"""

from __future__ import annotations

import math
import random
from collections import Counter, deque
from dataclasses import dataclass, field

from engine_model.config import (
    MAX_SIM_SECONDS,
    ClosedArrival,
    GroupConfig,
    Length,
    LengthDist,
    PoissonArrival,
    WorkloadConfig,
)
from engine_model.core import Request
from engine_model.errors import InputError

MAX_DRAWS = 1000  # lognormal draws outside [low, high] are redrawn, never clipped


@dataclass
class ClientPool:
    """A closed-loop client: `concurrency` requests in flight; a finish releases the next one."""

    name: str
    concurrency: int
    think_s: float
    start_at: float
    start_after: str | None
    queue: deque[Request] = field(default_factory=deque)
    num_in_flight: int = 0
    started: bool = False

    @property
    def is_done(self) -> bool:
        return self.started and not self.queue and self.num_in_flight == 0


@dataclass
class Workload:
    open_loop: list[Request]  # arrival times known in advance, sorted
    pools: list[ClientPool]
    num_requests: int


def draw(length: Length, rng: random.Random, where: str) -> int:
    if isinstance(length, int):
        if length < 1:
            raise InputError(where, f"must be a positive token count, got {length}")
        return length
    return draw_dist(length, rng, where)


def draw_dist(dist: LengthDist, rng: random.Random, where: str) -> int:
    if dist.dist == "uniform":
        return rng.randint(dist.low, dist.high)
    for _ in range(MAX_DRAWS):
        value = round(dist.median * math.exp(dist.sigma * rng.gauss(0.0, 1.0)))
        if dist.low <= value <= dist.high:
            return value
    raise InputError(where, f"lognormal(median={dist.median}, sigma={dist.sigma}) rarely falls in "
                            f"[{dist.low}, {dist.high}]")


# `Scheduler.init_req_max_new_tokens`: a request that carries no max_new_tokens gets 1 << 30, then the clip
# to max_req_len - prompt - 1 and to an empty pool (engine_model.scheduler.intake), which leaves it the
# whole context; admission then reserves min(that, 4096) x new_token_ratio for it (policy.PrefillAdder).
NO_MAX_NEW_TOKENS = 1 << 30


def client_max_new(asked: int | str | None, output_len: int) -> int:
    """The max_new_tokens a request carries: the reply's length ("reply", the default), SGLang's own bound
    when the client sends none ("none"), or the number the client sends."""
    if asked is None or asked == "reply":
        return output_len
    if asked == "none":
        return NO_MAX_NEW_TOKENS
    return asked


def group_requests(group: GroupConfig, index: int, rng: random.Random) -> list[Request]:
    where = f"workload.groups[{index}]"
    if group.num_return_logprob > group.count:
        raise InputError(f"{where}.num_return_logprob",
                         f"{group.num_return_logprob} is more than count {group.count}")
    width = max(2, len(str(group.count - 1)))
    reqs = []
    for i in range(group.count):
        output_len = draw(group.output_len, rng, f"{where}.output_len")
        if group.already_generated >= output_len:
            raise InputError(f"{where}.already_generated",
                             f"must be below output_len ({output_len}) so tokens remain")
        max_new = client_max_new(group.max_new_tokens, output_len)
        if max_new < output_len:
            raise InputError(f"{where}.max_new_tokens", f"{max_new} is below output_len {output_len}")
        reqs.append(Request(
            rid=group.name if group.count == 1 else f"{group.name}-{i:0{width}d}",
            group=group.name, arrival_at=0.0,
            prompt_len=draw(group.prompt_len, rng, f"{where}.prompt_len"), output_len=output_len,
            max_new_tokens=max_new, return_logprob=i < group.num_return_logprob, ignore_eos=group.ignore_eos,
            num_generated_before=group.already_generated, priority=group.priority,
        ))
    set_arrivals(group, reqs, rng)
    return reqs


def set_arrivals(group: GroupConfig, reqs: list[Request], rng: random.Random) -> None:
    arrival = group.arrival
    if isinstance(arrival, ClosedArrival):
        return
    if isinstance(arrival, PoissonArrival):
        at = arrival.start_at
        for req in reqs:
            req.arrival_at = at
            at += rng.expovariate(arrival.rate_per_s)
        return
    for i, req in enumerate(reqs):
        req.arrival_at = arrival.start_at + i * arrival.interval_s


def build(cfg: WorkloadConfig, rng: random.Random, *, max_requests: int,
          trace_requests: list[Request] = ()) -> Workload:
    pools = {c.name: ClientPool(c.name, c.concurrency, c.think_s, c.start_at, c.start_after)
             for c in cfg.clients}
    for name, pool in pools.items():
        if pool.start_after is not None and pool.start_after not in pools:
            raise InputError(f"workload.clients.{name}.start_after",
                             f"no client pool named {pool.start_after!r}")
    open_loop: list[Request] = list(trace_requests)
    members: dict[str, list[Request]] = {name: [] for name in pools}
    for i, group in enumerate(cfg.groups):
        reqs = group_requests(group, i, rng)
        if isinstance(group.arrival, ClosedArrival):
            if group.arrival.client not in pools:
                raise InputError(f"workload.groups[{i}].arrival.client",
                                 f"no client pool named {group.arrival.client!r}; "
                                 f"defined: {sorted(pools) or 'none'}")
            members[group.arrival.client].extend(reqs)
        else:
            open_loop.extend(reqs)
    for i, r in enumerate(cfg.requests):
        max_new = r.max_new_tokens or r.output_len
        if max_new < r.output_len or r.already_generated >= r.output_len:
            raise InputError(f"workload.requests[{i}]",
                             "needs max_new_tokens >= output_len > already_generated")
        open_loop.append(Request(rid=r.rid, group=r.group, arrival_at=r.arrival_at, prompt_len=r.prompt_len,
                                 output_len=r.output_len, max_new_tokens=max_new,
                                 return_logprob=r.return_logprob,
                                 ignore_eos=r.ignore_eos, num_generated_before=r.already_generated,
                                 prefix_group=r.prefix_group, priority=r.priority,
                                 prefix_blocks=r.hash_ids))
    for name, reqs in members.items():
        if cfg.clients and next(c for c in cfg.clients if c.name == name).shuffle:
            rng.shuffle(reqs)
        pools[name].queue.extend(reqs)
    num = len(open_loop) + sum(len(m) for m in members.values())
    if num == 0:
        raise InputError("workload", "no requests: add groups, requests or a trace")
    if num > max_requests:
        raise InputError("workload", f"{num} requests is above limits.max_requests ({max_requests})")
    rids = Counter([r.rid for r in open_loop] + [r.rid for m in members.values() for r in m])
    if len(rids) != num:
        dup = next(rid for rid, n in rids.items() if n > 1)
        raise InputError("workload", f"request id {dup!r} is used twice; group names and rids must be unique")
    open_loop.sort(key=lambda r: r.arrival_at)  # stable: equal times keep workload order
    return Workload(open_loop=open_loop, pools=list(pools.values()), num_requests=num)


def workload_trace(cfg: WorkloadConfig, seed: int):
    """`workload.trace` read as the run reads it: its requests, and every row it did not keep, by why."""
    from pathlib import Path

    from engine_model.traces import load_trace

    t = cfg.trace
    window = None
    if t.window_start_s or t.window_end_s is not None:
        window = (t.window_start_s, float("inf") if t.window_end_s is None else t.window_end_s)
    try:
        return load_trace(Path(t.path), fmt=t.fmt, window=window, speedup=t.speedup, sample=t.sample,
                          max_requests=t.max_requests, seed=seed)
    except InputError as err:
        raise InputError(f"workload.trace ({err.where})", err.problem) from None


def trace_requests(cfg: WorkloadConfig, seed: int) -> list[Request]:
    """Requests from `workload.trace` (Azure, Mooncake, BurstGPT or plain JSONL), arrivals as in the file."""
    if cfg.trace is None:
        return []
    t, trace = cfg.trace, workload_trace(cfg, seed)
    span = trace.requests[-1].arrival_at
    if span > MAX_SIM_SECONDS:
        raise InputError("workload.trace", f"its arrivals span {span:.3g} s after speedup {t.speedup:g}; "
                         f"they must lie within {MAX_SIM_SECONDS:.0e} s: set window_end_s, max_requests or a "
                         "larger speedup")
    width = len(str(len(trace.requests)))
    return [Request(rid=f"{t.group}-{i:0{width}d}", group=t.group, arrival_at=r.arrival_at,
                    prompt_len=r.prompt_len, output_len=r.output_len, max_new_tokens=r.output_len,
                    prefix_blocks=r.hash_ids)
            for i, r in enumerate(trace.requests)]
