"""One engine with DP attention (`--enable-dp-attention --dp-size N`, which SGLang 0.5.23 reads as
`--attn-dp-size N`): N schedulers in one server, every forward pass run by all of them together.

What SGLang 0.5.23 does (`sglang/srt/...`), and the model with it:
- `arg_groups/parallel_hook.py` `handle_deprecated_dp_attention` (39-61): `--dp-size N --enable-dp-attention`
  becomes attn_dp_size N, dp_size 1. `handle_data_parallelism` (276-291): replicas and attention DP together
  are refused; (314-336): schedule_conservativeness x 0.3, tp_size must divide by attn_dp_size, and
  chunked_prefill_size // attn_dp_size per rank (the pass's prefill CUDA graph re-clamped to it, 338-360).
- `mem_cache/kv_cache_configurator.py` `resolve_max_num_reqs`: a --max-running-requests given is split over
  the ranks (`pd.roles.per_rank_running`); each rank's KV pool is its own GPUs' (attention TP = TP / N).
- `arg_groups/serving_hook.py` `handle_load_balance_method` (217-236): `auto` is round_robin outside PD; the
  DataParallelController hands each request to the next rank (`round_robin_scheduler`).
- `managers/scheduler.py` `get_next_batch_to_run` (3894-4015): each rank picks its own batch (prefill, mixed,
  decode or none) by the single-engine rules, then `maybe_prepare_mlp_sync_batch` all-gathers every rank's
  token count and extend flag (`scheduler_components/dp_attn.py` `prepare_mlp_sync_batch_raw`, 518-718,
  `MLPSyncBatchInfo.all_gather` 226-302): when any rank has tokens, a rank with none runs an idle batch
  (`get_idle_batch`, 810-) so the MLP's collectives line up; when none has, no pass runs (`on_idle`).
  `_arm_prefill_decode_interval` (1413-1426) arms every rank on the gathered `is_extend_in_batch`.

Simplified (docs/design.md, "Simplifications"): the pass lasts as the lockstep cost says
(`pd.roles.WorkerCost`: GEMMs and collectives on every rank's tokens at TP, attention the slowest rank's
at attention TP); the gather's own time is not priced; `maybe_convert_decode_to_extend` (a decode rank
replaying an extend graph while a peer prefills) changes graph replay only and is not modelled; a rank's
kind is its own, so one pass may be a prefill on dp-0 and a decode on dp-1. No reference trace: the
reference tool runs one rank.
"""

from __future__ import annotations

import random
from dataclasses import replace

from engine_model import hardware
from engine_model.config import HardwareConfig, Scenario
from engine_model.core import Iteration, PassKind, Request
from engine_model.cost import cost_of
from engine_model.errors import InputError
from engine_model.pd.roles import WorkerCost, _per_rank
from engine_model.pd.router import RankPicker
from engine_model.resolve import Resolved, model_of, resolve
from engine_model.rules import mirrors
from engine_model.scheduler import EXTEND_KINDS, Plan, Scheduler
from engine_model.speculative import SPEC_MAX_RUNNING
from engine_model.verify import draft_seconds, verify_shape

IDLE_BATCH = ("idle batch: another DP rank runs a pass, so this one joins it with no tokens "
              "(prepare_mlp_sync_batch -> get_idle_batch)")
IDLE_MIRRORS = "Scheduler.get_next_batch_to_run -> prepare_mlp_sync_batch -> get_idle_batch"


def is_dp_attention(scenario: Scenario) -> bool:
    return scenario.engine.enable_dp_attention and scenario.engine.dp_size > 1


@mirrors("handle_deprecated_dp_attention", "handle_data_parallelism")
def rank_settings(scenario: Scenario) -> tuple[Resolved, Resolved]:
    """(the engine as resolved without DP attention, one rank's settings): conservativeness x 0.3, chunk // N,
    the KV pool and running cap per rank. Raises InputError where SGLang refuses the layout."""
    engine, tp = scenario.engine, scenario.hardware.tp_size
    dp = engine.dp_size
    if tp % dp:
        raise InputError("engine.dp_size", f"with DP attention tp_size must be divisible by attn_dp_size "
                         f"(SGLang asserts it): TP {tp} over {dp} ranks; pick a dp_size that divides {tp}")
    base = resolve(scenario)
    rank = _per_rank(scenario, base, tp, dp, None)
    running = rank.max_running_requests
    if base.speculative is not None:  # the speculative default (48) is the server's, split over the ranks
        running = max(1, (engine.max_running_requests or SPEC_MAX_RUNNING) // dp)
    model, attn_tp = model_of(scenario), tp // dp
    heads = 0 if model.attention == "mla" else hardware.kv_heads_per_rank(model, attn_tp)
    rank = replace(rank, overlap_schedule=base.overlap_schedule, max_running_requests=running,
                   kv_bytes_per_token=hardware.kv_bytes_per_token(model, base.kv_dtype, attn_tp),
                   kv_heads_per_gpu=heads,
                   chunked_prefill_size_source=rank.chunked_prefill_size_source.replace(
                       "DP ranks", "DP ranks (handle_data_parallelism)"))
    return base, rank


def rank_scenario(scenario: Scenario, tp_size: int) -> Scenario:
    hw = HardwareConfig(gpu=scenario.hardware.gpu, tp_size=tp_size,
                        gpu_overrides=scenario.hardware.gpu_overrides)
    return scenario.model_copy(update={"hardware": hw})


class AttentionDP:
    """The run's topology for `engine.enable_dp_attention` with `engine.dp_size > 1`: one lane per rank,
    "dp-0", "dp-1", ..., all on one clock."""

    def __init__(self, scenario: Scenario, rng: random.Random):
        base, self.rank_cfg = rank_settings(scenario)
        dp, tp = scenario.engine.dp_size, scenario.hardware.tp_size
        self.cost = WorkerCost(cost_of(scenario), cost_of(rank_scenario(scenario, tp // dp)))
        self.ranks = [Scheduler(self.rank_cfg, self.cost.rank, rng) for _ in range(dp)]
        self.names = [f"dp-{i}" for i in range(dp)]
        self.picker = RankPicker(dp, "round_robin")
        self.frontend_cost = self.cost.whole
        self.now = 0.0
        self.done: list[Request] = []
        self.num_seen = [0] * dp

    @property
    def resolved(self) -> Resolved:
        return self.rank_cfg

    @property
    def crash(self) -> str | None:
        return next((f"{name}: {s.crash}" for name, s in zip(self.names, self.ranks, strict=True) if s.crash),
                    None)

    @property
    def lanes(self) -> dict[str, list[Iteration]]:
        return {name: s.iterations for name, s in zip(self.names, self.ranks, strict=True)}

    @property
    def num_iterations(self) -> int:
        return max(len(s.iterations) for s in self.ranks)

    def frontend_s(self, req: Request) -> float:
        return self.frontend_cost.frontend_seconds(req.prompt_len)

    @property
    def has_work(self) -> bool:
        return any(s.has_work for s in self.ranks)

    def next_at(self) -> float | None:
        return self.now if self.has_work else None

    def arrive(self, req: Request) -> None:
        """The DataParallelController's round robin hands the request to the next rank
        (`RankPicker.pick`, `round_robin_scheduler`)."""
        rank = self.ranks[self.picker.pick(0)]
        rank.arrive(req)
        self._collect()

    def refused(self, req: Request) -> None:
        """As with replicas: a request the scheduler refuses (max_req_input_len) had its turn."""
        if req.prompt_len < self.resolved.context_len:
            self.picker.pick(0)

    def advance(self, at: float) -> list[Iteration]:
        """Nothing runs on any rank until `at`: one idle iteration on every lane (`on_idle`)."""
        if at <= self.now or self.has_work:
            return []
        its = []
        for s in self.ranks:
            s.ratio.reset()
            plan = Plan(PassKind.IDLE, reason="idle: nothing waiting or running until the next arrival",
                        mirrors="Scheduler.on_idle")
            its.append(s.record(plan, s.launch_view(plan), at))
            s.now = at
        self.now = at
        return its

    @mirrors("prepare_mlp_sync_batch", "prepare_mlp_sync_batch_raw", "get_idle_batch")
    def step(self) -> list[Iteration]:
        """Every rank schedules on its own; the gather decides: a pass for all (idle batches for the ranks
        with nothing) when any rank has tokens, else none. The pass lasts the lockstep cost. Returns every
        rank's iteration of the pass; a turn with no pass anywhere counts as the engine's one idle turn (the
        run loop's "stuck" check counts them), and with no work anywhere nothing is recorded."""
        if not self.has_work:
            return []
        for s in self.ranks:
            s.now = self.now
        plans = [s.schedule() for s in self.ranks]
        if any(p.kind in EXTEND_KINDS for p in plans):  # _arm_prefill_decode_interval: the gathered flag
            for s in self.ranks:
                s.countdown = s.cfg.prefill_decode_interval
        busy = [p.kind is not PassKind.IDLE for p in plans]
        end = self.now + (self._pass_seconds(plans) if any(busy) else 0.0)
        its = []
        for s, plan, runs in zip(self.ranks, plans, busy, strict=True):
            if any(busy) and not runs and not plan.retraction and plan.reason.startswith("idle"):
                plan.reason, plan.mirrors = IDLE_BATCH, IDLE_MIRRORS
            view = s.launch_view(plan)
            s._land()
            if runs:
                s.apply(plan, end)
            elif not any(busy) and not s.has_work:
                s.ratio.reset()  # on_idle: no pass ran anywhere
            its.append(s.record(plan, view, end))
            s.now = end
        self.now = end
        self._collect()
        return its if any(busy) else its[:1]

    def _pass_seconds(self, plans: list[Plan]) -> float:
        shapes, draft = [], 0.0
        for s, plan in zip(self.ranks, plans, strict=True):
            shape = plan.shape()
            if s.spec is not None and plan.kind is PassKind.DECODE:
                draft = max(draft, draft_seconds(s.spec, self.cost.rank, shape))
                shape = verify_shape(s.spec, shape)
            shapes.append(shape)
        return self.cost.seconds(shapes) + draft

    def _collect(self) -> None:
        for i, s in enumerate(self.ranks):
            self.done += s.done[self.num_seen[i]:]
            self.num_seen[i] = len(s.done)

    def record(self) -> dict:
        retractions = sorted((r for s in self.ranks for r in s.retractions), key=lambda r: r.at)
        return {"resolved": self.resolved, "cost_model": self.cost.describe(), "retractions": retractions,
                "pd": None}
