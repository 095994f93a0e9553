"""Priority scheduling, preemption and the queue's limits, each rule named after the SGLang function it
mirrors.

- `QueueRules`: the settings (`--enable-priority-scheduling`, `--schedule-low-priority-values-first`,
  `--priority-scheduling-preemption-threshold`, `--disable-priority-preemption`, `--default-priority-value`,
  `--retraction-policy`, `--max-queued-requests`, `SGLANG_REQ_WAITING_TIMEOUT`).
- `priority_of`: `Scheduler._set_or_validate_priority` (and the tokenizer's `_set_default_priority`).
- `sort_by_priority`: `SchedulePolicy._sort_by_priority_and_fcfs` / `_sort_by_longest_output`
  (schedule_policy.py).
- `choose_preempted`: `PrefillAdder.preempt_to_schedule`'s choice (schedule_policy.py).
- `queue_limit_victim`: `Scheduler._abort_on_queued_limit`.
- `priority_retraction_order`: `ScheduleBatch._get_decode_retraction_order` under
  `retraction_policy=priority`.
- `timed_out`: `Scheduler._poll_timeout_aborts` (the waiting half).

SGLang's "wait_queue_entry_time" (a wall-clock stamp set each time a request enters the waiting queue) is the
scheduler's `entered` count here: the same order, without the clock.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, replace

from engine_model.core import Request
from engine_model.errors import InputError
from engine_model.rules import mirrors

LOWEST_HIGH_FIRST = -sys.maxsize - 1  # a request without priority when higher values go first
LOWEST_LOW_FIRST = sys.maxsize  # ... and when lower values go first
QUEUE_FULL = "The request queue is full."  # SGLang's abort messages (HTTP 503)
QUEUE_FULL_BY_PRIORITY = "The request is aborted by a higher priority request."
WAITING_TIMEOUT = "Request waiting timeout reached."
PRIORITY_DISABLED = ("Using priority is disabled for this server. Please send a new request without a "
                     "priority.")
CLIP_MAX_NEW_TOKENS = 4096  # SGLANG_CLIP_MAX_NEW_TOKENS_ESTIMATION (policy.py holds the same figure)


@dataclass(frozen=True)
class QueueRules:
    """Who goes first, who is preempted, and when the queue refuses (engine.* settings, resolved)."""

    enabled: bool = False  # --enable-priority-scheduling
    low_values_first: bool = False  # --schedule-low-priority-values-first
    threshold: int = 10  # --priority-scheduling-preemption-threshold
    preemption: bool = False  # on with priority scheduling unless --disable-priority-preemption
    default_priority: int | None = None  # --default-priority-value
    abort_when_disabled: bool = False  # --abort-on-priority-when-disabled
    retraction_policy: str = "length"  # --retraction-policy
    max_queued: int | None = None  # --max-queued-requests
    waiting_timeout_s: float | None = None  # SGLANG_REQ_WAITING_TIMEOUT

    @property
    def sign(self) -> int:
        """SGLang's priority_sign: +1 when low values go first, -1 when high values do."""
        return 1 if self.low_values_first else -1

    @property
    def every_pass(self) -> bool:
        """While requests wait, every pass may change something (preemption, a timeout): no fast-forward."""
        return self.preemption or self.waiting_timeout_s is not None


@dataclass(frozen=True, slots=True)
class Preemption:
    """One committed `preempt_to_schedule`: running requests released so `for_rid` could be admitted."""

    at: float
    before_iteration: int
    for_rid: str
    rids: tuple[str, ...]
    num_generated: tuple[int, ...]  # each one's reply so far: kept, and prefilled again with its prompt
    kv_freed: int  # KV slots released


def rules_of(engine) -> QueueRules:
    """engine.* (config.EngineConfig) -> QueueRules."""
    return QueueRules(
        enabled=engine.enable_priority_scheduling,
        low_values_first=engine.schedule_low_priority_values_first,
        threshold=engine.priority_scheduling_preemption_threshold,
        preemption=engine.enable_priority_scheduling and not engine.disable_priority_preemption,
        default_priority=engine.default_priority_value,
        abort_when_disabled=engine.abort_on_priority_when_disabled,
        retraction_policy=engine.retraction_policy,
        max_queued=engine.max_queued_requests,
        waiting_timeout_s=engine.req_waiting_timeout_s,
    )


@mirrors("_set_or_validate_priority", "_set_default_priority")
def priority_of(req: Request, rules: QueueRules) -> int | None:
    """The priority a request is scheduled with: its own; else `--default-priority-value` (the tokenizer's
    `_set_default_priority`); else the lowest there is (`_set_or_validate_priority`). Without priority
    scheduling, its own (ignored), or None. Set on the request when it reaches the scheduler, as SGLang sets
    `req.priority`."""
    if not rules.enabled:
        return req.priority
    if req.priority is None:
        if rules.default_priority is not None:
            req.priority = rules.default_priority
        else:
            req.priority = LOWEST_LOW_FIRST if rules.low_values_first else LOWEST_HIGH_FIRST
    return req.priority


@mirrors("_sort_by_priority_and_fcfs", "_sort_by_longest_output")
def sort_by_priority(waiting: list[Request], rules: QueueRules, policy: str, entered: dict[str, int]) -> None:
    """`calc_priority` with priority scheduling: fcfs sorts by (priority, when it entered the queue); lof by
    (priority, longest max_new_tokens first)."""
    sign = rules.sign
    if policy == "lof":
        waiting.sort(key=lambda r: (r.priority * sign, -r.max_new_tokens))
    else:
        waiting.sort(key=lambda r: (r.priority * sign, entered[r.rid]))


def running_offset(req: Request, ratio: float, whole_for_ignore_eos: bool) -> float:
    """`PrefillAdder._get_running_request_total_token_offset`: what a running request's reply still
    reserves, min(max_new - generated, 4096) x new_token_ratio (x 1 for ignore_eos, from 0.5.22)."""
    whole = whole_for_ignore_eos and req.ignore_eos
    return min(req.max_new_tokens - req.num_generated, CLIP_MAX_NEW_TOKENS) * (1.0 if whole else ratio)


@mirrors("preempt_to_schedule")
def choose_preempted(req: Request, running: list[Request], rules: QueueRules, entered: dict[str, int], *,
                     need: float, offset: Callable[[Request], float]) -> list[Request]:
    """`PrefillAdder.preempt_to_schedule`'s choice: the running requests in order of lowest priority, then
    newest in the queue; each whose priority is more than the threshold below the newcomer's is taken,
    crediting its reservation, until `need` (the newcomer's prompt left to prefill + min(max_new, 4096) -
    the memory budget left) is covered. The first one too close in priority ends the search. Returns []
    when nothing is taken or the need is not covered: then nothing is preempted."""
    sign = rules.sign
    # a mid-reply request (ours, not SGLang's) never entered the queue: the oldest
    ranked = sorted(running, key=lambda r: (r.priority * -sign, -entered.get(r.rid, 0)))
    taken: list[Request] = []
    for victim in ranked:
        if (req.priority - victim.priority) * -sign <= rules.threshold:
            break
        taken.append(victim)
        need -= offset(victim)
        if need <= 0:
            break
    return taken if taken and need <= 0 else []


@mirrors("_abort_on_queued_limit")
def queue_limit_victim(req: Request, waiting: list[Request], rules: QueueRules,
                       entered: dict[str, int]) -> tuple[Request | None, str]:
    """`_abort_on_queued_limit`: with `max_queued_requests` waiting, the newcomer is aborted ("The request
    queue is full."), unless priority scheduling is on and it is strictly better than the least-preferred
    waiting request (lowest priority, then newest), which is aborted instead. (None, "") while there is
    room."""
    if rules.max_queued is None or len(waiting) + 1 <= rules.max_queued:
        return None, ""
    if rules.enabled and waiting:
        direction = rules.sign  # SGLang's direction: 1 when low values go first
        worst = max(waiting, key=lambda r: (direction * r.priority, entered[r.rid]))
        if direction * req.priority < direction * worst.priority:
            return worst, QUEUE_FULL_BY_PRIORITY
    return req, QUEUE_FULL


@mirrors("_get_decode_retraction_order")
def priority_retraction_order(running: list[Request], rules: QueueRules) -> list[Request]:
    """`_get_decode_retraction_order` under `--retraction-policy priority`: lowest priority first, then the
    length rule (fewest generated, then longest prompt). SGLang sorts by (priority x -sign, generated,
    -prompt) descending and pops from the end; this list is in pop order (Python's sort is stable, as
    SGLang's is)."""
    sign = rules.sign
    ranked = sorted(running, key=lambda r: (r.priority * -sign, r.num_generated, -r.prompt_len), reverse=True)
    return ranked[::-1]


@mirrors("_poll_timeout_aborts")
def timed_out(waiting: list[Request], now: float, rules: QueueRules) -> list[Request]:
    """`_poll_timeout_aborts`: the waiting requests that entered the queue more than
    SGLANG_REQ_WAITING_TIMEOUT seconds ago (a retracted or preempted request's clock restarts when it
    re-enters). SGLang compares wall-clock stamps; the model, simulated time."""
    limit = rules.waiting_timeout_s
    if limit is None:
        return []
    return [r for r in waiting if now - r.queued_at > limit]


def queue_rules(scenario) -> QueueRules:
    """The resolved rules, refused at start-up as SGLang refuses them (`arg_groups/validation_hook.py`):
    priority scheduling only with fcfs or lof, `--retraction-policy priority` only with priority scheduling.
    The model adds one refusal of its own: priority scheduling in a PD cluster is not modelled."""
    engine = scenario.engine
    if engine.enable_priority_scheduling and engine.schedule_policy not in ("fcfs", "lof"):
        raise InputError("engine.schedule_policy", "To use priority scheduling, schedule_policy must be "
                         f"'fcfs' or 'lof'. '{engine.schedule_policy}' is not supported. (SGLang's start-up "
                         "check)")
    if engine.retraction_policy == "priority" and not engine.enable_priority_scheduling:
        raise InputError("engine.retraction_policy", "--retraction-policy priority requires "
                         "--enable-priority-scheduling (SGLang's start-up check): set "
                         "engine.enable_priority_scheduling = true or retraction_policy = \"length\"")
    if scenario.pd is not None:
        for key in ("enable_priority_scheduling", "req_waiting_timeout_s"):
            if getattr(engine, key) not in (False, None):
                raise InputError(f"engine.{key}", "priority scheduling and the waiting timeout are modelled "
                                 "on one engine or DP replicas, not in a PD cluster; leave them off there")
        return replace(rules_of(engine), max_queued=None)  # SGLang ignores max_queued_requests in PD modes
    return rules_of(engine)
