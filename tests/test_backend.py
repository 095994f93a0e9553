"""SGLang's attention backend per GPU and model, and what it forces, read as specifications
(engine_model/backend.py). Line numbers are SGLang 0.5.23's (python/sglang/srt/arg_groups/ unless named);
the 0.5.20-0.5.22 wheels say the same for these presets except where a test names the difference."""

import pytest

from engine_model import hardware
from engine_model.backend import ATTENTION_BACKENDS, attention_of
from engine_model.config import Scenario
from engine_model.cost import PassShape, attn_pairs, cost_of
from engine_model.errors import InputError
from engine_model.hardware import GPUS, MODELS
from engine_model.resolve import (
    chunk_of,
    default_prefill_graph_tokens,
    gpu_of,
    mem_fraction_of,
    model_of,
    prefill_graph_tokens_of,
    resolve,
)
from engine_model.versions import RELEASES

HOPPER = ("h100-sxm", "h100-pcie", "h200", "custom")
SM100 = ("b200", "rubin")  # rubin: SM100-class by its preset's labelled assumption
AMPERE_ADA = ("a100-80gb", "l40s", "a40")

# (backend, prefill kernels, decode kernels, page size, prefill graphs on, auto KV dtype)
# model_override_base.py get_default_attn_backend: MHA fa3 on Hopper (311), trtllm_mha on SM100 (325), aiter
# on ROCm (327), else flashinfer (333). overrides.py _mla_backend_page_constraints (1183-1187): trtllm_mha
# keeps 16/32/64/128, else 64; it runs before _page_size_default (1362: page 1), pipeline.py 256 after
# attention_hook.py 184.
LLAMA = {**{g: ("fa3", "fa3", "fa3", 1, True, "bf16") for g in HOPPER},
         **{g: ("trtllm_mha", "trtllm_mha", "trtllm_mha", 64, True, "bf16") for g in SM100},
         **{g: ("flashinfer", "flashinfer", "flashinfer", 1, True, "bf16") for g in AMPERE_ADA},
         "mi300x": ("aiter", "aiter", "aiter", 1, True, "bf16")}
# MLA: fa3 on Hopper (338), triton elsewhere on CUDA (351), aiter on ROCm for 16 or 128 KV heads per rank
# (344-347); on SM100 model_overrides/deepseek_v2.py 185 sets trtllm_mla first, whose pages are 32 or 64, else
# 64 (overrides.py 1159-1163), and cuda_graph_hook.py 292-297 turns the prefill graphs of a
# DeepseekV3ForCausalLM model on trtllm_mla off.
DEEPSEEK = {**{g: ("fa3", "fa3", "fa3", 1, True, "bf16") for g in HOPPER},
            **{g: ("trtllm_mla", "trtllm_mla", "trtllm_mla", 64, False, "bf16") for g in SM100},
            **{g: ("triton", "triton", "triton", 1, True, "bf16") for g in AMPERE_ADA},
            "mi300x": ("aiter", "aiter", "aiter", 1, True, "bf16")}
# DSA: deepseek_v2.py 103 ("dsa") and 171 (page 64 x index_kpool); overrides.py 534: auto KV is fp8_e4m3 on
# SM10+, else bfloat16; _dsa_split_backend_resolution: fp8 -> trtllm on SM10+ (716), bf16 -> flashmla_sparse
# prefill and trtllm (SM10+) or fa3 decode (726); triton on ROCm.
GLM5 = {**{g: ("dsa", "flashmla_sparse", "fa3", 64, True, "bf16") for g in (*HOPPER, *AMPERE_ADA)},
        **{g: ("dsa", "trtllm", "trtllm", 64, True, "fp8") for g in SM100},
        "mi300x": ("dsa", "triton", "triton", 64, True, "bf16")}
TABLES = {"llama-3.1-8b": LLAMA, "deepseek-v3": DEEPSEEK, "glm-5": GLM5}


def resolved(att) -> tuple:
    return (att.backend, att.prefill, att.decode, att.page_size, att.prefill_graphs, att.kv_dtype)


@pytest.mark.parametrize("model", TABLES)
@pytest.mark.parametrize("gpu", GPUS)
def test_the_default_backend_page_graphs_and_auto_kv_per_gpu_and_model(gpu, model):
    for version in RELEASES:  # the same rules in the four wheels
        assert resolved(attention_of(GPUS[gpu], MODELS[model], 1, version)) == TABLES[model][gpu], version


def test_mla_on_rocm_runs_aiter_only_at_16_or_128_kv_heads_per_rank():
    """model_override_base.py 342-347: head_num = get_num_kv_heads(tp_size) (DeepSeek-V3: 128 / TP)."""
    backends = [attention_of(GPUS["mi300x"], MODELS["deepseek-v3"], tp).backend for tp in (1, 2, 4, 8)]
    assert backends == ["aiter", "triton", "triton", "aiter"]


def test_a_gqa_model_the_presets_describe_as_glm_moe_follows_the_mha_rules():
    assert resolved(attention_of(GPUS["b200"], MODELS["glm-moe"])) == LLAMA["b200"]


@pytest.mark.parametrize("backend, gpu, model, asked, page", [
    ("trtllm_mha", "b200", "llama-3.1-8b", None, 64),  # unset: 1183-1187 runs before _page_size_default
    ("trtllm_mha", "b200", "llama-3.1-8b", 1, 64),  # an explicit 1 is overridden too
    ("trtllm_mha", "b200", "llama-3.1-8b", 8, 64),
    ("trtllm_mha", "b200", "llama-3.1-8b", 16, 16),  # kept
    ("trtllm_mha", "b200", "llama-3.1-8b", 128, 128),
    ("trtllm_mha", "h100-sxm", "llama-3.1-8b", None, 64),  # trtllm_mha runs on SM90 too (attention_hook 200)
    ("fa4", "b200", "llama-3.1-8b", 16, 128),  # _fa4_page_constraint 1296
    ("fa3", "h100-sxm", "llama-3.1-8b", 16, 16),  # no constraint: the flag wins
    ("flashinfer", "b200", "llama-3.1-8b", None, 1),  # _page_size_default 1362
    ("trtllm_mla", "b200", "deepseek-v3", 32, 32),  # 1159: 32 or 64 kept
    ("trtllm_mla", "b200", "deepseek-v3", 16, 64),
    ("flashmla", "h100-sxm", "deepseek-v3", 1, 64),  # 1154: always 64
    ("dsa", "h100-sxm", "glm-5", 128, 64),  # deepseek_v2.py 171: always 64 x index_kpool
])
def test_what_each_backend_does_to_the_page_size(backend, gpu, model, asked, page):
    att = attention_of(GPUS[gpu], MODELS[model], backend=backend, page_size=asked)
    assert att.page_size == page
    if asked == page and backend in ("trtllm_mha", "trtllm_mla", "fa3"):
        assert att.page_source == "set"  # the flag kept
    elif asked is not None:
        assert att.page_source != "set"  # the backend's rule, named


def test_a_set_kv_dtype_wins_and_picks_the_dsa_kernels():
    """overrides.py 531-535 only replaces auto; 711-726 pick the DSA kernels from the KV dtype."""
    bf16 = attention_of(GPUS["b200"], MODELS["glm-5"], kv_dtype="bf16")
    fp8 = attention_of(GPUS["h200"], MODELS["glm-5"], kv_dtype="fp8")
    assert (bf16.kv_dtype, bf16.kv_source, bf16.prefill, bf16.decode) == ("bf16", "set", "flashmla_sparse",
                                                                          "trtllm")
    assert (fp8.kv_dtype, fp8.prefill, fp8.decode) == ("fp8", "flashmla_kv", "flashmla_kv")
    assert attention_of(GPUS["b200"], MODELS["llama-3.1-8b"], kv_dtype="fp8").kv_dtype == "fp8"


@pytest.mark.parametrize("gpu, model, backend, words", [
    ("h100-sxm", "deepseek-v3", "trtllm_mla", "Blackwell"),  # overrides.py _mla_kv_cache_dtype_checks 1210
    # attention_hook.py 200-206
    ("a100-80gb", "llama-3.1-8b", "trtllm_mha", "Hopper (SM90), Blackwell (SM100), or SM120"),
    ("h100-sxm", "llama-3.1-8b", "aiter", "ROCm"),
    ("mi300x", "llama-3.1-8b", "fa3", "aiter or triton"),
    ("b200", "llama-3.1-8b", "trtllm_mla", "allowed: fa3, fa4"),
    ("b200", "glm-5", "flashinfer", "allowed: dsa"),
])
def test_a_backend_sglang_cannot_run_is_refused_with_what_is_allowed(gpu, model, backend, words):
    with pytest.raises(InputError) as err:
        attention_of(GPUS[gpu], MODELS[model], backend=backend)
    assert err.value.where == "engine.attention_backend" and words in err.value.problem


def test_the_scenario_field_names_the_allowed_backends():
    with pytest.raises(ValueError, match="'fa3', 'fa4', 'flashinfer'"):
        Scenario.model_validate({"engine": {"attention_backend": "flash"}})
    assert set(ATTENTION_BACKENDS) >= {"fa3", "trtllm_mha", "trtllm_mla", "flashinfer", "triton", "dsa"}


def scenario(gpu="h100-sxm", model="llama-3.1-8b", tp=1, version="0.5.23", weights="bf16",
             **engine) -> Scenario:
    return Scenario.model_validate({"engine": {"version": version, **engine},
                                    "hardware": {"gpu": gpu, "tp_size": tp},
                                    "model": {"name": model, "weight_dtype": weights}})


def memory_capacity(s: Scenario) -> int:
    gpu, model = gpu_of(s), model_of(s)
    fraction, _ = mem_fraction_of(s, gpu, model, chunk_of(s, gpu)[0])
    kv = resolve(s).kv_dtype
    return hardware.kv_capacity_tokens(gpu, model, s.hardware.tp_size, s.model.weight_dtype, kv,
                                       mem_fraction_static=fraction)


def test_picking_b200_pages_the_kv_pool_at_64_as_sglang_does():
    """pool_configurator.py 646: max_total_num_tokens // page_size * page_size, with trtllm_mha's page 64."""
    b200 = scenario("b200")
    res = resolve(b200)
    assert (res.attention_backend, res.page_size) == ("trtllm_mha", 64)
    capacity = memory_capacity(b200)
    assert capacity % 64  # what fits is not whole pages here, so the rounding shows
    assert res.max_total_tokens == capacity // 64 * 64
    assert resolve(scenario("b200", page_size=1)).page_size == 64  # SGLang overrides an explicit 1
    assert resolve(scenario("b200", page_size=16)).max_total_tokens == capacity // 16 * 16
    on_flashinfer = resolve(scenario("b200", attention_backend="flashinfer"))
    assert (on_flashinfer.page_size, on_flashinfer.max_total_tokens) == (1, capacity)
    assert "page 64" in res.attention_words and "whole pages of 64" in res.max_total_tokens_source


def test_a_set_pool_is_rounded_to_whole_pages_and_one_below_a_page_is_refused():
    """pool_configurator.py 652 (calculate_pool_sizes_from_max_tokens)."""
    assert resolve(scenario("b200", max_total_tokens=100_000)).max_total_tokens == 100_000 // 64 * 64
    with pytest.raises(InputError, match="less than one page"):
        resolve(scenario("b200", max_total_tokens=32))


def test_glm5_on_b200_gets_an_fp8_pool_by_default_and_bf16_when_set():
    """overrides.py 534: auto -> fp8_e4m3 on SM10+; the pool is then (576 x 2 + 132) / (656 + 132) = 1.63 x
    the bf16 one, the difference the review found."""
    auto = resolve(scenario("b200", "glm-5", tp=8, weights="fp8"))
    bf16 = resolve(Scenario.model_validate({**scenario("b200", "glm-5", tp=8, weights="fp8").model_dump(),
                                            "model": {"name": "glm-5", "weight_dtype": "fp8",
                                                      "kv_dtype": "bf16"}}))
    assert (auto.kv_dtype, bf16.kv_dtype) == ("fp8", "bf16")
    ratio = (78 * 1152 + 78 * 132) / (78 * 656 + 78 * 132)
    assert auto.max_total_tokens / bf16.max_total_tokens == pytest.approx(ratio, rel=1e-3)
    on_hopper = resolve(scenario("h200", "glm-5", tp=8, weights="fp8"))
    assert on_hopper.kv_dtype == "bf16"  # SM90: bfloat16


def test_trtllm_mla_turns_the_prefill_graphs_off_but_their_memory_stays_reserved():
    """cuda_graph_hook.py 279-312 runs after handle_gpu_memory_settings (resolution_hooks.py), so the MLA
    graphs' memory is reserved (memory_hook.py 380-385) and the passes run without them."""
    s = scenario("b200", "deepseek-v3", tp=8, weights="fp8")
    gpu, model = gpu_of(s), model_of(s)
    chunk = chunk_of(s, gpu)[0]
    assert prefill_graph_tokens_of(s, model, chunk) == 8192  # what the memory is reserved for
    assert cost_of(s).cuda_graph_max_bs_prefill == 0
    assert not resolve(s).prefill_graphs and "prefill CUDA graphs off" in resolve(s).attention_words
    assert cost_of(scenario("b200", "deepseek-v3", tp=8, weights="fp8", attention_backend="trtllm_mla")
                   ).cuda_graph_max_bs_prefill == 0  # set or not, the rule reads the backend
    other = scenario("b200", "deepseek-v3", tp=8, weights="fp8", attention_backend="flashinfer")
    assert cost_of(other).cuda_graph_max_bs_prefill == 8192
    assert cost_of(scenario("b200", "glm-5", tp=8, weights="fp8")).cuda_graph_max_bs_prefill > 0


@pytest.mark.parametrize("version, tokens", [("0.5.20", 2048), ("0.5.21", 2048), ("0.5.22", 2048),
                                             ("0.5.23", 8192)])
def test_the_mla_prefill_graph_cap_per_release(version, tokens):
    """memory_hook.py handle_gpu_memory_settings: 0.5.23 line 238 min(8192, chunked_prefill_size); the
    0.5.20 and 0.5.21 wheels line 231 and 0.5.22's line 240: max_bs = 2048 for an MLA backend."""
    assert default_prefill_graph_tokens(16384, "DeepSeek-V3", True, None, version) == tokens
    assert default_prefill_graph_tokens(4096, "DeepSeek-V3", True, None, version) == min(tokens, 4096)
    assert default_prefill_graph_tokens(None, "DeepSeek-V3", True, None, version) == (  # chunking off
        0 if version == "0.5.23" else 2048)
    assert default_prefill_graph_tokens(16384, "Llama-3.1-8B", False, None, version) == 16384  # MHA: chunk
    h200 = scenario("h200", "deepseek-v3", tp=8, version=version, weights="fp8")  # chunk 8,192 on 140 GiB
    assert cost_of(h200).cuda_graph_max_bs_prefill == tokens


def long_prefill(s: Scenario) -> float:
    """One 8,192-token chunk over 49,152 tokens of KV."""
    return cost_of(s).seconds(PassShape(1, 0, 8192, 49152, attn_pairs(8192, 49152)))


def test_the_cost_prices_the_backend_that_runs():
    """FA3 on Hopper, the Blackwell fit for trtllm_mha on SM100, the FlashAttention-2 fit elsewhere."""
    fa3, triton = scenario("h100-sxm"), scenario("h100-sxm", attention_backend="triton")
    assert cost_of(fa3).gpu.attention_mfu == hardware.LONG_PREFILL["h100"]["attention_mfu"]
    assert cost_of(triton).gpu.attention_mfu == hardware.ATTENTION_FA2["attention_mfu"]
    assert cost_of(triton).gpu.attention_ramp_keys == 0
    assert long_prefill(triton) > 1.5 * long_prefill(fa3)
    trtllm, flashinfer = scenario("b200"), scenario("b200", attention_backend="flashinfer")
    assert cost_of(trtllm).gpu.attention_mfu == hardware.LONG_PREFILL["b200"]["attention_mfu"]
    assert cost_of(flashinfer).gpu.attention_mfu == hardware.ATTENTION_FA2["attention_mfu"]
    assert long_prefill(flashinfer) > long_prefill(trtllm)
    assert "attention (trtllm_mha)" in cost_of(trtllm).describe()
    a100 = cost_of(scenario("a100-80gb"))  # flashinfer: the A100 preset's own figures, untouched
    assert a100.gpu == GPUS["a100-80gb"]


def test_a_persons_attention_figures_win_over_the_backends():
    edited = Scenario.model_validate({"engine": {"attention_backend": "triton"},
                                      "hardware": {"gpu_overrides": {"attention_mfu": 0.5}}})
    assert cost_of(edited).gpu.attention_mfu == 0.5
    set_in_cost = Scenario.model_validate({"engine": {"attention_backend": "triton"},
                                           "cost": {"roofline": {"attention_mfu": 0.45}}})
    assert cost_of(set_in_cost).gpu.attention_mfu == 0.45


def test_the_resolved_settings_line_names_the_backend_and_page_size():
    from engine_model.cli import deployment_line

    s = scenario("b200", "deepseek-v3", tp=8, weights="fp8")
    config = {"resolved": resolve(s).to_dict(), "engine": s.engine.model_dump(),
              "model": s.model.model_dump()}
    line = deployment_line(config)
    assert line.endswith("· attention trtllm_mla, page 64, prefill CUDA graphs off")
    assert "fp8 weights, bf16 KV" in line
    glm = scenario("b200", "glm-5", tp=8, weights="fp8")
    words = resolve(glm).to_dict()["attention_words"]
    assert words == "attention dsa, page 64" and resolve(glm).kv_dtype_source.startswith("auto: fp8_e4m3")
