"""Vidur's measured operator times (tests/data/vidur) beside the cost model's, for the fit, the error
table and the tests. Every model time comes from engine_model's own kernel functions.

Operators are per layer, in ms: `linear` = QKV + O + gate/up + down GEMMs, `elementwise` = the two
RMSNorms, rope, SiLU-and-multiply and one residual add (the five Vidur times), `attention` = one
layer's FlashAttention kernel (A100 only).
"""

import csv
from functools import cache
from pathlib import Path
from typing import NamedTuple

from engine_model.cost import elementwise_layer_seconds, linear_layer_seconds
from engine_model.hardware import GPU, Model, gpu, kv_bytes_per_token
from engine_model.kernels import attention_time

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "vidur"
PRESETS = {"h100": "h100-sxm", "a100": "a100-80gb", "a40": "a40"}
LINEAR_OPS = ("attn_pre_proj", "attn_post_proj", "mlp_up_proj", "mlp_down_proj")
ELEMENTWISE_OPS = ("input_layernorm", "attn_rope", "post_attention_layernorm", "mlp_act", "add")


class Point(NamedTuple):
    """One measured operator group at one size, and what the model says."""

    gpu: str
    model: str
    tokens: int
    measured_ms: float
    model_ms: float

    @property
    def error_pct(self) -> float:
        return 100 * (self.model_ms / self.measured_ms - 1)


def read(name: str) -> list[dict]:
    with (DATA / name).open() as f:
        return list(csv.DictReader(f))


@cache
def shapes() -> dict[str, Model]:
    """Vidur's profiled shapes as one-layer models (per-layer times need no layer count)."""
    models = {}
    for row in read("models.csv"):
        hidden, heads = int(row["n_embd"]), int(row["n_head"])
        models[row["model"]] = Model(
            name=row["model"], num_layers=1, hidden_size=hidden, num_heads=heads,
            num_kv_heads=int(row["n_kv_head"]), head_dim=hidden // heads,
            intermediate_size=int(row["n_expanded_embd"]), vocab_size=int(row["vocab_size"]),
            context_length=4096, source="Vidur's profiled shape (tests/data/vidur/models.csv)")
    return models


@cache
def ops() -> tuple[dict, ...]:
    return tuple(read("ops_tp1.csv"))


def points(kind: str, gpu_name: str, device: GPU | None = None) -> list[Point]:
    """Every measured token count of every model on one GPU: `linear` or `elementwise`."""
    device = device or gpu(PRESETS[gpu_name])
    names = LINEAR_OPS if kind == "linear" else ELEMENTWISE_OPS
    out = []
    for row in ops():
        if row["gpu"] != gpu_name:
            continue
        tokens, model = int(row["num_tokens"]), shapes()[row["model"]]
        seconds = (linear_layer_seconds(device, model, tokens) if kind == "linear"
                   else elementwise_layer_seconds(device, model, tokens, names=ELEMENTWISE_OPS))
        out.append(Point(gpu_name, row["model"], tokens, sum(float(row[op]) for op in names), seconds * 1e3))
    return out


def attention_points(device: GPU | None = None) -> list[Point]:
    """A100 FlashAttention, one layer of a 64 q / 8 kv head model at TP 2: prefill chunks (tokens = chunk)
    and decode batches (tokens = batch), each at past KV lengths 0-4,032 per request."""
    device = device or gpu(PRESETS["a100"])
    out = []
    for row in read("attention_a100.csv"):
        kind, tokens, past = row["kind"], int(row["tokens"]), int(row["kv_cache_size"])
        hidden, heads, tp = int(row["n_embd"]), int(row["n_q_head"]), int(row["num_tensor_parallel_workers"])
        model = Model(name="vidur-attention", num_layers=1, hidden_size=hidden, num_heads=heads,
                      num_kv_heads=int(row["n_kv_head"]), head_dim=hidden // heads, intermediate_size=0,
                      vocab_size=1, context_length=8192, source="Vidur's legacy attention profile")
        rows, extend = (1, tokens) if kind == "prefill" else (tokens, 1)
        pairs = rows * (extend * past + extend * (extend + 1) // 2)
        kv_tokens = rows * (past + 2 * extend)
        time = attention_time(device, model, pairs, kv_tokens, rows, tp,
                              kv_bytes_per_token(model, "bf16", tp))
        out.append(Point("a100", f"{kind} kv={past}", tokens, float(row["ms"]),
                         (time.roof_s + time.floor_s) * 1e3))
    return out


def worst(table: list[Point]) -> float:
    return max(abs(p.error_pct) for p in table)
