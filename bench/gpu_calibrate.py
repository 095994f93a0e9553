"""Time causal prefill attention and a model's GEMMs at serving shapes on whatever CUDA GPU is here, and write
CSVs the cost model's fitting reads (docs/cost-model.md, "Long prompts against published measurements").

Not run on a GPU yet. One short go on a lent GPU (torch with CUDA; flash-attn 3 or 2, or FlashInfer, used
when importable):

    python bench/gpu_calibrate.py --gpu h100-sxm --out-dir bench/calibration_h100
    python bench/attention_fit.py --kernels bench/calibration_h100/attention_kernels.csv

Attention: one Llama-3.1-8B-shaped layer (32 query heads, 8 KV heads, head dim 128, bf16), causal, for
whole prompts of 512 ... 32,768 tokens and for SGLang's serving shape, an 8,192-token chunk over 8k ... 120k
tokens of past KV. The kernel is the first importable of FlashAttention-3 (`flash_attn_interface`, what
SGLang's fa3 backend calls on SM90), FlashAttention-2 (`flash_attn`), FlashInfer
(`single_prefill_with_kv_cache`) and torch's scaled_dot_product_attention (whole prompts only: its causal
mask is aligned top-left); each row says which ran. TFLOPS count 4 x heads x head_dim x causal pairs, the
cost model's convention. GEMMs: the model's four per-layer GEMMs (QKV, O, gate+up, down) at 1 ... 16,384
tokens, beside what `kernels.gemm_time` predicts for the --gpu preset.

`--smoke` runs tiny shapes on the CPU in float32 (CUDA not needed) to check the script end to end.
"""

import argparse
import csv
import statistics
import sys
import time
from datetime import date
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine_model.cost import attn_pairs, linear_peak_tflops  # noqa: E402
from engine_model.hardware import gpu, model  # noqa: E402
from engine_model.kernels import attention_gemms, gemm_time, mlp_gemms  # noqa: E402

PROMPTS = (512, 1024, 2048, 4096, 8192, 16384, 32768)
CHUNK, PASTS = 8192, (8192, 32768, 65536, 122880)
GEMM_TOKENS = (1, 8, 64, 256, 1024, 4096, 8192, 16384)
SMOKE = dict(heads=4, kv_heads=2, head_dim=32, prompts=(64, 128), chunk=32, pasts=(64,), tokens=(1, 16))
ATTENTION_FIELDS = ("gpu", "kernel", "dtype", "head_dim", "heads", "batch", "seq_len", "keys_per_query",
                    "tflops", "use", "source")
GEMM_FIELDS = ("gpu", "device", "gemm", "k", "n", "tokens", "measured_ms", "model_ms", "error_pct")


def load_torch(smoke: bool):
    try:
        import torch
    except ImportError:
        raise SystemExit("needs PyTorch: pip install torch (a CUDA build on a GPU machine); not a project "
                         "dependency") from None
    if not smoke and not torch.cuda.is_available():
        raise SystemExit("no CUDA device visible to PyTorch (use --smoke to check the script on the CPU)")
    return torch


def attention_kernel(torch, smoke: bool):
    """(name, run(q, k, v) for q (tokens, heads, d) and k, v (keys, kv_heads, d), causal bottom-right, or None
    when only whole prompts are supported)."""
    if not smoke:
        try:
            from flash_attn_interface import flash_attn_func  # FlashAttention-3 (Hopper)
            return "FlashAttention-3", lambda q, k, v: flash_attn_func(q[None], k[None], v[None], causal=True)
        except ImportError:
            pass
        try:
            from flash_attn import flash_attn_func  # FlashAttention-2
            return "FlashAttention-2", lambda q, k, v: flash_attn_func(q[None], k[None], v[None], causal=True)
        except ImportError:
            pass
        try:
            from flashinfer import single_prefill_with_kv_cache
            return "FlashInfer", lambda q, k, v: single_prefill_with_kv_cache(q, k, v, causal=True)
        except ImportError:
            pass

    def sdpa(q, k, v):
        if q.shape[0] != k.shape[0]:
            return None  # top-left causal mask: whole prompts only
        q, k, v = (t.transpose(0, 1)[None] for t in (q, k, v))
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    return "torch SDPA", sdpa


def median_ms(torch, run, warmup: int, repeat: int, cuda: bool) -> float:
    for _ in range(warmup):
        run()
    times = []
    for _ in range(repeat):
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            run()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end))
        else:
            begin = time.perf_counter()
            run()
            times.append((time.perf_counter() - begin) * 1e3)
    return statistics.median(times)


def attention_rows(torch, args, shape: dict, device: str, dtype) -> list[dict]:
    name, kernel = attention_kernel(torch, args.smoke)
    heads, kv_heads, d = shape["heads"], shape["kv_heads"], shape["head_dim"]
    cases = [(n, 0) for n in shape["prompts"]] + [(shape["chunk"], p) for p in shape["pasts"]]
    where = "CPU smoke" if args.smoke else torch.cuda.get_device_name()
    rows = []
    for tokens, past in cases:
        q = torch.randn(tokens, heads, d, dtype=dtype, device=device)
        k, v = (torch.randn(past + tokens, kv_heads, d, dtype=dtype, device=device) for _ in range(2))
        with torch.inference_mode():
            if kernel(q, k, v) is None:
                print(f"{name}: skipped {tokens} tokens over {past} past (whole prompts only)", flush=True)
                continue
            ms = median_ms(torch, partial(kernel, q, k, v), args.warmup, args.repeat, not args.smoke)
        pairs = attn_pairs(tokens, past)
        tflops = float(f"{4 * heads * d * pairs / ms / 1e9:.6g}")
        rows.append({"gpu": args.gpu, "kernel": name, "dtype": str(dtype).removeprefix("torch."),
                     "head_dim": d, "heads": heads, "batch": 1, "seq_len": past + tokens,
                     "keys_per_query": round(pairs / tokens), "tflops": tflops,
                     "use": "fit", "source": f"bench/gpu_calibrate.py on {where}, {date.today()}"})
        print(rows[-1], flush=True)
    return rows


def gemm_rows(torch, args, device: str, dtype) -> list[dict]:
    """The model's per-layer GEMMs at TP1 beside kernels.gemm_time for the --gpu preset."""
    preset, shape = gpu(args.gpu), model(args.model)
    if args.smoke:
        shape = shape.model_copy(update={"hidden_size": 256, "num_heads": 4, "num_kv_heads": 2,
                                         "head_dim": 64, "intermediate_size": 512})
    gemms = dict(zip(("qkv", "o"), attention_gemms(shape, 1), strict=True))
    gemms |= dict(zip(("gate_up", "down"), mlp_gemms(shape, 1, 1, False), strict=True))
    peak = linear_peak_tflops(preset, "bf16")
    rows = []
    for name, g in gemms.items():
        weight = torch.randn(int(g.n), int(g.k), dtype=dtype, device=device)
        for tokens in (SMOKE["tokens"] if args.smoke else GEMM_TOKENS):
            x = torch.randn(tokens, int(g.k), dtype=dtype, device=device)
            with torch.inference_mode():
                ms = median_ms(torch, partial(torch.matmul, x, weight.T), args.warmup, args.repeat,
                               not args.smoke)
            t = gemm_time(preset, g, tokens, "bf16", peak)
            model_ms = (t.roof_s + t.floor_s) * 1e3
            where = "CPU smoke" if args.smoke else torch.cuda.get_device_name()
            rows.append({"gpu": args.gpu, "device": where, "gemm": name, "k": int(g.k), "n": int(g.n),
                         "tokens": tokens, "measured_ms": round(ms, 5), "model_ms": round(model_ms, 5),
                         "error_pct": round(100 * (model_ms / ms - 1), 1)})
    return rows


def write(path: Path, fields, rows) -> None:
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpu", default="h100-sxm", help="the GPU preset the rows carry")
    parser.add_argument("--model", default="llama-3.1-8b", help="a dense Llama-shaped model preset (GEMMs)")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--out-dir", type=Path, default=Path("calibration"))
    parser.add_argument("--smoke", action="store_true", help="tiny shapes on the CPU, float32")
    args = parser.parse_args(argv)
    torch = load_torch(args.smoke)
    torch.manual_seed(0)
    device, dtype = ("cpu", torch.float32) if args.smoke else ("cuda", torch.bfloat16)
    shape = SMOKE if args.smoke else dict(heads=32, kv_heads=8, head_dim=128, prompts=PROMPTS, chunk=CHUNK,
                                          pasts=PASTS)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    attention = attention_rows(torch, args, shape, device, dtype)
    write(args.out_dir / "attention_kernels.csv", ATTENTION_FIELDS, attention)
    write(args.out_dir / "gemms.csv", GEMM_FIELDS, gemm_rows(torch, args, device, dtype))
    print(f"wrote {args.out_dir}/attention_kernels.csv and gemms.csv")
    return 0


if __name__ == "__main__":
    sys.exit(main())
