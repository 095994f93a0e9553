"""The server's front end (engine_model/frontend.py), rule by rule, against SGLang 0.5.23's
srt/managers/tokenizer_manager.py (TM) and benchmark/serving.py (BS), as unpacked from the 0.5.23 wheel:
TM:651-660 the dynamic batch tokenizer only when enabled (off by default); TM:1068 `self.tokenizer(...)`
called inline in `_tokenize_texts`; TM:2465 `handle_loop` -> TM:2480 `_handle_batch_output`; TM:1979
`_stream_one_response` drains `state.out_list`; TM:1854-1868 `_coalesce_streaming_chunks` and its warning at
20 chunks; BS:795-797 the sglang backend's `adjust_itl = chunk_gap / num_new_tokens`; BS:381 the OpenAI
completions backend's one gap per chunk."""

import pytest

from engine_model import load_scenario
from engine_model.core import Iteration, PassKind, Request, RequestState
from engine_model.frontend import chunks, deliver, itls, loop_of
from engine_model.metrics import gaps, tpot, ttft
from engine_model.simulation import simulate

TOK = 1e-6  # seconds per prompt token in these tests
ROW = 1e-4


def stream(rid, times, arrival=0.0, prompt=100, before=0):
    r = Request(rid, "g", arrival, prompt, len(times), len(times), num_generated_before=before)
    r.token_times = list(times)
    r.state, r.finished_at = RequestState.FINISHED, times[-1] if times else arrival
    return r


def newcomer(rid, arrival, prompt):
    return Request(rid, "g", arrival, prompt, 8, 8)


def test_outputs_on_an_idle_loop_reach_the_client_after_the_loop_handles_their_batch():
    """_handle_batch_output: one state update per stream in the batch; nothing waits, nothing coalesces."""
    a, b = stream("a", [1.0, 1.02, 1.04]), stream("b", [1.0, 1.02])
    assert deliver([a, b], {}, TOK, ROW) == []
    assert a.client_times == pytest.approx([1.0 + 2 * ROW, 1.02 + 2 * ROW, 1.04 + ROW])
    assert b.client_times == pytest.approx([1.0 + 2 * ROW, 1.02 + 2 * ROW])


def test_a_long_prompt_tokenized_inline_delays_every_stream_by_the_modelled_amount():
    """_tokenize_texts runs the fast tokenizer synchronously on the loop (the dynamic batch tokenizer is
    off by default): outputs that arrive meanwhile wait, then go out together (_stream_one_response
    drains out_list; _coalesce_streaming_chunks joins the deltas)."""
    times = [0.99 + 0.01 * k for k in range(80)]  # a token every 10 ms
    a, b = stream("a", times), stream("b", times)
    long = newcomer("long", arrival=1.0, prompt=131_072)
    blocks = deliver([a, b, long], {}, TOK, 0.0)
    held = 131_072 * TOK  # 0.131 s
    end = 1.0 + held
    for r in (a, b):
        late = [c for t, c in zip(r.token_times, r.client_times, strict=True) if 1.0 <= t < end]
        assert late and all(c == pytest.approx(end) for c in late)
        on_time = [(t, c) for t, c in zip(r.token_times, r.client_times, strict=True) if not 1.0 <= t < end]
        assert all(c == t for t, c in on_time)
    (block,) = blocks
    assert (block.rid, block.prompt_len, block.num_streams) == ("long", 131_072, 2)
    assert block.seconds == pytest.approx(held)
    assert "tokenizing a 131,072-token prompt (long) for 131 ms; 2 streams got nothing" in block.words()
    # the stream's longest wait is the tokenization, less the gap it would have waited anyway
    longest = max(c - t for t, c in zip(a.token_times, a.client_times, strict=True))
    assert longest == pytest.approx(held, abs=0.01)


def test_a_reply_already_streaming_is_not_tokenized():
    """A mid-reply stream never passes the front end again (no request arrives for it)."""
    a = stream("a", [1.0, 1.01, 1.02])
    mid = stream("mid", [1.005], arrival=1.0, prompt=10**6, before=5)
    assert deliver([a, mid], {}, TOK, 0.0) == []
    assert a.client_times == a.token_times


def test_pd_replies_stream_through_the_decode_worker_that_decodes_them():
    """In PD the decode server's TokenizerManager streams the reply (the router relays its response)."""
    it = Iteration(index=0, kind=PassKind.DECODE, start_at=0.0, end_at=0.01, prefill_rows=(),
                   decode_rids=("x",), decode_past_kv=0, reason="", mirrors="", chunked_rid=None,
                   finished_rids=(), kv_used=0, kv_capacity=1, num_waiting=0, num_running=1,
                   new_token_ratio=0.0)
    assert loop_of({"prefill-0": [it], "decode-1": [it]}) == {"x": "decode-1"}


def test_bench_serving_counts_a_coalesced_chunk_per_backend():
    """async_request_sglang_generate: adjust_itl = chunk_gap / num_new_tokens, once per token;
    async_request_openai_completions: one gap per chunk."""
    times = [1.0, 1.01, 1.2, 1.2, 1.2, 1.2, 1.21]
    assert chunks(times) == [(1.0, 1), (1.01, 1), (1.2, 4), (1.21, 1)]
    assert itls(times) == pytest.approx([0.01, 0.0475, 0.0475, 0.0475, 0.0475, 0.01])
    assert itls(times, backend="openai") == pytest.approx([0.01, 0.19, 0.01])


def test_metrics_read_the_client_times():
    """TTFT from the first chunk, TPOT from the last, gaps as the default backend counts them."""
    r = stream("a", [1.0, 1.01, 1.02, 1.03], arrival=0.5)
    r.client_times = [1.0, 1.01, 1.05, 1.05]
    assert ttft(r) == pytest.approx(0.5)
    assert tpot(r) == pytest.approx(0.05 / 3)
    assert gaps(r) == pytest.approx([0.01, 0.02, 0.02])


def test_a_run_records_the_block_a_long_prompt_caused():
    """forty_replies: the 100,000-token prompt arrives while forty replies stream."""
    per_token = 5e-6
    result = simulate(load_scenario("forty_replies", [f"cost.tokenize_s={per_token}"]))
    blocks = [b for b in result.front_end if b.prompt_len == 100_000]
    assert blocks and blocks[0].seconds == pytest.approx(100_000 * per_token)
    block = blocks[0]
    waited = {r.rid for r in result.requests
              if any(block.start_at <= t < block.end_at and c >= block.end_at
                     for t, c in zip(r.token_times, r.client_times, strict=True))}
    assert len(waited) == block.num_streams > 0


def test_the_front_end_is_off_for_the_linear_predictor_and_when_switched_off():
    """The reference traces time the scheduler only."""
    linear = simulate(load_scenario("forty_replies", ["cost.kind=linear"]))
    off = simulate(load_scenario("forty_replies", ["cost.front_end=false"]))
    for result in (linear, off):
        assert result.front_end == [] and all(r.client_times is None for r in result.requests)


def test_same_scenario_and_seed_give_the_same_client_times():
    runs = [simulate(load_scenario("ten_oclock_rush_pd", ["seed=3"])) for _ in range(2)]
    assert runs[0].front_end == runs[1].front_end and runs[0].front_end
    assert ([r.client_times for r in runs[0].requests] == [r.client_times for r in runs[1].requests])


def test_the_stalls_table_and_the_step_through_name_the_block_from_the_run():
    from app.charts.frames import build
    from app.story import diagnosis
    from app.story.timeline import front_end_note

    result = simulate(load_scenario("forty_replies"))
    run = build(result)
    found = diagnosis.diagnose(run)
    block = found["front_end_longest"]
    assert block == max(result.front_end, key=lambda b: b.seconds)
    table = diagnosis.apart_table(found).set_index("look at")
    words = table.loc["Front end (the server's event loop)", "this run"]
    assert f"tokenizing a {block.prompt_len:,}-token prompt" in words
    assert f"for {block.seconds * 1e3:.0f} ms; {block.num_streams} streams got nothing" in words
    note = front_end_note(block)
    assert f"from t = {block.start_at:.3f} s to {block.end_at:.3f} s" in note
    off = diagnosis.diagnose(build(simulate(load_scenario("forty_replies", ["cost.front_end=false"]))))
    assert off["front_end_longest"] is None
    assert "no prompt's tokenizing held a reply back" in diagnosis.front_end_words(off)


@pytest.mark.parametrize("story", ["ten_oclock_rush", "ten_oclock_rush_pd"])
def test_the_client_never_sees_a_token_before_it_is_made_and_sees_them_in_order(story):
    result = simulate(load_scenario(story))
    assert result.front_end
    for r in result.requests:
        assert len(r.client_times) == len(r.token_times)
        assert all(c >= t for c, t in zip(r.client_times, r.token_times, strict=True)), r.rid
        assert r.client_times == sorted(r.client_times), r.rid


def test_a_free_tokenizer_leaves_the_scheduler_exactly_as_without_the_front_end():
    """With tokenizing free, the loop delays nothing: the scheduler must see every request when it would
    without the front end. Caught a prompt sent during a pass left untokenized (so unseen) at the next pass,
    which cut shortest-prefill-first's gain on the ten o'clock rush from 65 s → 1.2 s to 65 s → 24 s."""
    from engine_model import STORIES

    story = STORIES["ten_oclock_rush"]
    values = {**story.defaults, "policy": "shortest-prefill-first"}
    on, off = (simulate(story.scenario(values, (f"cost.front_end={fe}", "cost.tokenize_s=0")))
               for fe in ("true", "false"))
    assert [(i.kind, i.start_at, i.prefill_rows) for i in on.iterations] == \
        [(i.kind, i.start_at, i.prefill_rows) for i in off.iterations]
