"""Before you enable prefill_complete, read as specifications: each of seed 000's checks reads pass, fail or
unknown from the case's own requests, runs and settings, and every number behind it is the run's."""

import functools

import pytest

from engine_model import load_scenario, simulate, summary
from engine_model.pd.checklist import checklist, settings_of, settings_of_log
from engine_model.traces import mix_of

D_KEYS = ["version", "backend", "registry", "attention", "decode_cache", "staging", "kv_pool", "same_policy"]


@functools.cache
def runs(name: str, sets: tuple = ()) -> tuple:
    """(scenario, early summary, prefill_complete summary, the early run's requests)."""
    scenario = load_scenario(name, list(sets))
    early = simulate(load_scenario(name, [*sets, "pd.decode_allocation_policy=early"]))
    late = simulate(load_scenario(name, [*sets, "pd.decode_allocation_policy=prefill_complete"]))
    return scenario, summary(early), summary(late), early.requests


def rush_checks(sets: tuple = ()) -> dict:
    scenario, early, late, requests = runs("ten_oclock_rush_pd", sets)
    mix = mix_of([r.prompt_len for r in requests], [r.output_len for r in requests],
                 [r.arrival_at for r in requests], scenario.metrics.bucket_edges[0])
    return {c.key: c for c in checklist(mix, early, late, settings_of(scenario))}


def test_every_check_is_there_in_order_and_without_runs_only_the_settings_are_known():
    checks = checklist(None, settings=settings_of(load_scenario("ten_oclock_rush_pd")))
    assert [(c.part, c.key) for c in checks] == [("a", "mix"), ("b", "waits"), ("c", "headroom"),
                                                 *(("d", key) for key in D_KEYS), ("e", "today")]
    assert [c.status for c in checks[:3]] == ["unknown"] * 3
    assert [c.status for c in checks[3:-1]] == ["pass"] * len(D_KEYS)
    assert checks[-1].status == "unknown"
    assert [c.status for c in checklist(None)] == ["unknown"] * (4 + len(D_KEYS))


def test_the_mix_counts_the_rush_contracts_and_their_tokens():
    mix = rush_checks()["mix"]
    _, _, _, requests = runs("ten_oclock_rush_pd")
    long = [r.prompt_len for r in requests if r.prompt_len >= 8192]
    assert (mix.status, mix.facts["num_long"], mix.facts["num_requests"]) == ("pass", 6, 246)
    assert mix.facts["long_token_share"] == pytest.approx(sum(long) / sum(r.prompt_len for r in requests))
    chat = mix_of([500] * 99 + [9000], [100] * 100, range(100), 8192)  # one long prompt in a hundred
    assert checklist(chat)[0].status == "fail" and checklist(chat)[0].facts["long_token_share"] < 0.25


def test_the_waits_come_from_each_bucket_of_both_runs():
    """The rush: prefill is the bottleneck, so prefill_complete moves where the questions wait, not how
    long (fail); the upstream replica: p95 first token falls by half in both buckets, and the gaps rise
    (fail), as upstream measured."""
    waits = rush_checks()["waits"]
    _, early, late, _ = runs("ten_oclock_rush_pd")
    assert waits.status == "fail"
    for label, bucket in waits.facts["buckets"].items():
        assert bucket["ttft_p95"] == (early.metrics.buckets[label].ttft_s.p95,
                                      late.metrics.buckets[label].ttft_s.p95)
        assert bucket["itl_p99"] == (early.metrics.buckets[label].itl_s.p99,
                                     late.metrics.buckets[label].itl_s.p99)
    assert abs(waits.facts["best_ttft_change"]) < 0.05
    scenario, early, late, requests = runs("upstream_pd_replica")
    waits = checklist(None, early, late)[1]
    # first tokens fall by half, and the gaps rise with the front end as PR #40703 reports they did (+93 %)
    assert waits.status == "fail" and waits.facts["best_ttft_change"] < -0.3
    assert waits.facts["worst_itl_change"] > 0.1


def test_headroom_reads_the_early_runs_reserved_but_idle_kv_and_wait_for_it():
    headroom = rush_checks()["headroom"]
    _, early, _, requests = runs("ten_oclock_rush_pd")
    waits = [sum(end - start for phase, start, end in r.spans if phase == "waiting_for_decode_kv")
             for r in requests]
    assert headroom.facts["wait_for_kv_s"] == pytest.approx(sum(waits) / len(waits))
    assert headroom.facts["reserved_idle_token_s"] == early.pd.kv_reserved_idle_token_s
    assert headroom.status == "pass"  # six 120k contracts do not fit one decode pool at once
    roomy = rush_checks(("workload.groups.1.count=1",))["headroom"]  # one contract: decode has room
    assert roomy.status == "fail" and roomy.facts["wait_for_kv_s"] < 0.1 * roomy.facts["ttft_mean_s"]


@pytest.mark.parametrize("sets, key, setting", [
    (("pd.transfer_backend=nixl",), "backend", "backend"),
    (("hardware.tp_size=2",), "attention", "prefill_attn_tp"),
    (("engine.version=0.5.21",), "version", "version"),
    (("pd.decode.decode_allocation_policy=prefill_complete",), "same_policy", "decode_policy"),
])
def test_a_setting_that_breaks_a_constraint_fails_it_and_names_the_setting(sets, key, setting):
    checks = {c.key: c for c in checklist(None, settings=settings_of(load_scenario("ten_oclock_rush_pd",
                                                                                    list(sets))))}
    assert checks[key].status == "fail" and setting in checks[key].facts["settings"]
    assert [k for k, c in checks.items() if c.part == "d" and c.status == "fail"] == [key]


def test_a_decode_servers_log_settles_what_it_shows_and_leaves_the_rest_unknown():
    args = {"disaggregation_mode": "decode", "disaggregation_transfer_backend": "mooncake", "tp_size": 8,
            "dp_size": 8, "enable_dp_attention": True, "pp_size": 1, "attn_cp_size": 1, "dcp_size": 1,
            "disaggregation_decode_allocation_policy": "early",
            "disaggregation_decode_enable_radix_cache": True, "enable_hierarchical_cache": False}
    checks = {c.key: c.status for c in checklist(None, settings=settings_of_log(args, "0.5.23"))}
    assert checks == {"mix": "unknown", "waits": "unknown", "headroom": "unknown", "version": "pass",
                      "backend": "pass", "registry": "unknown", "attention": "unknown",
                      "decode_cache": "fail", "staging": "unknown", "kv_pool": "unknown",
                      "same_policy": "unknown", "today": "unknown"}
    tp8 = settings_of_log({**args, "disaggregation_mode": "prefill", "enable_dp_attention": False})
    assert tp8["prefill_attn_tp"] == (8, "log")
    assert {c.key: c.status for c in checklist(None, settings=tp8)}["attention"] == "fail"
