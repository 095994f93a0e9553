"""Each mechanism of the pass cost, switched on and off where it should matter (docs/cost-model.md)."""

import pytest

from engine_model.config import Scenario
from engine_model.cost import PassShape, RooflineCost, attn_pairs, default_cuda_graph_max_bs, roofline_cost
from engine_model.errors import InputError
from engine_model.hardware import gpu, model
from engine_model.kernels import elementwise_layer_time

H100, LLAMA = gpu("h100-sxm"), model("llama-3.1-8b")
NO_FLOORS = {"gemm_latency_s": 0.0, "kernel_floor_s": 0.0, "attention_floor_s": 0.0, "row_gbps": 1e9}


def decode(num_rows: int, context: int = 2000) -> PassShape:
    return PassShape(num_rows, num_rows, num_rows, num_rows * context, num_rows * attn_pairs(1, context))


def prefill(num_tokens: int) -> PassShape:
    return PassShape(1, 0, num_tokens, 0, attn_pairs(num_tokens, 0))


def cost(device=H100, **kwargs) -> RooflineCost:
    return RooflineCost(device, LLAMA, **kwargs)


def test_element_wise_kernels_flatten_below_a_wave_of_row_blocks():
    """Vidur measures the norms flat up to 264 tokens on H100 (132 SMs x 2 blocks of 1,024 threads), then
    a step; the layer's element-wise time at 256 tokens is within 1.5x of one token's."""
    rows = ("input_layernorm", "post_attention_layernorm")
    def row_kernels(n):
        return round(sum(elementwise_layer_time(H100, LLAMA, n, names=rows)[:2]), 12)
    def layer(n):
        return sum(elementwise_layer_time(H100, LLAMA, n)[:2])
    assert (len({row_kernels(n) for n in (1, 16, 64, 128, 264)}),
            row_kernels(265) > row_kernels(264)) == (1, True)
    assert layer(256) / layer(1) < 1.5


def test_floors_make_small_passes_slower_and_leave_large_ones_alone():
    """Without floors a one-request decode step runs too fast; an 8,192-token prefill barely moves."""
    floorless = cost(H100.model_copy(update=NO_FLOORS), overlap=False)
    with_floors = cost(overlap=False)
    small = with_floors.seconds(decode(1)) / floorless.seconds(decode(1))
    large = with_floors.seconds(prefill(8192)) / floorless.seconds(prefill(8192))
    assert with_floors.breakdown(decode(1))["floor_s"] > 0.5e-3
    assert (small > 1.1, large < 1.01) == (True, True)


def test_each_gpu_has_its_own_efficiency_figures():
    a100, a40 = gpu("a100-80gb"), gpu("a40")
    figures = ("gemm_mfu", "gemm_mbu", "elementwise_mbu", "row_gbps")
    assert len({tuple(getattr(g, f) for f in figures) for g in (H100, a100, a40)}) == 3


def test_efficiency_is_editable_through_gpu_overrides_or_cost_roofline():
    """Both routes give the same pass time; a lower GEMM efficiency slows a compute-bound prefill."""
    base = Scenario()
    via_gpu = Scenario(hardware={"gpu_overrides": {"gemm_mfu": 0.4}})
    via_cost = Scenario(cost={"roofline": {"gemm_mfu": 0.4}})
    seconds = [roofline_cost(s, H100.model_copy(update=s.hardware.gpu_overrides), LLAMA)
               .seconds(prefill(8192))
               for s in (base, via_gpu, via_cost)]
    assert seconds[1] == pytest.approx(seconds[2]) and seconds[1] > 1.3 * seconds[0]


def test_cost_roofline_names_an_unknown_or_bad_figure():
    for roofline, where in (({"mfu_linear": 0.5}, "cost.roofline.mfu_linear"),
                            ({"gemm_mfu": 1.5}, "cost.roofline.gemm_mfu")):
        with pytest.raises(InputError) as error:
            roofline_cost(Scenario(cost={"roofline": roofline}), H100, LLAMA)
        assert error.value.where == where


def test_decode_step_time_rises_with_batch_size_by_the_per_request_cost():
    """Overlap off: each extra running request adds its CPU cost to the step; at 0 it adds only GPU time."""
    on, off = cost(overlap=False), cost(overlap=False, per_request_s=0.0)
    rise = [c.seconds(decode(33)) - c.seconds(decode(32)) for c in (on, off)]
    assert rise[0] - rise[1] == pytest.approx(on.per_request_s)


def test_overlap_hides_the_cpu_behind_a_gpu_bound_pass():
    """With the overlap schedule a decode step costs its GPU time; without it, GPU + scheduler CPU."""
    overlap, serial = cost(), cost(overlap=False)
    parts = overlap.breakdown(decode(40))
    assert parts["total_s"] == pytest.approx(parts["gpu_s"])
    assert serial.seconds(decode(40)) == pytest.approx(parts["gpu_s"] + parts["cpu_s"] + parts["launch_s"]
                                                       - min(parts["gpu_s"], parts["launch_s"]))
    assert serial.seconds(decode(40)) - overlap.seconds(decode(40)) > 1e-3


def test_overlap_cannot_hide_more_cpu_than_the_gpu_works():
    """A tiny pass is CPU-bound: overlap or not, it takes at least the CPU time."""
    tiny = RooflineCost(H100, LLAMA, tp_size=8, per_pass_s=0.02)
    assert tiny.seconds(decode(1)) == pytest.approx(0.02 + tiny.per_request_s + tiny.graph_replay_s)


def test_cuda_graphs_cut_the_launch_cost_of_small_decode_batches():
    """At TP 8 the kernels of a decode step are short: launching ~450 kernels eagerly costs more than
    running them. A graph replays them all at once, up to cuda_graph_max_bs_decode rows."""
    graphs, eager = (RooflineCost(H100, LLAMA, tp_size=8),
                     RooflineCost(H100, LLAMA, tp_size=8, cuda_graph_max_bs_decode=0))
    assert eager.seconds(decode(8)) > 2 * graphs.seconds(decode(8))
    below, above = (graphs.breakdown(decode(n))["graph"] for n in (512, 513))
    assert (graphs.cuda_graph_max_bs_decode, below, above) == (512, "decode", "")
    assert graphs.breakdown(decode(513))["launch_s"] == pytest.approx(
        graphs.num_kernels * graphs.kernel_launch_s)


def test_prefill_runs_a_breakable_graph_up_to_the_chunk_size_by_default():
    """SGLang 0.5.20-0.5.23 capture prefill graphs (BCG) by default on CUDA, sized by the chunk: a pass of
    up to chunked_prefill_size tokens replays one graph segment per layer and launches only attention
    eagerly; one token (padding would more than double it) and longer passes run eager."""
    cost = RooflineCost(H100, LLAMA)  # H100: chunk 8,192
    kinds = [cost.breakdown(prefill(n))["graph"] for n in (1, 2, 600, 8192, 8193)]
    assert (cost.cuda_graph_max_bs_prefill, kinds) == (8192, ["", "breakable", "breakable", "breakable", ""])
    assert cost.num_breakable_launches == (32 + 1) + 2 * 32 + 1 + 4
    launches = [cost.breakdown(prefill(n))["launch_s"] for n in (600, 8193)]
    assert launches == pytest.approx([cost.num_breakable_launches * cost.kernel_launch_s,
                                      cost.num_kernels * cost.kernel_launch_s])
    off = RooflineCost(H100, LLAMA, cuda_graph_max_bs_prefill=0)
    assert off.breakdown(prefill(600))["graph"] == ""
    assert off.breakdown(prefill(600))["launch_s"] > 2.5 * cost.breakdown(prefill(600))["launch_s"]
    small = [RooflineCost(H100, LLAMA, tp_size=8, cuda_graph_max_bs_prefill=n).seconds(prefill(64))
             for n in (8192, 0)]
    assert small[0] < small[1] / 2  # at TP 8 a short prefill is launch-bound: the graph halves it


def test_default_cuda_graph_max_bs_follows_sglang_by_gpu_memory_and_tp():
    assert [default_cuda_graph_max_bs(gib, tp) for gib, tp in (
        (15, 1), (30, 1), (30, 4), (45, 1), (45, 8), (79.65, 1), (79.65, 4), (140, 2), (180, 1))] == [
        8, 48, 160, 32, 160, 256, 512, 256, 512]


def test_engine_switches_reach_the_cost_model():
    scenario = Scenario(engine={"disable_overlap_schedule": True, "cuda_graph_max_bs_decode": 16,
                                "cuda_graph_max_bs_prefill": 1024})
    built = roofline_cost(scenario, H100, LLAMA)
    default = roofline_cost(Scenario(), H100, LLAMA)
    assert (built.overlap, built.cuda_graph_max_bs_decode, built.cuda_graph_max_bs_prefill) == (
        False, 16, 1024)
    assert (default.cuda_graph_max_bs_decode, default.cuda_graph_max_bs_prefill) == (256, 8192)
    capped = roofline_cost(Scenario(engine={"chunked_prefill_size": 2048, "max_running_requests": 64}),
                           H100, LLAMA)
    assert (capped.cuda_graph_max_bs_decode, capped.cuda_graph_max_bs_prefill) == (64, 2048)  # 0.5.22+


def test_the_old_flag_name_is_refused_with_the_new_ones():
    with pytest.raises(ValueError, match="cuda_graph_max_bs_decode"):
        Scenario(engine={"cuda_graph_max_bs": 16})


def test_frontend_time_grows_with_the_prompt():
    """The client's TTFT adds HTTP and (de)tokenizer hops, and tokenizing the prompt."""
    built = roofline_cost(Scenario(cost={"frontend_s": 0.003, "tokenize_s": 1e-6}), H100, LLAMA)
    assert [built.frontend_seconds(n) for n in (0, 100_000)] == pytest.approx([0.003, 0.103])


def test_the_front_end_delays_what_the_scheduler_sees_and_a_client_measures_it():
    """TTFT counts from the client's send: the front end (HTTP, tokenizer) comes before the first pass."""
    from engine_model import simulate, summary, validate

    def ttft(**cost) -> float:
        scenario = validate({"cost": cost, "workload": {"requests": [{"rid": "r", "prompt_len": 20_000,
                                                                      "output_len": 4}]}})
        result = simulate(scenario)
        first_pass = next(it for it in result.iterations if it.kind.value != "idle")
        assert first_pass.start_at == pytest.approx(cost.get("frontend_s", 0) + 20_000 * cost["tokenize_s"])
        return summary(result).metrics.overall.ttft_s.max

    without, with_front = ttft(frontend_s=0.0, tokenize_s=0.0), ttft(frontend_s=0.003, tokenize_s=1e-6)
    assert with_front - without == pytest.approx(0.003 + 0.02)
