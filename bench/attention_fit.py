"""Long-prompt prefill against published measurements: fit the Hopper attention figures on published kernel
throughput, then check single-request time to first token on points the fit never saw (docs/cost-model.md,
"Long prompts against published measurements").

    .venv/bin/python bench/attention_fit.py        # the fit, its held-out kernel points and the TTFT table
    .venv/bin/python bench/attention_fit.py --kernels DIR/attention_kernels.csv   # a lent GPU's own curve

The data are `tests/data/published/attention_kernels.csv` (kernel throughput, each row marked `fit` or
`held_out`) and `tests/data/published/long_prompt_ttft.csv` (single-request first-token times; none is
fitted). The model of one query's attention: it runs at attention_mfu x k / (k + attention_ramp_keys) of
the BF16 peak when it sees k keys, i.e. time = FLOPs x (1 + ramp / k) / (peak x mfu). The fit is least
squares on log time over the `fit` rows: for each ramp on a 1-key grid the best log mfu is the mean
residual, and the ramp with the least squared error wins.
"""

import csv
import math
import sys
from pathlib import Path
from typing import NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine_model.cost import PassShape, RooflineCost, attn_pairs  # noqa: E402
from engine_model.hardware import gpu, model  # noqa: E402
from engine_model.resolve import default_chunked_prefill_size  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "published"


class KernelPoint(NamedTuple):
    gpu: str
    keys: int  # keys each query sees
    tflops: float
    use: str  # "fit" or "held_out"
    source: str


class TtftPoint(NamedTuple):
    gpu: str
    model: str
    tp: int
    prompt_tokens: int
    ttft_s: float
    use: str  # "held_out" (checked, never fitted) or "reported" (shown; its GPU is not recalibrated)
    engine: str
    source: str


def kernel_points(path: Path = DATA / "attention_kernels.csv") -> list[KernelPoint]:
    with open(path) as f:
        return [KernelPoint(r["gpu"], int(r["keys_per_query"]), float(r["tflops"]), r["use"], r["source"])
                for r in csv.DictReader(f)]


def ttft_points() -> list[TtftPoint]:
    with open(DATA / "long_prompt_ttft.csv") as f:
        return [TtftPoint(r["gpu"], r["model"], int(r["tp"]), int(r["prompt_tokens"]), float(r["ttft_s"]),
                          r["use"], r["engine"], r["source"]) for r in csv.DictReader(f)]


def efficiency(mfu: float, ramp: float, keys: float) -> float:
    """Share of the BF16 peak a query reaches when it sees `keys` keys."""
    return mfu * keys / (keys + ramp)


def fit(points: list[KernelPoint], peak_tflops: float) -> tuple[float, float]:
    """(attention_mfu, attention_ramp_keys) by least squares on log time over the points given."""
    best = None
    for ramp in range(0, 4001):
        residuals = [math.log(p.tflops / peak_tflops) - math.log(p.keys / (p.keys + ramp)) for p in points]
        log_mfu = sum(residuals) / len(residuals)
        error = sum((r - log_mfu) ** 2 for r in residuals)
        if best is None or error < best[0]:
            best = (error, math.exp(log_mfu), float(ramp))
    return best[1], best[2]


# The tokenizer figure the model carried when issue 37 measured its ratios: the six end-to-end points are the
# model's times then over those ratios, so they embed it. The model's own figure since is this machine's
# measurement (engine_model/frontend.py, 4.2 us/token on a 2-core VM), which a GPU host's CPU beats.
RECONSTRUCTED_TOKENIZE_S = 0.5e-6


def ttft(gpu_name: str, model_name: str, prompt_tokens: int, tp: int = 1, chunk: int | None = None,
         device=None, tokenize_s: float | None = None) -> float:
    """One request alone on the server: front end plus every chunk of its prompt, each pass priced by the
    roofline (SGLang's default chunk for the GPU unless `chunk` says otherwise; the model's tokenizer
    figure unless `tokenize_s` says otherwise)."""
    device = device or gpu(gpu_name)
    extra = {} if tokenize_s is None else {"tokenize_s": tokenize_s}
    cost = RooflineCost(device, model(model_name), tp_size=tp, **extra)
    chunk = chunk or default_chunked_prefill_size(device.memory_gib)
    total, past = cost.frontend_seconds(prompt_tokens), 0
    while past < prompt_tokens:
        extend = min(chunk, prompt_tokens - past)
        total += cost.seconds(PassShape(1, 0, extend, past, attn_pairs(extend, past)))
        past += extend
    return total


def model_ttft(point: TtftPoint, tokenize_s: float | None = RECONSTRUCTED_TOKENIZE_S) -> float:
    """The model's first-token time for a published point (a one-pass engine gets one unchunked pass), with
    the tokenizer figure the reconstructed points embed (None: the model's own, this machine's)."""
    chunk = point.prompt_tokens if "one pass" in point.engine else None
    return ttft(point.gpu, point.model, point.prompt_tokens, point.tp, chunk, tokenize_s=tokenize_s)


def error_pct(modelled: float, measured: float) -> float:
    return 100 * (modelled / measured - 1)


def fit_measured(path: Path) -> None:
    """Fit a CSV that bench/gpu_calibrate.py wrote on a lent GPU (every row, per GPU preset and kernel)."""
    points = kernel_points(path)
    for name in sorted({p.gpu for p in points}):
        device = gpu(name)
        mfu, ramp = fit([p for p in points if p.gpu == name], device.bf16_tflops)
        print(f"{name}: attention_mfu {mfu:.3f}, attention_ramp_keys {ramp:g} "
              f"(preset: {device.attention_mfu}, {device.attention_ramp_keys:g})")


def main(argv: list[str] | None = None) -> None:
    import argparse
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", type=Path, help="fit this CSV from bench/gpu_calibrate.py instead")
    args = parser.parse_args(argv)
    if args.kernels:
        return fit_measured(args.kernels)
    h100 = gpu("h100-sxm")
    points = [p for p in kernel_points() if p.gpu == "h100-sxm"]
    mfu, ramp = fit([p for p in points if p.use == "fit"], h100.bf16_tflops)
    print(f"H100 fit: attention_mfu {mfu:.3f}, attention_ramp_keys {ramp:g} "
          f"(preset: {h100.attention_mfu}, {h100.attention_ramp_keys:g})\n")
    print("| keys per query | published TFLOPS | model TFLOPS | error % | used |")
    print("|---:|---:|---:|---:|---|")
    for p in points:
        modelled = efficiency(h100.attention_mfu, h100.attention_ramp_keys, p.keys) * h100.bf16_tflops
        error = error_pct(modelled, p.tflops)
        print(f"| {p.keys:,} | {p.tflops:.0f} | {modelled:.0f} | {error:+.1f} | {p.use} |")
    print("\n| GPU | model | prompt tokens | published s | model s | error % | used |")
    print("|---|---|---:|---:|---:|---:|---|")
    for p in ttft_points():
        modelled = model_ttft(p)
        print(f"| {p.gpu} | {p.model} TP{p.tp} | {p.prompt_tokens:,} | {p.ttft_s:g} | {modelled:.3f} | "
              f"{error_pct(modelled, p.ttft_s):+.1f} | {p.use} |")


if __name__ == "__main__":
    main()
