"""GPU, model and network-link presets, and the memory arithmetic built on them.

Every preset figure comes from a public source named in its `source` field (a vendor datasheet or the
model's config.json on Hugging Face) or is labelled "assumption: ...". All presets are plain frozen
pydantic models, so a scenario can override any field: `GPUS["h100-sxm"].model_copy(update={...})`.

Units: memory in GiB (2**30 bytes, as nvidia-smi's MiB / 1024), compute in dense (non-sparse) TFLOPS,
memory bandwidth in TB/s (10**12 bytes/s), GPU-to-GPU bandwidth in GB/s (10**9 bytes/s) *per direction*,
network links in Gb/s (10**9 bits/s).
"""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from engine_model.errors import InputError

GIB = 2**30
WeightDtype = Literal["bf16", "fp8", "nvfp4"]
KvDtype = Literal["bf16", "fp8"]
# Bytes per element. nvfp4 counts the 4-bit payload only (its per-16-element fp8 scales add ~6%).
DTYPE_BYTES: dict[str, float] = {"bf16": 2.0, "fp8": 1.0, "nvfp4": 0.5}
KV_DTYPES = ("bf16", "fp8")
MEM_FRACTION_STATIC = 0.88
ACTIVATION_RESERVE_GIB = 1.0
# The GPU fields a scenario may also set through cost.roofline (docs/cost-model.md).
EFFICIENCY_FIELDS = ("gemm_mfu", "gemm_mbu", "gemm_latency_s", "elementwise_mbu", "row_gbps",
                     "kernel_floor_s", "attention_mfu", "attention_mbu", "attention_floor_s",
                     "attention_ramp_keys")


class GPU(BaseModel):
    """One accelerator. `memory_gib` is what nvidia-smi / rocm-smi report, which decides
    SGLang's default chunk size (thresholds 20/35/60/90/160 GiB)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    memory_gib: float = Field(gt=0)
    bf16_tflops: float = Field(gt=0)  # dense tensor-core peak
    fp8_tflops: float = Field(gt=0)  # dense tensor-core peak
    memory_tbps: float = Field(gt=0)  # HBM/GDDR bandwidth, TB/s
    interconnect_gbps: float = Field(gt=0)  # NVLink / Infinity Fabric / PCIe, GB/s per direction per GPU
    source: str = Field(min_length=1)
    num_sms: int = Field(gt=0)  # streaming multiprocessors (AMD: compute units); sets wave sizes
    threads_per_sm: int = Field(gt=0)  # most resident threads per SM: 2048, or 1536 on GA102/AD102
    # The architecture SGLang reads to pick a GEMM backend per weight precision (engine_model/precision.py):
    # CUDA compute capability x 10 (80 Ampere A100, 86 GA102, 89 Ada, 90 Hopper, 100 Blackwell B200); on
    # AMD the capability PyTorch reports under ROCm (gfx942, MI300X: 9.4, so 94), with vendor "amd".
    sm: int = Field(ge=0, le=200)
    vendor: Literal["nvidia", "amd"] = "nvidia"
    # How close kernels come to the peaks above, per GPU (docs/cost-model.md, "Efficiency per GPU").
    gemm_mfu: float = Field(gt=0, le=1)  # large GEMMs: share of the dense tensor-core peak
    gemm_mbu: float = Field(gt=0, le=1)  # small GEMMs: share of memory bandwidth streaming weights
    gemm_latency_s: float = Field(ge=0)  # fixed time every GEMM kernel adds (ramp-up and tail)
    elementwise_mbu: float = Field(gt=0, le=1)  # norms, rope, SiLU, adds at many tokens
    row_gbps: float = Field(gt=0)  # GB/s one thread block reaches on one token's row (norms, SiLU)
    kernel_floor_s: float = Field(ge=0)  # shortest time any element-wise or attention kernel takes
    attention_mfu: float = Field(gt=0, le=1)  # prefill attention: share of the BF16 peak on causal pairs
    attention_mbu: float = Field(gt=0, le=1)  # decode attention: share of bandwidth reading KV
    attention_floor_s: float = Field(ge=0)  # shortest time one layer's attention kernel takes
    # Prefill attention's per-query overhead (prologue, softmax rescaling, epilogue), in keys' worth of work:
    # a query that sees k keys runs at attention_mfu x k / (k + attention_ramp_keys), so attention_mfu is
    # the long-sequence figure (docs/cost-model.md, "Long prompts against published measurements")
    attention_ramp_keys: float = Field(default=0.0, ge=0)
    efficiency_source: str = Field(min_length=1)


class Model(BaseModel):
    """Transformer shapes from the model's config.json. Parameter counts are derived from the shapes
    (see `total_params`, `active_params`) so they stay right when a field is overridden.

    For attention="mla", `head_dim` is the value head dim (v_head_dim) and the query/key head dim is
    qk_nope_head_dim + qk_rope_head_dim. For dense models leave the MoE fields at 0.

    DeepSeek sparse attention (DSA, DeepSeek-V3.2; GLM-5.x as GlmMoeDsaForCausalLM) is MLA with an
    indexer: `index_topk` > 0 turns it on. The indexer (index_n_heads x index_head_dim, FP8) scores every
    past token for each query; attention then reads only the top `index_topk` of them. `index_every` > 1
    lets the layers between two indexers reuse the last top-k (GLM-5.2's IndexShare; SGLang
    `dsa_layer_skips_topk`).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    num_layers: int = Field(gt=0)
    hidden_size: int = Field(gt=0)
    num_heads: int = Field(gt=0)
    num_kv_heads: int = Field(gt=0)
    head_dim: int = Field(gt=0)
    intermediate_size: int = Field(ge=0)  # dense MLP width (dense layers only in MoE models)
    vocab_size: int = Field(gt=0)
    context_length: int = Field(gt=0)
    tie_word_embeddings: bool = False
    attention: Literal["gqa", "mla"] = "gqa"
    q_lora_rank: int = Field(default=0, ge=0)
    kv_lora_rank: int = Field(default=0, ge=0)
    qk_nope_head_dim: int = Field(default=0, ge=0)
    qk_rope_head_dim: int = Field(default=0, ge=0)
    num_experts: int = Field(default=0, ge=0)
    num_experts_per_token: int = Field(default=0, ge=0)
    num_shared_experts: int = Field(default=0, ge=0)
    moe_intermediate_size: int = Field(default=0, ge=0)
    first_k_dense: int = Field(default=0, ge=0)  # leading layers with a dense MLP
    index_topk: int = Field(default=0, ge=0)  # DSA: keys each query attends (0: dense attention)
    index_n_heads: int = Field(default=0, ge=0)
    index_head_dim: int = Field(default=0, ge=0)
    index_every: int = Field(default=1, ge=1)  # one layer in index_every runs the indexer
    source: str = Field(min_length=1)

    @property
    def is_moe(self) -> bool:
        return self.num_experts > 0

    @property
    def num_moe_layers(self) -> int:
        return self.num_layers - self.first_k_dense if self.is_moe else 0

    @property
    def is_dsa(self) -> bool:
        return self.attention == "mla" and self.index_topk > 0

    @property
    def num_index_layers(self) -> int:
        """Layers that run the DSA indexer (the others reuse the previous top-k)."""
        return -(-self.num_layers // self.index_every) if self.is_dsa else 0

    @property
    def qk_head_dim(self) -> int:
        return self.qk_nope_head_dim + self.qk_rope_head_dim if self.attention == "mla" else self.head_dim

    @property
    def attention_params(self) -> int:
        """Weights of one layer's attention projections (biases and norms ignored, < 0.1%)."""
        h, n = self.hidden_size, self.num_heads
        if self.attention == "gqa":
            return h * n * self.head_dim * 2 + 2 * h * self.num_kv_heads * self.head_dim
        q = (h * self.q_lora_rank + self.q_lora_rank * n * self.qk_head_dim if self.q_lora_rank
             else h * n * self.qk_head_dim)
        kv = (h * (self.kv_lora_rank + self.qk_rope_head_dim)
              + self.kv_lora_rank * n * (self.qk_nope_head_dim + self.head_dim))
        return q + kv + n * self.head_dim * h

    @property
    def indexer_params(self) -> int:
        """One DSA indexer: its query up-projection from the q latent, key and head-weight projections."""
        if not self.is_dsa:
            return 0
        d, n = self.index_head_dim, self.index_n_heads
        return self.q_lora_rank * n * d + self.hidden_size * d + self.hidden_size * n

    @property
    def expert_params(self) -> int:
        """Weights of one routed expert (gate, up and down projections)."""
        return 3 * self.hidden_size * self.moe_intermediate_size

    @property
    def embedding_params(self) -> int:
        """Input embedding plus the LM head (counted once when they are tied)."""
        return self.vocab_size * self.hidden_size * (1 if self.tie_word_embeddings else 2)

    @property
    def dense_params(self) -> int:
        """Weights every token uses: attention, dense MLPs, shared experts and routers, not embeddings."""
        num_dense = self.num_layers - self.num_moe_layers
        per_moe_layer = self.num_shared_experts * self.expert_params + self.hidden_size * self.num_experts
        return (self.num_layers * self.attention_params + self.num_index_layers * self.indexer_params
                + num_dense * 3 * self.hidden_size * self.intermediate_size
                + self.num_moe_layers * per_moe_layer)

    @property
    def total_params(self) -> int:
        return (self.dense_params + self.num_moe_layers * self.num_experts * self.expert_params
                + self.embedding_params)

    @property
    def active_params(self) -> int:
        """Parameters one token touches (routed experts: num_experts_per_token of them)."""
        routed = self.num_moe_layers * self.num_experts_per_token * self.expert_params
        return self.dense_params + routed + self.embedding_params


class Link(BaseModel):
    """A KV-transfer path between a prefill and a decode GPU (one GPU's NIC, one direction)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    bandwidth_gbps: float = Field(gt=0)  # Gb/s (bits) per GPU NIC
    latency_s: float = Field(ge=0)  # fixed cost per transfer
    source: str = Field(min_length=1)


def transfer_seconds(link: Link, num_bytes: float) -> float:
    """Time to move num_bytes over one link: latency + size / bandwidth."""
    return link.latency_s + num_bytes * 8 / (link.bandwidth_gbps * 1e9)


def dtype_bytes(dtype: str, where: str, allowed: tuple[str, ...] = tuple(DTYPE_BYTES)) -> float:
    if dtype not in allowed:
        raise InputError(where, f"unknown dtype {dtype!r}; allowed: {', '.join(allowed)}")
    return DTYPE_BYTES[dtype]


def kv_heads_per_rank(model: Model, tp_size: int) -> int:
    """GQA KV heads are split across TP ranks down to one head per rank, then replicated."""
    return max(1, model.num_kv_heads // tp_size)


# SGLang's DSA KV layout (mem_cache/kv_cache_configurator.py `calculate_mla_kv_cache_dim`, the scaled
# layout of its default CUDA DSA backends; index_key_cache.py): FP8 latents carry one fp32 scale per 128
# values and keep the rope part in bf16; every indexer layer adds its FP8 index key with one fp32 scale.
DSA_QUANT_BLOCK = 128
FP32_BYTES = 4


def dsa_latent_bytes(model: Model, kv_dtype: str) -> float:
    """One DSA layer's latent per token: 512 FP8 + 4 fp32 scales + 64 bf16 rope = 656 bytes (or bf16)."""
    if kv_dtype == "fp8":
        return (model.kv_lora_rank + model.kv_lora_rank // DSA_QUANT_BLOCK * FP32_BYTES
                + model.qk_rope_head_dim * DTYPE_BYTES["bf16"])
    return (model.kv_lora_rank + model.qk_rope_head_dim) * dtype_bytes(kv_dtype, "kv_dtype", KV_DTYPES)


def dsa_index_key_bytes(model: Model) -> float:
    """One indexer layer's key per token: index_head_dim FP8 values and their scales (132 bytes)."""
    return model.index_head_dim + model.index_head_dim // DSA_QUANT_BLOCK * FP32_BYTES


def kv_bytes_per_token(model: Model, kv_dtype: str = "bf16", tp_size: int = 1) -> float:
    """KV-cache bytes one token occupies on one TP rank.

    GQA: K and V, 2 x layers x kv_heads_per_rank x head_dim x bytes.
    MLA: the compressed latent plus the rope key, layers x (kv_lora_rank + qk_rope_head_dim) x bytes;
    it is not split by heads, so every TP rank holds all of it.
    DSA: SGLang's latent layout per layer (`dsa_latent_bytes`) plus an index key per indexer layer.
    """
    size = dtype_bytes(kv_dtype, "kv_dtype", KV_DTYPES)
    if model.is_dsa:
        return (model.num_layers * dsa_latent_bytes(model, kv_dtype)
                + model.num_index_layers * dsa_index_key_bytes(model))
    if model.attention == "mla":
        return model.num_layers * (model.kv_lora_rank + model.qk_rope_head_dim) * size
    return 2 * model.num_layers * kv_heads_per_rank(model, tp_size) * model.head_dim * size


def weight_bytes(model: Model, weight_dtype: str = "bf16") -> float:
    """All weights at one dtype: total_params x bytes (quantization scales ignored)."""
    return model.total_params * dtype_bytes(weight_dtype, "weight_dtype")


def kv_budget_bytes(gpu: GPU, mem_fraction_static: float = MEM_FRACTION_STATIC,
                    activation_reserve_gib: float = ACTIVATION_RESERVE_GIB) -> float:
    """What one GPU gives weights and the KV pool together: memory x mem_fraction_static - reserve."""
    return gpu.memory_gib * GIB * mem_fraction_static - activation_reserve_gib * GIB


def kv_capacity_tokens(
    gpu: GPU,
    model: Model,
    tp_size: int = 1,
    weight_dtype: str = "bf16",
    kv_dtype: str = "bf16",
    mem_fraction_static: float = MEM_FRACTION_STATIC,
    activation_reserve_gib: float = ACTIVATION_RESERVE_GIB,
) -> int:
    """KV slots per rank: (memory x mem_fraction_static - weights/tp - reserve) / KV bytes per token.

    mem_fraction_static=0.88 is the value SGLang printed for Llama-3.1-8B at TP1 in the shared
    server_args logs (2024-11, 2025-03); newer versions derive it from GPU memory (0.841 and 0.91
    appear in later logs), so pass the value your server prints. SGLang keeps (1 - fraction) free for
    activations and CUDA graphs. activation_reserve_gib is an assumption: memory in use before the pool
    is sized (CUDA context, NCCL, allocator); ~1.07 GiB on an H100 in the shared Qwen2.5-0.5B log
    (79.65 GiB total, 77.52 GiB free after loading 1.06 GiB of weights).
    """
    if tp_size < 1:
        raise InputError("tp_size", f"must be >= 1, got {tp_size}")
    if not 0 < mem_fraction_static <= 1:
        raise InputError("mem_fraction_static", f"must be in (0, 1], got {mem_fraction_static}")
    problem = weights_problem(gpu, model, tp_size, weight_dtype, mem_fraction_static, activation_reserve_gib)
    if problem:  # engine_model.feasibility.check says the same, with the nearest fix
        raise InputError("deployment", problem)
    budget = kv_budget_bytes(gpu, mem_fraction_static, activation_reserve_gib)
    weights = weight_bytes(model, weight_dtype) / tp_size
    return int((budget - weights) // kv_bytes_per_token(model, kv_dtype, tp_size))


def weights_problem(gpu: GPU, model: Model, tp_size: int, weight_dtype: str, mem_fraction_static: float,
                    activation_reserve_gib: float = ACTIVATION_RESERVE_GIB) -> str | None:
    """Why the weights leave no room for a KV pool on one GPU, in the words every entry point shows; None when
    they fit."""
    budget = kv_budget_bytes(gpu, mem_fraction_static, activation_reserve_gib)
    weights = weight_bytes(model, weight_dtype)
    per_gpu = weights / tp_size
    if per_gpu < budget:
        return None
    return (f"{model.name}'s {weight_dtype} weights ({weights / GIB:,.0f} GiB) are {per_gpu / GIB:,.1f} GiB "
            f"per GPU at TP {tp_size}, and one {gpu.name} leaves {budget / GIB:,.1f} GiB for weights and KV "
            f"cache (memory × mem_fraction_static {mem_fraction_static:g} − {activation_reserve_gib:g} GiB)")


def _lookup(table: dict, name: str, where: str):
    if name not in table:
        raise InputError(where, f"unknown preset {name!r}; allowed: {', '.join(table)}")
    return table[name]


def gpu(name: str) -> GPU:
    return _lookup(GPUS, name, "gpu")


def model(name: str) -> Model:
    return _lookup(MODELS, name, "model")


def link(name: str) -> Link:
    return _lookup(LINKS, name, "link")


# ---------------------------------------------------------------------------------------- presets
# memory_gib: what nvidia-smi reports as memory.total (MiB / 1024); vendors quote decimal GB of the
# usable size (H100 "80GB" shows 81559 MiB). GPU-to-GPU bandwidth is per direction (half the vendor's
# bidirectional NVLink figure).
_NV_SMI = ("memory_gib from nvidia-smi memory.total ({} MiB) as commonly reported "
           "(assumption: driver-dependent)")
_CUDA_GPUS = "NVIDIA CUDA GPUs compute capability table, developer.nvidia.com/cuda-gpus"

# Efficiency figures per GPU. The three calibrated GPUs are fitted by bench/cost_fit.py on Vidur's
# measured operator times (MIT; tests/data/vidur); the others borrow the nearest calibrated GPU's figures,
# labelled as an assumption. Attention is measured on the A100 only (Vidur's legacy FlashAttention profile).
_FITTED = "fitted by bench/cost_fit.py on Vidur's measured GEMM and element-wise times ({})"
_NO_ATTENTION = ("; attention: assumption, the A100's figures (no public measured attention profile for "
                 "this GPU)")
# Attention, fitted by bench/cost_fit.py on Vidur's legacy A100 FlashAttention profile where long prompts
# and busy decode live (prefill chunks of 512+ tokens with past KV, decode batches of 32+; within 35 %);
# the floor is the shortest measured kernel (15-18 us: a 64-token chunk, one decode request).
_ATTENTION = dict(attention_mfu=0.25, attention_mbu=0.65, attention_floor_s=15e-6)
# The prefill figures of the FlashAttention-2 class (FlashInfer, Triton, aiter; engine_model/backend.py)
ATTENTION_FA2 = dict(attention_mfu=_ATTENTION["attention_mfu"], attention_ramp_keys=0.0)
# Hopper and Blackwell have no measured attention profile here; their prefill attention is fitted on published
# kernel throughput (bench/attention_fit.py on tests/data/published/attention_kernels.csv; docs/cost-model.md,
# "Long prompts against published measurements"): time = FLOPs x (1 + attention_ramp_keys / keys per query)
# / (peak x attention_mfu). SM90 (H100, H200) runs fa3 for MHA models in SGLang 0.5.23: fitted, least
# squares on log time, on FlashAttention-3's BF16 head-dim-128 forward throughput on H100 (pytorch/benchmark
# PR #2391: 430 TFLOPS at 512 tokens to 621 at 16k). SM100 (B200) runs trtllm_mha: FlashAttention-4's
# 1,613 TFLOPS on B200 over the 1.3x it reports against cuDNN 9.13 (the NVIDIA kernel class trtllm_mha
# belongs to: an assumption), 1,241 TFLOPS; the per-query overhead is the H100's (an assumption).
# The decode (bandwidth) share stays the A100's.
LONG_PREFILL = {"h100": dict(attention_mfu=0.638, attention_ramp_keys=239.0),
                "b200": dict(attention_mfu=0.551, attention_ramp_keys=239.0)}
_HOPPER_ATTENTION = dict(_ATTENTION, **LONG_PREFILL["h100"])
_BLACKWELL_ATTENTION = dict(_ATTENTION, **LONG_PREFILL["b200"])
_FA3 = ("; attention: assumption, fitted on FlashAttention-3's published H100 forward throughput (BF16, head "
        "dim 128; 0.638 of peak at long sequences, half that at 239 keys per query; fa3 is SGLang's SM90 "
        "backend), checked against published long-prompt first-token times; attention_mbu the A100's")
_FA4 = ("; attention: assumption, trtllm_mha (SGLang's SM100 backend) at cuDNN-class throughput: "
        "FlashAttention-4's published 1,613 TFLOPS on B200 over the 1.3x it reports against cuDNN 9.13 "
        "(0.551 of peak at long sequences), the per-query overhead the H100's fit; attention_mbu the A100's")
_H100 = dict(num_sms=132, threads_per_sm=2048, gemm_mfu=0.80, gemm_mbu=0.925, gemm_latency_s=7.5e-6,
             elementwise_mbu=0.53, row_gbps=9.0, kernel_floor_s=2e-6, **_HOPPER_ATTENTION,
             efficiency_source=_FITTED.format("H100, 5 models, 1-4,096 tokens") + _FA3)
_A100 = dict(num_sms=108, threads_per_sm=2048, gemm_mfu=0.80, gemm_mbu=0.95, gemm_latency_s=4.5e-6,
             elementwise_mbu=0.47, row_gbps=5.0, kernel_floor_s=0.7e-6, **_ATTENTION,
             efficiency_source=_FITTED.format("A100, 7 models, 1-32,768 tokens") + "; attention fitted on "
             "Vidur's legacy A100 FlashAttention profile (32 q / 4 kv heads per GPU)")
_A40 = dict(num_sms=84, threads_per_sm=1536, gemm_mfu=0.875, gemm_mbu=0.80, gemm_latency_s=1.5e-6,
            elementwise_mbu=0.72, row_gbps=12.7, kernel_floor_s=2.8e-6, **_ATTENTION,
            efficiency_source=_FITTED.format("A40, 5 models, 1-4,096 tokens") + _NO_ATTENTION)


def _like(figures: dict, calibrated: str, attention: str = "", **spec) -> dict:
    """A calibrated GPU's efficiency figures for an uncalibrated one, labelled as an assumption."""
    return {**figures, **spec,
            "efficiency_source": f"assumption: the {calibrated}'s fitted efficiency figures "
                                 f"(no public measured operator times for this GPU){attention}"}


GPUS: dict[str, GPU] = {
    "a100-80gb": GPU(**_A100, sm=80,
        name="A100 80GB SXM", memory_gib=80.0, bf16_tflops=312, fp8_tflops=312, memory_tbps=2.039,
        interconnect_gbps=300,
        source="NVIDIA A100 datasheet, nvidia.com/en-us/data-center/a100 (BF16 312 TFLOPS dense, 2,039 GB/s, "
        "NVLink 600 GB/s bidirectional); " + _NV_SMI.format(81920) + "; no FP8 tensor cores: fp8_tflops is "
        "the BF16 figure (SGLang runs fp8 weights here as Marlin W8A16, bf16 compute: "
        "engine_model/precision.py); 108 SMs (6,912 CUDA cores / 64), 2,048 threads per SM "
        "(CUDA compute capability 8.0, " + _CUDA_GPUS + ")"),
    "h100-sxm": GPU(**_H100, sm=90,
        name="H100 SXM 80GB", memory_gib=79.65, bf16_tflops=989.4, fp8_tflops=1978.9, memory_tbps=3.35,
        interconnect_gbps=450,
        source="NVIDIA H100 datasheet, nvidia.com/en-us/data-center/h100 (SXM: BF16 1,979 / FP8 3,958 TFLOPS "
        "with sparsity, half dense; 3.35 TB/s; NVLink 900 GB/s bidirectional); " + _NV_SMI.format(81559)
        + "; 132 SMs (16,896 CUDA cores / 128), 2,048 threads per SM (compute capability 9.0, "
        + _CUDA_GPUS + ")"),
    "h100-pcie": GPU(**_like(_H100, "H100 SXM", _FA3, num_sms=114), sm=90,
        name="H100 PCIe 80GB", memory_gib=79.65, bf16_tflops=756.5, fp8_tflops=1513, memory_tbps=2.0,
        interconnect_gbps=64,
        source="NVIDIA H100 datasheet, nvidia.com/en-us/data-center/h100 (PCIe: BF16 1,513 / FP8 3,026 "
        "TFLOPS with sparsity, half dense; 2 TB/s; NVLink bridge 600 GB/s bidirectional between two GPUs, "
        "PCIe Gen5 128 GB/s bidirectional); " + _NV_SMI.format(81559) + "; assumption: tensor parallel "
        "beyond a bridged pair all-reduces over PCIe Gen5 x16 (64 GB/s per direction); 114 SMs (14,592 CUDA "
        "cores / 128), compute capability 9.0 (" + _CUDA_GPUS + ")"),
    "h200": GPU(**_like(_H100, "H100", _FA3), sm=90,
        name="H200 SXM 141GB", memory_gib=140.4, bf16_tflops=989.4, fp8_tflops=1978.9, memory_tbps=4.8,
        interconnect_gbps=450,
        source="NVIDIA H200 datasheet, nvidia.com/en-us/data-center/h200 (141 GB, 4.8 TB/s, H100 compute, "
        "NVLink 900 GB/s bidirectional); " + _NV_SMI.format(143771) + "; 132 SMs as the H100, compute "
        "capability 9.0 (" + _CUDA_GPUS + ")"),
    "b200": GPU(**_like({**_H100, **_BLACKWELL_ATTENTION}, "H100", _FA4, num_sms=148), sm=100,
        name="B200 180GB", memory_gib=179.06, bf16_tflops=2250, fp8_tflops=4500, memory_tbps=8.0,
        interconnect_gbps=900,
        source="NVIDIA HGX B200 datasheet, nvidia.com/en-us/data-center/hgx (8 GPUs: 1.44 TB, 64 TB/s, "
        "BF16 36 / FP8 72 PFLOPS with sparsity, so per GPU dense 2.25 / 4.5 PFLOPS; NVLink 5 1.8 TB/s "
        "bidirectional); " + _NV_SMI.format(183359) + "; compute capability 10.0 (" + _CUDA_GPUS + "); "
        "assumption: 148 SMs as commonly reported (not on the datasheet)"),
    "l40s": GPU(**_like(_A40, "A40", num_sms=142), sm=89,
        name="L40S 48GB", memory_gib=44.99, bf16_tflops=362.05, fp8_tflops=733, memory_tbps=0.864,
        interconnect_gbps=32,
        source="NVIDIA L40S datasheet, nvidia.com/en-us/data-center/l40s (BF16 362.05 / FP8 733 TFLOPS "
        "dense, 864 GB/s, no NVLink: PCIe Gen4 x16, 64 GB/s bidirectional); " + _NV_SMI.format(46068)
        + "; 142 SMs (18,176 CUDA cores / 128), 1,536 threads per SM (compute capability 8.9, "
        + _CUDA_GPUS + ")"),
    "a40": GPU(**_A40, sm=86,
        name="A40 48GB", memory_gib=44.99, bf16_tflops=149.7, fp8_tflops=149.7, memory_tbps=0.696,
        interconnect_gbps=56.25,
        source="NVIDIA A40 datasheet, nvidia.com/en-us/data-center/a40 (48 GB GDDR6, 696 GB/s, BF16 299.4 "
        "TFLOPS with sparsity, so 149.7 dense; NVLink bridge 112.5 GB/s bidirectional between two GPUs; "
        "10,752 CUDA cores = 84 SMs of 128; 1,536 threads per SM, compute capability 8.6: "
        + _CUDA_GPUS + "); " + _NV_SMI.format(46068)
        + "; no FP8 tensor cores: fp8_tflops is the BF16 figure (SGLang runs fp8 weights here as Marlin "
        "W8A16, bf16 compute: engine_model/precision.py)"),
    "mi300x": GPU(**_like(_A100, "A100", num_sms=304), sm=94, vendor="amd",
        name="MI300X 192GB", memory_gib=191.69, bf16_tflops=1307.4, fp8_tflops=2614.9, memory_tbps=5.3,
        interconnect_gbps=448,
        source="AMD Instinct MI300X datasheet, amd.com/en/products/accelerators/instinct/mi300/mi300x.html "
        "(192 GB HBM3, 5.3 TB/s, BF16 1,307.4 / FP8 2,614.9 TFLOPS dense, 7 Infinity Fabric links of "
        "128 GB/s bidirectional, 304 compute units); CDNA3, gfx942 (AMD ROCm hardware specifications, "
        "rocm.docs.amd.com/en/latest/reference/gpu-arch-specs.html), which PyTorch on ROCm reports as "
        "capability 9.4; assumption: rocm-smi reports about 191.7 GiB"),
    "rubin": GPU(**_like({**_H100, **_BLACKWELL_ATTENTION}, "H100", _FA4, num_sms=148), sm=100,
        name="Rubin-class (editable)", memory_gib=268.2, bf16_tflops=4500, fp8_tflops=9000, memory_tbps=22.0,
        interconnect_gbps=1800,
        source="announced spec, NVIDIA Vera Rubin NVL144 (GTC 2025 / CES 2026 keynotes): 288 GB HBM4 per GPU "
        "(= 268.2 GiB), NVLink 6 3.6 TB/s bidirectional, HBM4 bandwidth 22 TB/s as announced at CES 2026 "
        "(13 TB/s at GTC 2025); assumption: BF16/FP8 dense TFLOPS = 2x B200 and 148 SMs (not published), "
        "and SM100-class for SGLang's kernel choices (sm 100: its compute capability is not published); "
        "edit freely"),
}
# A GPU of the person's own: the H100 SXM's figures to start from, every one edited in the app
# (hardware.gpu_overrides).
GPUS["custom"] = GPUS["h100-sxm"].model_copy(update={
    "name": "Custom GPU (starts as an H100 SXM; edit its figures)",
    "source": "assumption: a starting point, the h100-sxm preset's figures (NVIDIA H100 datasheet, "
              "nvidia.com/en-us/data-center/h100), sm 90 among them; edit each to your GPU's datasheet "
              "(hardware.gpu_overrides; sm and vendor too, which decide how SGLang runs fp8 and nvfp4 "
              "weights: engine_model/precision.py)"})

_HF = "Hugging Face config.json, huggingface.co/{}/blob/main/config.json"

MODELS: dict[str, Model] = {
    "llama-2-7b": Model(
        name="Llama-2-7B", num_layers=32, hidden_size=4096, num_heads=32, num_kv_heads=32, head_dim=128,
        intermediate_size=11008, vocab_size=32000, context_length=4096,
        source=_HF.format("meta-llama/Llama-2-7b-hf")),
    "llama-3.1-8b": Model(
        name="Llama-3.1-8B", num_layers=32, hidden_size=4096, num_heads=32, num_kv_heads=8, head_dim=128,
        intermediate_size=14336, vocab_size=128256, context_length=131072,
        source=_HF.format("meta-llama/Llama-3.1-8B")),
    "llama-3.1-70b": Model(
        name="Llama-3.1-70B", num_layers=80, hidden_size=8192, num_heads=64, num_kv_heads=8, head_dim=128,
        intermediate_size=28672, vocab_size=128256, context_length=131072,
        source=_HF.format("meta-llama/Llama-3.1-70B")),
    "llama-3.1-405b": Model(
        name="Llama-3.1-405B", num_layers=126, hidden_size=16384, num_heads=128, num_kv_heads=8, head_dim=128,
        intermediate_size=53248, vocab_size=128256, context_length=131072,
        source=_HF.format("meta-llama/Llama-3.1-405B")),
    "qwen2.5-0.5b": Model(
        name="Qwen2.5-0.5B", num_layers=24, hidden_size=896, num_heads=14, num_kv_heads=2, head_dim=64,
        intermediate_size=4864, vocab_size=151936, context_length=32768, tie_word_embeddings=True,
        source=_HF.format("Qwen/Qwen2.5-0.5B-Instruct") + " (the model of SGLang's documentation-CI logs)"),
    "qwen3-8b": Model(
        name="Qwen3-8B", num_layers=36, hidden_size=4096, num_heads=32, num_kv_heads=8, head_dim=128,
        intermediate_size=12288, vocab_size=151936, context_length=40960,
        source=_HF.format("Qwen/Qwen3-8B")),
    "qwen3-32b": Model(
        name="Qwen3-32B", num_layers=64, hidden_size=5120, num_heads=64, num_kv_heads=8, head_dim=128,
        intermediate_size=25600, vocab_size=151936, context_length=40960,
        source=_HF.format("Qwen/Qwen3-32B")),
    "qwen3-30b-a3b": Model(
        name="Qwen3-30B-A3B", num_layers=48, hidden_size=2048, num_heads=32, num_kv_heads=4, head_dim=128,
        intermediate_size=6144, vocab_size=151936, context_length=40960,
        num_experts=128, num_experts_per_token=8, moe_intermediate_size=768,
        source=_HF.format("Qwen/Qwen3-30B-A3B") + " (every layer is MoE; intermediate_size unused)"),
    "qwen3-235b-a22b": Model(
        name="Qwen3-235B-A22B", num_layers=94, hidden_size=4096, num_heads=64, num_kv_heads=4, head_dim=128,
        intermediate_size=12288, vocab_size=151936, context_length=40960,
        num_experts=128, num_experts_per_token=8, moe_intermediate_size=1536,
        source=_HF.format("Qwen/Qwen3-235B-A22B") + " (every layer is MoE; intermediate_size unused)"),
    "deepseek-v3": Model(
        name="DeepSeek-V3", num_layers=61, hidden_size=7168, num_heads=128, num_kv_heads=128, head_dim=128,
        intermediate_size=18432, vocab_size=129280, context_length=163840, attention="mla",
        q_lora_rank=1536, kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64,
        num_experts=256, num_experts_per_token=8, num_shared_experts=1, moe_intermediate_size=2048,
        first_k_dense=3,
        source=_HF.format("deepseek-ai/DeepSeek-V3") + " (the multi-token-prediction layer is not counted)"),
    "glm-moe": Model(
        name="GLM-class MoE (GLM-4.5 shapes, editable)", num_layers=92, hidden_size=5120, num_heads=96,
        num_kv_heads=8, head_dim=128, intermediate_size=12288, vocab_size=151552, context_length=131072,
        num_experts=160, num_experts_per_token=8, num_shared_experts=1, moe_intermediate_size=1536,
        first_k_dense=3,
        source=_HF.format("zai-org/GLM-4.5") + "; the GQA GLM-4.5 generation (GLM-5.x is `glm-5`); the MTP "
        "layer is not counted"),
    "glm-5": Model(
        name="GLM-5 (MLA + DeepSeek sparse attention)", num_layers=78, hidden_size=6144, num_heads=64,
        num_kv_heads=64, head_dim=256, intermediate_size=12288, vocab_size=154880, context_length=202752,
        attention="mla", q_lora_rank=2048, kv_lora_rank=512, qk_nope_head_dim=192, qk_rope_head_dim=64,
        num_experts=256, num_experts_per_token=8, num_shared_experts=1, moe_intermediate_size=2048,
        first_k_dense=3, index_topk=2048, index_n_heads=32, index_head_dim=128,
        source=_HF.format("zai-org/GLM-5") + " (GlmMoeDsaForCausalLM; the same shapes are the defaults of "
        "transformers' GlmMoeDsaConfig and the GLM-5 technical report's table); index_topk 2048 as "
        "DeepSeek-V3.2's DSA (huggingface.co/deepseek-ai/DeepSeek-V3.2-Exp config.json: index_topk 2048, "
        "index_head_dim 128); GLM-5.1 and 5.2 share the architecture (GLM-5.2 adds IndexShare, one "
        "indexer per 4 layers: model.overrides.index_every = 4); the MTP layer is not counted"),
}

# A model of the person's own: Llama-3.1-8B's shapes to start from, every one edited in the app
# (model.overrides).
MODELS["custom"] = MODELS["llama-3.1-8b"].model_copy(update={
    "name": "Custom model (starts as Llama-3.1-8B; edit its shapes)",
    "source": "assumption: a starting point, the llama-3.1-8b preset's shapes (" + _HF.format(
        "meta-llama/Llama-3.1-8B") + "); edit each to your model's config.json (model.overrides)"})

LINKS: dict[str, Link] = {
    "mooncake": Link(
        name="Mooncake RDMA", bandwidth_gbps=400, latency_s=50e-6,
        source="Mooncake Transfer Engine RDMA transport (github.com/kvcache-ai/Mooncake); 400 Gb/s = one "
        "ConnectX-7 NIC per GPU as in NVIDIA DGX H100 (8x 400 Gb/s ConnectX-7 for the compute fabric); "
        "assumption: line rate per GPU, 50 us per transfer"),
    "mooncake_tcp": Link(
        name="Mooncake TCP", bandwidth_gbps=25, latency_s=1e-3,
        source="Mooncake Transfer Engine TCP transport (github.com/kvcache-ai/Mooncake); assumption: "
        "~25 Gb/s effective through host memory and the kernel network stack, 1 ms per transfer"),
    "nixl": Link(
        name="NIXL (UCX RDMA)", bandwidth_gbps=400, latency_s=50e-6,
        source="NVIDIA NIXL over UCX (github.com/ai-dynamo/nixl); assumption: same 400 Gb/s ConnectX-7 per "
        "GPU as mooncake, 50 us per transfer"),
}
