"""The PD building blocks on their own: router, KV link fair share, lockstep cost, per-rank settings."""

import random

import pytest

from engine_model.config import Scenario
from engine_model.cost import PassShape
from engine_model.hardware import link
from engine_model.pd.roles import resolve_role
from engine_model.pd.router import ROOM_BOUND, RankPicker, Router, resolve_load_balance
from engine_model.pd.transfer import Network


def test_round_robin_takes_workers_in_turn():
    router = Router("round_robin", random.Random(0), random.Random(1))
    assert [router.pick("prefill", [0, 0, 0]) for _ in range(7)] == [0, 1, 2, 0, 1, 2, 0]


def test_least_loaded_picks_the_emptiest_and_breaks_ties_low():
    router = Router("least_loaded", random.Random(0), random.Random(1))
    assert [router.pick("decode", loads) for loads in ([3, 1, 1], [0, 2, 5], [4, 4, 4])] == [1, 0, 0]


def test_random_router_is_seeded():
    picks = [[Router(kind, random.Random(7), random.Random(1)).pick("p", [0, 5, 1, 2]) for _ in range(5)]
             for kind in ("random", "power_of_two")]
    again = [[Router(kind, random.Random(7), random.Random(1)).pick("p", [0, 5, 1, 2]) for _ in range(5)]
             for kind in ("random", "power_of_two")]
    assert picks == again


def test_decode_dp_ranks_are_taken_in_turn_whatever_the_room():
    picker = RankPicker(4, "round_robin")
    assert [picker.pick(room) for room in (7, 7, 7, 7, 7, 7)] == [0, 1, 2, 3, 0, 1]


def test_prefill_dp_rank_is_the_bootstrap_room_modulo_the_ranks():
    picker = RankPicker(4, "follow_bootstrap_room")
    assert [picker.pick(room) for room in (0, 5, 10, 15, 2**63 - 1)] == [0, 1, 2, 3, 3]


def test_auto_load_balance_resolves_per_role_as_sglang_does():
    assert [resolve_load_balance("auto", role) for role in ("prefill", "decode")] == [
        "follow_bootstrap_room", "round_robin"]
    assert resolve_load_balance("round_robin", "prefill") == "round_robin"


def test_bootstrap_rooms_are_seeded_draws_below_2_63():
    first, again = (Router("round_robin", random.Random(0), random.Random(3)) for _ in range(2))
    rooms = [first.bootstrap_room() for _ in range(100)]
    assert rooms == [again.bootstrap_room() for _ in range(100)]
    assert all(0 <= room < ROOM_BOUND for room in rooms) and max(rooms) > ROOM_BOUND // 2


def test_two_transfers_from_one_nic_share_it_and_the_survivor_speeds_up():
    # 1e9 bytes/s
    net = Network(link("mooncake").model_copy(update={"bandwidth_gbps": 8.0, "latency_s": 0.0}))
    a, b = net.open("a", "p0", "d0"), net.open("b", "p0", "d1")
    net.add(a, 1e9, True, 0.0)
    net.add(b, 3e9, True, 0.0)
    assert (a.rate, b.rate) == (0.5e9, 0.5e9)
    assert net.next_sent_at() == pytest.approx(2.0)
    assert [t.rid for t in net.pop_sent(2.0)] == ["a"]
    assert b.rate == 1e9  # recomputed when a ends
    assert net.next_sent_at() == pytest.approx(4.0)
    assert [t.rid for t in net.pop_sent(4.0)] == ["b"]


def test_fair_share_is_max_min_across_sender_and_receiver_nics():
    net = Network(link("mooncake").model_copy(update={"bandwidth_gbps": 8.0, "latency_s": 0.0}))
    flows = [net.open("x", "p0", "d0"), net.open("y", "p1", "d0"), net.open("z", "p1", "d1")]
    for flow in flows:
        net.add(flow, 1e9, True, 0.0)
    # d0 and p1 each carry two flows: every flow gets half a NIC, and no NIC is overfull.
    assert [f.rate for f in flows] == [0.5e9, 0.5e9, 0.5e9]


def test_chunks_streamed_under_early_finish_after_the_last_one():
    net = Network(link("mooncake").model_copy(update={"bandwidth_gbps": 8.0, "latency_s": 0.25}))
    t = net.open("r", "p0", "d0")
    net.add(t, 1e9, False, 0.0)
    assert net.next_sent_at() is None  # not final: more chunks to come
    net.add(t, 1e9, True, 0.5)
    assert net.next_sent_at() == pytest.approx(2.0)
    (done,) = net.pop_sent(2.0)
    assert (done.started_at, done.final_at, done.delivered_at) == (0.0, 0.5, 2.25)
    assert done.duration_s == pytest.approx(1.75)


def glm_scenario(**pd) -> Scenario:
    return Scenario.model_validate({
        "engine": {"context_length": 202752}, "hardware": {"gpu": "rubin", "tp_size": 4},
        "model": {"name": "glm-moe", "weight_dtype": "nvfp4", "kv_dtype": "fp8"},
        "pd": {"prefill": {"tp_size": 4, "dp_size": 4}, "decode": {"tp_size": 4, "dp_size": 4}, **pd},
    })


def test_dp_attention_rank_gets_a_quarter_of_the_chunk_and_the_decode_cap():
    prefill = resolve_role(glm_scenario(decode_kv_cap_per_rank=163840), "prefill")
    decode = resolve_role(glm_scenario(decode_kv_cap_per_rank=163840), "decode")
    assert (prefill.rank.chunked_prefill_size, prefill.attn_tp_size, prefill.rank.tp_size) == (4096, 1, 1)
    assert decode.rank.max_total_tokens == 163840
    assert prefill.rank.max_total_tokens > 163840  # the cap is the decode role's only
    assert prefill.rank.ratio_init == pytest.approx(0.21)  # conservativeness x 0.3 under DP attention


def test_lockstep_attention_is_the_roofline_attention_of_one_rank():
    cost = resolve_role(glm_scenario(), "decode").cost
    shape = PassShape(num_rows=3, num_decode_rows=0, new_tokens=4096, past_kv_sum=50_000,
                      attn_pairs=180_000_000)
    assert cost.rank_attention_s(shape) == pytest.approx(cost.rank.breakdown(shape)["attention_s"])
    idle = PassShape(0, 0, 0, 0, 0)
    slowest = cost.seconds([shape, idle, idle, idle])
    assert slowest == pytest.approx(cost.whole.seconds(shape) - cost.whole.breakdown(shape)["attention_s"]
                                    + cost.rank.breakdown(shape)["attention_s"])


def llama_pd(**pd) -> dict:
    return {"hardware": {"gpu": "h100-sxm"}, "model": {"name": "llama-3.1-8b"}, "pd": pd}


@pytest.mark.parametrize(("max_running", "dp", "extra_slots", "rows"), [
    (8, 1, None, 8 + 16),   # 8 per rank <= 32: twice that many extra rows
    (32, 1, None, 32 + 64),
    (33, 1, None, 33),      # over 32 per rank: none
    (64, 2, None, 32 + 64),  # 32 per DP rank: the server's cap and the rule are per rank
    (8, 1, 3, 8 + 3),       # --disaggregation-decode-extra-slots given
])
def test_decode_preallocates_into_the_extra_request_rows(max_running, dp, extra_slots, rows):
    """`handle_pd_disaggregation`: a decode server with --max-running-requests at most 32 per DP rank gets
    twice that many extra request rows (`DecodeReqToTokenPool`'s pre_alloc_size), so `pop_preallocated`
    reserves KV for more requests than may run; the prebuilt merge still caps the running batch."""
    from engine_model.core import Request
    from engine_model.pd.decode import DecodeRank
    sc = Scenario.model_validate({**llama_pd(decode_extra_slots=extra_slots, decode={"dp_size": dp}),
                                  "hardware": {"gpu": "h100-sxm", "tp_size": dp},
                                  "engine": {"max_running_requests": max_running}})
    role = resolve_role(sc, "decode")
    rank = DecodeRank("d", role.rank, role.cost, random.Random(0), 512)
    num_rows = rows
    reqs = [Request(rid=f"r{i}", group="g", arrival_at=0.0, prompt_len=100, output_len=10, max_new_tokens=10)
            for i in range(num_rows + 5)]
    rank.prealloc, rank.ready = list(reqs), {r.rid for r in reqs}
    rank.poll()
    assert len(rank.transfer) == num_rows
    assert "no free req_to_token row" in rank.stop_reason
    rank.delivered = {r.rid for r in rank.transfer}
    rank.poll()
    rank.schedule()
    assert len(rank.running) == role.rank.max_running_requests == max(1, max_running // dp)


def test_decode_has_no_extra_rows_when_max_running_requests_is_left_to_the_pool():
    assert resolve_role(Scenario.model_validate(llama_pd()), "decode").rank.decode_extra_slots == 0


@pytest.mark.parametrize(("version", "admitted"), [("0.5.20", 1), ("0.5.22", 1), ("0.5.23", 2)])
def test_prefill_admits_only_into_request_rows_its_unsent_requests_leave(version, admitted):
    """A prefilled request keeps its request row until its transfer succeeds (`release_kv_cache` in
    `process_disagg_prefill_inflight_queue`), as the continuing chunk keeps its own. With 8 rows, 5 in
    transfer and a chunk continuing, 2 rows are free: 0.5.20-0.5.22 stop once the admitted list (the chunk
    counted) reaches them (`len(can_run_list) >= req_to_token_pool.available_size()`), 0.5.23 adds the
    chunk's row back (`num_held_rows`)."""
    from engine_model.core import Request
    from engine_model.pd.prefill import PrefillRank, prefill_copy
    sc = Scenario.model_validate({**llama_pd(), "engine": {"version": version, "max_running_requests": 8,
                                                            "chunked_prefill_size": 1024}})
    role = resolve_role(sc, "prefill")
    rank = PrefillRank("p", role.rank, role.cost, random.Random(0))

    def req(rid: str, prompt: int) -> Request:
        return prefill_copy(Request(rid=rid, group="g", arrival_at=0.0, prompt_len=prompt, output_len=5,
                                    max_new_tokens=5))
    for i in range(5):
        sent = req(f"s{i}", 100)
        rank.kv_used += 100
        rank.inflight.append(sent)
    for rid, prompt in (("long", 1500), *((f"w{i}", 50) for i in range(6))):
        rank.add(req(rid, prompt), 0.0, bootstrapped=True)
    first = rank.schedule()
    assert [r.rid for r, _ in first.prefill] == ["long"] and rank.chunked is not None
    rank.apply(first, 0.01)
    second = rank.schedule()
    assert [r.rid for r, _ in second.prefill] == ["long"] + [f"w{i}" for i in range(admitted)]
