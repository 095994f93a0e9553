"""A PD role's workers in the shapes the checks and the cost use: (TP, attention DP) per worker, and one
worker as a single-engine scenario on the role's own GPU."""

from __future__ import annotations

from engine_model.config import HardwareConfig, Scenario

ROLES = ("prefill", "decode")


def role_shape(scenario: Scenario, name: str) -> tuple[int, int]:
    """(tp_size, attention DP size) of one role's workers."""
    cfg = getattr(scenario.pd, name)
    return cfg.tp_size or scenario.hardware.tp_size, cfg.dp_size


def role_scenario(scenario: Scenario, name: str, tp_size: int | None = None) -> Scenario:
    """One worker of role `name` as a single-engine scenario: the role's GPU and TP (or `tp_size`)."""
    cfg = getattr(scenario.pd, name)
    hw = HardwareConfig(gpu=cfg.gpu or scenario.hardware.gpu,
                        tp_size=tp_size or cfg.tp_size or scenario.hardware.tp_size,
                        gpu_overrides=scenario.hardware.gpu_overrides)
    return scenario.model_copy(update={"hardware": hw})
