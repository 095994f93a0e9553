"""How SGLang runs a weight precision on a GPU: the GEMM backend it picks, the flag that picks it, the bytes
each weight streams and the dtype whose tensor-core peak prices the GEMMs; or why it cannot run it.

`weight_path(gpu, weight_dtype, version, moe)` is the one answer; the cost model prices GEMMs with it
(engine_model/cost.py `linear_peak_tflops`), the feasibility check refuses what it refuses
(engine_model/deployment.py), and every deployment line can name its backend (`WeightPath.words`).

What SGLang does, read in the 0.5.20, 0.5.21, 0.5.22 and 0.5.23 wheels (the same in all four, so `version`
changes nothing yet; it is checked, so a release that differs can say so here):
- bf16: the checkpoint's dtype, on the BF16 tensor cores, everywhere.
- fp8 (an FP8 checkpoint or `--quantization fp8`: `Fp8Config`, minimum capability 80):
  on SM89+ FP8 GEMMs with FP8 activations, W8A8 (fp8_utils.py `cutlass_fp8_supported`: SM89 with CUDA
  12.4+, SM90+ with 12.0+); on SM80-SM88 (A100, A40), which have no FP8 tensor cores, the dense layers run
  Marlin W8A16, fp8 weights and bf16 activations and compute (fp8.py `Fp8LinearMethod.__init__`, chosen by
  fp8_utils.py `can_auto_enable_marlin_fp8`: 80 <= sm < 89, no flag needed). The routed experts of an MoE
  model have no such fallback: `--moe-runner-backend auto` runs them on Triton's fused MoE kernel
  (fp8.py `Fp8MoEMethod.create_moe_runner`), whose FP8 e4m3 type Triton compiles only on SM89+ ("type
  fp8e4nv not supported in this architecture", Triton's compile error), so fp8 MoE on SM80-SM88 is refused.
  On AMD (gfx942) FP8 W8A8 in e4m3fnuz (fp8.py normalizes the weights, `_is_fp8_fnuz`).
- nvfp4 (a ModelOpt NVFP4 checkpoint, `modelopt_fp4`, minimum capability 80): fp4_utils.py
  `initialize_fp4_gemm_config` resolves `--fp4-gemm-backend auto` (the default, arg_groups/fields/exec_.py)
  to `flashinfer_cutedsl` on SM100, `marlin` on CUDA SM80-SM99 (weight-only W4A16: 4-bit weights, bf16
  activations and compute), `flashinfer_cutlass` otherwise; modelopt_quant.py
  `ModelOptFp4LinearMethod.process_weights_after_loading` refuses a non-Marlin backend below Blackwell
  ("ModelOpt NVFP4 native dense GEMM backends require SM100+. Use --fp4-gemm-backend marlin on SM80-SM90.").
  MoE experts: `ModelOptNvFp4FusedMoEMethod` (`__init__`, `create_moe_runner`) runs them on Marlin (W4A16)
  on CUDA SM80-SM99 under `--moe-runner-backend auto`, on FlashInfer TRT-LLM FP4 MoE on Blackwell.
  On ROCm a ModelOpt checkpoint is loaded as `petit_nvfp4` (petit.py
  `PetitNvFp4Config.override_quantization_method`; minimum capability 90, gfx90a/gfx942): Petit's W4A16
  kernels for the linear layers, with the `petit-kernel` package installed; its `get_quant_method` quantizes
  linear layers only, so an MoE model's NVFP4 experts have no path there (the model's reading: refused).

What the model assumes beyond SGLang's code, for the price: a weight-only GEMM (Marlin, Petit) runs at the
BF16 peak at the GPU's fitted `gemm_mfu` and streams its 1 or 0.5 bytes per weight (dequantizing costs
nothing more); nvfp4 on Blackwell (W4A4 on the FP4 tensor cores, whose datasheet peak is twice the FP8
one: NVIDIA HGX B200, 144 / 72 PFLOPS with sparsity for 8 GPUs) is priced at the FP8 peak, no FP4 speed-up,
as no FP4 GEMM time has been measured against the model. Rubin is SM100-class (a labelled assumption of its
preset).
"""

from __future__ import annotations

from dataclasses import dataclass

from engine_model.errors import InputError
from engine_model.hardware import DTYPE_BYTES, GPU
from engine_model.versions import RELEASES

WEIGHT_DTYPES = ("bf16", "fp8", "nvfp4")
MARLIN_FP4 = "--fp4-gemm-backend auto picks marlin on SM80–SM90"
FP4_SOURCE = ("fp4_utils.py initialize_fp4_gemm_config; modelopt_quant.py ModelOptFp4LinearMethod, "
              "ModelOptNvFp4FusedMoEMethod")
FP8_SOURCE = "fp8.py Fp8LinearMethod.__init__, Fp8MoEMethod.create_moe_runner; fp8_utils.py"
PETIT_SOURCE = "petit.py PetitNvFp4Config (override_quantization_method, get_quant_method)"
NO_FP4_SPEEDUP = ("assumption: priced at the FP8 peak (no FP4 speed-up; the datasheet FP4 peak is twice the "
                  "FP8 one, but no FP4 GEMM time has been measured against the model)")
WEIGHT_ONLY = "assumption: weight-only GEMMs run at the BF16 peak; dequantizing the weights costs no more"


@dataclass(frozen=True)
class WeightPath:
    """How SGLang runs one weight precision on one GPU. Plain fields, for every deployment line to read.

    backend:  the dense GEMMs' kernels, e.g. "native BF16", "FP8 W8A8", "Marlin W8A16", "Marlin W4A16",
              "FP4 CuTe DSL", "Petit W4A16"; "" when SGLang cannot run it.
    flag:     the SGLang flag (or environment variable) that selects this backend explicitly ("" when none
              does: the checkpoint and the GPU decide).
    default:  how SGLang gets there without the flag, in words (the default it resolves).
    experts:  an MoE model's routed experts, e.g. "Marlin MoE (W4A16)"; "" for a dense model.
    bytes_per_weight: what each weight streams from memory (the 4-bit payload counts 0.5).
    compute_dtype: "bf16" or "fp8", the tensor-core peak the GEMMs are priced at (bf16 for weight-only
              W8A16 / W4A16; fp8 for W8A8, and for W4A4 on Blackwell: `assumption`).
    source:   the SGLang files and functions that decide it.
    refusal:  why SGLang cannot run it, in its own words where it has them; "" when it runs.
    assumption: what the price assumes beyond SGLang's code; "" when nothing.
    """

    gpu_name: str
    weight_dtype: str
    backend: str
    flag: str
    default: str
    experts: str
    bytes_per_weight: float
    compute_dtype: str
    source: str
    refusal: str = ""
    assumption: str = ""

    @property
    def runs(self) -> bool:
        return not self.refusal

    @property
    def words(self) -> str:
        """'nvfp4 weights via Marlin W4A16 (4-bit weights, bf16 compute; --fp4-gemm-backend auto picks marlin
        on SM80–SM90)', or why it cannot run."""
        if self.refusal:
            return f"{self.weight_dtype} weights cannot run on {self.gpu_name}: {self.refusal}"
        if self.backend == "native BF16":
            return "bf16 weights (native BF16 GEMMs)"
        bits = round(self.bytes_per_weight * 8)
        if self.compute_dtype == "bf16":  # weight-only: what the weights are, and what computes
            return (f"{self.weight_dtype} weights via {self.backend} ({bits}-bit weights, bf16 compute; "
                    f"{self.default})")
        priced = ", priced at the FP8 peak" if self.weight_dtype == "nvfp4" else ""  # NO_FP4_SPEEDUP
        return (f"{self.weight_dtype} weights via {self.backend} ({bits}-bit weights and "
                f"activations{priced}; {self.default})")


def weight_path(gpu: GPU, weight_dtype: str, version: str = "0.5.23", moe: bool = False) -> WeightPath:
    """How SGLang `version` runs `weight_dtype` weights on `gpu` (`moe`: the model has routed experts)."""
    if version not in RELEASES:
        raise InputError("engine.version", f"unknown release {version!r}; allowed: {', '.join(RELEASES)}")
    if weight_dtype not in WEIGHT_DTYPES:
        raise InputError("weight_dtype",
                         f"unknown dtype {weight_dtype!r}; allowed: {', '.join(WEIGHT_DTYPES)}")
    path = {"bf16": _bf16, "fp8": _fp8, "nvfp4": _nvfp4}[weight_dtype](gpu, moe)
    return WeightPath(gpu_name=gpu.name, weight_dtype=weight_dtype,
                      bytes_per_weight=DTYPE_BYTES[weight_dtype], **path)


def _bf16(gpu: GPU, moe: bool) -> dict:
    return dict(backend="native BF16", flag="", default="the checkpoint's dtype",
                experts="fused MoE, bf16 (--moe-runner-backend auto)" if moe else "", compute_dtype="bf16",
                source="the model's own layers (layers/linear.py UnquantizedLinearMethod)")


def _fp8(gpu: GPU, moe: bool) -> dict:
    """fp8 weights (fp8.py Fp8LinearMethod / Fp8MoEMethod, the same in 0.5.20-0.5.23)."""
    native = dict(backend="FP8 W8A8", flag="", compute_dtype="fp8", source=FP8_SOURCE,
                  experts="Triton fused MoE, FP8 W8A8 (--moe-runner-backend auto)" if moe else "")
    if gpu.vendor == "amd":
        return dict(native, default="e4m3fnuz on gfx942")
    if gpu.sm < 80:
        return _below(gpu, "fp8", 80, FP8_SOURCE)
    if gpu.sm >= 89:
        return dict(native, default="FP8 tensor cores on SM89+")
    marlin = dict(backend="Marlin W8A16", flag="SGLANG_FORCE_FP8_MARLIN=1 (an environment variable)",
                  default="SGLang picks it for fp8 on SM80–SM88, which have no FP8 tensor cores",
                  experts="", compute_dtype="bf16", source=FP8_SOURCE, assumption=WEIGHT_ONLY)
    if moe:
        return dict(marlin, backend="", refusal=(
            "SGLang's fp8 experts have no Marlin fallback: --moe-runner-backend auto runs them on Triton's "
            "fused MoE kernel (fp8.py Fp8MoEMethod.create_moe_runner), and Triton compiles FP8 e4m3 only on "
            "SM89+ (\"type fp8e4nv not supported in this architecture\"); only its dense layers would run "
            "Marlin W8A16 (fp8_utils.py can_auto_enable_marlin_fp8)"))
    return marlin


def _nvfp4(gpu: GPU, moe: bool) -> dict:
    """nvfp4 weights (fp4_utils.py, modelopt_quant.py, petit.py; the same in 0.5.20-0.5.23)."""
    if gpu.vendor == "amd":
        return _petit(gpu, moe)
    if gpu.sm < 80:
        return _below(gpu, "modelopt_fp4", 80, FP4_SOURCE)
    if gpu.sm < 100:  # initialize_fp4_gemm_config: is_cuda() and (8, 0) <= capability < (10, 0)
        return dict(backend="Marlin W4A16", flag="--fp4-gemm-backend marlin", default=MARLIN_FP4,
                    experts=("Marlin MoE, W4A16 (--moe-runner-backend auto picks marlin on SM80–SM90)"
                             if moe else ""),
                    compute_dtype="bf16", source=FP4_SOURCE, assumption=WEIGHT_ONLY)
    if gpu.sm < 110:  # is_sm100: the CuTe DSL FP4 GEMMs
        backend, flag, default = ("FP4 CuTe DSL", "--fp4-gemm-backend flashinfer_cutedsl",
                                  "--fp4-gemm-backend auto picks flashinfer_cutedsl on SM100")
    elif gpu.sm < 130:  # SM110, SM120: flashinfer_cutlass, and Blackwell (is_blackwell: majors 10-12)
        backend, flag, default = ("FP4 CUTLASS", "--fp4-gemm-backend flashinfer_cutlass",
                                  "--fp4-gemm-backend auto picks flashinfer_cutlass beyond SM100")
    else:  # flashinfer_cutlass on a GPU is_blackwell does not know: process_weights_after_loading refuses it
        return dict(backend="", flag="", default="", experts="", compute_dtype="fp8", source=FP4_SOURCE,
                    refusal="\"ModelOpt NVFP4 native dense GEMM backends require SM100+. Use "
                            "--fp4-gemm-backend marlin on SM80-SM90.\" (modelopt_quant.py)")
    return dict(backend=backend, flag=flag, default=default,
                experts="FlashInfer TRT-LLM FP4 MoE (--moe-runner-backend auto)" if moe else "",
                compute_dtype="fp8", source=FP4_SOURCE, assumption=NO_FP4_SPEEDUP)


def _petit(gpu: GPU, moe: bool) -> dict:
    """ROCm: a ModelOpt NVFP4 checkpoint loads as petit_nvfp4, W4A16 on the linear layers only."""
    if gpu.sm < 90:
        return _below(gpu, "petit_nvfp4", 90, PETIT_SOURCE)
    petit = dict(backend="Petit W4A16", flag="--quantization petit_nvfp4",
                 default="SGLang on ROCm loads ModelOpt NVFP4 as petit_nvfp4, with petit-kernel installed",
                 experts="", compute_dtype="bf16", source=PETIT_SOURCE, assumption=WEIGHT_ONLY)
    if moe:
        return dict(petit, backend="", refusal=(
            "on ROCm SGLang loads NVFP4 as petit_nvfp4, which quantizes linear layers only (petit.py "
            "PetitNvFp4Config.get_quant_method), so the routed experts have no NVFP4 path (the model's "
            "reading of SGLang's source)"))
    return petit


def _below(gpu: GPU, method: str, least: int, source: str) -> dict:
    """SGLang's loader refuses a quantization method below its minimum capability (model_loader/loader.py)."""
    return dict(backend="", flag="", default="", experts="", compute_dtype="bf16", source=source,
                refusal=(f"\"The quantization method {method} is not supported for the current GPU. Minimum "
                         f"capability: {least}. Current capability: {gpu.sm}.\" (model_loader/loader.py)"))


def weight_paths(gpu: GPU, version: str = "0.5.23", moe: bool = False) -> dict[str, WeightPath]:
    """Every weight precision on one GPU."""
    return {dtype: weight_path(gpu, dtype, version, moe) for dtype in WEIGHT_DTYPES}
