"""AppTest: the cost-model panel moves the headline numbers, keeps its figures in the URL, refuses bad ones
with a note naming the parameter; the step-through says what the pass under the cursor cost."""

import re

import pytest
from test_app import before_after, metric, open_page, seconds

from app.charts.pass_cost import cost_bar, cost_frame
from engine_model import pass_cost, simulate, stories
from engine_model.config import CostConfig

PAGE = "app_pages/forty_replies.py"
LOG_TTFT, P99 = "The log's first token", "Streams' p99 gap between tokens"


def cost_text(at) -> str:
    return next(m.value for m in at.markdown if "The pass took" in m.value)


def test_the_panel_starts_empty_with_the_gpu_presets_figures_as_hints():
    at = open_page(PAGE, opened=True)
    fields = {n.key.split(".")[-1]: n for n in at.number_input if n.key.startswith("forty_replies.")}
    assert set(fields) == {"gemm_mfu", "gemm_mbu", "ew_mbu", "attn_mfu", "attn_mbu", "cpu_pass_ms",
                           "cpu_req_us", "graph_bs", "prefill_graph"}
    assert [fields[k].value for k in ("gemm_mfu", "graph_bs", "prefill_graph")] == [None, None, None]
    assert at.toggle(key="forty_replies.overlap").value is True


def test_a_lower_gemm_efficiency_slows_the_prefill_in_the_run_and_its_baseline():
    """The log's prefill is compute-bound: GEMM MFU 0.8 -> 0.2 makes its first token later. The baseline
    keeps the edited figure, so the card shows one number (no flag changed), and it moved."""
    at = open_page(PAGE, opened=True)
    _, ttft_before = before_after(metric(at, LOG_TTFT))
    at.number_input(key="forty_replies.gemm_mfu").set_value(0.2).run()
    assert not at.exception and not at.error
    base, now = before_after(metric(at, LOG_TTFT))
    assert (base == now, now > 1.3 * ttft_before) == (True, True)
    assert at.query_params["gemm_mfu"] == "0.2"


def test_overlap_hides_cpu_time_and_turning_it_off_shows_it():
    """400 µs of CPU per running request (16 ms for the forty) hides behind a ~20 ms decode step with the
    overlap schedule on, and lengthens every step with it off."""
    at = open_page(PAGE, opened=True)
    _, on = before_after(metric(at, P99))
    at.number_input(key="forty_replies.cpu_req_us").set_value(400.0).run()
    _, hidden = before_after(metric(at, P99))
    at.toggle(key="forty_replies.overlap").set_value(False).run()
    assert not at.exception and not at.error
    base, shown = before_after(metric(at, P99))
    assert (hidden == on, shown > 1.5 * on, base == shown) == (True, True, True)


def test_cost_figures_come_back_from_the_url_and_bad_ones_are_named():
    at = open_page(PAGE, {"gemm_mfu": "0.5", "graph_bs": "0", "attn_mbu": "2", "cpu_pass_ms": "abc"},
                   opened=True)
    assert at.number_input(key="forty_replies.gemm_mfu").value == 0.5
    assert at.number_input(key="forty_replies.graph_bs").value == 0
    notes = " ".join(w.value for w in at.warning)
    assert "`attn_mbu=2`: expected a number from 0.01 to 1" in notes
    assert "`cpu_pass_ms=abc`: expected a number from 0 to 1000" in notes
    assert at.number_input(key="forty_replies.attn_mbu").value is None


def test_back_to_the_preset_clears_every_figure():
    at = open_page(PAGE, {"gemm_mfu": "0.5", "overlap": "0"}, opened=True)
    at.button(key="forty_replies.cost.reset").click().run()
    assert at.number_input(key="forty_replies.gemm_mfu").value is None
    assert at.toggle(key="forty_replies.overlap").value is True
    assert "gemm_mfu" not in at.query_params


def test_the_step_through_says_what_the_pass_under_the_cursor_cost():
    """The story's default cursor is the log's first chunk: a compute-bound prefill, launched as a breakable
    CUDA graph (SGLang's default on CUDA, up to the chunk size), its CPU work hidden by the overlap schedule;
    the total is the pass's duration in the decision."""
    at = open_page(PAGE, opened=True)
    text = cost_text(at)
    took = seconds(re.search(r"The pass took ([\d.]+ m?s)", text).group(1))
    duration = seconds(re.search(r"prefill chunk · ([\d.]+ m?s)",
                                 " ".join(m.value for m in at.markdown)).group(1))
    assert took == duration
    for words in ("GEMMs", "attention", "element-wise", "a breakable CUDA graph",
                  "--cuda-graph-max-bs-prefill", "1 request ×", "compute-bound", "hid behind the GPU"):
        assert words in text, words
    at.toggle(key="forty_replies.overlap").set_value(False).run()
    assert "Overlap schedule **off**" in cost_text(at)


def test_the_cost_bar_lays_the_cpu_beside_the_gpu_or_before_it_and_validates():
    """With overlap both rows start at 0; without it the kernels start after the scheduler's CPU work and
    the pass ends where the longer row does. Every spec validates against Vega-Lite."""
    story = stories.FORTY
    it = next(i for i in simulate(story.scenario(story.defaults)).iterations if len(i.decode_rids) == 40)
    for overlap in (True, False):
        cost = pass_cost(story.scenario({**story.defaults, "overlap": overlap}), it)
        frame = cost_frame(cost)
        first = frame.groupby("row")["start_ms"].min().to_dict()
        sched = 1e3 * (cost.seconds("scheduler per pass") + cost.seconds("per running request"))
        assert first == {"GPU": 0.0 if overlap else pytest.approx(sched), "CPU": 0.0}
        assert frame["end_ms"].max() == pytest.approx(cost.total_s * 1e3)
        cost_bar(frame, cost.total_s * 1e3).to_dict()
    linear = pass_cost(
        story.scenario(story.defaults).model_copy(update={"cost": CostConfig(kind="linear")}), it)
    assert list(cost_frame(linear)["row"].unique()) == ["pass"]
    cost_bar(cost_frame(linear), linear.total_s * 1e3).to_dict()
