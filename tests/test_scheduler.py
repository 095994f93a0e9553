"""The scheduler reproduces SGLang's rules (sglang-scheduler-facts.md sections 1-6, implications 1-13)."""

import pytest

from engine_model.core import PassKind, RequestState
from engine_model.policy import ratio_after_retraction, retraction_order

from conftest import REFERENCE
from specs import by_rid, passes, prefill_extends, req, request, run, scheduler

STREAMS = [req(f"s{i}", 1000, 60, already_generated=10) for i in range(8)]


def test_prefill_wins_a_long_prompt_runs_back_to_back_and_decode_waits():
    """Implication 2: 8 decoding requests + a 32k prompt at chunk 8192 => 4 passes with zero decode tokens."""
    result = run([*STREAMS, req("long", 32768, 4, at=0.1)])
    kinds = [kind for kind, _ in passes(result)]
    first = kinds.index("prefill")
    assert kinds[:first] == ["decode"] * first
    assert passes(result)[first:first + 5] == [
        ("prefill", {"long": 8192}), ("prefill", {"long": 8192}), ("prefill", {"long": 8192}),
        ("prefill", {"long": 8192}), ("decode", {**{f"s{i}": 1 for i in range(8)}, "long": 1}),
    ]


def test_a_pending_chunk_bypasses_the_empty_queue_and_batch_full_exits():
    """Implication 3: the chunk continuation runs although the queue is empty and the batch is latched
    full."""
    result = run([*STREAMS, req("long", 32768, 4, at=0.1)])
    chunks = [it for it in result.iterations if it.prefill_rows]
    assert [it.num_waiting for it in chunks] == [0, 0, 0, 0]
    sched = scheduler(max_running=2)
    for rid in ("a", "b"):
        sched.arrive(request(rid, 100, 50, num_generated_before=5))
    long = request("long", 20000, 5)
    long.state, long.kv_len, sched.chunked, sched.batch_is_full = RequestState.PREFILLING, 8192, long, True
    sched.kv_used += 8192
    it = sched.step()
    assert (it.kind, [(r.rid, r.extend, r.past_kv) for r in it.prefill_rows]) == (
        PassKind.PREFILL, [("long", 8192, 8192)])


def test_per_batch_token_budget_truncates_only_the_request_that_crosses_it():
    """Implication 4, the worked example: 4 x 5000 tokens at chunk 8192."""
    result = run([req(f"q{i}", 5000, 32) for i in range(4)])
    assert prefill_extends(result) == [
        [("q0", 5000), ("q1", 3192)],
        [("q1", 1808), ("q2", 5000), ("q3", 1384)],
        [("q3", 3616)],
    ]


def test_a_token_budget_stop_does_not_latch_batch_is_full():
    from engine_model.simulation import Run

    from specs import scenario

    sim = Run(scenario([req(f"q{i}", 5000, 32) for i in range(4)]))
    latched = []
    while sim.step() is not None:
        latched.append(sim.topology.scheduler.batch_is_full)
    assert not any(latched)


def test_head_of_line_blocking_and_the_batch_is_full_latch():
    """Implication 5 and 7: a big head request that does not fit memory blocks a small one behind it,
    and after that NO_TOKEN stop nothing new is tried until the running request leaves."""
    from engine_model.simulation import Run

    from specs import scenario

    workload = [req("running", 5000, 2100, already_generated=100), req("big", 8000, 100),
                req("small", 100, 10)]
    sim = Run(scenario(workload, pool=14000))
    sim.step()
    assert sim.topology.scheduler.batch_is_full
    while sim.step() is not None:
        pass
    reqs = by_rid(sim.run())
    assert prefill_extends(sim.run())[0] == [("big", 8000), ("small", 100)]
    assert reqs["small"].first_scheduled_at == reqs["big"].first_scheduled_at >= reqs["running"].finished_at


def test_memory_admission_rule_at_its_boundary():
    """Implication 6: admitted only if prompt + min(max_new, 4096) + page < pool - reservations."""
    from engine_model.policy import PrefillAdder, Verdict

    sched = scheduler(pool=10000)
    running = request("r", 100, 1000, num_generated_before=500)  # reserves min(500, 4096) x 0.7 = 350
    for pool, verdict in ((350 + 5000 + 4096 + 1 + 1, Verdict.CONTINUE),
                          (350 + 5000 + 4096 + 1, Verdict.NO_TOKEN)):
        adder = PrefillAdder(sched.cfg, pool=pool, running=[running], ratio=0.7, num_mixed=0)
        new = request("new", 5000, 9000)  # max_new 9000 is clipped to 4096 in the estimate
        assert adder.add_one(new) is verdict
        assert [(r.rid, extend) for r, extend in adder.admitted] == (
            [("new", 5000)] if verdict is Verdict.CONTINUE else [])


def test_new_token_ratio_decays_per_decode_step_to_its_floor():
    """Implication 8: 0.7 -> 0.098 over 600 decode steps, floor after."""
    result = run([req("a", 100, 702, already_generated=1)])
    ratios = [it.new_token_ratio for it in result.iterations if it.kind is PassKind.DECODE]
    step = (0.7 - 0.098) / 600
    assert ratios == pytest.approx([max(0.7 - k * step, 0.098) for k in range(1, 702)], abs=1e-9)


def test_new_token_ratio_is_untouched_by_prefill_and_mixed_passes_and_resets_when_idle():
    result = run([*STREAMS, req("long", 20000, 4, at=0.1), req("later", 100, 3, at=60.0)],
                 enable_mixed_chunk=True)
    its = result.iterations
    for prev, it in zip(its, its[1:], strict=False):
        if it.kind in (PassKind.PREFILL, PassKind.MIXED):
            assert it.new_token_ratio == prev.new_token_ratio
    later = next(it for it in its if it.start_at >= 60.0 and it.kind is PassKind.DECODE)
    assert later.new_token_ratio == pytest.approx(0.7 - (0.7 - 0.098) / 600)


def test_retraction_order_fewest_generated_first_ties_to_longest_prompt():
    reqs = [request(n, p, 100, num_generated_before=g) for n, p, g in
            (("a", 100, 5), ("b", 200, 3), ("c", 300, 3), ("d", 50, 7))]
    assert [r.rid for r in retraction_order(reqs)] == ["c", "b", "a", "d"]


def test_ratio_after_retraction_counts_the_survivors():
    survivors = [request("a", 10, 1500, num_generated_before=1000),
                 request("b", 10, 1500, num_generated_before=500)]
    assert ratio_after_retraction(survivors) == (1500 + 20 * 2) / (3000 + 1)


def test_retracted_request_goes_to_the_back_and_re_prefills_prompt_plus_output():
    """Implications 9-10, on the reference retraction workload."""
    from engine_model.reference import scenario_from_workload
    from engine_model.simulation import simulate

    result = simulate(scenario_from_workload(REFERENCE / "retraction/workload.json"))
    first = result.retractions[0]
    assert (first.rids, first.num_generated, first.num_running_before, first.num_running_after) == (
        ("r14",), (1167,), 15, 14)
    re_prefill = [r.extend for it in result.iterations if it.start_at > first.at
                  for r in it.prefill_rows if r.rid == "r14"]
    assert sum(re_prefill) == 1500 + 1167  # prompt + the output it kept (chunked: {re_prefill})
    r14 = by_rid(result)["r14"]
    assert (r14.state, len(r14.token_times), r14.num_retractions) == (RequestState.FINISHED, 1500, 1)


def test_the_last_request_is_never_retracted_it_is_aborted():
    sched = scheduler(pool=1000)
    sched.arrive(request("only", 900, 500, num_generated_before=99))  # holds 998 of 1000 slots
    sched.kv_used = sched.cfg.max_total_tokens  # the pool is full: not even one token is left
    it = sched.step()
    assert it.kind is PassKind.IDLE and [r.rid for r in sched.rejected] == ["only"]
    assert "retracting every other request" in sched.rejected[0].reject_reason


def test_prefill_decode_interval_alternates_one_prefill_with_n_decodes():
    """Implication 13: with N = 3 and a steady queue, 1 prefill : 3 decode."""
    result = run([req(f"q{i}", 5000, 64) for i in range(6)], prefill_decode_interval=3)
    kinds = [kind for kind, _ in passes(result)]
    assert kinds[:13] == ["prefill", "decode", "decode", "decode"] * 3 + ["prefill"]


def test_mixed_chunk_carries_one_decode_row_per_running_request_and_shrinks_the_budget():
    """Implication 12: every running request rides the chunk as a 1-token row; budget = chunk - running."""
    result = run([*STREAMS, req("long", 20000, 4, at=0.1)], enable_mixed_chunk=True)
    long_passes = [p for p in passes(result) if "long" in p[1] and p[1]["long"] > 1]
    decode_rows = {f"s{i}": 1 for i in range(8)}
    assert long_passes == [("mixed", {"long": 8184, **decode_rows}), ("mixed", {"long": 8184, **decode_rows}),
                           ("mixed", {"long": 20000 - 2 * 8184, **decode_rows})]


def test_a_logprob_request_blocks_mixing_but_the_budget_still_shrinks():
    streams = [req("s0", 1000, 60, already_generated=10, return_logprob=True), *STREAMS[1:]]
    result = run([*streams, req("long", 20000, 4, at=0.1)], enable_mixed_chunk=True)
    long_passes = [p for p in passes(result) if "long" in p[1] and p[1]["long"] > 1]
    assert long_passes == [("prefill", {"long": 8184}), ("prefill", {"long": 8184}),
                           ("prefill", {"long": 3632})]
    reason = next(it.reason for it in result.iterations if it.prefill_rows)
    assert "s0 asks for logprobs" in reason


def test_max_running_requests_caps_the_batch_and_decode_advances_everyone_by_one():
    """Implication 11."""
    result = run([req(f"q{i}", 100, 50) for i in range(20)], max_running=8)
    reqs = by_rid(result)
    decodes = [it for it in result.iterations if it.kind is PassKind.DECODE]
    assert max(len(it.decode_rids) for it in decodes) == 8
    assert all(it.end_at in reqs[rid].token_times for it in decodes for rid in it.decode_rids)
    assert all(len(r.token_times) == 50 for r in reqs.values())


def test_a_budget_larger_than_the_pool_is_clipped_like_sglang_clips_max_new_tokens():
    """max_new_tokens is clipped to max_req_len - prompt - 1, with max_req_len = min(context, pool) - 1."""
    result = run([req("huge", 9000, 2000), req("ok", 100, 5)], pool=10000)
    reqs = by_rid(result)
    assert (reqs["huge"].max_new_tokens, len(reqs["huge"].token_times)) == (10000 - 1 - 9000 - 1,) * 2
    assert reqs["ok"].state is RequestState.FINISHED


def test_a_prompt_beyond_the_context_is_rejected_at_arrival():
    result = run([req("too-long", 140000, 5)], pool=400000)
    assert "max_req_input_len" in by_rid(result)["too-long"].reject_reason


def test_a_chunked_request_holds_one_of_the_request_slots():
    """`get_num_allocatable_reqs`: running + the chunked request + new ones stay within
    max_running_requests."""
    result = run([req("a", 1000, 60, already_generated=10), req("long", 20000, 400), req("s", 100, 5)],
                 max_running=2)
    reqs = by_rid(result)
    assert prefill_extends(result)[:3] == [[("long", 8192)], [("long", 8192)], [("long", 3616)]]
    assert reqs["s"].first_scheduled_at >= reqs["a"].finished_at  # then a and long fill both slots


def test_a_shared_prefix_is_computed_once_and_counted_once():
    """Radix cache: a later request of the same group skips the cached prompt tokens (`match_prefix`)."""
    from engine_model.simulation import Run

    from specs import scenario

    sim = Run(scenario([req("first", 800, 100, prefix_group="sys"),
                        req("second", 900, 20, at=0.3, prefix_group="sys"),
                        req("other", 900, 20, at=0.3)]))
    result = sim.run()
    rows = {r.rid: (r.extend, r.past_kv) for it in result.iterations for r in it.prefill_rows}
    assert rows == {"first": (800, 0), "second": (100, 800), "other": (900, 0)}
    three = next(it for it in result.iterations if set(it.decode_rids) == {"first", "second", "other"})
    assert three.kv_used == three.decode_past_kv + 3 - 800  # every row's KV, with the shared 800 counted once
    # all released; the prefix stays cached as evictable (free) slots
    assert sim.topology.scheduler.kv_used == 0
    tree = sim.topology.scheduler.prefix.tree
    # each prompt and reply but its last token, the 800 shared tokens once: 899 + (100 + 19) + 919
    assert (tree.protected, tree.evictable) == (0, 899 + 119 + 919)
    from engine_model.core import Request
    from engine_model.prefix import prompt_runs
    later = Request("later", "g", 0.0, 1000, 1, 1, prefix_group="sys")
    assert tree.match(prompt_runs(later), 999)[0] == 900


# -- the overlap schedule (sglang-scheduler-facts.md 1.3) ---------------------------------------------
def rows_after_finish(version: str, output: int, max_new: int, overlap: bool) -> list[tuple]:
    """(kind, decode rows, wasted rows, finished) of each pass after the one that wrote the last token."""
    result = run([req("a", 100, output, max_new_tokens=max_new)], version=version,
                 disable_overlap_schedule=not overlap)
    its = result.iterations
    last = max(i for i, it in enumerate(its) if it.kind is not PassKind.IDLE and "a" in it.decode_rids
               and not it.wasted_rids)
    return [(it.kind.value, it.decode_rids, it.wasted_rids, it.finished_rids) for it in its[last:]]


def test_without_overlap_a_request_leaves_in_the_pass_that_finishes_it():
    for version in ("0.5.20", "0.5.23"):
        assert rows_after_finish(version, 3, 8, overlap=False) == [("decode", ("a",), (), ("a",))]


def test_with_overlap_a_finished_request_is_one_iteration_late_to_leave():
    """The result of pass N lands after pass N+1 was launched: an EOS finish (output < max_new_tokens) takes
    one more decode row whose token is thrown away; a finish by length leaves first from 0.5.22
    (`_reqs_finishing_inflight`), not in 0.5.20."""
    eos = [("decode", ("a",), (), ()), ("decode", ("a",), ("a",), ("a",))]
    assert rows_after_finish("0.5.23", 3, 8, overlap=True) == eos
    assert rows_after_finish("0.5.20", 3, 8, overlap=True) == eos
    assert rows_after_finish("0.5.20", 3, 3, overlap=True) == eos
    assert rows_after_finish("0.5.23", 3, 3, overlap=True) == [
        ("decode", ("a",), (), ()), ("idle", (), (), ("a",))]


def test_with_overlap_the_kv_of_a_finished_request_frees_one_pass_later():
    """A waiting request that needs the finished request's KV is admitted one pass later with overlap."""
    workload = [req("a", 6000, 3, max_new_tokens=3), req("b", 6000, 2, at=0.001)]

    def admitted_after(overlap: bool) -> int:
        its = run(workload, pool=10_000, disable_overlap_schedule=not overlap).iterations
        last_a = max(i for i, it in enumerate(its) if "a" in it.decode_rids and "a" not in it.wasted_rids)
        first_b = next(i for i, it in enumerate(its) if any(r.rid == "b" for r in it.prefill_rows))
        return first_b - last_a

    assert (admitted_after(False), admitted_after(True)) == (1, 2)


def kv_short_after_a_finish(max_new: int):
    """Two requests decoding on a pool with no slot left; `a` has just written its last token (3 of
    max_new), its result still in flight (overlap schedule, 0.5.23)."""
    sched = scheduler(pool=2000, disable_overlap_schedule=False)
    a, b = request("a", 900, 3, max_new_tokens=max_new), request("b", 900, 50)
    for req_, generated in ((a, 3), (b, 10)):
        req_.state, req_.num_generated, req_.kv_len = RequestState.RUNNING, generated, 900 + generated - 1
        sched.running.append(req_)
        sched.kv_used += req_.kv_len
    sched.kv_used = sched.cfg.max_total_tokens  # the pool is full: no decode slot for anyone
    sched.in_flight = [a]
    return sched, sched.schedule()


def test_with_overlap_a_short_pool_waits_only_for_finishes_by_length():
    """`update_running_batch` (0.5.22+): when KV is short but a request in flight finishes by length, decode
    is skipped for a step (its KV frees when the result lands). A request that stopped on EOS is not among
    `_reqs_finishing_inflight`: the scheduler retracts instead."""
    _, by_length = kv_short_after_a_finish(max_new=3)
    assert (by_length.kind, by_length.retraction) == (PassKind.IDLE, None)
    assert "finished by length" in by_length.reason
    _, by_eos = kv_short_after_a_finish(max_new=8)
    assert by_eos.retraction is not None and by_eos.retraction.rids == ("b",)


def test_shortest_prefill_first_sorts_by_uncached_work_and_defers_a_shared_prefix():
    """`_sort_by_shortest_prefill`: least work first, ties by queue entry; a request with no more than 32
    cached tokens sharing 32 or more with one ahead of it (`_compute_prefix_matches`) goes last."""
    sched = scheduler(schedule_policy="shortest-prefill-first")
    reqs = [request("big", 5000, 4), request("small", 300, 4), request("tie", 300, 4),
            request("fam-a", 2000, 4, prefix_group="f"), request("fam-b", 1000, 4, prefix_group="f")]
    for r in reqs:
        sched.arrive(r)
    sched._sort_waiting()
    assert [r.rid for r in sched.waiting] == ["small", "tie", "fam-a", "big", "fam-b"]


def test_shortest_prefill_first_caps_the_running_chunk_and_cuts_no_second_request():
    """`shortest_prefill_chunk_limit`: a long prompt is mid-chunk (chunk 4,096) and two short requests
    wait: the chunk shrinks by their page-rounded work so both join the pass. A waiting request that would
    itself need cutting is not admitted beside a chunk that stays cut ("only one unfinished chunked request
    can be tracked")."""
    sched = scheduler(chunk=4096, schedule_policy="shortest-prefill-first")
    long = request("long", 30000, 4)
    long.state, long.kv_len, sched.chunked = RequestState.PREFILLING, 4096, long
    sched.kv_used += 4096
    sched.entered["long"] = 0
    for rid, prompt in (("q1", 300), ("q2", 500), ("c2", 20000)):
        sched.arrive(request(rid, prompt, 4))
    plan = sched.schedule()
    assert [(r.rid, e) for r, e in plan.prefill] == [("long", 4096 - 800), ("q1", 300), ("q2", 500)]
    assert sched.chunk_cap == 3296 and "caps that chunk at 3,296 tokens" in plan.reason
    assert [r.rid for r in sched.waiting] == ["c2"] and sched.chunked is long


def test_beside_a_chunk_that_stays_cut_a_request_that_needs_cutting_is_not_admitted():
    """`_select_prefill_admission` under shortest-prefill-first: with a continuing chunk still cut, a
    candidate that does not fit the chunk budget whole returns OTHER instead of being cut."""
    from engine_model.policy import PrefillAdder, Verdict

    sched = scheduler(chunk=4096)
    for no_second_chunk, expected in ((False, (Verdict.OTHER, [("c2", 1000)])), (True, (Verdict.OTHER, []))):
        adder = PrefillAdder(sched.cfg, pool=100_000, running=[], ratio=0.7, num_mixed=0)
        adder.rem_chunk, adder.no_second_chunk = 1000, no_second_chunk
        verdict = adder.add_one(request("c2", 20000, 4))
        assert (verdict, [(r.rid, e) for r, e in adder.admitted]) == expected


@pytest.mark.parametrize("version", ["0.5.20", "0.5.21", "0.5.22", "0.5.23"])
def test_the_kv_check_counts_the_matched_prefix_as_locked_on_every_release(version):
    """`PrefillAdder.add_one_req`: 0.5.20 checks `total_tokens >= rem_total_tokens` before `_lock_node` and
    again first thing inside it (`_select_prefill_admission`); 0.5.21+ only inside (`_check_prefill_budget`).
    Locking only takes the matched prefix out of the evictable room, so 0.5.20's first check never refuses
    what the second admits: every release refuses a request that fits only while its cached prefix still
    counts as evictable, and admits one that fits with it locked."""
    from engine_model.policy import PrefillAdder, Verdict
    sched = scheduler(version=version)
    prompt, cached = 3000, 2000
    total = prompt - cached + 10 + sched.cfg.page_size  # extend + max_new + a page
    for room, admitted in ((total + cached, False), (total + cached + 1, True)):
        adder = PrefillAdder(sched.cfg, pool=room, running=[], ratio=0.7, num_mixed=0)
        req = request("r", prompt, 10)
        req.kv_len = cached
        verdict = adder.add_one(req, locked=cached)
        assert (verdict is not Verdict.NO_TOKEN) == admitted, (room, verdict)


def chat_group(max_new_tokens) -> dict:
    return {"engine": {"max_total_tokens": 60000, "chunked_prefill_size": 8192, "max_running_requests": 64},
            "workload": {"groups": [{"name": "chats", "count": 3, "prompt_len": 1500, "output_len": 1600,
                                     "max_new_tokens": max_new_tokens}]}}


@pytest.mark.parametrize(("asked", "expect"), [("reply", "reply"), (None, "reply"), (2000, 2000),
                                               ("none", "server")])
def test_the_clients_max_tokens_is_what_admission_reserves_against(asked, expect):
    """A client that sends max_tokens = its reply's length, or a number, or none: SGLang's
    `init_req_max_new_tokens` takes 1 << 30 for none, then clips it to max_req_len - prompt - 1 and to an
    empty pool; `PrefillAdder` reserves min(that, 4096) x new_token_ratio for it while it runs
    (`_get_running_request_total_token_offset`)."""
    import random

    from engine_model import resolve, validate
    from engine_model.policy import PrefillAdder
    from engine_model.scheduler import intake
    from engine_model.workload import group_requests
    sc = validate(chat_group(asked))
    cfg = resolve(sc)
    [req, *_] = group_requests(sc.workload.groups[0], 0, random.Random(0))
    assert intake(req, cfg) == ""
    server = min(cfg.max_req_len - 1500 - 1, cfg.max_total_tokens - 1500 - cfg.page_size - 1)
    assert req.max_new_tokens == {"reply": 1600, 2000: 2000, "server": server}[expect]
    assert req.output_len == 1600  # the reply still ends where it ends (EOS)
    adder = PrefillAdder(cfg, pool=60000, running=[req], ratio=0.5, num_mixed=0)
    assert adder.total_offset == min(req.max_new_tokens, 4096) * 0.5


def test_a_client_setting_that_is_neither_a_number_nor_reply_nor_none_is_refused_by_name():
    from engine_model import InputError, validate
    with pytest.raises(InputError) as error:
        validate(chat_group("sometimes"))
    assert "max_new_tokens" in str(error.value)
