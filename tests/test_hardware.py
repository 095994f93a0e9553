"""Presets cite their sources, parameter counts match the published ones, memory arithmetic adds up."""

import pydantic
import pytest

from engine_model.errors import InputError
from engine_model.hardware import (
    GIB,
    GPUS,
    LINKS,
    MODELS,
    gpu,
    kv_bytes_per_token,
    kv_capacity_tokens,
    link,
    model,
    transfer_seconds,
    weight_bytes,
)

# Published parameter counts (billions): model cards on Hugging Face. Ours ignore norms and biases.
PUBLISHED_B = {
    "llama-2-7b": (6.74, 6.74),
    "llama-3.1-8b": (8.03, 8.03),
    "llama-3.1-70b": (70.6, 70.6),
    "llama-3.1-405b": (405, 405),
    "qwen2.5-0.5b": (0.49, 0.49),
    "qwen3-8b": (8.2, 8.2),
    "qwen3-32b": (32.8, 32.8),
    "qwen3-30b-a3b": (30.5, 3.3),
    "qwen3-235b-a22b": (235, 22),
    "custom": (8.03, 8.03),  # starts as Llama-3.1-8B
    "deepseek-v3": (671, 37),
    "glm-moe": (355, 32),  # GLM-4.5 card, counting its MTP layer, which we leave out
    "glm-5": (744, 40),  # GLM-5 card: 744B total, 40B active
}


def test_every_preset_cites_a_source():
    presets = [*GPUS.values(), *MODELS.values(), *LINKS.values()]
    assert [p.name for p in presets if not p.source.strip()] == []
    assert [p.name for p in presets if "http" not in p.source and "huggingface" not in p.source
            and ".com" not in p.source and "assumption" not in p.source] == []


def test_memory_lands_in_sglangs_chunk_size_buckets():
    """Thresholds 20/35/60/90/160 x 1024 MiB decide the default chunked_prefill_size."""
    def bucket(g):
        mib = g.memory_gib * 1024
        return sum(mib >= t * 1024 for t in (20, 35, 60, 90, 160))

    assert {name: bucket(g) for name, g in GPUS.items()} == {
        "a100-80gb": 3, "a40": 2, "h100-sxm": 3, "h100-pcie": 3, "h200": 4, "b200": 5, "l40s": 2, "mi300x": 5,
        "rubin": 5, "custom": 3}


def test_every_gpu_names_the_architecture_sglang_picks_its_kernels_by():
    """CUDA compute capability x 10 (NVIDIA's table); the MI300X's gfx942 as PyTorch on ROCm reports it; Rubin
    SM100-class (a labelled assumption); the Custom GPU starts as the H100."""
    assert {name: (g.sm, g.vendor) for name, g in GPUS.items()} == {
        "a100-80gb": (80, "nvidia"), "h100-sxm": (90, "nvidia"), "h100-pcie": (90, "nvidia"),
        "h200": (90, "nvidia"), "b200": (100, "nvidia"), "l40s": (89, "nvidia"), "a40": (86, "nvidia"),
        "mi300x": (94, "amd"), "rubin": (100, "nvidia"), "custom": (90, "nvidia")}
    cited = {name: ("compute capability" in g.source or "gfx942" in g.source or "SM100-class" in g.source
                    or "sm 90" in g.source) for name, g in GPUS.items()}
    assert [name for name, ok in cited.items() if not ok] == []


def test_parameter_counts_match_the_published_ones():
    """Within 2% of the card's total and 5% of its active count; GLM's card includes its MTP layer
    and rounds, so it gets 6% on the active count."""
    def off(name, total, active):
        m = MODELS[name]
        slack = 0.06 if name == "glm-moe" else 0.05
        return abs(m.total_params / 1e9 / total - 1) > 0.02 or abs(m.active_params / 1e9 / active - 1) > slack

    assert [name for name, counts in PUBLISHED_B.items() if off(name, *counts)] == []
    assert sorted(PUBLISHED_B) == sorted(MODELS)


def test_kv_bytes_per_token_gqa_mla_tp_and_fp8():
    llama, deepseek = model("llama-3.1-8b"), model("deepseek-v3")
    # GQA: 2 x 32 layers x 8 KV heads x 128 x 2 bytes; split over TP down to one head per rank.
    assert [kv_bytes_per_token(llama, "bf16", tp) for tp in (1, 2, 8, 16)] == [131072, 65536, 16384, 16384]
    assert kv_bytes_per_token(llama, "fp8") == kv_bytes_per_token(llama, "bf16") / 2
    # MLA: 61 layers x (512 + 64) x 2 bytes, replicated on every rank.
    assert [kv_bytes_per_token(deepseek, "bf16", tp) for tp in (1, 8)] == [70272, 70272]


def test_kv_capacity_of_llama_8b_on_h100():
    """(79.65 GiB x 0.88 - 14.96 GiB weights - 1 GiB reserve) / 128 KiB = 443,473 tokens."""
    capacity = kv_capacity_tokens(gpu("h100-sxm"), model("llama-3.1-8b"))
    assert capacity == 443_473
    assert kv_capacity_tokens(gpu("h100-sxm"), model("llama-3.1-8b"), kv_dtype="fp8") == 2 * capacity + 1


def test_weights_that_do_not_fit_name_the_field():
    with pytest.raises(InputError) as error:
        kv_capacity_tokens(gpu("h100-sxm"), model("llama-3.1-70b"))
    assert error.value.where == "deployment"
    assert error.value.problem.startswith(
        "Llama-3.1-70B's bf16 weights (131 GiB) are 131.4 GiB per GPU at TP 1")
    assert kv_capacity_tokens(gpu("h100-sxm"), model("llama-3.1-70b"), tp_size=4) > 0


def test_weight_bytes_by_dtype():
    llama = model("llama-3.1-8b")
    assert [weight_bytes(llama, d) / GIB for d in ("bf16", "fp8", "nvfp4")] == pytest.approx(
        [14.96, 7.48, 3.74], abs=0.01)
    with pytest.raises(InputError, match="weight_dtype: unknown dtype 'int4'"):
        weight_bytes(llama, "int4")


def test_lookup_lists_the_allowed_names():
    with pytest.raises(InputError, match="allowed: a100-80gb, h100-sxm"):
        gpu("h100")
    assert model("qwen3-30b-a3b").is_moe and link("nixl").bandwidth_gbps == 400


def test_presets_are_frozen_but_overridable():
    h100 = gpu("h100-sxm")
    bigger = h100.model_copy(update={"memory_gib": 100.0})
    assert (h100.memory_gib, bigger.memory_gib) == (79.65, 100.0)
    with pytest.raises(pydantic.ValidationError):
        h100.memory_gib = 1.0
    with pytest.raises(pydantic.ValidationError):
        type(h100)(**h100.model_dump(), nvlink_count=18)
    shallower = model("llama-3.1-8b").model_copy(update={"num_layers": 16})
    assert shallower.total_params < model("llama-3.1-8b").total_params


def test_transfer_seconds():
    one_gib = transfer_seconds(link("mooncake"), GIB)
    assert one_gib == pytest.approx(50e-6 + GIB * 8 / 400e9)
    assert transfer_seconds(link("mooncake_tcp"), GIB) > 10 * one_gib
