"""Rules that a trace recorded from SGLang 0.5.23's own scheduler shows, beyond the model matching it pass
for pass (tests/test_reference.py replays every trace): each test says what the real scheduler did and
that the model does it for the same reason."""

import tempfile
from pathlib import Path
from unittest.mock import patch

import numpy as np

from engine_model import policy, prefix, radix, scheduler
from engine_model.reference import compare, read_jsonl, scenario_from_workload, write_trace
from engine_model.resolve import resolve
from engine_model.simulation import simulate

from conftest import DATA

EXTRA = DATA / "sglang_reference_extra"


def agreement(name: str, **engine) -> float:
    """Pass agreement of the model, with `engine` settings changed, against the recorded trace."""
    scenario = scenario_from_workload(EXTRA / name / "workload.json")
    scenario = scenario.model_copy(update={"engine": scenario.engine.model_copy(update=engine)})
    with tempfile.TemporaryDirectory() as out:
        write_trace(simulate(scenario), Path(out))
        return compare(EXTRA / name, Path(out))["pass_agreement"]


def questions_ttft_p95(name: str) -> float:
    reqs = [r for r in read_jsonl(EXTRA / name / "request.jsonl") if r["rid"].startswith("q")]
    return float(np.percentile([r["first_token_s"] - r["arrival_s"] for r in reqs], 95))


def test_sglang_runs_conservativeness_1_5_and_3_as_one_server():
    """min(0.7 x c, 1) saturates at 1 from c = 1/0.7: SGLang's two traces are the same pass for pass."""
    same = [read_jsonl(EXTRA / name / "iteration.jsonl") for name in ("conservative_1_5", "conservative_3")]
    assert same[0] == same[1] and len(same[0]) > 1000
    scenario = scenario_from_workload(EXTRA / "conservative_3" / "workload.json")
    starts = [resolve(scenario.model_copy(update={"engine": scenario.engine.model_copy(
        update={"schedule_conservativeness": c})})).ratio_init for c in (1.0, 1.4, 1.5, 2.0, 3.0)]
    assert [round(r, 9) for r in starts] == [0.7, 0.98, 1.0, 1.0, 1.0]
    assert agreement("conservative_3") == agreement("conservative_3", schedule_conservativeness=1.5) == 1.0


def test_a_spent_pass_budget_admits_no_one_in_0_5_23_and_someone_in_0_5_22():
    """The long prompt's last chunk (3,000 tokens) spends max_prefill_tokens (2,048): 0.5.23 stops the
    admission loop before the first short request; 0.5.22's loop would have tried it and admitted it."""
    assert agreement("spent_budget") == 1.0
    assert agreement("spent_budget", version="0.5.22") < 1.0
    last_chunk = next(it for it in read_jsonl(EXTRA / "spent_budget" / "iteration.jsonl")
                      if any(r["rid"] == "long" and r["extend"] == 3000 for r in it["rows"]))
    assert [r["rid"] for r in last_chunk["rows"]] == ["long"] and last_chunk["waiting"] == 10


def test_shortest_prefill_first_in_sglang_lowers_the_questions_p95_first_token():
    """The same ten-o'clock-like workload under fcfs and shortest-prefill-first, both recorded: in SGLang's
    own trace the questions' p95 first token falls, and the model matches both traces."""
    assert questions_ttft_p95("spf_rush") < questions_ttft_p95("spf_rush_fcfs") / 2
    assert agreement("spf_rush") == agreement("spf_rush_fcfs") == 1.0


def no_deferral(cache, waiting):
    """`_compute_prefix_matches` without its in-batch check: every request matched, none deferred."""
    for req in waiting:
        cache.match(req)
    return set()


def test_the_running_chunk_cap_and_in_batch_deferral_are_what_the_traces_need():
    """Recorded passes where a contract's chunk is cut short beside questions exist, and the model matches
    them only with the cap; the shared-prefix workload needs the in-batch deferral too."""
    its = read_jsonl(EXTRA / "spf_rush" / "iteration.jsonl")
    beside = [it for it in its if {r["rid"][0] for r in it["rows"] if r["kind"] == "prefill"} == {"c", "q"}]
    assert beside and all(sum(r["extend"] for r in it["rows"]) <= 4096 for it in beside)
    with patch.object(scheduler, "shortest_prefill_chunk_limit", lambda *args: None):
        assert agreement("spf_rush") < 0.95
    with patch.object(prefix.PrefixCache, "prefix_matches", no_deferral):
        assert agreement("spf_prefix") < 0.7
    assert agreement("spf_rush") == agreement("spf_prefix") == 1.0


def test_intake_clips_max_new_to_the_empty_pool_so_the_request_runs():
    """At page size 16 a 3,000-token prompt asking for 5,000 new tokens on a 6,000-token pool: clipped only
    to max_req_len it could never be admitted (3,000 + 2,998 + 16 >= 6,000); SGLang clips it further, to
    6,000 - 3,008 - 16 - 1 = 2,975, and runs it first."""
    reqs = {r["rid"]: r for r in read_jsonl(EXTRA / "init_clip" / "request.jsonl")}
    assert reqs["big"]["first_token_s"] < reqs["a"]["first_token_s"]
    assert len(reqs["big"]["token_times"]) == 200
    result = simulate(scenario_from_workload(EXTRA / "init_clip" / "workload.json"))
    big = next(r for r in result.requests if r.rid == "big")
    assert (big.max_new_tokens, big.reject_reason) == (2975, None)
    assert agreement("init_clip") == 1.0


def test_a_retracted_request_is_charged_its_whole_reply_again_at_readmission():
    """`_commit_prefill_admission` charges min(max_new, 4096), not what the request has left: on this
    workload, charging only what is left admits a request SGLang kept waiting."""
    remaining = policy.PrefillAdder._charge

    def charge_what_is_left(self, req, extend, decode_charge, locked=0):
        if req.num_generated and extend == req.num_uncomputed:
            decode_charge = min(decode_charge, req.remaining_max_new)
        return remaining(self, req, extend, decode_charge, locked)

    assert agreement("readmit_charge") == 1.0
    with patch.object(policy.PrefillAdder, "_charge", charge_what_is_left):
        assert agreement("readmit_charge") < 1.0


def test_shortest_prefill_first_without_the_radix_cache_is_refused_as_sglang_refuses_it(tmp_path):
    """SchedulePolicy._validate_and_adjust_policy raises "Experimental shortest-prefill-first requires prefix
    caching" when the radix cache is disabled; a reference workload asking for both is refused the same
    way."""
    import json

    import pytest

    from engine_model.errors import InputError

    workload = tmp_path / "workload.json"
    workload.write_text(json.dumps({"server_args": {"schedule_policy": "shortest-prefill-first",
                                                    "disable_radix_cache": True},
                                    "requests": [{"rid": "a", "prompt_len": 10, "output_len": 2}]}))
    with pytest.raises(InputError, match="requires prefix caching"):
        scenario_from_workload(workload)


def test_a_client_that_sends_no_max_tokens_is_reserved_more_and_retracted_less():
    """The same 32 chats twice (make_workloads_37.py). Asking for exactly each reply's length, SGLang
    retracts; sending what SGLang fills in for a request without max_tokens, PrefillAdder reserves
    min(that, 4096) x new_token_ratio for each, admits fewer at once, retracts none and finishes later. The
    model's "none" client (workload.NO_MAX_NEW_TOKENS, clipped at intake as `init_req_max_new_tokens`
    clips it) gives each request exactly the max_new_tokens the recorded one carried."""
    from engine_model.core import Request
    from engine_model.scheduler import intake
    from engine_model.workload import NO_MAX_NEW_TOKENS
    runs = {c: read_jsonl(EXTRA / f"client_{c}" / "request.jsonl") for c in ("reply", "none")}
    retracted = {c: sum(r["num_retractions"] for r in reqs) for c, reqs in runs.items()}
    assert retracted["reply"] > 0 == retracted["none"]
    assert max(r["finish_s"] for r in runs["none"]) > max(r["finish_s"] for r in runs["reply"])
    workload = EXTRA / "client_none" / "workload.json"
    cfg = resolve(scenario_from_workload(workload))
    for sent in scenario_from_workload(workload).workload.requests:
        req = Request(rid=sent.rid, group="g", arrival_at=0.0, prompt_len=sent.prompt_len,
                      output_len=sent.output_len, max_new_tokens=NO_MAX_NEW_TOKENS)
        assert intake(req, cfg) == "" and req.max_new_tokens == sent.max_new_tokens


def mru_evict(tree, num_tokens):
    """Eviction in the wrong order: the most recently used leaf first."""
    freed = 0
    while freed < num_tokens and tree.leaves:
        node = max(tree.leaves, key=lambda n: n.last_access)
        del node.parent.children[radix.first_page(node.runs, tree.page)]
        tree.leaves.discard(node)
        tree.evictable -= node.size
        freed += node.size
        tree._update_leaf(node.parent)
    return freed


def test_prefix_reuse_needs_lpm_the_in_batch_check_and_lru_eviction():
    """Issue 42's trace (multi-turn chats on two system prompts, Mooncake-style hash_ids, lpm, a pool a
    third of the distinct tokens): the model matches it only with lpm's order, the in-batch deferral and
    least-recently-used eviction, and its free + evictable KV is SGLang's on every pass."""
    its = read_jsonl(EXTRA / "prefix_lpm" / "iteration.jsonl")
    assert sum(r["past_kv"] > 0 for it in its for r in it["rows"] if r["kind"] == "prefill") >= 30
    assert agreement("prefix_lpm", schedule_policy="fcfs") < 0.5
    assert agreement("prefix_lpm", disable_radix_cache=True) < 0.1
    with patch.object(prefix.PrefixCache, "prefix_matches", no_deferral):
        assert agreement("prefix_lpm") < 0.6
    with patch.object(radix.RadixTree, "evict", mru_evict):
        assert agreement("prefix_lpm") < 0.8
    ours = simulate(scenario_from_workload(EXTRA / "prefix_lpm" / "workload.json")).iterations
    assert ([it.kv_capacity - it.kv_used for it in ours if it.kind.value != "idle"]
            == [it["kv_free"] + it["kv_evictable"] for it in its])
    assert agreement("prefix_lpm") == 1.0


def test_dfs_weight_orders_the_queue_by_the_tree_not_by_the_longest_match():
    """The same requests under dfs-weight: SGLang's passes differ from lpm's, and the model matches them
    only with the depth-first, heaviest-subtree-first order."""
    dfs, lpm = (read_jsonl(EXTRA / name / "iteration.jsonl") for name in ("prefix_dfs", "prefix_lpm"))
    assert dfs != lpm
    assert agreement("prefix_dfs", schedule_policy="lpm") < 0.5
    assert agreement("prefix_dfs") == 1.0
