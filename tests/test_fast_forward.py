"""A turn that fast-forwards decode passes (`Scheduler.decode_streak`) records exactly the passes that
stepping one at a time records: every field of every iteration, every token time, the same cut-off."""

from unittest.mock import patch

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_properties import build, engines, requests

from engine_model import load_scenario
from engine_model.config import LimitsConfig
from engine_model.server import Server
from engine_model.simulation import simulate

from conftest import examples


def one_pass_at_a_time(scenario):
    with patch.object(Server, "fast_forward", lambda self, horizon, max_passes: []):
        return simulate(scenario)


def trace(result) -> tuple:
    reqs = [(r.rid, r.state, r.token_times, r.kv_len, r.num_generated, r.num_retractions, r.finished_at,
             r.first_scheduled_at, r.queued_at, r.reject_reason) for r in result.requests]
    return result.iterations, reqs, result.retractions, result.cut_off


def test_a_story_fast_forwarded_is_the_story_stepped():
    scenario = load_scenario("forty_replies")
    fast, slow = simulate(scenario), one_pass_at_a_time(scenario)
    assert trace(fast) == trace(slow)
    # it did fast-forward: most passes are decode passes sharing their batch's tuple of request ids
    rids = [it.decode_rids for it in fast.iterations if it.decode_rids]
    assert len({id(r) for r in rids}) < len(rids) / 4


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(requests, engines, st.sampled_from([None, 40, 333]), st.sampled_from([None, 0.5, 2.0]))
def test_fast_forward_changes_no_pass_token_or_limit(reqs, engine, max_iterations, max_sim_seconds):
    scenario = build(reqs, engine)
    limits = {"max_iterations": max_iterations or 200_000, "max_sim_seconds": max_sim_seconds or 36_000.0}
    scenario = scenario.model_copy(update={"limits": LimitsConfig(**limits)})
    assert trace(simulate(scenario)) == trace(one_pass_at_a_time(scenario))
