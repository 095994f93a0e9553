"""GLM-5.x as SGLang serves it: MLA with DeepSeek sparse attention (DSA), read as specifications."""

import pytest

from engine_model.config import Scenario
from engine_model.cost import PassShape, RooflineCost, attn_pairs
from engine_model.hardware import GPUS, MODELS, kv_bytes_per_token
from engine_model.kernels import attention_time
from engine_model.pd.roles import resolve_role
from engine_model.resolve import resolve

GLM5 = MODELS["glm-5"]
SHARED = GLM5.model_copy(update={"index_every": 4})  # GLM-5.2's IndexShare


def test_glm5_is_mla_with_a_2048_key_indexer():
    assert (GLM5.attention, GLM5.is_dsa, GLM5.index_topk, GLM5.index_n_heads, GLM5.index_head_dim) == (
        "mla", True, 2048, 32, 128)
    assert (GLM5.num_index_layers, SHARED.num_index_layers) == (78, 20)
    assert not MODELS["deepseek-v3"].is_dsa and not MODELS["glm-moe"].is_dsa


def test_dsa_kv_is_sglangs_latent_layout_plus_an_index_key_per_indexer_layer():
    """FP8: 512 latent + 4 fp32 scales + 64 bf16 rope = 656 bytes a layer; index key 128 + 4 = 132."""
    assert kv_bytes_per_token(GLM5, "fp8") == 78 * 656 + 78 * 132
    assert kv_bytes_per_token(SHARED, "fp8") == 78 * 656 + 20 * 132
    assert kv_bytes_per_token(GLM5, "bf16") == 78 * (512 + 64) * 2 + 78 * 132
    assert kv_bytes_per_token(GLM5, "fp8", 4) == kv_bytes_per_token(GLM5, "fp8", 1)  # not split by heads


def scenario(model: str, page_size: int = 1) -> Scenario:
    return Scenario.model_validate({"engine": {"page_size": page_size},
                                    "hardware": {"gpu": "rubin", "tp_size": 4},
                                    "model": {"name": model, "weight_dtype": "nvfp4", "kv_dtype": "fp8"}})


def test_a_dsa_model_always_runs_with_64_token_pages():
    assert [resolve(scenario("glm-5", size)).page_size for size in (1, 16, 64)] == [64, 64, 64]
    # a GQA model on this SM100-class GPU runs trtllm_mha, which keeps 16 and makes 1 into 64
    # (overrides.py _mla_backend_page_constraints; tests/test_backend.py)
    assert [resolve(scenario("glm-moe", size)).page_size for size in (1, 16)] == [64, 16]


def test_sparse_attention_reads_top_k_latents_and_every_index_key():
    """Decode of one request with 100k tokens of past on one Rubin-class GPU, term by term."""
    gpu, past = GPUS["rubin"], 100_000
    kv_bytes = kv_bytes_per_token(GLM5, "fp8")
    time = attention_time(gpu, GLM5, past + 1, past + 2, 1, 1, kv_bytes, new_tokens=1)
    bandwidth = gpu.memory_tbps * 1e12 * gpu.attention_mbu
    latents = (2048 + 1) * 78 * 656
    keys = (past + 2) * 78 * 132
    scores = (past + 1) * 8 * 78
    sparse_c = 2 * 64 * (2 * 512 + 64) * 78 * 2048 / (gpu.bf16_tflops * 1e12 * gpu.attention_mfu)
    index_c = 2 * 32 * 128 * 78 * (past + 1) / (gpu.fp8_tflops * 1e12 * gpu.attention_mfu)
    assert time.memory_s == pytest.approx((latents + keys + scores) / bandwidth)
    sparse = max(sparse_c, latents / bandwidth)
    indexer = max(index_c, (keys + scores / 2) / bandwidth)
    top_k = scores / 2 / bandwidth
    assert time.roof_s == pytest.approx(sparse + indexer + top_k)


def test_past_top_k_a_query_costs_the_same_sparse_attention_and_a_linear_indexer():
    cost = RooflineCost(GPUS["rubin"], GLM5, weight_dtype="nvfp4", kv_dtype="fp8")

    def chunk(past):  # one 4,096-token chunk of a long prompt
        return cost.attention_seconds(PassShape(1, 0, 4096, past, attn_pairs(4096, past)))

    dense = RooflineCost(GPUS["rubin"], GLM5.model_copy(update={"index_topk": 0}), weight_dtype="nvfp4",
                         kv_dtype="fp8")
    late = PassShape(1, 0, 4096, 126_976, attn_pairs(4096, 126_976))
    assert chunk(126_976) < dense.attention_seconds(late) / 3  # sparse: far below dense MLA at 127k
    growth = [chunk(p + 32_768) - chunk(p) for p in (32_768, 65_536, 98_304)]
    assert growth == pytest.approx([growth[0]] * 3, rel=1e-6)  # each 32k more past adds the same


def test_a_dp_worker_prices_each_dsa_rank_on_its_own_shape():
    sc = Scenario.model_validate({
        "hardware": {"gpu": "rubin", "tp_size": 4},
        "model": {"name": "glm-5", "weight_dtype": "nvfp4", "kv_dtype": "fp8"},
        "pd": {"prefill": {"tp_size": 4, "dp_size": 4}, "decode": {"tp_size": 4, "dp_size": 4}}})
    cost = resolve_role(sc, "prefill").cost
    shape = PassShape(1, 0, 4096, 60_000, attn_pairs(4096, 60_000))
    assert cost.rank_attention_s(shape) == pytest.approx(cost.rank.breakdown(shape)["attention_s"])
    idle = PassShape(0, 0, 0, 0, 0)
    assert cost.seconds([shape, idle, idle, idle]) == pytest.approx(
        cost.whole.seconds(shape) - cost.whole.breakdown(shape)["attention_s"]
        + cost.rank.breakdown(shape)["attention_s"])
