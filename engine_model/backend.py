"""The attention backend SGLang runs for a GPU and a model, and what that backend forces: the page size,
whether prefill CUDA graphs stay on, and what `--kv-cache-dtype auto` becomes. One answer, `attention_of`,
read by the settings (engine_model/resolve.py: page size and KV dtype into the KV budget, and
`Resolved.attention_words`, which every resolved-settings line shows) and the cost model (the kernel figures
that price attention, `priced_gpu`).

What SGLang does, read in the 0.5.20, 0.5.21, 0.5.22 and 0.5.23 wheels (the same in all four for these
presets; the MLA prefill-graph cap, which differs, is engine_model/resolve.py `default_prefill_graph_tokens`):
- backend, when --attention-backend is not set (arg_groups/overrides.py `_attention_backend_default` calls
  arg_groups/model_override_base.py `get_default_attn_backend`):
  MHA/GQA models: fa3 on Hopper (SM90, CUDA 12.3+), trtllm_mha on SM100 (fa4 when K and V head dims differ),
  aiter on ROCm, else flashinfer (triton for a model with attention sinks).
  MLA models: fa3 on Hopper, aiter on ROCm when the KV heads per rank are 16 or 128 (else triton), else
  triton; on SM100 a DeepSeek-V3-family model gets trtllm_mla first (arg_groups/model_overrides/deepseek_v2.py
  `_deepseek_family_overrides`, when no attention backend is set).
  DSA models (DeepSeek-V3.2, GLM-5): "dsa" (the same override), whose prefill and decode kernels
  overrides.py `_dsa_split_backend_resolution` picks: fp8 KV: trtllm on SM100+, flashmla_kv on Hopper;
  bf16 KV: flashmla_sparse prefill, trtllm (SM100+) or fa3 decode; triton on ROCm.
- page size (overrides.py `_mla_backend_page_constraints` and `_fa4_page_constraint`, which run before
  `_page_size_default` gives 1 to an unset page size): trtllm_mha keeps 16, 32, 64 or 128 and makes anything
  else (an unset one too) 64; trtllm_mla keeps 32 or 64, else 64; flashmla always 64; fa4 (MHA, SM100) always
  128; a DSA model always 64 x index_kpool (deepseek_v2.py; GLM-5 has no index_kpool, so 64).
- prefill CUDA graphs: off for a DeepseekV3ForCausalLM model whose prefill runs trtllm_mla
  (arg_groups/cuda_graph_hook.py `disable_prefill_cuda_graph_for_deepseek_trtllm_mla`; it runs after
  `handle_gpu_memory_settings`, so the memory reserved for them stays reserved).
- auto KV dtype: the model's dtype (bf16 here), except a DSA model on CUDA compute capability 10+, where
  overrides.py `_dsa_kv_cache_dtype_default` makes it fp8_e4m3 (no attention sinks in the presets).

What the model assumes beyond SGLang's code: the MLA presets are DeepseekV3ForCausalLM (DeepSeek-V3's
architecture); CUDA is 12.3+ (12.8+ on Blackwell); ROCm has aiter's preshuffle paged-MQA kernel (else
SGLang pages a DSA model at 1); and the kernel figures (docs/cost-model.md, "Attention backend per GPU"):
fa3 on Hopper runs at the FlashAttention-3 fit, trtllm_mha / trtllm_mla / fa4 on SM100 at the Blackwell
(cuDNN-class) fit, every other backend (FlashInfer, Triton, aiter, fa3 off Hopper) at the A100's
FlashAttention-2 fit; a DSA model's kernels at its GPU's default class.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine_model.errors import InputError
from engine_model.hardware import ATTENTION_FA2, GPU, LONG_PREFILL, Model
from engine_model.versions import RELEASES

KV_CHOICES = ("auto", "bf16", "fp8")
MHA_BACKENDS = ("fa3", "fa4", "flashinfer", "triton", "trtllm_mha", "aiter")
MLA_BACKENDS = ("fa3", "flashinfer", "triton", "trtllm_mla", "flashmla", "aiter")
DSA_BACKENDS = ("dsa",)
ATTENTION_BACKENDS = tuple(dict.fromkeys(MHA_BACKENDS + MLA_BACKENDS + DSA_BACKENDS))
# Page sizes a backend keeps when they are set; anything else (an unset page size too) becomes FORCED_PAGE.
KEPT_PAGES = {"trtllm_mha": (16, 32, 64, 128), "trtllm_mla": (32, 64), "flashmla": (64,)}
FORCED_PAGE = {"trtllm_mha": 64, "trtllm_mla": 64, "flashmla": 64}
FA4_PAGE = 128  # `_fa4_page_constraint`: MHA models on SM100
DSA_PAGE = 64  # `_deepseek_family_overrides`: 64 x index_kpool
# The figures that price prefill attention, by kernel class (hardware.py LONG_PREFILL, ATTENTION_FA2)
KERNEL_FIGURES = {"fa3": LONG_PREFILL["h100"], "sm100": LONG_PREFILL["b200"], "fa2": ATTENTION_FA2}
KERNEL_WORDS = {"fa3": "FlashAttention-3 fit (Hopper)", "sm100": "Blackwell trtllm/cuDNN-class fit",
                "fa2": "A100 FlashAttention-2 fit"}
OVERRIDES = "overrides.py"
SOURCES = {
    "default": "model_override_base.py get_default_attn_backend",
    "deepseek": "model_overrides/deepseek_v2.py _deepseek_family_overrides",
    "dsa_split": f"{OVERRIDES} _dsa_split_backend_resolution",
    "page": f"{OVERRIDES} _mla_backend_page_constraints",
    "fa4_page": f"{OVERRIDES} _fa4_page_constraint",
    "page_default": f"{OVERRIDES} _page_size_default",
    "graphs": "cuda_graph_hook.py disable_prefill_cuda_graph_for_deepseek_trtllm_mla",
    "kv": f"{OVERRIDES} _dsa_kv_cache_dtype_default",
}


@dataclass(frozen=True)
class Attention:
    """How SGLang runs one model's attention on one GPU. Plain fields, for every surface to read.

    backend: --attention-backend as resolved ("fa3", "trtllm_mha", "dsa", ...); prefill / decode: the kernels
    each phase runs (they differ only for DSA); page_size: the page SGLang runs with; prefill_graphs: False
    when the backend turns prefill CUDA graphs off; kv_dtype: "bf16" or "fp8" after `auto`; kernels: the
    class of kernel figures that prices attention ("fa3", "sm100", "fa2"); each *_source names the SGLang
    function that decided it, or "set"."""

    backend: str
    prefill: str
    decode: str
    source: str
    page_size: int
    page_source: str
    prefill_graphs: bool
    graphs_source: str
    kv_dtype: str
    kv_source: str
    kernels: str


def is_hopper(gpu: GPU) -> bool:
    return gpu.vendor == "nvidia" and gpu.sm // 10 == 9


def is_sm100(gpu: GPU) -> bool:
    """SGLang's is_sm100: CUDA compute capability major 10 (B200, GB200, B300)."""
    return gpu.vendor == "nvidia" and gpu.sm // 10 == 10


def is_blackwell(gpu: GPU) -> bool:
    """SGLang's is_blackwell: majors 10 to 12."""
    return gpu.vendor == "nvidia" and 10 <= gpu.sm // 10 <= 12


def _default_backend(gpu: GPU, model: Model, tp_size: int) -> tuple[str, str]:
    """The backend SGLang picks when none is set, and the function that picks it."""
    if model.is_dsa:
        return "dsa", SOURCES["deepseek"]
    amd = gpu.vendor == "amd"
    if model.attention == "mla":
        if is_sm100(gpu):
            return "trtllm_mla", SOURCES["deepseek"]
        if is_hopper(gpu):
            return "fa3", SOURCES["default"]
        if amd:
            heads = max(1, model.num_kv_heads // tp_size)  # get_num_kv_heads(tp_size)
            return ("aiter" if heads in (16, 128) else "triton"), SOURCES["default"]
        return "triton", SOURCES["default"]
    if is_hopper(gpu):
        return "fa3", SOURCES["default"]
    if is_sm100(gpu):
        # has_asymmetric_kv: GQA presets have equal K and V head dims
        return "trtllm_mha", SOURCES["default"]
    return ("aiter" if amd else "flashinfer"), SOURCES["default"]


def _refusal(gpu: GPU, model: Model, backend: str) -> str | None:
    """Why SGLang cannot run this backend here; None when it can."""
    kind = "DSA" if model.is_dsa else "MLA" if model.attention == "mla" else "MHA/GQA"
    allowed = DSA_BACKENDS if model.is_dsa else MLA_BACKENDS if model.attention == "mla" else MHA_BACKENDS
    if backend not in allowed:
        return (f"{backend!r} is not an attention backend the model runs for a {kind} model; allowed: "
                f"{', '.join(allowed)}")
    if gpu.vendor == "amd" and backend not in ("aiter", "triton", "dsa"):
        return f"{backend!r} is a CUDA backend; on {gpu.name} (ROCm): aiter or triton"
    if gpu.vendor != "amd" and backend == "aiter":
        return f"'aiter' is ROCm's backend; {gpu.name} is an NVIDIA GPU"
    if backend == "trtllm_mla" and not is_blackwell(gpu):
        return ("\"TRTLLM MLA backend is only supported on Blackwell GPUs (SM100/SM12x)\" "
                f"({OVERRIDES} _mla_kv_cache_dtype_checks)")
    if backend == "trtllm_mha" and gpu.sm // 10 not in (9, 10, 12):
        return ("\"TRTLLM MHA backend for prefill requires Hopper (SM90), Blackwell (SM100), or SM120 GPUs\" "
                "(attention_hook.py handle_attention_backend_compatibility)")
    if backend in ("fa3", "flashmla") and gpu.sm < 80:
        return f"{backend} needs an SM80+ GPU (assumption: the model's reading of the kernels' builds)"
    return None


def _page(gpu: GPU, model: Model, backend: str, asked: int | None) -> tuple[int, str]:
    """The page size SGLang runs with: what this backend forces, else what was set, else 1."""
    if model.is_dsa:
        return DSA_PAGE, f"{SOURCES['deepseek']}: a DSA model pages at 64"
    if backend == "fa4" and model.attention != "mla" and is_sm100(gpu):
        return FA4_PAGE, f"{SOURCES['fa4_page']}: fa4 pages at 128"
    if backend in KEPT_PAGES and asked not in KEPT_PAGES[backend]:
        kept = ", ".join(str(p) for p in KEPT_PAGES[backend])
        return FORCED_PAGE[backend], f"{SOURCES['page']}: {backend} keeps {kept}, else 64"
    if asked is not None:
        return asked, "set"
    return 1, SOURCES["page_default"]


def _kv(gpu: GPU, model: Model, asked: str) -> tuple[str, str]:
    """`--kv-cache-dtype`: what was set, or what auto becomes."""
    if asked not in KV_CHOICES:
        raise InputError("model.kv_dtype", f"unknown KV dtype {asked!r}; allowed: {', '.join(KV_CHOICES)}")
    if asked != "auto":
        return asked, "set"
    if model.is_dsa and gpu.vendor == "nvidia" and gpu.sm // 10 >= 10:
        return "fp8", f"auto: fp8_e4m3 for a DSA model on SM{gpu.sm // 10}+ ({SOURCES['kv']})"
    return "bf16", "auto: the model's dtype"


def _dsa_split(gpu: GPU, kv_dtype: str) -> tuple[str, str]:
    """`_dsa_split_backend_resolution`: the DSA prefill and decode kernels."""
    if gpu.vendor == "amd":
        return "triton", "triton"
    major = gpu.sm // 10
    if kv_dtype == "fp8":
        return ("trtllm", "trtllm") if major >= 10 else ("flashmla_kv", "flashmla_kv")
    return "flashmla_sparse", "trtllm" if major >= 10 else "fa3"


def kernel_class(gpu: GPU, backend: str) -> str:
    """The kernel figures that price a backend's prefill attention on this GPU."""
    if backend == "dsa":
        return "fa3" if is_hopper(gpu) else "sm100" if is_sm100(gpu) else "fa2"
    if backend == "fa3" and is_hopper(gpu):
        return "fa3"
    if backend in ("trtllm_mha", "trtllm_mla", "fa4") and is_sm100(gpu):
        return "sm100"
    return "fa2"


def default_kernels(gpu: GPU) -> str:
    """The class a GPU preset's own attention figures describe: its MHA default backend's."""
    return kernel_class(gpu, "fa3" if is_hopper(gpu) else "trtllm_mha" if is_sm100(gpu) else "flashinfer")


def attention_of(gpu: GPU, model: Model, tp_size: int = 1, version: str = "0.5.23",
                 backend: str | None = None, page_size: int | None = None,
                 kv_dtype: str = "auto") -> Attention:
    """How SGLang `version` runs `model`'s attention on `gpu` at `tp_size`: `backend`, `page_size` and
    `kv_dtype` are the flags as set (None / "auto": SGLang's default)."""
    if version not in RELEASES:
        raise InputError("engine.version", f"unknown release {version!r}; allowed: {', '.join(RELEASES)}")
    if backend is None:
        name, source = _default_backend(gpu, model, tp_size)
    else:
        refusal = _refusal(gpu, model, backend)
        if refusal:
            raise InputError("engine.attention_backend", refusal)
        name, source = backend, "set"
    page, page_source = _page(gpu, model, name, page_size)
    kv, kv_source = _kv(gpu, model, kv_dtype)
    prefill, decode = _dsa_split(gpu, kv) if name == "dsa" else (name, name)
    graphs = not (model.attention == "mla" and not model.is_dsa and prefill == "trtllm_mla")
    graphs_source = "on (breakable, SGLang's default on CUDA)" if graphs else SOURCES["graphs"]
    return Attention(backend=name, prefill=prefill, decode=decode, source=source, page_size=page,
                     page_source=page_source, prefill_graphs=graphs, graphs_source=graphs_source,
                     kv_dtype=kv, kv_source=kv_source, kernels=kernel_class(gpu, name))


def priced_gpu(gpu: GPU, attention: Attention, kept: set[str] = frozenset()) -> GPU:
    """The GPU with the prefill-attention figures of the backend that runs: its own when the backend is of the
    class its preset describes, else that class's (`KERNEL_FIGURES`); a field in `kept` (set by the person)
    stays."""
    if attention.kernels == default_kernels(gpu):
        return gpu
    figures = {k: v for k, v in KERNEL_FIGURES[attention.kernels].items() if k not in kept}
    note = (f"; attention priced for {attention.backend}: the {KERNEL_WORDS[attention.kernels]} "
            "(engine_model/backend.py)")
    return gpu.model_copy(update={**figures, "efficiency_source": gpu.efficiency_source + note})
