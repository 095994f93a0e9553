"""Speculative decoding's effect on who waits, read as specifications: what SGLang 0.5.23 changes at start-up
(`_handle_eagle_family`, `_handle_ngram`), the KV a decode step reserves (`get_alloc_len_per_decode`,
`_new_tokens_required_next_decode_spec_v2`), the tokens a verify commits, and the forty replies with it."""

import pytest

from engine_model import InputError, load_scenario, resolve, simulate, summary, validate
from engine_model.core import PassKind
from engine_model.simulation import Run


def scenario(requests=(), **engine):
    return validate({"engine": engine, "cost": {"kind": "linear"}, "model": {"name": "llama-3.1-8b"},
                     "workload": {"requests": list(requests)}})


def forty(*sets):
    return load_scenario("forty_replies", list(sets))


def longest_stream_gap(result) -> float:
    return summary(result).metrics.groups["streams"].max_itl_s.max


@pytest.mark.parametrize(("algorithm", "kept"), [("EAGLE", True), ("EAGLE3", True), ("NEXTN", True),
                                                 ("STANDALONE", False), ("NGRAM", False)])
def test_mixed_chunk_is_switched_off_at_start_up_where_the_algorithm_does_not_support_it(algorithm, kept):
    res = resolve(scenario(enable_mixed_chunk=True, speculative_algorithm=algorithm))
    assert res.is_mixed_chunk is kept
    said = "SGLang turned it off because speculative_algorithm=" + algorithm
    assert (said in res.startup_note) is not kept
    if kept:
        assert "one plain token" in res.startup_note  # a mixed pass's running rows: one token, not a verify's


def test_an_unset_running_cap_becomes_48_and_a_set_one_stays():
    assert resolve(scenario(speculative_algorithm="EAGLE")).max_running_requests == 48
    kept = resolve(scenario(speculative_algorithm="EAGLE", max_running_requests=200))
    assert kept.max_running_requests == 200
    assert resolve(scenario()).max_running_requests != 48


def test_nextn_is_eagle_and_the_shape_comes_from_the_model_or_the_algorithm():
    llama = resolve(scenario(speculative_algorithm="NEXTN")).speculative
    assert (llama.algorithm, llama.num_steps, llama.topk, llama.num_draft_tokens) == ("EAGLE", 5, 4, 8)
    standalone = resolve(scenario(speculative_algorithm="STANDALONE")).speculative
    assert (standalone.num_steps, standalone.topk, standalone.num_draft_tokens) == (3, 1, 4)
    ngram = resolve(scenario(speculative_algorithm="NGRAM")).speculative
    assert (ngram.num_steps, ngram.topk, ngram.num_draft_tokens) == (1, 10, 12)
    chain = resolve(scenario(speculative_algorithm="EAGLE", speculative_num_steps=3, speculative_eagle_topk=1,
                             speculative_num_draft_tokens=9)).speculative
    assert chain.num_draft_tokens == 4  # topk 1: draft tokens = steps + 1


def test_steps_unset_with_topk_set_is_refused_naming_the_field():
    with pytest.raises(InputError) as err:
        resolve(scenario(speculative_algorithm="EAGLE", speculative_eagle_topk=2))
    assert err.value.where == "engine.speculative_num_steps"


def test_a_decode_step_reserves_twice_the_alloc_len_beyond_the_committed_tokens():
    """Llama's EAGLE (5 steps, topk 4, 8 draft tokens): alloc_len max(5 x 4, 8) = 20, reserve 40; the first
    decode allocates the prompt's KV up to 40 slots ahead, and later steps only top it up."""
    run = Run(scenario([{"rid": "a", "prompt_len": 100, "output_len": 30}], speculative_algorithm="EAGLE",
                       disable_overlap_schedule=True))
    res = run.run()
    spec = res.resolved.speculative
    assert (spec.alloc_len, spec.reserve) == (20, 40)
    first = next(it for it in res.iterations if it.kind is PassKind.DECODE)
    assert first.kv_used == 100 + 40  # the prefill's 100, then up to committed (100) + 40
    committed = 100
    for it in [it for it in res.iterations if it.kind is PassKind.DECODE]:
        assert it.kv_used == committed + 40  # allocated = committed before the pass + reserve
        committed += sum(1 for t in res.requests[0].token_times if t == it.end_at)
    assert res.requests[0].kv_len == 0
    assert run.topology.scheduler.kv_used == 0  # the over-allocation came back


def test_a_verify_commits_the_accept_length_on_average_and_never_more_than_its_bound():
    result = simulate(scenario([{"rid": f"r{i}", "prompt_len": 50, "output_len": 400} for i in range(8)],
                               speculative_algorithm="EAGLE", speculative_accept_length=2.6,
                               disable_overlap_schedule=True))
    per_row = []
    for req in result.requests:
        times = req.token_times[1:]  # the prefill's token first
        per_row += [times.count(t) for t in sorted(set(times))][:-1]  # the last: cut at the end
    assert max(per_row) <= 6 and min(per_row) >= 1
    assert abs(sum(per_row) / len(per_row) - 2.6) < 0.1


def test_the_same_request_verifies_alike_on_any_seed_run_twice_and_differently_on_another_seed():
    one = scenario([{"rid": "a", "prompt_len": 50, "output_len": 200}], speculative_algorithm="EAGLE",
                   speculative_accept_length=2.5)
    again = simulate(one).requests[0].token_times
    assert simulate(one).requests[0].token_times == again
    other = simulate(one.model_copy(update={"seed": 1})).requests[0].token_times
    assert len(set(other)) != len(set(again)) or other != again


def test_forty_replies_with_ngram_lose_mixed_chunk_and_the_stall_is_back():
    """Mixed chunk on: the longest pause is about one chunk pass; with NGRAM, which SGLang starts with mixed
    chunk off, it is the whole log's prefill again, as with mixed chunk off; EAGLE keeps mixed chunk."""
    mixed = longest_stream_gap(simulate(forty("engine.enable_mixed_chunk=true")))
    off = longest_stream_gap(simulate(forty("engine.enable_mixed_chunk=false")))
    ngram = simulate(forty("engine.enable_mixed_chunk=true", "engine.speculative_algorithm=NGRAM"))
    eagle = longest_stream_gap(simulate(forty("engine.enable_mixed_chunk=true",
                                              "engine.speculative_algorithm=EAGLE")))
    assert mixed < off / 4
    assert longest_stream_gap(ngram) > off * 0.9
    assert not any(it.kind is PassKind.MIXED for it in ngram.iterations)
    assert eagle < off / 4


def test_dp_attention_with_ngram_or_standalone_is_refused_in_sglangs_words():
    for algorithm, name in (("NGRAM", "ngram"), ("STANDALONE", "standalone")):
        with pytest.raises(InputError) as err:
            resolve(validate({"engine": {"speculative_algorithm": algorithm, "enable_dp_attention": True,
                                         "dp_size": 2}, "hardware": {"tp_size": 2}}))
        assert f"Currently {name} speculative decoding does not support dp attention" in err.value.problem


def test_the_step_throughs_breakdown_of_a_verify_pass_adds_up_to_the_recorded_pass():
    from engine_model.pass_cost import pass_cost

    run = forty("engine.speculative_algorithm=EAGLE")
    result = simulate(run)
    for it in [it for it in result.iterations if it.kind is not PassKind.IDLE][:40]:
        cost = pass_cost(run, it)
        assert cost.total_s == pytest.approx(it.end_at - it.start_at, rel=1e-9)
        assert (cost.seconds("draft steps") > 0) is (it.kind is PassKind.DECODE)


def test_a_draft_tree_the_attention_backend_cannot_run_is_refused_as_sglang_refuses_it():
    b200 = {"hardware": {"gpu": "b200"}, "model": {"name": "llama-3.1-8b"}}  # trtllm_mha, page 64
    with pytest.raises(InputError) as err:
        resolve(validate({**b200, "engine": {"speculative_algorithm": "EAGLE"}}))  # Llama: topk 4
    assert "trtllm_mha backend only supports topk = 1" in err.value.problem
    chain = {"speculative_algorithm": "EAGLE", "speculative_num_steps": 3, "speculative_eagle_topk": 1}
    assert resolve(validate({**b200, "engine": chain})).speculative.topk == 1
    with pytest.raises(InputError) as err:
        resolve(validate({**b200, "engine": {"speculative_algorithm": "NGRAM"}}))
    assert "outside the 'flashinfer' backend" in err.value.problem
    assert resolve(scenario(speculative_algorithm="NGRAM", page_size=16, attention_backend="flashinfer"))
