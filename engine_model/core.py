"""The vocabulary of the model. Read this file first; the rest follows from it.

request    one client request: a prompt, then a reply of `output_len` tokens.
iteration  one scheduler decision and at most one forward pass (SGLang's `event_loop_normal` turn).
pass kind  prefill (extend), decode, mixed (a prefill pass that also carries one decode row per running
           request) or idle (nothing to run).
row        one request inside a forward pass: `extend` tokens computed now over `past_kv` tokens already
           in KV. A decode row has extend 1.
chunk      the part of one prompt prefilled in one pass.
KV slot    one token of KV cache. SGLang counts its pool in tokens (page size 1 by default).
retraction SGLang's word for evicting a running request back to the waiting queue.

Timestamps end in `_at` and durations in `_s`, both in seconds of simulated time; counts start `num_`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


def count(num: int, noun: str, plural: str = "") -> str:
    """`num` and its noun, singular or plural, with thousands separators: count(1, "request") ->
    '1 request', count(91808, "token") -> '91,808 tokens'. The plural is noun + 's' unless given."""
    return f"{num:,} {noun if num == 1 else (plural or noun + 's')}"


class RequestState(Enum):
    PENDING = "pending"  # not yet at the scheduler
    WAITING = "waiting"  # in the waiting queue (new or retracted)
    PREFILLING = "prefilling"  # the chunked request: some chunks done, more to come
    RUNNING = "running"  # in the running (decode) batch
    FINISHED = "finished"
    REJECTED = "rejected"


class PassKind(Enum):
    PREFILL = "prefill"
    DECODE = "decode"
    MIXED = "mixed"
    IDLE = "idle"


@dataclass(eq=False, slots=True)
class Request:
    """One request and its progress. The scheduler mutates it; the trace keeps what happened."""

    rid: str
    group: str
    arrival_at: float
    prompt_len: int
    output_len: int  # the real reply length: the reply ends here, as with EOS
    max_new_tokens: int  # the budget SGLang reserves memory against (>= output_len)
    return_logprob: bool = False
    ignore_eos: bool = False
    num_generated_before: int = 0  # tokens already streamed before the run began ("mid-reply")
    prefix_group: str | None = None  # requests of one group share their prompt's leading tokens
    priority: int | None = None  # SGLang's per-request priority (engine_model/priority.py); None: none sent
    prefix_blocks: tuple[int, ...] = ()  # Mooncake's hash_ids: equal ids are equal 512-token prompt blocks

    state: RequestState = RequestState.PENDING
    kv_len: int = 0  # tokens of this request held in KV now
    token_times: list[float] = field(default_factory=list)  # one timestamp per token produced in the run
    client_times: list[float] | None = None  # when the client receives each token (engine_model/frontend.py)
    num_retractions: int = 0
    num_preemptions: int = 0  # times a higher-priority request took its place (preempt_to_schedule)
    num_cached: int | None = None  # prompt tokens the radix cache held at its first admission
    queued_at: float | None = None  # when it last entered the waiting queue
    first_scheduled_at: float | None = None
    finished_at: float | None = None
    reject_reason: str | None = None
    spans: list[tuple[str, float, float]] = field(default_factory=list)  # PD: (phase, start_at, end_at)
    num_generated: int = -1  # SGLang's len(output_ids): tokens of the reply so far (set in __post_init__)

    def __post_init__(self) -> None:
        self.num_generated = self.num_generated_before + len(self.token_times)

    def reject(self, reason: str, at: float) -> None:
        self.state, self.reject_reason, self.finished_at = RequestState.REJECTED, reason, at

    def add_token(self, at: float) -> None:
        self.token_times.append(at)
        self.num_generated += 1

    @property
    def is_mid_reply(self) -> bool:
        return self.num_generated_before > 0

    @property
    def fill_len(self) -> int:
        """Tokens a prefill must put in KV: the prompt plus any reply kept through a retraction."""
        return self.prompt_len + self.num_generated

    @property
    def num_uncomputed(self) -> int:
        """SGLang's extend_input_len for the next prefill of this request."""
        return self.fill_len - self.kv_len

    @property
    def remaining_max_new(self) -> int:
        return max(self.max_new_tokens - self.num_generated, 0)

    @property
    def is_done(self) -> bool:
        return self.num_generated >= self.output_len


@dataclass(frozen=True, slots=True)
class Row:
    """One prefill row of a pass: `extend` tokens computed over `past_kv` tokens already in KV."""

    rid: str
    extend: int
    past_kv: int


@dataclass(frozen=True, slots=True)
class Retraction:
    """A decode retraction (SGLang `ScheduleBatch.retract_decode`)."""

    at: float
    before_iteration: int
    rids: tuple[str, ...]
    num_generated: tuple[int, ...]
    num_running_before: int
    num_running_after: int
    ratio_before: float
    ratio_after: float
    kv_free_before: int
    kv_free_after: int


@dataclass(slots=True)
class Iteration:
    """What one scheduler iteration decided and what its forward pass did.

    The trace is append-only: nothing assigns to an iteration once it is recorded. (It is not a frozen
    dataclass because a frozen one's __init__ sets each of its 19 fields through object.__setattr__,
    which cost a fifth of a decode pass's simulation time; docs/performance.md.)"""

    index: int
    kind: PassKind
    start_at: float
    end_at: float
    prefill_rows: tuple[Row, ...]  # in batch order; the continuing chunk first
    decode_rids: tuple[str, ...]  # decode rows (each 1 token), in batch order
    decode_past_kv: int  # sum of past_kv over the decode rows
    reason: str  # why this pass, in plain words
    mirrors: str  # the SGLang function whose rule decided it
    chunked_rid: str | None  # the request left half-prefilled after this pass
    finished_rids: tuple[str, ...]
    kv_used: int  # KV slots in use after the pass's allocation
    kv_capacity: int
    num_waiting: int  # waiting queue length at launch
    num_running: int  # running (decode) batch size at scheduling time
    new_token_ratio: float
    retraction: Retraction | None = None
    kv_reserved: int = 0  # PD decode: slots reserved for requests still in prefill or transfer
    wasted_rids: tuple[str, ...] = ()  # overlap: decode rows of requests that had already finished (no token)

    @property
    def duration_s(self) -> float:
        return self.end_at - self.start_at

    @property
    def num_new_tokens(self) -> int:
        """Tokens computed by the pass: prefill extends plus one per decode row."""
        return sum(row.extend for row in self.prefill_rows) + len(self.decode_rids)

    @property
    def past_kv_sum(self) -> int:
        return sum(row.past_kv for row in self.prefill_rows) + self.decode_past_kv
