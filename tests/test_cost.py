"""The cost of one forward pass: the reference predictor bit for bit, and the roofline's behaviour."""

import csv
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine_model.cost import (
    LinearCost,
    PassShape,
    RooflineCost,
    attn_pairs,
    experts_touched,
    linear_layer_seconds,
)
from engine_model.errors import InputError
from engine_model.hardware import gpu, model
from engine_model.reference import read_jsonl

from conftest import REFERENCE

VIDUR_CSV = Path(__file__).parent / "data" / "vidur" / "llama2_7b_tp1_ops.csv"
VIDUR_GPUS = {"h100": "h100-sxm", "a100": "a100-80gb"}


def shape_of(rows: list[dict]) -> PassShape:
    """The aggregate a scheduler hands the cost model, from per-row extend and past_kv."""
    return PassShape(
        num_rows=len(rows),
        num_decode_rows=sum(r["kind"] == "decode" for r in rows),
        new_tokens=sum(r["extend"] for r in rows),
        past_kv_sum=sum(r["past_kv"] for r in rows),
        attn_pairs=sum(attn_pairs(r["extend"], r["past_kv"]) for r in rows),
    )


def decode(num_rows: int, context: int) -> PassShape:
    return PassShape(num_rows, num_rows, num_rows, num_rows * context, num_rows * attn_pairs(1, context))


def prefill(num_tokens: int) -> PassShape:
    return PassShape(1, 0, num_tokens, 0, attn_pairs(num_tokens, 0))


LLAMA_H100 = RooflineCost(gpu("h100-sxm"), model("llama-3.1-8b"))


@pytest.mark.parametrize("trace", ["fcfs_hol", "forty_long_mixed", "retraction"])
def test_linear_cost_reproduces_the_reference_clock(trace):
    """Every pass's latency, t_start and t_end, as the trace stores them (rounded to 9 decimals)."""
    cost, clock, mismatches = LinearCost(), 0.0, []
    for step in read_jsonl(REFERENCE / trace / "iteration.jsonl"):
        shape = shape_of(step["rows"])
        latency = cost.seconds(shape)
        if step["t_start"] > round(clock, 9):  # idle scheduler: the clock jumps to the next arrival
            clock = step["t_start"]
        got = (shape.new_tokens, shape.past_kv_sum, round(latency, 9), round(clock, 9), round(clock + latency, 9))
        want = (step["new_tokens"], step["past_kv_sum"], step["latency"], step["t_start"], step["t_end"])
        if got != want:
            mismatches.append((step["iter"], got, want))
        clock += latency
    assert mismatches == []


def test_linear_cost_first_fcfs_hol_passes():
    cost = LinearCost()
    assert [cost.seconds(PassShape(2, 0, 8192, 0, 0)), round(cost.seconds(PassShape(3, 0, 8192, 3192, 0)), 9)] == [
        0.010 + 5e-5 * 8192, 0.4199192]


def test_decode_is_memory_bound_and_a_long_prefill_compute_bound():
    assert [LLAMA_H100.breakdown(s)["bound"] for s in (decode(1, 100), decode(40, 2300), prefill(8192))] == [
        "memory", "memory", "compute"]


def test_absolute_times_on_h100_are_plausible():
    """Llama-3.1-8B, H100, TP1. Decode 40 x 2,300 context: 15 GB of weights + 12 GB of KV read, ~14 ms.
    Prefill of one 8,192-token chunk: ~0.26 s. The lower bound is 0.2 s, not 0.3 s: Vidur's measured
    GEMMs alone (Llama-2-7B, 2.2 ms per layer at 4,096 tokens) put a 7-8B model's 8,192-token pass
    at ~0.15 s before attention."""
    assert 0.008 < LLAMA_H100.seconds(decode(40, 2300)) < 0.020
    assert 0.2 < LLAMA_H100.seconds(prefill(8192)) < 0.8


def test_breakdown_adds_up_to_seconds():
    for shape in (decode(40, 2300), prefill(8192), PassShape(41, 40, 8192, 92000, 40 * 2301 + 8192 * 8193 // 2)):
        parts = LLAMA_H100.breakdown(shape)
        terms = sum(parts[k] for k in ("linear_s", "attention_s", "elementwise_s", "allreduce_s", "overhead_s"))
        assert (parts["total_s"], terms) == pytest.approx((LLAMA_H100.seconds(shape),) * 2)


def test_tp2_halves_compute_and_adds_an_all_reduce():
    tp1, tp2 = LLAMA_H100, RooflineCost(gpu("h100-sxm"), model("llama-3.1-8b"), tp_size=2)
    one, two = tp1.breakdown(prefill(8192)), tp2.breakdown(prefill(8192))
    assert two["compute_s"] == pytest.approx(one["compute_s"] / 2)
    assert (one["allreduce_s"], two["allreduce_s"] > 0) == (0.0, True)
    # 32 layers x 2 all-reduces x (2(2-1)/2 x 8192 x 4096 x 2 bytes / 450 GB/s + 20 us)
    assert two["allreduce_s"] == pytest.approx(64 * (8192 * 4096 * 2 / 450e9 + 20e-6))


def test_moe_flops_use_the_active_parameters():
    """A compute-bound MoE layer costs what its ~3.3B active parameters cost, not its 30.5B."""
    qwen, h100 = model("qwen3-30b-a3b"), gpu("h100-sxm")
    body = qwen.active_params - qwen.embedding_params
    expected = 2 * body * 16384 / (989.4e12 * 0.63) / qwen.num_layers
    assert linear_layer_seconds(h100, qwen, 16384) == pytest.approx(expected)


def test_moe_weight_reads_count_the_experts_touched():
    qwen = model("qwen3-30b-a3b")
    assert [round(experts_touched(qwen, t), 2) for t in (0, 1, 4096)] == [0.0, 8.0, 128.0]
    small, large = (linear_layer_seconds(gpu("h100-sxm"), qwen, t) for t in (1, 64))
    assert small < large  # a 64-token decode reads ~127 experts, one token reads 8


def test_fp8_kv_halves_the_decode_kv_read():
    fp8 = RooflineCost(gpu("h100-sxm"), model("llama-3.1-8b"), kv_dtype="fp8")
    bf16_kv, fp8_kv = (c.breakdown(decode(40, 2300))["attention_s"] for c in (LLAMA_H100, fp8))
    assert fp8_kv == pytest.approx(bf16_kv / 2)


def test_linear_layer_seconds_is_the_roofline_linear_term():
    """No separate fit: the pass's linear term, with no LM head (num_rows=0), over the layers."""
    shape = PassShape(0, 0, 3000, 0, 0)
    per_layer = linear_layer_seconds(gpu("h100-sxm"), model("llama-3.1-8b"), 3000)
    assert LLAMA_H100.breakdown(shape)["linear_s"] == pytest.approx(32 * per_layer)


def vidur_errors(low: int, high: int) -> list[tuple[str, int, float, float, float]]:
    """(gpu, tokens, measured ms, model ms, error %) for Llama-2-7B TP1, one layer's GEMMs."""
    with VIDUR_CSV.open() as f:
        rows = [r for r in csv.DictReader(f) if low <= int(r["num_tokens"]) <= high]
    table = []
    for r in rows:
        model_ms = linear_layer_seconds(gpu(VIDUR_GPUS[r["gpu"]]), model("llama-2-7b"), int(r["num_tokens"])) * 1e3
        measured_ms = float(r["linear_ms"])
        table.append((r["gpu"], int(r["num_tokens"]), measured_ms, model_ms, 100 * (model_ms / measured_ms - 1)))
    return table


def test_linear_operators_within_25_percent_of_vidur_from_512_to_4096_tokens():
    table = vidur_errors(512, 4096)
    assert {(g, len([t for t in table if t[0] == g])) for g in VIDUR_GPUS} == {("h100", 193), ("a100", 193)}
    outside = [t for t in table if abs(t[4]) > 25]
    report = "\n".join(f"{g} {n:5d} measured {m:.4f} ms model {p:.4f} ms error {e:+.1f}%" for g, n, m, p, e in table)
    assert outside == [], report


def test_vidur_extract_covers_every_token_count_from_1_to_4096():
    tokens = sorted({t[1] for t in vidur_errors(1, 4096)})
    assert (len(tokens), tokens[:5], tokens[-1]) == (259, [1, 2, 4, 8, 16], 4096)


def test_bad_settings_name_the_field():
    for kwargs, where in (({"mfu_linear": 0.0}, "mfu_linear"), ({"tp_size": 0}, "tp_size"),
                          ({"kv_dtype": "nvfp4"}, "kv_dtype"), ({"overhead_s": -1.0}, "overhead_s")):
        with pytest.raises(InputError) as error:
            RooflineCost(gpu("h100-sxm"), model("llama-3.1-8b"), **kwargs)
        assert error.value.where == where


@given(st.integers(1, 64), st.integers(0, 20000), st.integers(1, 8192), st.integers(0, 20000))
def test_more_work_never_takes_less_time(num_rows, past_kv_sum, more_tokens, more_past):
    base = PassShape(num_rows, 0, num_rows, past_kv_sum, num_rows + past_kv_sum)
    bigger = base._replace(new_tokens=num_rows + more_tokens, past_kv_sum=past_kv_sum + more_past,
                           attn_pairs=base.attn_pairs + more_tokens * (past_kv_sum + more_past + more_tokens))
    for cost in (LinearCost(), LLAMA_H100, RooflineCost(gpu("b200"), model("qwen3-30b-a3b"), tp_size=2)):
        assert cost.seconds(bigger) >= cost.seconds(base)
