"""What a rank tells the cluster. Each message carries the simulated time it takes effect, so the
cluster can deliver it in time order across workers whose clocks differ."""

from __future__ import annotations

from dataclasses import dataclass

from engine_model.core import Request

CHUNK = "chunk"  # prefill computed `extend` tokens of the request in [start_at, at]
ALLOCATED = "allocated"  # decode reserved the request's KV (pop_preallocated)
JOINED = "joined"  # decode committed the first token and the request joined the running batch
RETRACTED = "retracted"  # decode backed the request's KV up to host
RESUMED = "resumed"  # decode restored it from host
FINISHED = "finished"
REJECTED = "rejected"


@dataclass(frozen=True, slots=True)
class Message:
    kind: str
    req: Request
    at: float
    start_at: float = 0.0  # CHUNK: the pass start
    extend: int = 0  # CHUNK: tokens computed
    is_last: bool = False  # CHUNK: the prompt is fully prefilled
