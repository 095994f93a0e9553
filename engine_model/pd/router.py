"""Which worker gets a request, and which DP rank inside it.

The router stands in front of both pools (sgl-router in PD mode) and picks one prefill and one decode
worker per request. Inside a worker, the DP controller hands requests to its attention ranks in turn
(`DataParallelController`, load balance method `round_robin`, its default).
"""

from __future__ import annotations

import random

KINDS = ("round_robin", "random", "least_loaded", "power_of_two")


class Router:
    def __init__(self, kind: str, rng: random.Random):
        self.kind = kind
        self.rng = rng
        self.num_routed: dict[str, int] = {}  # per pool: requests routed so far (round-robin position)

    def pick(self, pool: str, loads: list[int]) -> int:
        """A worker index. loads[i]: requests worker i holds now (routed there and not yet done)."""
        turn = self.num_routed.get(pool, 0)
        self.num_routed[pool] = turn + 1
        if self.kind == "round_robin":
            return turn % len(loads)
        if self.kind == "random":
            return self.rng.randrange(len(loads))
        if self.kind == "least_loaded":
            return min(range(len(loads)), key=lambda i: (loads[i], i))
        first, second = self.rng.randrange(len(loads)), self.rng.randrange(len(loads))  # power of two choices
        return min((first, second), key=lambda i: (loads[i], i))


class RankPicker:
    """`DataParallelController.round_robin_scheduler`: the worker's attention ranks in turn."""

    def __init__(self, num_ranks: int):
        self.num_ranks = num_ranks
        self.num_sent = 0

    def pick(self) -> int:
        rank = self.num_sent % self.num_ranks
        self.num_sent += 1
        return rank
