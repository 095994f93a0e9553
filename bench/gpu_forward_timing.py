"""Time real forward passes of a random-weight Llama-shaped model on a GPU, beside the cost model.

Not run yet: no GPU has been lent to this project's cost work (docs/cost-model.md, "What remains").
Prepared so that one run on a GPU machine records the figures:

    pip install torch            # a CUDA build, e.g. --index-url https://download.pytorch.org/whl/cu124
    python bench/gpu_forward_timing.py --gpu h100-sxm --model llama-3.1-8b --out bench/gpu_forward_h100.csv

For each token count 1, 2, 4, ..., 32,768 (one sequence, causal prefill, no past KV) it times, with CUDA
events (median of --repeat runs after --warmup): the whole forward pass of --layers layers, and one layer's
GEMMs, element-wise kernels and attention on their own. It writes one CSV row per token count with the
measured ms and what RooflineCost and the per-layer kernel functions predict for the named GPU preset.
Weights are random bf16 (timing does not depend on their values); torch is imported only when run.
The norms and rope here are PyTorch-native (several kernels each), slower than SGLang's fused kernels:
compare the GEMMs and attention first; the element-wise figure is an upper bound.
"""

import argparse
import csv
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine_model.cost import attn_pairs, elementwise_layer_seconds, linear_layer_seconds  # noqa: E402
from engine_model.hardware import gpu, kv_bytes_per_token, model  # noqa: E402
from engine_model.kernels import attention_time  # noqa: E402

TOKENS = tuple(2**i for i in range(16))  # 1 ... 32,768


def load_torch():
    try:
        import torch
    except ImportError:
        raise SystemExit("needs PyTorch with CUDA: pip install torch (see the docstring); not a project "
                         "dependency") from None
    if not torch.cuda.is_available():
        raise SystemExit("no CUDA device visible to PyTorch")
    return torch


class Layer:
    """One pre-norm Llama block with random bf16 weights: the same kernels SGLang runs, unfused."""

    def __init__(self, torch, shape, device):
        h, heads, kv, d, width = (shape.hidden_size, shape.num_heads, shape.num_kv_heads, shape.head_dim,
                                  shape.intermediate_size)
        def weight(n, k):
            return torch.randn(n, k, dtype=torch.bfloat16, device=device) * 0.02
        self.torch, self.heads, self.kv, self.d = torch, heads, kv, d
        self.qkv, self.o = weight((heads + 2 * kv) * d, h), weight(h, heads * d)
        self.gate_up, self.down = weight(2 * width, h), weight(h, width)
        self.norm1 = torch.ones(h, dtype=torch.bfloat16, device=device)
        self.norm2 = torch.ones(h, dtype=torch.bfloat16, device=device)

    def rms(self, x, w):
        x32 = x.float()
        return (x32 * self.torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + 1e-5)).to(x.dtype) * w

    def rope(self, x, cos, sin):
        half = x.shape[-1] // 2
        return x * cos + self.torch.cat((-x[..., half:], x[..., :half]), -1) * sin

    def gemms(self, x, attn, mlp):
        """The four GEMMs on their own: QKV, O, gate+up, down (mlp: tokens x MLP width)."""
        return x @ self.qkv.T, attn @ self.o.T, x @ self.gate_up.T, mlp @ self.down.T

    def attention(self, q, k, v):
        """Causal attention of one sequence; (tokens, heads, d) in, (1, heads, tokens, d) out (torch >= 2.5
        for enable_gqa)."""
        f = self.torch.nn.functional
        q, k, v = (t.transpose(0, 1).unsqueeze(0) for t in (q, k, v))
        return f.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)

    def forward(self, x, cos, sin):
        n = x.shape[0]
        q, k, v = (self.rms(x, self.norm1) @ self.qkv.T).split(
            (self.heads * self.d, self.kv * self.d, self.kv * self.d), -1)
        q = self.rope(q.view(n, self.heads, self.d), cos, sin)
        k = self.rope(k.view(n, self.kv, self.d), cos, sin)
        attn = self.attention(q, k, v.view(n, self.kv, self.d)).squeeze(0).transpose(0, 1).reshape(n, -1)
        x = x + attn @ self.o.T
        gate, up = (self.rms(x, self.norm2) @ self.gate_up.T).chunk(2, -1)
        return x + (self.torch.nn.functional.silu(gate) * up) @ self.down.T


def median_ms(torch, run, warmup: int, repeat: int) -> float:
    """CUDA-event timing, as bench/gpu_calibrate.py times its kernels (one timer for both scripts)."""
    from gpu_calibrate import median_ms as timed

    return timed(torch, run, warmup, repeat, cuda=True)


def measure(torch, layers, shape, tokens: int, warmup: int, repeat: int) -> dict:
    device, one = "cuda", layers[0]
    x = torch.randn(tokens, shape.hidden_size, dtype=torch.bfloat16, device=device)
    angle = (torch.arange(tokens, device=device).float()[:, None, None]
             * torch.ones(shape.head_dim, device=device))
    cos, sin = angle.cos().to(torch.bfloat16), angle.sin().to(torch.bfloat16)
    attn_in = torch.randn(tokens, shape.num_heads * shape.head_dim, dtype=torch.bfloat16, device=device)
    mlp = torch.randn(tokens, shape.intermediate_size, dtype=torch.bfloat16, device=device)
    q = torch.randn(tokens, shape.num_heads, shape.head_dim, dtype=torch.bfloat16, device=device)
    kv = torch.randn(tokens, shape.num_kv_heads, shape.head_dim, dtype=torch.bfloat16, device=device)

    def forward():
        y = x
        for layer in layers:
            y = layer.forward(y, cos, sin)

    def elementwise():
        """Two RMSNorms, rope on q and k, SiLU-and-multiply, two residual adds (unfused, as timed by
        Vidur)."""
        one.rms(x, one.norm1), one.rms(x, one.norm2), one.rope(q, cos, sin), one.rope(kv, cos, sin)
        torch.nn.functional.silu(mlp) * mlp, x + x, x + x

    with torch.inference_mode():
        return {
            "forward_ms": median_ms(torch, forward, warmup, repeat),
            "linear_ms": median_ms(torch, lambda: one.gemms(x, attn_in, mlp), warmup, repeat),
            "elementwise_ms": median_ms(torch, elementwise, warmup, repeat),
            "attention_ms": median_ms(torch, lambda: one.attention(q, kv, kv), warmup, repeat),
        }


def predicted(gpu_name: str, shape, tokens: int, num_layers: int) -> dict:
    """The cost model's per-layer kernel times (floors included) and their sum over the timed layers."""
    device = gpu(gpu_name)
    kv_bytes = kv_bytes_per_token(shape)
    attention = attention_time(device, shape, attn_pairs(tokens, 0), 2 * tokens, 1, 1, kv_bytes,
                               new_tokens=tokens)
    per_layer = {"model_linear_ms": linear_layer_seconds(device, shape, tokens) * 1e3,
                 "model_elementwise_ms": elementwise_layer_seconds(device, shape, tokens) * 1e3,
                 "model_attention_ms": (attention.roof_s + attention.floor_s) / shape.num_layers * 1e3}
    return {"model_forward_ms": num_layers * sum(per_layer.values()), **per_layer}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpu", default="h100-sxm", help="the GPU preset to predict with")
    parser.add_argument("--model", default="llama-3.1-8b", help="a dense Llama-shaped model preset")
    parser.add_argument("--layers", type=int, default=4, help="layers in the timed forward pass")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--out", type=Path, default=Path("gpu_forward_timing.csv"))
    args = parser.parse_args()
    torch = load_torch()
    shape = model(args.model)
    torch.manual_seed(0)
    layers = [Layer(torch, shape, "cuda") for _ in range(args.layers)]
    rows = []
    for tokens in TOKENS:
        row = {"gpu": torch.cuda.get_device_name(), "preset": args.gpu, "model": args.model,
               "layers": args.layers, "tokens": tokens}
        row |= measure(torch, layers, shape, tokens, args.warmup, args.repeat)
        row |= predicted(args.gpu, shape, tokens, args.layers)
        rows.append(row)
        print({k: round(v, 4) if isinstance(v, float) else v for k, v in row.items()}, flush=True)
    with args.out.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


if __name__ == "__main__":
    main()
