"""PD disaggregation settings (`[pd]` in a scenario). Names follow SGLang's `--disaggregation-*` flags.

One key, `decode_allocation_policy`, sets the policy on both roles; `prefill.decode_allocation_policy`
and `decode.decode_allocation_policy` override it per role, so a mismatch can be provoked and rejected
the way SGLang's bootstrap handshake rejects it (see roles.check).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

AllocationPolicy = Literal["early", "prefill_complete"]
LoadBalance = Literal["auto", "round_robin", "follow_bootstrap_room"]
ROLES = ("prefill", "decode")


class _Frozen(BaseModel):
    """Frozen, unknown keys rejected, and no float may be inf or nan (as engine_model.config.Frozen)."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class RoleConfig(_Frozen):
    """The workers of one role. Each worker is one SGLang server: tp_size GPUs, dp_size attention ranks."""

    num_workers: int = Field(1, ge=1, le=64)
    gpu: str | None = None  # None: hardware.gpu
    tp_size: int | None = Field(None, ge=1, le=64)  # None: hardware.tp_size
    dp_size: int = Field(1, ge=1, le=64)  # attention DP ranks (--enable-dp-attention when > 1)
    ep_size: int = Field(1, ge=1, le=64)  # MoE expert parallelism; priced like TP (see docs/pd.md)
    decode_allocation_policy: AllocationPolicy | None = None  # None: pd.decode_allocation_policy
    # --load-balance-method: which DP rank gets a request; auto = follow_bootstrap_room on prefill,
    # round_robin on decode (router.resolve_load_balance)
    load_balance_method: LoadBalance = "auto"


class PDConfig(_Frozen):
    # --disaggregation-decode-allocation-policy, both roles
    decode_allocation_policy: AllocationPolicy = "early"
    prefill: RoleConfig = RoleConfig()
    decode: RoleConfig = RoleConfig()
    transfer_backend: Literal["mooncake", "mooncake_tcp", "nixl"] = "mooncake"  # a hardware.LINKS preset
    link_overrides: dict[str, float | int | str] = Field(default_factory=dict)
    router: Literal["round_robin", "random", "least_loaded", "power_of_two"] = "round_robin"
    decode_kv_cap_per_rank: int | None = Field(None, ge=16)  # caps each decode rank's KV pool (tokens)
    num_reserved_decode_tokens: int = Field(512, ge=0)  # --num-reserved-decode-tokens
    # --disaggregation-decode-extra-slots: request rows each decode rank adds for requests still in transfer;
    # None: SGLang's default (roles.default_decode_extra_slots)
    decode_extra_slots: int | None = Field(None, ge=0, le=65536)

    def policy(self, role: str) -> str:
        """The allocation policy a role runs with."""
        return getattr(self, role).decode_allocation_policy or self.decode_allocation_policy
