"""How long one forward pass takes: the reference linear predictor and a documented roofline.

The scheduler calls `seconds(shape)` once per pass with the pass's aggregate numbers (`PassShape`), so
a cost model is O(1) per pass. docs/cost-model.md gives the formulas in notation, every factor with its
value and reason, and the check against Vidur's measured operator times.
"""

from dataclasses import dataclass
from typing import NamedTuple

from engine_model.errors import InputError
from engine_model.hardware import (
    GPU,
    KV_DTYPES,
    Model,
    dtype_bytes,
    kv_bytes_per_token,
)
from engine_model.resolve import gpu_of, model_of

# Efficiency factors (fractions of the vendor peak), fitted on Vidur's measured Llama-2-7B GEMM times
# (tests/data/vidur): one value for both GPUs and every token count, no per-token-count terms.
MFU_LINEAR = 0.63  # minimax over 512-4,096 tokens on H100 and A100: measured GEMMs reach 49-77% of peak
MBU_LINEAR = 0.75  # the 1-64-token GEMMs only stream weights: 70-80% of bandwidth
# Attention factors: Vidur's A100 FlashAttention profile (legacy attention.csv, 70B TP2 shape) shows
# 16-33% of peak on causal prefill pairs and 50-75% of bandwidth on decode KV reads at batch >= 32.
MFU_ATTENTION = 0.30
MBU_ATTENTION = 0.65
# Assumption: scheduler, input preparation, sampling and output processing per pass, not hidden behind
# the GPU (overlap schedule off). Vidur's sarathi-serve CPU-overhead profile for Llama-2-7B TP1 on A100
# sums to ~1.2-3 ms at batch 8-56; we take 2 ms. With SGLang's overlap schedule on, most of it hides.
OVERHEAD_S = 0.002
ALLREDUCE_LATENCY_S = 20e-6  # assumption: per all-reduce call on NVLink (Vidur DGX profile: 10-40 us)
ACTIVATION_BYTES = 2  # bf16 activations


class PassShape(NamedTuple):
    num_rows: int  # requests in the pass (prefill rows + decode rows)
    num_decode_rows: int  # rows of extend length 1 that are decode steps
    new_tokens: int  # sum over rows of extend (tokens computed this pass)
    past_kv_sum: int  # sum over rows of tokens already in KV before the pass
    attn_pairs: int  # sum over rows of extend * past_kv + extend * (extend + 1) // 2


def attn_pairs(extend: int, past_kv: int) -> int:
    """Causal query-key pairs of one row: each new token sees the past and the new tokens before it."""
    return extend * past_kv + extend * (extend + 1) // 2


@dataclass(frozen=True)
class LinearCost:
    """latency = a + b * new_tokens + c * past_kv_sum: the predictor of the SGLang reference traces
    (shared/data/sglang_reference/README.md). Same float operations in the same order, so the traces'
    `latency` field equals round(seconds(shape), 9)."""

    a: float = 0.010
    b: float = 5e-5
    c: float = 1e-7

    def seconds(self, shape: PassShape) -> float:
        return self.a + self.b * shape.new_tokens + self.c * shape.past_kv_sum

    def describe(self) -> str:
        return f"linear: {self.a} s + {self.b} s/new token + {self.c} s/past KV token"


def experts_touched(model: Model, num_tokens: int) -> float:
    """Expected distinct routed experts per MoE layer when num_tokens tokens each pick k of E experts
    uniformly at random: E * (1 - (1 - k/E)**num_tokens). One token touches k; thousands touch all E."""
    if not model.is_moe or num_tokens <= 0:
        return 0.0
    miss = 1 - model.num_experts_per_token / model.num_experts
    return model.num_experts * (1 - miss**num_tokens)


def linear_peak_tflops(gpu: GPU, weight_dtype: str) -> float:
    """bf16 weights run on the BF16 tensor cores; fp8 and nvfp4 (assumption: no FP4 speed-up) on FP8."""
    return gpu.bf16_tflops if weight_dtype == "bf16" else gpu.fp8_tflops


def _linear_roofs(gpu: GPU, model: Model, weight_dtype: str, tp_size: int, new_tokens: int,
                  num_rows: int, mfu_linear: float, mbu_linear: float) -> tuple[float, float]:
    """Compute and memory roofs of the pass's matrix multiplies on one TP rank.

    FLOPs: 2 x (active params - embeddings) per new token, plus the LM head for the one sampled token
    per row (the embedding lookup is a gather, not a GEMM). Bytes: every weight the pass touches, read
    once: dense weights, the experts touched, the LM head.
    """
    body = model.active_params - model.embedding_params
    lm_head = model.vocab_size * model.hidden_size if num_rows else 0
    flops = 2 * body * new_tokens + 2 * lm_head * num_rows
    touched = model.dense_params + model.num_moe_layers * experts_touched(model, new_tokens) * model.expert_params
    weights = (touched + lm_head) * dtype_bytes(weight_dtype, "weight_dtype")
    compute_s = flops / tp_size / (linear_peak_tflops(gpu, weight_dtype) * 1e12 * mfu_linear)
    memory_s = weights / tp_size / (gpu.memory_tbps * 1e12 * mbu_linear)
    return compute_s, memory_s


def linear_layer_seconds(gpu: GPU, model: Model, num_tokens: int, weight_dtype: str = "bf16",
                         tp_size: int = 1, mfu_linear: float = MFU_LINEAR, mbu_linear: float = MBU_LINEAR) -> float:
    """One layer's linear operators (QKV, O, MLP up/gate and down GEMMs) for num_tokens tokens: the
    RooflineCost linear term without the LM head, averaged over layers."""
    return max(_linear_roofs(gpu, model, weight_dtype, tp_size, num_tokens, 0, mfu_linear, mbu_linear)) / model.num_layers


def elementwise_bytes_per_token(model: Model, tp_size: int) -> float:
    """Activation bytes read and written per token by the memory-bound ops of all layers: two RMSNorms
    (read + write h each), two residual adds (read 2h, write h each), rope on q and k (read + write),
    and SiLU-and-multiply (read 2 x width, write width). Norms and adds are replicated on every rank."""
    h, qk = model.hidden_size, model.qk_head_dim
    rope = 2 * (model.num_heads + model.num_kv_heads) * qk
    num_dense = model.num_layers - model.num_moe_layers
    width = num_dense * model.intermediate_size + model.num_moe_layers * (
        model.num_experts_per_token + model.num_shared_experts) * model.moe_intermediate_size
    split = model.num_layers * rope + 3 * width
    return (model.num_layers * 10 * h + split / tp_size) * ACTIVATION_BYTES


@dataclass(frozen=True)
class RooflineCost:
    """Forward-pass time from FLOPs and bytes against the GPU's peaks (one TP rank, ranks in lockstep):

    seconds = linear + attention + elementwise + allreduce + overhead_s, where linear and attention are
    each max(FLOPs / (peak x mfu), bytes / (bandwidth x mbu)). See docs/cost-model.md.
    """

    gpu: GPU
    model: Model
    tp_size: int = 1
    weight_dtype: str = "bf16"
    kv_dtype: str = "bf16"
    mfu_linear: float = MFU_LINEAR
    mfu_attention: float = MFU_ATTENTION
    mbu_linear: float = MBU_LINEAR
    mbu_attention: float = MBU_ATTENTION
    overhead_s: float = OVERHEAD_S
    allreduce_latency_s: float = ALLREDUCE_LATENCY_S

    def __post_init__(self):
        if self.tp_size < 1:
            raise InputError("tp_size", f"must be >= 1, got {self.tp_size}")
        dtype_bytes(self.weight_dtype, "weight_dtype")
        dtype_bytes(self.kv_dtype, "kv_dtype", KV_DTYPES)
        for name in ("mfu_linear", "mfu_attention", "mbu_linear", "mbu_attention"):
            if not 0 < getattr(self, name) <= 1:
                raise InputError(name, f"must be in (0, 1], got {getattr(self, name)}")
        for name in ("overhead_s", "allreduce_latency_s"):
            if getattr(self, name) < 0:
                raise InputError(name, f"must be >= 0, got {getattr(self, name)}")

    def seconds(self, shape: PassShape) -> float:
        return sum(self._parts(shape)[:5])

    def breakdown(self, shape: PassShape) -> dict:
        """The terms of seconds(shape), for a hover: each term in seconds, and which roof binds."""
        linear_s, attention_s, elementwise_s, allreduce_s, overhead_s, compute_s, memory_s = self._parts(shape)
        return {
            "linear_s": linear_s, "attention_s": attention_s, "elementwise_s": elementwise_s,
            "allreduce_s": allreduce_s, "overhead_s": overhead_s, "compute_s": compute_s, "memory_s": memory_s,
            "bound": "compute" if compute_s >= memory_s else "memory",
            "total_s": linear_s + attention_s + elementwise_s + allreduce_s + overhead_s,
        }

    def describe(self) -> str:
        return (f"roofline: {self.model.name} on {self.gpu.name} x{self.tp_size}, weights {self.weight_dtype}, "
                f"KV {self.kv_dtype}; mfu linear {self.mfu_linear}, attention {self.mfu_attention}; "
                f"mbu linear {self.mbu_linear}, attention {self.mbu_attention}; overhead {self.overhead_s * 1e3:g} ms")

    def _parts(self, shape: PassShape) -> tuple[float, ...]:
        gpu, model, tp = self.gpu, self.model, self.tp_size
        bandwidth = gpu.memory_tbps * 1e12
        linear_compute_s, linear_memory_s = _linear_roofs(
            gpu, model, self.weight_dtype, tp, shape.new_tokens, shape.num_rows, self.mfu_linear, self.mbu_linear)
        # Attention: QK^T and PV over every causal pair; the context's KV is read (past and new tokens)
        # and the new tokens' KV is written.
        flops = 2 * model.num_heads * (model.qk_head_dim + model.head_dim) * model.num_layers * shape.attn_pairs
        attention_compute_s = flops / tp / (gpu.bf16_tflops * 1e12 * self.mfu_attention)
        kv_tokens = shape.past_kv_sum + 2 * shape.new_tokens
        kv_s = kv_tokens * kv_bytes_per_token(model, self.kv_dtype, tp) / (bandwidth * self.mbu_attention)
        elementwise_s = shape.new_tokens * elementwise_bytes_per_token(model, tp) / (bandwidth * self.mbu_linear)
        return (
            max(linear_compute_s, linear_memory_s),
            max(attention_compute_s, kv_s),
            elementwise_s,
            self._allreduce_seconds(shape.new_tokens),
            self.overhead_s,
            linear_compute_s + attention_compute_s,
            linear_memory_s + kv_s + elementwise_s,
        )

    def _allreduce_seconds(self, new_tokens: int) -> float:
        """Two ring all-reduces per layer of the hidden states: 2(tp-1)/tp x bytes / link bandwidth + latency."""
        tp = self.tp_size
        if tp == 1 or new_tokens == 0:
            return 0.0
        size = new_tokens * self.model.hidden_size * ACTIVATION_BYTES
        one = 2 * (tp - 1) / tp * size / (self.gpu.interconnect_gbps * 1e9) + self.allreduce_latency_s
        return 2 * self.model.num_layers * one


def cost_of(scenario) -> LinearCost | RooflineCost:
    """The scenario's cost model: the reference linear predictor, or the roofline on its GPU and model."""
    if scenario.cost.kind == "linear":
        return LinearCost(scenario.cost.a, scenario.cost.b, scenario.cost.c)
    from_scenario = {"gpu": gpu_of(scenario), "model": model_of(scenario), "tp_size": scenario.hardware.tp_size,
                     "weight_dtype": scenario.model.weight_dtype, "kv_dtype": scenario.model.kv_dtype}
    try:
        return RooflineCost(**from_scenario, **scenario.cost.roofline)
    except TypeError as err:
        raise InputError("cost.roofline", f"unknown factor ({err})") from None
