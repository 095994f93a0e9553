"""Defaults are resolved the way SGLang resolves its server arguments (facts section 4)."""

import pytest

from engine_model.config import Scenario
from engine_model.resolve import default_chunked_prefill_size, default_max_running_requests, resolve


@pytest.mark.parametrize(("gib", "chunk"), [
    (15.0, 2048), (23.6, 4096), (44.99, 4096), (79.65, 8192), (140.4, 8192), (179.06, 16384),
    (191.69, 16384)])
def test_default_chunk_size_follows_gpu_memory(gib, chunk):
    assert default_chunked_prefill_size(gib) == chunk


@pytest.mark.parametrize(("gpu", "chunk"), [
    ("l40s", 4096), ("a100-80gb", 8192), ("h100-sxm", 8192), ("h200", 8192), ("b200", 16384),
    ("mi300x", 16384)])
def test_gpu_presets_land_in_sglang_buckets(gpu, chunk):
    assert resolve(Scenario.model_validate({"hardware": {"gpu": gpu}})).chunked_prefill_size == chunk


def test_other_defaults_match_sglang():
    res = resolve(Scenario())
    assert (res.max_prefill_tokens, res.page_size, res.schedule_policy, res.is_mixed_chunk,
            res.prefill_decode_interval) == (16384, 1, "fcfs", False, 0)
    assert (res.ratio_init, res.ratio_min) == pytest.approx((0.7, 0.098))
    assert res.ratio_decay == pytest.approx(0.0010033333, abs=1e-9)
    assert res.max_running_requests == default_max_running_requests(res.max_total_tokens, res.context_len)


def test_max_running_requests_formula():
    """min(clamp(int(pool / context * 512), 2048, 4096), pool // 2)."""
    assert [default_max_running_requests(pool, 131072) for pool in (2000, 443473, 2_000_000)] == [
        1000, 2048, 4096]


def test_chunking_disabled_turns_mixed_chunk_off():
    res = resolve(Scenario.model_validate(
        {"engine": {"chunked_prefill_size": -1, "enable_mixed_chunk": True}}))
    assert (res.chunked_prefill_size, res.is_mixed_chunk) == (None, False)


def test_conservativeness_scales_the_ratio():
    res = resolve(Scenario.model_validate({"engine": {"schedule_conservativeness": 0.3}}))
    assert (res.ratio_init, res.ratio_min) == pytest.approx((0.21, 0.0294))


def test_mem_fraction_static_is_derived_from_gpu_memory_as_sglang_derives_it():
    """handle_gpu_memory_settings: reserved = 512 MiB + 1.5 MiB x max(chunk, 2048) + TP/8 GiB + 2 MiB x the
    decode graph's max batch + 8 MiB per prefill graph size (at least 10 GiB above 60 GiB of memory);
    fraction = round((memory - reserved) / memory, 3). A fixed 0.88 put the H100 pool 7.9 % high."""
    from engine_model.resolve import default_mem_fraction_static, prefill_graph_sizes

    assert len(prefill_graph_sizes(8192)) == 58 and prefill_graph_sizes(40) == (4, 8, 12, 16, 20, 24, 28, 32)
    assert default_mem_fraction_static(79.65, 8192, 1, 256, 58, False) == 0.83  # H100 SXM, 13,904 MiB
    assert default_mem_fraction_static(44.99, 2048, 1, 32, 0, False) == round((46069.76 - 3776) / 46069.76, 3)
    fractions = {gpu: resolve(Scenario.model_validate({"hardware": {"gpu": gpu}})).max_total_tokens_source
                 for gpu in ("h100-sxm", "h200", "b200")}
    assert ["mem_fraction_static 0.83 " in fractions["h100-sxm"], "0.903" in fractions["h200"],
            "0.854" in fractions["b200"]] == [True, True, True]
    fixed = resolve(Scenario.model_validate({"engine": {"mem_fraction_static": 0.88}})).max_total_tokens
    assert fixed / resolve(Scenario()).max_total_tokens == pytest.approx(1.079, abs=1e-3)


def test_shortest_prefill_first_needs_0_5_21():
    from engine_model.errors import InputError

    with pytest.raises(InputError, match="shortest-prefill-first exists from SGLang 0.5.21"):
        resolve(Scenario.model_validate({"engine": {"version": "0.5.20",
                                                    "schedule_policy": "shortest-prefill-first"}}))
    assert resolve(Scenario.model_validate({"engine": {"version": "0.5.21",
                                                       "schedule_policy": "shortest-prefill-first"}}))
