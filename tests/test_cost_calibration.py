"""The calibrated GPUs against Vidur's measured operator times (tests/data/vidur, MIT): how close the
kernel model comes, and that its floors are what make small passes right (docs/cost-model.md)."""

import pytest

from bench.vidur_data import PRESETS, attention_points, points, worst
from engine_model.hardware import EFFICIENCY_FIELDS, gpu

# What the fit reaches (bench/cost_fit.py): the worst error over every model and token count, and the
# share of points within +-15 %. The target is +-15 % everywhere; docs/cost-model.md says where it misses.
REACHED = {  # gpu: (linear worst, linear share, element-wise worst, element-wise share)
    "h100": (25, 0.90, 17, 0.99),
    "a100": (18, 0.98, 17, 0.98),
    "a40": (23, 0.95, 19, 0.98),
}


def within(table, pct: float) -> float:
    return sum(abs(p.error_pct) <= pct for p in table) / len(table)


@pytest.mark.parametrize("gpu_name", sorted(PRESETS))
def test_linear_and_elementwise_operators_stay_near_vidur(gpu_name):
    linear, elementwise = points("linear", gpu_name), points("elementwise", gpu_name)
    linear_worst, linear_share, elementwise_worst, elementwise_share = REACHED[gpu_name]
    assert (worst(linear) <= linear_worst, within(linear, 15) >= linear_share) == (True, True)
    assert (worst(elementwise) <= elementwise_worst,
            within(elementwise, 15) >= elementwise_share) == (True, True)


def test_llama3_8b_on_a100_within_16_percent_from_1_to_32768_tokens():
    """The longest measured range: every token count, GEMMs and element-wise kernels (worst -15.0 % and
    +15.6 %)."""
    for kind in ("linear", "elementwise"):
        table = [p for p in points(kind, "a100") if p.model == "Meta-Llama-3-8B"]
        assert (len(table), worst(table) <= 16) == (451, True)


def test_attention_within_35_percent_where_long_prompts_and_busy_decode_live():
    """A100 FlashAttention: prefill chunks of 512+ tokens after some past KV, decode batches of 32+."""
    table = [p for p in attention_points() if (p.tokens >= 512 and p.model.startswith("prefill")
                                               and p.model != "prefill kv=0") or
             (p.model.startswith("decode") and p.tokens >= 32)]
    assert (len(table) > 400, worst(table) <= 35) == (True, True)


@pytest.mark.parametrize("gpu_name", sorted(PRESETS))
def test_without_floors_small_element_wise_passes_run_far_too_fast(gpu_name):
    """Switch the floors off and the 1-16-token element-wise kernels come out at least 3x too fast; with
    them on, within 20 %."""
    device = gpu(PRESETS[gpu_name]).model_copy(update={"kernel_floor_s": 0.0, "row_gbps": 1e9})
    small = [p for p in points("elementwise", gpu_name, device) if p.tokens <= 16]
    calibrated = [p for p in points("elementwise", gpu_name) if p.tokens <= 16]
    assert (max(p.error_pct for p in small) < -66, worst(calibrated) <= 20) == (True, True)


@pytest.mark.parametrize("gpu_name", sorted(PRESETS))
def test_each_gpu_is_best_described_by_its_own_figures(gpu_name):
    """Borrow another calibrated GPU's efficiency figures and the worst error grows (element-wise by 2x+)."""
    own = gpu(PRESETS[gpu_name])
    for other in sorted(set(PRESETS) - {gpu_name}):
        borrowed = own.model_copy(update={k: getattr(gpu(PRESETS[other]), k) for k in EFFICIENCY_FIELDS})
        assert worst(points("linear", gpu_name, borrowed)) > worst(points("linear", gpu_name))
        assert worst(points("elementwise", gpu_name, borrowed)) > 2 * worst(points("elementwise", gpu_name))


# Long prompts against published measurements (bench/attention_fit.py, tests/data/published): the Hopper
# attention figures are fitted on published FlashAttention-3 kernel throughput; single-request first-token
# times are never fitted, only checked.
def test_hopper_attention_figures_are_the_least_squares_fit_on_the_published_kernel_points():
    from bench.attention_fit import fit, kernel_points
    h100 = gpu("h100-sxm")
    mfu, ramp = fit([p for p in kernel_points() if p.use == "fit"], h100.bf16_tflops)
    assert (round(mfu, 3), ramp) == (h100.attention_mfu, h100.attention_ramp_keys) == (0.638, 239.0)


def test_held_out_kernel_points_within_2_percent():
    """FlashAttention-3 on H100 at 1,024 and 4,096 keys per query, left out of the fit."""
    from bench.attention_fit import efficiency, error_pct, kernel_points
    h100 = gpu("h100-sxm")
    held = [p for p in kernel_points() if p.use == "held_out"]
    errors = [error_pct(efficiency(h100.attention_mfu, h100.attention_ramp_keys, p.keys) * h100.bf16_tflops,
                        p.tflops) for p in held]
    assert ([p.keys for p in held], max(map(abs, errors)) < 2) == ([1024, 4096], True)


def test_long_prompt_first_token_within_25_percent_at_every_held_out_length():
    """Llama-3.1-8B alone on one H100 and one B200, 10k to 128k tokens: within 25 % at every length (the
    issue's target), and in fact within 7 %, with the tokenizer figure the reconstructed points embed. With
    this machine's tokenizer (a 2-core VM) the short prompts read long: tokenizing is host-bound."""
    from bench.attention_fit import error_pct, model_ttft, ttft_points
    held = [p for p in ttft_points() if p.use == "held_out"]
    errors = {(p.gpu, p.prompt_tokens): round(error_pct(model_ttft(p), p.ttft_s)) for p in held}
    assert errors == {("h100-sxm", 10000): 4, ("h100-sxm", 100000): -6, ("h100-sxm", 131072): -2,
                      ("b200", 10000): 6, ("b200", 100000): 0, ("b200", 131072): 5}
    here = {(p.gpu, p.prompt_tokens): error_pct(model_ttft(p, None), p.ttft_s) for p in held}
    assert here[("b200", 10000)] > 25 and here[("h100-sxm", 131072)] < 25  # 42 ms of 124 ms: the host's


def test_without_the_per_query_overhead_short_prompts_run_too_fast_on_h100():
    """Switch the ramp off and FlashAttention-3 at 512 keys per query comes out 48 % too fast: the long-
    sequence figure alone cannot describe short and long prompts at once."""
    from bench.attention_fit import efficiency, error_pct, kernel_points
    h100 = gpu("h100-sxm")
    short = next(p for p in kernel_points() if p.keys == 512)
    flat = efficiency(h100.attention_mfu, 0.0, short.keys) * h100.bf16_tflops
    assert round(error_pct(flat, short.tflops)) == 47


def test_the_gpu_calibration_script_writes_what_the_fit_reads(tmp_path):
    """bench/gpu_calibrate.py's attention CSV has the published table's columns, so a lent GPU's curve is
    fitted the same way (`bench/attention_fit.py --kernels`); with torch installed, its CPU smoke run
    writes one."""
    import csv

    from bench import gpu_calibrate
    from bench.attention_fit import DATA, kernel_points
    with open(DATA / "attention_kernels.csv") as f:
        assert tuple(next(csv.reader(f))) == gpu_calibrate.ATTENTION_FIELDS
    pytest.importorskip("torch")
    assert gpu_calibrate.main(["--smoke", "--warmup", "0", "--repeat", "1", "--out-dir", str(tmp_path)]) == 0
    assert {p.keys for p in kernel_points(tmp_path / "attention_kernels.csv")} == {32, 64}
