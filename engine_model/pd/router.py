"""Which worker gets a request, and which DP rank inside it.

The router stands in front of both pools (sgl-router in PD mode): it picks one prefill and one decode
worker per request and draws the request's bootstrap room, a random integer in [0, 2^63) that both
servers use to find each other (sglang_router.mini_lb `_generate_bootstrap_room`; sgl-model-gateway
draws from the same range). Inside a worker the DP controller hands the request to one attention rank
by `--load-balance-method`, whose default `auto` resolves per role (`handle_load_balance_method`):
`follow_bootstrap_room` on prefill (rank = room % dp_size), `round_robin` on decode.
"""

from __future__ import annotations

import random

from engine_model.rules import mirrors

KINDS = ("round_robin", "random", "least_loaded", "power_of_two")
ROOM_BOUND = 2**63  # bootstrap rooms are drawn from [0, 2^63)
LOAD_BALANCE = ("auto", "round_robin", "follow_bootstrap_room")


class Router:
    def __init__(self, kind: str, rng: random.Random, rooms: random.Random):
        self.kind = kind
        self.rng = rng
        self.rooms = rooms  # its own stream, so drawing rooms moves no other random choice
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

    def bootstrap_room(self) -> int:
        """`_generate_bootstrap_room`: a uniform draw from [0, 2^63)."""
        return self.rooms.randrange(ROOM_BOUND)


def resolve_load_balance(method: str, role: str) -> str:
    """`handle_load_balance_method`: `auto` is follow_bootstrap_room on prefill, round_robin elsewhere."""
    if method != "auto":
        return method
    return "follow_bootstrap_room" if role == "prefill" else "round_robin"


class RankPicker:
    """`DataParallelController`: one worker's attention rank for each request it receives."""

    def __init__(self, num_ranks: int, method: str = "round_robin"):
        self.num_ranks = num_ranks
        self.method = method  # resolved: round_robin or follow_bootstrap_room
        self.num_sent = 0

    @mirrors("round_robin_scheduler", "follow_bootstrap_room_scheduler")
    def pick(self, room: int) -> int:
        """round_robin: the ranks in turn; follow_bootstrap_room: bootstrap_room % dp_size."""
        if self.method == "follow_bootstrap_room":
            return room % self.num_ranks
        rank = self.num_sent % self.num_ranks
        self.num_sent += 1
        return rank
