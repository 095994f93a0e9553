"""How SGLang runs each weight precision on each GPU preset (engine_model/precision.py), as whole tables: the
GEMM backend and the peak it is priced at, or SGLang's refusal; the same in 0.5.20-0.5.23."""

import pytest

from engine_model import InputError
from engine_model.hardware import GPUS, gpu
from engine_model.precision import WEIGHT_DTYPES, weight_path, weight_paths
from engine_model.versions import RELEASES

REFUSED = "refused"


def table(moe: bool, version: str = "0.5.23") -> dict[str, tuple[str, ...]]:
    """Per GPU preset: the backend per weight dtype (bf16, fp8, nvfp4), or 'refused'."""
    return {name: tuple(path.backend if path.runs else REFUSED
                        for path in weight_paths(g, version, moe).values()) for name, g in GPUS.items()}


DENSE = {  # GPU: bf16, fp8, nvfp4
    "a100-80gb": ("native BF16", "Marlin W8A16", "Marlin W4A16"),
    "h100-sxm": ("native BF16", "FP8 W8A8", "Marlin W4A16"),
    "h100-pcie": ("native BF16", "FP8 W8A8", "Marlin W4A16"),
    "h200": ("native BF16", "FP8 W8A8", "Marlin W4A16"),
    "b200": ("native BF16", "FP8 W8A8", "FP4 CuTe DSL"),
    "l40s": ("native BF16", "FP8 W8A8", "Marlin W4A16"),
    "a40": ("native BF16", "Marlin W8A16", "Marlin W4A16"),
    "mi300x": ("native BF16", "FP8 W8A8", "Petit W4A16"),
    "rubin": ("native BF16", "FP8 W8A8", "FP4 CuTe DSL"),
    "custom": ("native BF16", "FP8 W8A8", "Marlin W4A16"),  # starts as an H100
}


def test_a_dense_model_runs_every_precision_on_every_gpu_each_with_its_backend():
    assert table(moe=False) == DENSE


def test_an_moe_model_is_refused_fp8_on_ampere_and_nvfp4_on_rocm():
    """fp8 experts have no Marlin fallback below SM89 (Triton's fused MoE); petit_nvfp4 has no expert path."""
    assert table(moe=True) == {**DENSE, "a100-80gb": ("native BF16", REFUSED, "Marlin W4A16"),
                               "a40": ("native BF16", REFUSED, "Marlin W4A16"),
                               "mi300x": ("native BF16", "FP8 W8A8", REFUSED)}


def test_the_compute_dtype_that_prices_the_gemms():
    """Weight-only Marlin and Petit compute in bf16; W8A8 in fp8; nvfp4 on Blackwell at the FP8 peak (no FP4
    speed-up, an assumption)."""
    computes = {name: tuple(weight_path(g, dtype).compute_dtype for dtype in WEIGHT_DTYPES)
                for name, g in GPUS.items()}
    assert computes == {
        "a100-80gb": ("bf16", "bf16", "bf16"), "h100-sxm": ("bf16", "fp8", "bf16"),
        "h100-pcie": ("bf16", "fp8", "bf16"), "h200": ("bf16", "fp8", "bf16"), "b200": ("bf16", "fp8", "fp8"),
        "l40s": ("bf16", "fp8", "bf16"), "a40": ("bf16", "bf16", "bf16"), "mi300x": ("bf16", "fp8", "bf16"),
        "rubin": ("bf16", "fp8", "fp8"), "custom": ("bf16", "fp8", "bf16")}
    assert {d: {weight_path(g, d).bytes_per_weight for g in GPUS.values()} for d in WEIGHT_DTYPES} == {
        "bf16": {2.0}, "fp8": {1.0}, "nvfp4": {0.5}}
    assert "no FP4 speed-up" in weight_path(gpu("b200"), "nvfp4").assumption


def test_every_release_the_model_follows_resolves_the_same():
    """fp4_utils.initialize_fp4_gemm_config, can_auto_enable_marlin_fp8 and the NVFP4 MoE Marlin fallback read
    the same in the 0.5.20, 0.5.21, 0.5.22 and 0.5.23 wheels."""
    for moe in (False, True):
        assert [table(moe, release) for release in RELEASES] == [table(moe)] * len(RELEASES)
    with pytest.raises(InputError, match="engine.version: unknown release '0.5.19'"):
        weight_path(gpu("h100-sxm"), "nvfp4", "0.5.19")


def test_the_words_name_the_backend_and_the_flag_that_picks_it():
    h100, b200, a100, mi300x = (gpu(n) for n in ("h100-sxm", "b200", "a100-80gb", "mi300x"))
    assert [weight_path(g, d).words for g, d in ((h100, "bf16"), (h100, "fp8"), (h100, "nvfp4"),
                                                  (a100, "fp8"), (b200, "nvfp4"), (mi300x, "nvfp4"))] == [
        "bf16 weights (native BF16 GEMMs)",
        "fp8 weights via FP8 W8A8 (8-bit weights and activations; FP8 tensor cores on SM89+)",
        "nvfp4 weights via Marlin W4A16 (4-bit weights, bf16 compute; --fp4-gemm-backend auto picks marlin "
        "on SM80–SM90)",
        "fp8 weights via Marlin W8A16 (8-bit weights, bf16 compute; SGLang picks it for fp8 on SM80–SM88, "
        "which have no FP8 tensor cores)",
        "nvfp4 weights via FP4 CuTe DSL (4-bit weights and activations, priced at the FP8 peak; "
        "--fp4-gemm-backend auto picks flashinfer_cutedsl on SM100)",
        "nvfp4 weights via Petit W4A16 (4-bit weights, bf16 compute; SGLang on ROCm loads ModelOpt NVFP4 as "
        "petit_nvfp4, with petit-kernel installed)"]
    assert [weight_path(h100, d).flag for d in WEIGHT_DTYPES] == ["", "", "--fp4-gemm-backend marlin"]
    refused = weight_path(a100, "fp8", moe=True)
    assert not refused.runs and refused.words.startswith(
        "fp8 weights cannot run on A100 80GB SXM: SGLang's fp8 experts have no Marlin fallback")
    assert "fp8.py Fp8MoEMethod.create_moe_runner" in refused.refusal


def test_an_edited_architecture_follows_sglangs_own_thresholds():
    """A Custom GPU's sm (hardware.gpu_overrides.sm) picks the backend as SGLang's capability checks do."""
    def backends(sm, vendor="nvidia"):
        edited = gpu("custom").model_copy(update={"sm": sm, "vendor": vendor})
        paths = (weight_path(edited, dtype) for dtype in WEIGHT_DTYPES)
        return tuple(p.backend if p.runs else REFUSED for p in paths)

    assert {sm: backends(sm) for sm in (75, 80, 88, 89, 99, 100, 120, 130)} == {
        75: ("native BF16", REFUSED, REFUSED),  # below modelopt_fp4's and fp8's minimum capability, 80
        80: ("native BF16", "Marlin W8A16", "Marlin W4A16"),
        88: ("native BF16", "Marlin W8A16", "Marlin W4A16"),
        89: ("native BF16", "FP8 W8A8", "Marlin W4A16"),
        99: ("native BF16", "FP8 W8A8", "Marlin W4A16"),
        100: ("native BF16", "FP8 W8A8", "FP4 CuTe DSL"),
        120: ("native BF16", "FP8 W8A8", "FP4 CUTLASS"),  # auto: flashinfer_cutlass beyond SM100
        130: ("native BF16", "FP8 W8A8", REFUSED),  # not Blackwell to is_blackwell: native FP4 refused
    }
    assert backends(90, "amd") == ("native BF16", "FP8 W8A8", "Petit W4A16")
    assert backends(80, "amd")[2] == REFUSED  # petit_nvfp4's minimum capability is 90 (gfx90a)
