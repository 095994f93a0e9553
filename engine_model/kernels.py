"""The kernels of one forward pass on one GPU: GEMMs, element-wise kernels and attention, each priced
the way it runs, with the GPU's own efficiency figures (`hardware.GPU`).

A kernel's time is its roofline plus what a real GPU adds at small sizes:
- a GEMM works on tiles of `M_TILE` token rows, so 65 tokens cost the FLOPs of 128; its compute and
  memory roofs overlap imperfectly (`OVERLAP_MISS`); every GEMM adds `gpu.gemm_latency_s`;
- norms and SiLU run one thread block per token row: below a full wave of blocks a pass waits for one
  block to stream its row (`gpu.row_gbps`), and each extra wave adds that again;
- no element-wise kernel takes less than `gpu.kernel_floor_s`, no attention kernel less than
  `gpu.attention_floor_s`.
Each function returns the roofline part and the part the floors add separately, so a pass's breakdown
can show both. docs/cost-model.md has the formulas and the fit against Vidur's measurements.
"""

from math import ceil
from typing import NamedTuple

from engine_model.hardware import GPU, Model, dsa_index_key_bytes, dtype_bytes

M_TILE = 64  # token rows per GEMM tile (assumption read off Vidur's GEMM times: steps every 64 tokens)
OVERLAP_MISS = 0.5  # share of the smaller GEMM roof that does not hide behind the larger (fitted, all GPUs)
ROW_BLOCK_THREADS = 1024  # threads per block of the norm and SiLU kernels (one block per token row)
ACTIVATION_BYTES = 2  # bf16 activations
# DSA's indexer writes one fp32 score per (query, key) pair and its top-k kernel reads it back
# (DeepGEMM fp8_mqa_logits / fp8_paged_mqa_logits return the whole logits matrix): 4 + 4 bytes a pair
SCORE_BYTES = 8


class Time(NamedTuple):
    """A kernel group's time: the roofline part, what floors and waves add, and the two roofs."""

    roof_s: float
    floor_s: float
    compute_s: float
    memory_s: float

    def __add__(self, other):
        return Time(*(a + b for a, b in zip(self, other, strict=True)))

    def times(self, count: float) -> "Time":
        return Time(*(a * count for a in self))


ZERO = Time(0.0, 0.0, 0.0, 0.0)


class Gemm(NamedTuple):
    """One matrix multiply on one TP rank: k inputs and n outputs per row. Routed experts are one
    grouped GEMM: `groups` experts touched, `rows_per_token` (top-k) rows per token."""

    k: float
    n: float
    groups: float = 1.0
    rows_per_token: int = 1


def gemm_time(gpu: GPU, gemm: Gemm, tokens: float, weight_dtype: str, peak_tflops: float) -> Time:
    """max(compute, memory) + OVERLAP_MISS x min(compute, memory), plus gpu.gemm_latency_s.

    Compute counts the tokens padded to whole M_TILE tiles (per expert for a grouped GEMM); memory reads
    every weight once and the activations in and out once."""
    rows = tokens * gemm.rows_per_token
    if rows <= 0 or gemm.groups <= 0:
        return ZERO
    if gemm.groups == 1:
        padded = ceil(rows / M_TILE) * M_TILE
    else:  # routing spreads tokens unevenly: each touched expert wastes half a tile on average (assumption)
        padded = max(gemm.groups * M_TILE, rows + gemm.groups * M_TILE / 2)
    flops = 2 * padded * gemm.k * gemm.n
    weights = gemm.groups * gemm.k * gemm.n * dtype_bytes(weight_dtype, "weight_dtype")
    moved = weights + rows * (gemm.k + gemm.n) * ACTIVATION_BYTES
    compute_s = flops / (peak_tflops * 1e12 * gpu.gemm_mfu)
    memory_s = moved / (gpu.memory_tbps * 1e12 * gpu.gemm_mbu)
    roof_s = max(compute_s, memory_s) + OVERLAP_MISS * min(compute_s, memory_s)
    return Time(roof_s, gpu.gemm_latency_s, compute_s, memory_s)


def experts_touched(model: Model, num_tokens: int) -> float:
    """Expected distinct routed experts per MoE layer when num_tokens tokens each pick k of E experts
    uniformly at random: E * (1 - (1 - k/E)**num_tokens). One token touches k; thousands touch all E."""
    if not model.is_moe or num_tokens <= 0:
        return 0.0
    miss = 1 - model.num_experts_per_token / model.num_experts
    return model.num_experts * (1 - miss**num_tokens)


def attention_gemms(model: Model, tp: int) -> list[Gemm]:
    """QKV and O projections (GQA), or MLA's low-rank q, kv and O projections; the low-rank down
    projections (q_a, kv_a) are replicated on every rank, the rest split by tp."""
    h, n = model.hidden_size, model.num_heads
    if model.attention == "gqa":
        kv_heads = max(1, model.num_kv_heads // tp)
        return [Gemm(h, (n / tp + 2 * kv_heads) * model.head_dim), Gemm(n * model.head_dim / tp, h)]
    q_rank, kv_rank = model.q_lora_rank, model.kv_lora_rank
    q = ([Gemm(h, q_rank), Gemm(q_rank, n * model.qk_head_dim / tp)] if q_rank
         else [Gemm(h, n * model.qk_head_dim / tp)])
    return q + [Gemm(h, kv_rank + model.qk_rope_head_dim),
                Gemm(kv_rank, n * (model.qk_nope_head_dim + model.head_dim) / tp),
                Gemm(n * model.head_dim / tp, h)]


def indexer_gemms(model: Model) -> list[Gemm]:
    """A DSA indexer's projections: queries from the q latent, one key and the per-head weights from
    the hidden state (assumption: replicated on every attention-TP rank, as its one key head is)."""
    h, n, d = model.hidden_size, model.index_n_heads, model.index_head_dim
    return [Gemm(model.q_lora_rank, n * d), Gemm(h, d), Gemm(h, n)]


def mlp_gemms(model: Model, tp: int, tokens: int, moe: bool) -> list[Gemm]:
    """A dense MLP (gate+up, down), or an MoE layer: router, shared experts, and the routed experts as
    grouped GEMMs over the experts the pass touches (each expert split by tp, all on every rank)."""
    h = model.hidden_size
    if not moe:
        return [Gemm(h, 2 * model.intermediate_size / tp), Gemm(model.intermediate_size / tp, h)]
    width, k = model.moe_intermediate_size / tp, model.num_experts_per_token
    touched = experts_touched(model, tokens)
    shared = model.num_shared_experts * width
    return [Gemm(h, model.num_experts), Gemm(h, 2 * width, touched, k), Gemm(width, h, touched, k)] + (
        [Gemm(h, 2 * shared), Gemm(shared, h)] if shared else [])


def linear_time(gpu: GPU, model: Model, tokens: int, num_rows: int, weight_dtype: str, tp: int,
                peak_tflops: float) -> Time:
    """Every GEMM of a pass on one rank: attention projections and MLPs of all layers, and the LM head
    for the one sampled token per row (vocab split by tp)."""
    num_moe = model.num_moe_layers
    time = gemms_time(gpu, attention_gemms(model, tp), tokens, weight_dtype,
                      peak_tflops).times(model.num_layers)
    if model.num_layers > num_moe:
        dense = gemms_time(gpu, mlp_gemms(model, tp, tokens, False), tokens, weight_dtype, peak_tflops)
        time += dense.times(model.num_layers - num_moe)
    if num_moe:
        time += gemms_time(gpu, mlp_gemms(model, tp, tokens, True), tokens, weight_dtype,
                           peak_tflops).times(num_moe)
    if model.is_dsa:
        time += gemms_time(gpu, indexer_gemms(model), tokens, weight_dtype,
                           peak_tflops).times(model.num_index_layers)
    return time + gemm_time(gpu, Gemm(model.hidden_size, model.vocab_size / tp), num_rows, weight_dtype,
                            peak_tflops)


def gemms_time(gpu: GPU, gemms: list[Gemm], tokens: float, weight_dtype: str, peak_tflops: float) -> Time:
    return sum((gemm_time(gpu, g, tokens, weight_dtype, peak_tflops) for g in gemms), ZERO)


class Elementwise(NamedTuple):
    """A memory-bound kernel: bytes read and written per token, and whether it runs a block per row."""

    name: str
    bytes_per_token: float
    is_row: bool


def elementwise_time(gpu: GPU, kernel: Elementwise, tokens: int) -> Time:
    """max(bandwidth time, floor); a row kernel instead waits at least floor + waves x one row's time."""
    if tokens <= 0:
        return ZERO
    roof_s = tokens * kernel.bytes_per_token / (gpu.memory_tbps * 1e12 * gpu.elementwise_mbu)
    least_s = gpu.kernel_floor_s
    if kernel.is_row:
        waves = ceil(tokens / (gpu.num_sms * max(1, gpu.threads_per_sm // ROW_BLOCK_THREADS)))
        least_s += waves * kernel.bytes_per_token / (gpu.row_gbps * 1e9)
    return Time(roof_s, max(0.0, least_s - roof_s), 0.0, roof_s)


def elementwise_kernels(model: Model, tp_size: int) -> list[Elementwise]:
    """One layer's memory-bound kernels (bf16): two RMSNorms (read and write h), two residual adds
    (read 2h, write h), rope on q and k, SiLU-and-multiply (read 2w, write w, w the MLP width used).
    Norms and adds are replicated on every rank; rope and the MLP are split by tp."""
    h, b = model.hidden_size, ACTIVATION_BYTES
    heads = model.num_heads / tp_size + max(1, model.num_kv_heads // tp_size)
    num_dense = model.num_layers - model.num_moe_layers
    width = (num_dense * model.intermediate_size
             + model.num_moe_layers * (model.num_experts_per_token + model.num_shared_experts)
             * model.moe_intermediate_size) / model.num_layers
    return [
        Elementwise("input_layernorm", 2 * h * b, True),
        Elementwise("post_attention_layernorm", 2 * h * b, True),
        Elementwise("attn_rope", 2 * heads * model.qk_head_dim * b, False),
        Elementwise("mlp_act", 3 * width / tp_size * b, True),
        Elementwise("add", 3 * h * b, False),
        Elementwise("mlp_add", 3 * h * b, False),
    ]


def elementwise_layer_time(gpu: GPU, model: Model, tokens: int, tp_size: int = 1,
                           names: tuple[str, ...] | None = None) -> Time:
    """One layer's element-wise kernels (optionally only those named, e.g. the ones Vidur measures)."""
    kernels = [k for k in elementwise_kernels(model, tp_size) if names is None or k.name in names]
    return sum((elementwise_time(gpu, k, tokens) for k in kernels), ZERO)


def attention_time(gpu: GPU, model: Model, attn_pairs: int, kv_tokens: int, num_rows: int, tp: int,
                   kv_bytes: float, new_tokens: int = 0) -> Time:
    """All layers' attention on one rank: max(QK^T and PV FLOPs over the causal pairs, KV bytes read and
    written), each at the GPU's attention efficiency; no layer's kernel below gpu.attention_floor_s.
    Each new token's query also costs gpu.attention_ramp_keys pairs' worth of work (its tile's prologue,
    softmax rescaling and epilogue), so a query that sees k keys runs at attention_mfu x k / (k + ramp):
    short prompts well below the long-sequence figure, 100k-token prompts close to it.
    A DSA model's attention is `dsa_attention_time` (it needs the pass's new tokens)."""
    if model.is_dsa:
        return dsa_attention_time(gpu, model, attn_pairs, kv_tokens, num_rows, tp, kv_bytes, new_tokens)
    work = attn_pairs + gpu.attention_ramp_keys * new_tokens
    flops = 2 * model.num_heads * (model.qk_head_dim + model.head_dim) * model.num_layers * work
    compute_s = flops / tp / (gpu.bf16_tflops * 1e12 * gpu.attention_mfu)
    memory_s = kv_tokens * kv_bytes / (gpu.memory_tbps * 1e12 * gpu.attention_mbu)
    roof_s = max(compute_s, memory_s)
    floor_s = max(0.0, gpu.attention_floor_s * model.num_layers - roof_s) if num_rows else 0.0
    return Time(roof_s, floor_s, compute_s, memory_s)


def dsa_attention_time(gpu: GPU, model: Model, attn_pairs: int, kv_tokens: int, num_rows: int, tp: int,
                       kv_bytes: float, new_tokens: int) -> Time:
    """DeepSeek sparse attention (DeepSeek-V3.2's DSA; SGLang's `dsa` backend), three kernels a layer:

    indexer  every causal pair scored by index_n_heads x index_head_dim FP8 dot products on the FP8 peak,
             reading each index key once and writing an fp32 score (indexer layers only);
    top-k    reading the scores back to pick index_topk keys per query (indexer layers only);
    sparse   MLA over the chosen keys only, in its absorbed form (queries of kv_lora_rank + rope, values
             of kv_lora_rank per head): min(pairs, new tokens x index_topk) pairs, reading at most
             min(visible keys, new tokens x index_topk) latents and writing the new ones.
    The pass's pairs are summed over rows, so min(pairs, new tokens x top-k) is exact when every query sees
    at least top-k keys (a long prompt's later chunks, decode past top-k) and an upper bound otherwise.
    Each kernel is its own roofline at the GPU's attention efficiency; each has the attention floor."""
    topk, layers, index_layers = model.index_topk, model.num_layers, model.num_index_layers
    sparse_pairs = min(attn_pairs, new_tokens * topk)
    heads = model.num_heads / tp
    sparse_flops = 2 * heads * (2 * model.kv_lora_rank + model.qk_rope_head_dim) * layers * sparse_pairs
    index_flops = 2 * model.index_n_heads * model.index_head_dim * index_layers * attn_pairs
    bandwidth = gpu.memory_tbps * 1e12 * gpu.attention_mbu
    key_bytes = dsa_index_key_bytes(model) * index_layers  # per token, all indexer layers
    latent_bytes = kv_bytes - key_bytes  # per token, all layers (hardware.dsa_latent_bytes each)
    latents = (min(kv_tokens - new_tokens, new_tokens * topk) + new_tokens) * latent_bytes
    keys = kv_tokens * key_bytes
    scores = attn_pairs * SCORE_BYTES * index_layers
    sparse_c = sparse_flops / (gpu.bf16_tflops * 1e12 * gpu.attention_mfu)
    index_c = index_flops / (gpu.fp8_tflops * 1e12 * gpu.attention_mfu)
    memory_s = (latents + keys + scores) / bandwidth
    roof_s = (max(sparse_c, latents / bandwidth) + max(index_c, (keys + scores / 2) / bandwidth)
              + scores / 2 / bandwidth)
    floors = gpu.attention_floor_s * (layers + 2 * index_layers)
    floor_s = max(0.0, floors - roof_s) if num_rows else 0.0
    return Time(roof_s, floor_s, sparse_c + index_c, memory_s)
