"""Metrics are pure functions of the requests, defined once in docs/metrics.md."""

import pytest

from engine_model.core import Request, RequestState
from engine_model.metrics import all_metrics, bucket_label, gaps, summarize, tpot, ttft


def finished(rid, prompt, times, arrival=0.0, before=0):
    r = Request(rid=rid, group="g", arrival_at=arrival, prompt_len=prompt, output_len=len(times) + before,
                max_new_tokens=len(times) + before, num_generated_before=before, token_times=list(times))
    r.state, r.finished_at, r.first_scheduled_at = RequestState.FINISHED, times[-1], arrival
    return r


def test_ttft_itl_tpot_for_one_request():
    r = finished("a", 100, [1.0, 1.5, 3.5], arrival=0.25)
    assert (ttft(r), list(gaps(r)), tpot(r)) == (0.75, [0.5, 2.0], 1.25)


def test_a_mid_reply_stream_has_no_ttft_and_its_first_gap_counts_from_the_start():
    r = finished("s", 100, [0.4, 0.5], arrival=0.0, before=10)
    assert ttft(r) is None and list(gaps(r)) == pytest.approx([0.4, 0.1])


def test_summary_statistics():
    assert summarize([1, 2, 3, 4]).model_dump() == {"mean": 2.5, "p50": 2.5, "p90": 3.7,
                                                    "p95": pytest.approx(3.85),
                                                    "p99": pytest.approx(3.97), "max": 4.0}
    assert summarize([]).model_dump() == dict.fromkeys(("mean", "p50", "p90", "p95", "p99", "max"))


def test_buckets_by_prompt_length():
    assert [bucket_label(n, [8192, 32768]) for n in (1, 8191, 8192, 40000)] == [
        "0-8191", "0-8191", "8192-32767", ">=32768"]
    m = all_metrics([finished("a", 100, [1.0, 2.0]), finished("b", 50000, [3.0, 3.5])], [8192, 32768])
    assert list(m.buckets) == ["0-8191", ">=32768"]
    assert m.overall.output_throughput_tok_s == 4 / 3.5
