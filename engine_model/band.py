"""Where the evidence is thin, a band: the same scenario run with prefill attention at the slowest and the
fastest share of peak the published kernel measurements allow on its GPU (docs/cost-model.md, "Long prompts
against published measurements"). A long prompt's first token and the stall it causes are mostly attention,
and on Hopper and Blackwell the attention figure rests on published kernel benchmarks, not on a measured
serving profile: a buyer's engineer should see how far the headline moves across that range, beside it.

The band moves only `attention_mfu` (the long-sequence ceiling); the per-query overhead, the GEMMs and
everything else stay. It is None where the evidence is the model's own (the A100's Vidur fit), where a
person set the attention figure by hand, and on the reference tool's linear predictor.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from engine_model.config import Scenario
from engine_model.cost import LinearCost, cost_of
from engine_model.errors import InputError
from engine_model.report import Summary, summary
from engine_model.simulation import simulate


@dataclass(frozen=True)
class Bound:
    mfu: float  # prefill attention's share of the BF16 peak at long sequences
    kernel: str  # the kernel class it stands for, in words
    source: str  # where the figure is published


# SM90 (H100, H200): FlashAttention-3's paper measures FlashAttention-2 "achieving only 35% utilization on
# the H100" and FlashAttention-3 "reaching up to 740 TFLOPs/s (75% utilization)" (arXiv:2407.08608).
# SM100 (B200, Rubin): FlashAttention-4 reaches 1,613 TFLOPS (0.717 of 2,250) and reports 2.7x over Triton
# (597 TFLOPS, 0.265) (together.ai/blog/flashattention-4). Both ends are published peaks of other kernels
# than the one SGLang runs on each GPU, so the band is wide on purpose: it is what the evidence allows.
BOUNDS: dict[int, tuple[Bound, Bound]] = {
    90: (Bound(0.35, "FlashAttention-2-class", "FlashAttention-3 paper: FA2 at 35 % of H100 peak"),
         Bound(0.75, "FlashAttention-3's best", "FlashAttention-3 paper: 740 TFLOPS, 75 % of peak")),
    100: (Bound(0.265, "Triton-class", "FlashAttention-4 blog: 2.7x over Triton, 597 TFLOPS"),
          Bound(0.717, "FlashAttention-4", "FlashAttention-4 blog: 1,613 TFLOPS, 72 % of peak")),
}


@dataclass(frozen=True)
class Band:
    """The scenario at the slow and the fast end of its GPU's attention evidence."""

    slow: Scenario
    fast: Scenario
    gpu: str  # the GPU's name
    mfu: float  # the figure the scenario itself prices attention at
    bounds: tuple[Bound, Bound]

    def words(self) -> str:
        """One sentence naming the range, for beside the numbers (every surface says it the same way)."""
        lo, hi = self.bounds
        return (f"Where the evidence is thin: prefill attention on the {self.gpu} is priced at {self.mfu:g} "
                "of peak from published kernel measurements; the ranges beside the numbers rerun it "
                f"with attention between {lo.kernel} ({lo.mfu:g}) and {hi.kernel} ({hi.mfu:g}) "
                "(docs/cost-model.md).")


def bounds_of(sm: int) -> tuple[Bound, Bound] | None:
    """The published attention range for a GPU generation: SM90, or SM100 and later; None elsewhere."""
    if sm >= 100:
        return BOUNDS[100]
    return BOUNDS.get(sm)


def band_of(scenario: Scenario) -> Band | None:
    """The slow and fast scenarios, or None where there is no band to show (see the module's note)."""
    if scenario.cost.kind == "linear" or "attention_mfu" in scenario.cost.roofline \
            or "attention_mfu" in scenario.hardware.gpu_overrides:
        return None
    try:
        model = cost_of(scenario)
    except InputError:  # a deployment that cannot run has no numbers to range
        return None
    if isinstance(model, LinearCost) or model.gpu.vendor != "nvidia":
        return None
    bounds = bounds_of(model.gpu.sm)
    if bounds is None or not bounds[0].mfu < model.gpu.attention_mfu < bounds[1].mfu:
        return None  # another backend's figures (engine_model/backend.py priced_gpu): not this evidence
    slow, fast = (_with_attention(scenario, b.mfu) for b in bounds)
    return Band(slow, fast, model.gpu.name, model.gpu.attention_mfu, bounds)


def _with_attention(scenario: Scenario, mfu: float) -> Scenario:
    roofline = {**scenario.cost.roofline, "attention_mfu": mfu}
    return scenario.model_copy(update={"cost": scenario.cost.model_copy(update={"roofline": roofline})})


@dataclass(frozen=True)
class Ranged:
    """A band and its two runs' summaries."""

    band: Band
    slow: Summary
    fast: Summary

    def range_of(self, now: float | int | None, value) -> tuple[float, float] | None:
        """(low, high) of a number across the band (now, slow, fast: `value` reads it from a summary), or None
        when it does not move by 5 % (counts: when it does not move at all) or a run lacks it."""
        found = [now, value(self.slow), value(self.fast)]
        if any(v is None for v in found):
            return None
        lo, hi = min(found), max(found)
        if isinstance(now, int) and not isinstance(now, bool):
            return (lo, hi) if lo != hi else None
        return (lo, hi) if hi - lo >= 0.05 * max(abs(now), 1e-9) else None


def ranged(scenario: Scenario) -> Ranged | None:
    """The band of a scenario with its two runs (each run once per process: the surfaces share them)."""
    band = band_of(scenario)
    if band is None:
        return None
    try:
        return Ranged(band, _summary(band.slow.model_dump_json()), _summary(band.fast.model_dump_json()))
    except InputError:  # a deployment that cannot run (a refused PD layout): no numbers, no range
        return None


@functools.lru_cache(maxsize=256)
def _summary(scenario_json: str) -> Summary:
    return summary(simulate(Scenario.model_validate_json(scenario_json)))
