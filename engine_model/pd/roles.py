"""Per-role settings: what one DP rank of a prefill or decode worker runs with, and its pass cost.

A worker is one SGLang server of tp_size GPUs. With DP attention (dp_size > 1) it holds dp_size
attention ranks, each with its own scheduler, waiting queue and KV pool, and attention TP of
tp_size / dp_size; the ranks run every forward pass together (`maybe_prepare_mlp_sync_batch`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property

from engine_model import hardware
from engine_model.config import Scenario
from engine_model.cost import PassShape, RooflineCost, cost_of
from engine_model.errors import InputError
from engine_model.pd import attention
from engine_model.pd.shape import role_scenario
from engine_model.resolve import (
    NEW_TOKEN_RATIO_DECAY_STEPS,
    Resolved,
    default_max_running_requests,
    resolve,
    with_overrides,
)
from engine_model.versions import capabilities, first_release

DP_CONSERVATIVENESS = 0.3  # parallel_hook.py: schedule_conservativeness x 0.3 under DP attention
MOONCAKE = ("mooncake", "mooncake_tcp")


@dataclass(frozen=True)
class Role:
    """One role's workers, as resolved."""

    name: str  # "prefill" or "decode"
    num_workers: int
    tp_size: int
    dp_size: int
    ep_size: int
    policy: str
    rank: Resolved  # the settings of one DP rank
    cost: WorkerCost

    @property
    def attn_tp_size(self) -> int:
        return self.tp_size // self.dp_size


@dataclass(frozen=True)
class WorkerCost:
    """Pass time of a worker whose DP ranks run in lockstep.

    Without DP attention: the engine's cost model. With it, on the roofline: the matrix multiplies,
    element-wise ops, collectives and overhead are priced on all ranks' tokens together at tp_size
    (experts and dense weights are shared out over the worker's GPUs), and attention is the slowest
    rank's own attention at attention TP (each rank reads only its own requests' KV). The roofline's
    dense attention term is max(FLOPs roof, KV-bytes roof), each linear in the shape, so the two per-unit
    costs are read off the rank's cost model once (`attention_units`); DeepSeek sparse attention is not
    linear (its pairs are capped at top-k per query), so a DSA rank prices its own shape. On the linear
    predictor: the slowest rank's pass.
    """

    whole: object  # the cost model at the worker's tp_size
    rank: object | None  # the cost model at attention TP; None without DP attention

    @cached_property
    def attention_units(self) -> tuple[float, float]:
        """Seconds per causal query-key pair (each query adds gpu.attention_ramp_keys pairs' worth), and
        per KV token read or written, on one rank."""
        per_pair = self.rank.breakdown(PassShape(0, 0, 0, 0, 1))["attention_s"]
        per_kv = self.rank.breakdown(PassShape(0, 0, 0, 1, 0))["attention_s"]
        return per_pair, per_kv

    def rank_attention_s(self, shape: PassShape) -> float:
        if self.rank.model.is_dsa:
            return self.rank.attention_seconds(shape)
        per_pair, per_kv = self.attention_units
        work = shape.attn_pairs + self.rank.gpu.attention_ramp_keys * shape.new_tokens  # as attention_time
        return max(per_pair * work, per_kv * (shape.past_kv_sum + 2 * shape.new_tokens))

    def seconds(self, shapes: list[PassShape], held_host_s: float = 0.0) -> float:
        """The lockstep pass. held_host_s: host time a rank could not overlap with the forward before
        (decode.DecodeRank.held_host_s); the pass then lasts that plus its GPU or launch time."""
        if not isinstance(self.whole, RooflineCost):
            if self.rank is None:
                return self.whole.seconds(shapes[0])
            return max(self.whole.seconds(s) for s in shapes if s.num_rows)
        if self.rank is None:
            parts = self.whole.breakdown(shapes[0])
        else:
            merged = PassShape(*map(sum, zip(*shapes, strict=True)))
            parts = self.whole.breakdown(merged, attention_s=max(map(self.rank_attention_s, shapes)))
        if not held_host_s:
            return parts["total_s"]
        return max(parts["total_s"], held_host_s + max(parts["gpu_s"], parts["launch_s"]))

    def describe(self) -> str:
        return self.whole.describe() + ("" if self.rank is None
                                        else "; DP attention: slowest rank's attention")


def resolve_role(scenario: Scenario, name: str) -> Role:
    """SGLang's defaults for one rank of this role (sglang-scheduler-facts.md sections 4.1, 7)."""
    pd, cfg = scenario.pd, getattr(scenario.pd, name)
    tp = cfg.tp_size or scenario.hardware.tp_size
    if tp % cfg.dp_size:
        raise InputError(f"pd.{name}.dp_size", f"{cfg.dp_size} must divide tp_size {tp}")
    whole = role_scenario(scenario, name)
    base = resolve(whole)
    rank = _per_rank(scenario, base, tp, cfg.dp_size, pd.decode_kv_cap_per_rank if name == "decode" else None)
    if name == "decode":
        extra = pd.decode_extra_slots
        if extra is None:
            extra = default_decode_extra_slots(scenario.engine.max_running_requests, cfg.dp_size)
        rank = replace(rank, decode_extra_slots=extra)
    rank_cost = cost_of(role_scenario(scenario, name, tp // cfg.dp_size)) if cfg.dp_size > 1 else None
    return Role(name=name, num_workers=cfg.num_workers, tp_size=tp, dp_size=cfg.dp_size, ep_size=cfg.ep_size,
                policy=pd.policy(name), rank=rank, cost=WorkerCost(cost_of(whole), rank_cost))


def per_rank_running(max_running_requests: int | None, dp: int, pool: int, context_len: int) -> int:
    """`resolve_max_num_reqs` (mem_cache/kv_cache_configurator.py, 0.5.20-0.5.23): a --max-running-requests
    given is the server's, split over its attention DP ranks (at least one per rank; 0.5.20-0.5.22 write
    it without the max(1, ...)); unset, each rank's default comes from its own pool."""
    if max_running_requests is None:
        return default_max_running_requests(pool, context_len)
    return max(1, max_running_requests // dp)


def default_decode_extra_slots(max_running_requests: int | None, dp: int) -> int:
    """`handle_pd_disaggregation` (arg_groups/pd_disaggregation_hook.py, the same in 0.5.20-0.5.23): when
    --disaggregation-decode-extra-slots is unset, a decode server whose --max-running-requests is set and
    at most 32 per DP rank reserves twice that many extra request rows for requests in transfer
    (`DecodeReqToTokenPool`: size + pre_alloc_size rows); otherwise none."""
    if max_running_requests is None:
        return 0
    per_worker = max(1, max_running_requests // dp)
    return 2 * per_worker if per_worker <= 32 else 0


def _per_rank(scenario: Scenario, base: Resolved, tp: int, dp: int, cap: int | None) -> Resolved:
    """One DP rank: KV heads not split when attention TP is 1, chunk / dp, conservativeness x 0.3."""
    pool = base.max_total_tokens
    if scenario.engine.max_total_tokens is None and dp > 1:
        model = with_overrides(hardware.model(scenario.model.name), scenario.model.overrides,
                               "model.overrides")
        kv = base.kv_dtype
        pool = int(pool * hardware.kv_bytes_per_token(model, kv, tp)
                   / hardware.kv_bytes_per_token(model, kv, tp // dp))
    if cap is not None:
        pool = min(pool, cap)
    max_req_len = min(base.context_len - 1, pool - 1)
    chunk = base.chunked_prefill_size
    if chunk is not None and dp > 1:
        chunk = max(base.page_size, chunk // dp // base.page_size * base.page_size)
    ratio_init = base.ratio_init if dp == 1 else min(base.ratio_init * DP_CONSERVATIVENESS, 1.0)
    ratio_min = base.ratio_min if dp == 1 else ratio_init * base.ratio_min / base.ratio_init
    return replace(
        base, max_total_tokens=pool, max_req_len=max_req_len, max_req_input_len=max_req_len - 5,
        max_total_tokens_source=base.max_total_tokens_source + (f"; per DP rank of {dp}" if dp > 1 else "")
        + (f"; capped at {cap} (pd.decode_kv_cap_per_rank)" if cap is not None else ""),
        max_running_requests=per_rank_running(scenario.engine.max_running_requests, dp, pool,
                                              base.context_len),
        chunked_prefill_size=chunk,
        chunked_prefill_size_source=base.chunked_prefill_size_source
        + (f"; / {dp} DP ranks" if dp > 1 and chunk else ""),
        ratio_init=ratio_init, ratio_min=ratio_min,
        ratio_decay=(ratio_init - ratio_min) / NEW_TOKEN_RATIO_DECAY_STEPS,
        tp_size=tp // dp,
        overlap_schedule=False,  # PD ranks run the normal loop in the model (docs/design.md, Simplifications)
    )


def check(scenario: Scenario) -> None:
    """The checks SGLang makes before PD traffic flows (bootstrap handshake, `_validate_prefill_complete`)."""
    pd = scenario.pd
    prefill, decode = pd.policy("prefill"), pd.policy("decode")
    if prefill != decode:
        raise InputError("pd.prefill.decode_allocation_policy / pd.decode.decode_allocation_policy",
                         f"the prefill role uses {prefill!r} and the decode role {decode!r}; both roles must "
                         "use the same policy (SGLang rejects the mismatch in the bootstrap handshake)")
    if prefill != "prefill_complete":
        return
    if not capabilities(scenario.engine.version).has_prefill_complete:
        raise InputError("engine.version", f"decode_allocation_policy 'prefill_complete' needs SGLang >= "
                         f"{first_release('has_prefill_complete')}; got {scenario.engine.version}")
    if pd.transfer_backend not in MOONCAKE:
        raise InputError("pd.transfer_backend", "decode_allocation_policy 'prefill_complete' needs the "
                         f"Mooncake backend ({' or '.join(MOONCAKE)}); got {pd.transfer_backend!r}")
    refused = attention.refusal(scenario)  # the checklist's attention row says the same
    if refused is not None:
        raise refused
