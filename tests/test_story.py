"""Seed 003 holds, with numbers, on the built-in `forty_replies` scenario (roofline cost, H100,
Llama-3.1-8B)."""

import pytest

from engine_model import load_scenario, simulate
from engine_model.metrics import max_itl, ttft


def forty(*sets):
    return simulate(load_scenario("forty_replies", list(sets)))


def log_passes(result):
    return [it for it in result.iterations if any(r.rid == "log" for r in it.prefill_rows)]


def streams_longest_gap(result):
    return max(max_itl(r) for r in result.requests if r.group == "streams")


@pytest.fixture(scope="session")
def off():
    return forty()


@pytest.fixture(scope="session")
def on():
    return forty("engine.enable_mixed_chunk=true")


def test_mixed_chunk_off_the_forty_get_nothing_while_the_log_is_prefilled(off):
    chunks = log_passes(off)
    first, last = chunks[0].start_at, chunks[-1].end_at
    assert len(chunks) == 13  # ceil(100000 / 8192)
    assert all(not it.decode_rids for it in chunks)
    stream_tokens = [t for r in off.requests if r.group == "streams" for t in r.token_times]
    assert not [t for t in stream_tokens if first < t < last]
    assert streams_longest_gap(off) >= last - first


def test_mixed_chunk_on_the_longest_gap_is_about_one_chunk_pass(on, off):
    longest_pass = max(it.duration_s for it in on.iterations)
    assert streams_longest_gap(on) <= 1.3 * longest_pass
    assert streams_longest_gap(on) < streams_longest_gap(off) / 5
    log_on, log_off = (next(r for r in res.requests if r.rid == "log") for res in (on, off))
    assert ttft(log_on) > ttft(log_off)  # the log pays for the decode rows riding its chunks


def test_one_logprob_request_brings_the_stall_back():
    result = forty("engine.enable_mixed_chunk=true", "workload.groups.0.num_return_logprob=1")
    chunks = log_passes(result)
    assert streams_longest_gap(result) >= chunks[-1].end_at - chunks[0].start_at
    assert {it.kind.value for it in chunks} == {"prefill"}


def test_smaller_chunks_shorten_the_gap_and_delay_the_log(on):
    small = forty("engine.enable_mixed_chunk=true", "engine.chunked_prefill_size=2048")
    assert streams_longest_gap(small) < streams_longest_gap(on)
    assert (ttft(next(r for r in small.requests if r.rid == "log"))
            > ttft(next(r for r in on.requests if r.rid == "log")))
