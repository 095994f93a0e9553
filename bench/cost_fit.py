"""Fit each calibrated GPU's efficiency figures on Vidur's measured operator times (tests/data/vidur).

    .venv/bin/python bench/cost_fit.py              # all three GPUs, all figures
    .venv/bin/python bench/cost_fit.py --gpu a100

Three groups of three figures each, fitted separately (they price different kernels):
- linear: gemm_mfu, gemm_mbu, gemm_latency_s, on every model's GEMMs (QKV, O, gate/up, down);
- element-wise: elementwise_mbu, row_gbps, kernel_floor_s, on the two norms, rope, SiLU and one add;
- attention (A100 only): attention_mfu and attention_mbu on the regimes long prompts and busy decode
  live in (prefill chunks of 512+ tokens with past KV, decode batches of 32+); attention_floor_s is the
  shortest measured kernel (not fitted).
The objective is the worst |error| over every model and token count (minimax): no figure is per token
count. A coarse grid, then coordinate descent with halving steps. It prints the figures to paste into
engine_model/hardware.py and the worst error each reaches.
"""

import argparse
import itertools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.vidur_data import PRESETS, attention_points, points, worst  # noqa: E402
from engine_model.hardware import gpu  # noqa: E402

GROUPS = {
    "linear": {"gemm_mfu": (0.6, 0.7, 0.8, 0.9), "gemm_mbu": (0.75, 0.85, 0.95),
               "gemm_latency_s": (0.0, 2e-6, 4e-6, 6e-6)},
    "elementwise": {"elementwise_mbu": (0.4, 0.5, 0.6, 0.7, 0.8), "row_gbps": (5.0, 8.0, 11.0, 14.0),
                    "kernel_floor_s": (0.0, 1e-6, 2e-6, 3e-6)},
    "attention": {"attention_mfu": (0.15, 0.2, 0.25, 0.3, 0.35), "attention_mbu": (0.5, 0.6, 0.7, 0.8, 0.9)},
}
BOUNDS = {"gemm_mfu": (0.05, 1.0), "gemm_mbu": (0.05, 1.0), "elementwise_mbu": (0.05, 1.0),
          "attention_mfu": (0.05, 1.0), "attention_mbu": (0.05, 1.0)}


def in_regime(point) -> bool:
    """Prefill chunks of 512+ tokens after some past KV, decode batches of 32+ requests."""
    if point.model.startswith("prefill"):
        return point.tokens >= 512 and point.model != "prefill kv=0"
    return point.tokens >= 32


def objective(kind: str, gpu_name: str, figures: dict) -> float:
    device = gpu(PRESETS[gpu_name]).model_copy(update=figures)
    if kind == "attention":
        return worst([p for p in attention_points(device) if in_regime(p)])
    return worst(points(kind, gpu_name, device))


def descend(score, figures: dict, rounds: int = 5) -> tuple[float, dict]:
    """Coordinate descent from `figures`: try +-step on each figure, keep what lowers the worst error."""
    best = score(figures)
    steps = {k: (v or 1e-6) * 0.1 for k, v in figures.items()}
    for _ in range(rounds):
        improved = True
        while improved:
            improved = False
            for name, step in steps.items():
                low, high = BOUNDS.get(name, (0.0, float("inf")))
                for trial in (figures[name] - step, figures[name] + step):
                    candidate = {**figures, name: min(max(trial, low), high)}
                    value = score(candidate)
                    if value < best - 1e-9:
                        best, figures, improved = value, candidate, True
        steps = {k: s / 2 for k, s in steps.items()}
    return best, figures


def fit(kind: str, gpu_name: str) -> tuple[float, dict]:
    grid = GROUPS[kind]
    def score(figures: dict) -> float:
        return objective(kind, gpu_name, figures)
    start = min((dict(zip(grid, values, strict=True)) for values in itertools.product(*grid.values())),
                key=score)
    return descend(score, start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpu", choices=sorted(PRESETS), action="append")
    parser.add_argument("--kind", choices=sorted(GROUPS), action="append")
    args = parser.parse_args()
    for gpu_name in args.gpu or PRESETS:
        for kind in args.kind or GROUPS:
            if kind == "attention" and gpu_name != "a100":
                continue  # attention is measured on the A100 only
            value, figures = fit(kind, gpu_name)
            shown = ", ".join(f"{k}={v:.3g}" for k, v in figures.items())
            print(f"{gpu_name} {kind}: worst {value:.1f}%  {shown}", flush=True)


if __name__ == "__main__":
    main()
