"""The breakdown of one recorded pass (engine_model/pass_cost.py): its terms add up to the pass the run
timed, on the roofline and on the linear predictor."""

import pytest

from engine_model import (
    STORIES,
    InputError,
    PassKind,
    cost_figures,
    load_scenario,
    pass_cost,
    pass_shape,
    simulate,
    validate,
)
from engine_model.cost import PER_REQUEST_S, cost_of
from engine_model.stories import COST_FIGURES

BATCH = 256


def batch_scenario(**cost) -> dict:
    """256 requests sent together: after their prefills, every pass is a decode step over all 256."""
    return {"name": "batch", "seed": 0, "engine": {"max_running_requests": 512}, "cost": cost,
            "workload": {"groups": [{"name": "b", "count": BATCH, "prompt_len": 300, "output_len": 40,
                                     "max_new_tokens": 64, "arrival": {"kind": "at", "start_at": 0.0}}]}}


def full_decode(result):
    return next(it for it in result.iterations if it.kind is PassKind.DECODE and len(it.decode_rids) == BATCH)


def test_a_decode_pass_of_256_requests_pays_per_request_cpu_and_adds_up_to_its_duration():
    scenario = validate(batch_scenario())
    result = simulate(scenario)
    it = full_decode(result)
    cost = pass_cost(scenario, it)
    assert cost.seconds("per running request") == pytest.approx(BATCH * PER_REQUEST_S, rel=1e-12)
    assert cost.total_s == pytest.approx(it.duration_s, rel=1e-9, abs=1e-12)
    assert cost.gpu_s + cost.cpu_s - cost.hidden_s == pytest.approx(cost.total_s, rel=1e-12)
    gpu_terms = sum(t.seconds for t in cost.terms if t.side == "GPU")
    assert gpu_terms == pytest.approx(cost.gpu_s, rel=1e-12)


@pytest.mark.parametrize("mixed", ["false", "true"])
def test_every_pass_of_a_story_is_rebuilt_exactly(mixed):
    """The shape rebuilt from the recorded rows is the one the scheduler priced: every pass's total equals
    its duration on the lane, prefill (mixed off), mixed (mixed on) and decode alike."""
    scenario = load_scenario("forty_replies", [f"engine.enable_mixed_chunk={mixed}"])
    result = simulate(scenario)
    ran = [it for it in result.iterations if it.kind is not PassKind.IDLE]
    chunk_kind = PassKind.MIXED if mixed == "true" else PassKind.PREFILL
    off = [it.index for it in ran if abs(pass_cost(scenario, it).total_s - it.duration_s) > 1e-9]
    assert ({it.kind for it in ran} >= {chunk_kind, PassKind.DECODE}, off) == (True, [])


def test_overlap_hides_cpu_and_turning_it_off_shows_it():
    on = validate(batch_scenario())
    off = validate({**batch_scenario(),
                    "engine": {"max_running_requests": 512, "disable_overlap_schedule": True}})
    it = full_decode(simulate(on))
    hidden, shown = pass_cost(on, it), pass_cost(off, it)
    assert (hidden.overlap, shown.overlap) == (True, False)
    assert shown.total_s == pytest.approx(shown.cpu_s - shown.seconds("kernel launches")
                                          + max(shown.gpu_s, shown.seconds("kernel launches")))
    assert hidden.hidden_s > 0 and shown.total_s > hidden.total_s


def test_the_linear_predictor_is_three_terms():
    scenario = validate(batch_scenario(kind="linear"))
    it = full_decode(simulate(scenario))
    cost = pass_cost(scenario, it)
    shape = pass_shape(it)
    assert [t.name for t in cost.terms] == ["a, per pass", "b × new tokens", "c × past tokens"]
    assert [t.seconds for t in cost.terms] == [0.010, 5e-5 * shape.new_tokens, 1e-7 * shape.past_kv_sum]
    assert cost.total_s == cost_of(scenario).seconds(shape) == pytest.approx(it.duration_s, abs=1e-12)


def test_a_pd_scenario_is_refused_with_a_message():
    with pytest.raises(InputError) as err:
        pass_cost(load_scenario("ten_oclock_rush_pd"),
                  pass_shape(simulate(load_scenario("forty_replies")).iterations[0]))
    assert err.value.where == "pd"


def test_each_cost_control_sets_the_figure_the_panel_reads_back():
    """The cost panel's controls write cost.roofline / cost.* / engine.*, and cost_figures reads each back
    in the control's unit; left empty, they are the GPU preset's figures and SGLang's defaults."""
    story = STORIES["forty_replies"]
    edited = {"gemm_mfu": 0.5, "gemm_mbu": 0.6, "ew_mbu": 0.4, "attn_mfu": 0.3, "attn_mbu": 0.7,
              "cpu_pass_ms": 2.5, "cpu_req_us": 100.0, "graph_bs": 0, "prefill_graph": 1024}
    figures = cost_figures(story.scenario({**story.defaults, **edited, "overlap": False}))
    read_back = {key: round(figures[name] / unit, 9) for key, (name, unit) in COST_FIGURES.items()}
    assert (read_back, figures["overlap"]) == (edited, False)
    assert story.cost_defaults(story.defaults) == {"gemm_mfu": 0.8, "gemm_mbu": 0.925, "ew_mbu": 0.53,
                                                   "attn_mfu": 0.638, "attn_mbu": 0.65, "cpu_pass_ms": 0.79,
                                                   "cpu_req_us": 43.0, "graph_bs": 256, "prefill_graph": 8192}


def test_the_baseline_runs_on_the_same_cost_model():
    """Nothing in the cost panel is a settings-row flag: the headline's "before" keeps all of it."""
    story = STORIES["forty_replies"]
    edited = {"gemm_mfu": 0.5, "cpu_req_us": 100.0, "overlap": False, "graph_bs": 0}
    base = story.baseline_values({**story.defaults, **edited})
    assert {k: base[k] for k in edited} == edited


def test_an_assumed_attention_figure_is_said_beside_the_numbers():
    """H100's prefill attention share is the A100's measured one scaled by published FlashAttention
    utilizations (an assumption: no measured H100 profile); the A100's is measured; one set by hand is
    the user's own."""
    from engine_model import attention_note
    story = STORIES["forty_replies"]
    notes = {gpu: attention_note(story.scenario({**story.defaults, "gpu": gpu}))
             for gpu in ("h100-sxm", "a100-80gb")}
    assert "H100 SXM 80GB is priced at 0.638 of its BF16 peak" in notes["h100-sxm"]
    assert notes["a100-80gb"] == ""
    assert attention_note(story.scenario({**story.defaults, "attn_mfu": 0.4})) == ""
