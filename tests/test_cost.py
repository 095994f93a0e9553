"""The cost of one forward pass: the reference predictor bit for bit, and the roofline's behaviour."""


import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.vidur_data import PRESETS, points
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
from engine_model.kernels import linear_time
from engine_model.reference import read_jsonl

from conftest import REFERENCE


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
        got = (shape.new_tokens, shape.past_kv_sum, round(latency, 9), round(clock, 9),
               round(clock + latency, 9))
        want = (step["new_tokens"], step["past_kv_sum"], step["latency"], step["t_start"], step["t_end"])
        if got != want:
            mismatches.append((step["iter"], got, want))
        clock += latency
    assert mismatches == []


def test_linear_cost_first_fcfs_hol_passes():
    cost = LinearCost()
    assert [cost.seconds(PassShape(2, 0, 8192, 0, 0)),
            round(cost.seconds(PassShape(3, 0, 8192, 3192, 0)), 9)] == [
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
    """total = gpu + launch + cpu - hidden, and the GPU's busy time is its kernel terms."""
    kernel_terms = ("linear_s", "attention_s", "elementwise_s", "allreduce_s", "floor_s")
    for shape in (decode(40, 2300), prefill(8192),
                  PassShape(41, 40, 8192, 92000, 40 * 2301 + 8192 * 8193 // 2)):
        parts = LLAMA_H100.breakdown(shape)
        total = parts["gpu_s"] + parts["launch_s"] + parts["cpu_s"] - parts["hidden_cpu_s"]
        assert (parts["total_s"], total) == pytest.approx((LLAMA_H100.seconds(shape),) * 2)
        assert parts["gpu_s"] == pytest.approx(sum(parts[k] for k in kernel_terms))


def test_tp2_halves_compute_and_adds_an_all_reduce():
    tp1, tp2 = LLAMA_H100, RooflineCost(gpu("h100-sxm"), model("llama-3.1-8b"), tp_size=2)
    one, two = tp1.breakdown(prefill(8192)), tp2.breakdown(prefill(8192))
    assert two["compute_s"] == pytest.approx(one["compute_s"] / 2)
    assert (one["allreduce_s"], two["allreduce_s"] > 0) == (0.0, True)
    # 32 layers x 2 all-reduces x (2(2-1)/2 x 8192 x 4096 x 2 bytes / 450 GB/s + 20 us)
    assert two["allreduce_s"] == pytest.approx(64 * (8192 * 4096 * 2 / 450e9 + 20e-6))


def test_moe_flops_use_the_active_parameters():
    """A compute-bound MoE layer costs what its ~3.3B active parameters cost, not its 30.5B: its FLOP roof
    is the active parameters' FLOPs, plus half a 64-row tile of padding per expert (within 4%)."""
    qwen, h100 = model("qwen3-30b-a3b"), gpu("h100-sxm")
    body = qwen.active_params - qwen.embedding_params
    expected = 2 * body * 16384 / (989.4e12 * h100.gemm_mfu)
    got = linear_time(h100, qwen, 16384, 0, "bf16", 1, h100.bf16_tflops).compute_s
    assert 1.0 < got / expected < 1.04


def test_moe_weight_reads_count_the_experts_touched():
    qwen = model("qwen3-30b-a3b")
    assert [round(experts_touched(qwen, t), 2) for t in (0, 1, 4096)] == [0.0, 8.0, 128.0]
    small, large = (linear_layer_seconds(gpu("h100-sxm"), qwen, t) for t in (1, 64))
    assert small < large  # a 64-token decode reads ~127 experts, one token reads 8


def test_fp8_kv_halves_the_decode_kv_read():
    fp8 = RooflineCost(gpu("h100-sxm"), model("llama-3.1-8b"), kv_dtype="fp8")
    bf16_kv, fp8_kv = (c.breakdown(decode(40, 2300))["attention_s"] for c in (LLAMA_H100, fp8))
    assert fp8_kv == pytest.approx(bf16_kv / 2)


def test_each_weight_precision_is_priced_at_the_peak_of_the_dtype_sglang_computes_in():
    """engine_model/precision.py: Marlin (nvfp4 below Blackwell, fp8 on A100/A40) and Petit compute in bf16;
    W8A8 fp8 on the FP8 peak; nvfp4 on B200/Rubin on the FP8 peak (no FP4 speed-up, an assumption)."""
    from engine_model.cost import linear_peak_tflops
    from engine_model.hardware import GPUS

    def peak(g, dtype):
        return "fp8" if linear_peak_tflops(g, dtype) == g.fp8_tflops != g.bf16_tflops else "bf16"

    assert {name: tuple(peak(g, d) for d in ("bf16", "fp8", "nvfp4")) for name, g in GPUS.items()} == {
        "a100-80gb": ("bf16", "bf16", "bf16"), "h100-sxm": ("bf16", "fp8", "bf16"),
        "h100-pcie": ("bf16", "fp8", "bf16"), "h200": ("bf16", "fp8", "bf16"), "b200": ("bf16", "fp8", "fp8"),
        "l40s": ("bf16", "fp8", "bf16"), "a40": ("bf16", "bf16", "bf16"), "mi300x": ("bf16", "fp8", "bf16"),
        "rubin": ("bf16", "fp8", "fp8"), "custom": ("bf16", "fp8", "bf16")}


def test_nvfp4_on_h100_prefills_at_the_bf16_peak_and_decodes_half_a_byte_per_weight():
    """SGLang runs nvfp4 on an H100 as Marlin W4A16: the prefill GEMMs compute in bf16, so they cost what
    bf16's cost (not fp8's half); a decode step streams 0.5 bytes per weight, a quarter of bf16's."""
    from engine_model.cost import linear_peak_tflops

    h100, llama = gpu("h100-sxm"), model("llama-3.1-8b")
    costs = {d: RooflineCost(h100, llama, weight_dtype=d) for d in ("bf16", "fp8", "nvfp4")}
    gemms = {d: linear_time(h100, llama, 8192, 1, d, 1, linear_peak_tflops(h100, d)).compute_s for d in costs}
    assert gemms["nvfp4"] == gemms["bf16"] == pytest.approx(2 * gemms["fp8"], rel=1e-4)  # 989.4 vs 1,978.9
    whole = {d: c.breakdown(prefill(8192))["compute_s"] for d, c in costs.items()}
    assert whole["nvfp4"] == whole["bf16"] > whole["fp8"]
    reads = {d: linear_time(h100, llama, 1, 1, d, 1, h100.bf16_tflops).memory_s for d in costs}
    assert [reads[d] / reads["nvfp4"] for d in ("bf16", "fp8", "nvfp4")] == pytest.approx([4, 2, 1], rel=1e-3)
    assert costs["nvfp4"].breakdown(decode(1, 2000))["linear_s"] < costs["fp8"].breakdown(
        decode(1, 2000))["linear_s"]
    assert "weights nvfp4 (Marlin W4A16, bf16 compute)" in costs["nvfp4"].describe()


def test_linear_layer_seconds_is_the_roofline_linear_term():
    """No separate fit: the calibration prices the pass's own GEMMs (no LM head at num_rows=0), over the
    layers, GEMM latencies included."""
    h100, llama = gpu("h100-sxm"), model("llama-3.1-8b")
    per_layer = linear_layer_seconds(h100, llama, 3000)
    pass_gemms = linear_time(h100, llama, 3000, 0, "bf16", 1, h100.bf16_tflops)
    assert LLAMA_H100.breakdown(PassShape(0, 0, 3000, 0, 0))["linear_s"] == pytest.approx(pass_gemms.roof_s)
    assert pass_gemms.roof_s + pass_gemms.floor_s == pytest.approx(32 * per_layer)


def test_vidur_extract_covers_three_gpus_and_1_to_32768_tokens():
    """Seven Llama-family models on A100 (two of them to 32,768 tokens), five on H100 and A40."""
    table = {(p.gpu, p.model) for g in PRESETS for p in points("linear", g)}
    assert {g: len([m for gg, m in table if gg == g]) for g in PRESETS} == {"h100": 5, "a100": 7, "a40": 5}
    tokens = sorted({p.tokens for p in points("linear", "a100")})
    assert (tokens[:5], tokens[-1]) == ([1, 2, 4, 8, 16], 32768)


def test_bad_settings_name_the_field():
    for kwargs, where in (({"per_request_s": -1.0}, "per_request_s"), ({"tp_size": 0}, "tp_size"),
                          ({"kv_dtype": "nvfp4"}, "kv_dtype"),
                          ({"cuda_graph_max_bs_decode": -1}, "cuda_graph_max_bs_decode"),
                          ({"cuda_graph_max_bs_prefill": -1}, "cuda_graph_max_bs_prefill")):
        with pytest.raises(InputError) as error:
            RooflineCost(gpu("h100-sxm"), model("llama-3.1-8b"), **kwargs)
        assert error.value.where == where


# a loaded CI machine is slow, not wrong
@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 64), st.integers(0, 20000), st.integers(1, 8192), st.integers(0, 20000))
def test_more_work_never_takes_less_time(num_rows, past_kv_sum, more_tokens, more_past):
    base = PassShape(num_rows, 0, num_rows, past_kv_sum, num_rows + past_kv_sum)
    bigger = base._replace(new_tokens=num_rows + more_tokens, past_kv_sum=past_kv_sum + more_past,
                           attn_pairs=base.attn_pairs + more_tokens * (past_kv_sum + more_past + more_tokens))
    for cost in (LinearCost(), LLAMA_H100, RooflineCost(gpu("b200"), model("qwen3-30b-a3b"), tp_size=2)):
        if isinstance(cost, RooflineCost) and cost.graph_of(bigger) != cost.graph_of(base):
            continue  # crossing a CUDA-graph bound can make a bigger pass cheaper, in SGLang too
        assert cost.seconds(bigger) >= cost.seconds(base)


def test_a_one_token_prefill_runs_eager_and_two_tokens_replay_a_graph():
    """The prefill graph's smallest captured size is 4 tokens and a replay may at most double the tokens:
    one token runs eager, two tokens replay, so two tokens take less time than one (as in SGLang)."""
    one, two = (PassShape(1, 0, n, 0, n) for n in (1, 2))
    assert (LLAMA_H100.graph_of(one), LLAMA_H100.graph_of(two)) == ("", "breakable")
    assert LLAMA_H100.seconds(two) < LLAMA_H100.seconds(one)
