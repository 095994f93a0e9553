"""Specification of the /metrics reader: SGLang's families read from Prometheus text, percentiles interpolated
inside buckets, what happened between scrapes, and a clear answer for every broken scrape."""

import math
import random

import pytest
from prometheus_client import CollectorRegistry, Histogram, generate_latest

from engine_model import InputError
from engine_model.logs.histogram import Histogram as Hist
from engine_model.logs.histogram import added, minus, quantile
from engine_model.logs.scrape import read_scrape_files, read_scrapes
from engine_model.logs.scrape_report import report

from conftest import DATA, sample_scrapes

METRICS = DATA / "sglang_metrics"
ITL_BUCKETS = (0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040, 0.060, 0.080,
               0.100, 0.200, 0.400, 0.600, 0.800, 1.0, 2.0, 4.0, 6.0, 8.0)  # SGLang 0.5.23's ITL buckets
LABELS = 'engine_type="unified",model_name="m"'


def itl_scrape(values: list[float], marker: str = "") -> str:
    """Values observed in SGLang's ITL histogram, exposed by prometheus_client itself."""
    registry = CollectorRegistry()
    hist = Histogram("sglang:inter_token_latency_seconds", "test", ["model_name", "engine_type"],
                     buckets=ITL_BUCKETS, registry=registry)
    for value in values:
        hist.labels(model_name="m", engine_type="unified").observe(value)
    return (f"# scraped_at {marker}\n" if marker else "") + generate_latest(registry).decode()


def lines(*bucket_counts: tuple[str, float], count: float | None = None) -> str:
    body = "".join(f'sglang:inter_token_latency_seconds_bucket{{{LABELS},le="{le}"}} {n}\n'
                   for le, n in bucket_counts)
    total = f"sglang:inter_token_latency_seconds_count{{{LABELS}}} {count}\n" if count is not None else ""
    return body + total


# ---- percentiles from buckets ----------------------------------------------------------------------


def test_a_percentile_is_interpolated_inside_its_bucket_as_prometheus_does():
    hist = Hist((0.1, 0.2, 0.4), (10, 30, 40, 40), 9.0)
    p50, p99 = quantile(hist, 0.5), quantile(hist, 0.99)
    assert (p50.lower, p50.upper) == (0.1, 0.2) and p50.value == pytest.approx(0.15)  # rank 20: 10 of 20 in
    assert (p99.lower, p99.upper) == (0.2, 0.4) and p99.value == pytest.approx(0.392)
    assert hist.mean == pytest.approx(0.225) and hist.top_bucket() == (0.2, 0.4)


def test_a_percentile_above_the_last_bound_is_that_bound_and_says_so():
    q = quantile(Hist((0.1, 0.2, 0.4), (10, 10, 10, 20), None), 0.99)
    assert (q.value, q.lower, q.is_above_last) == (0.4, 0.4, True)
    assert quantile(Hist((0.1,), (0, 0), None), 0.5) is None


def test_percentiles_of_real_observations_lie_in_the_bucket_they_name():
    rng = random.Random(3)
    values = [rng.lognormvariate(math.log(0.02), 0.6) for _ in range(5000)] + [4.5] * 30
    [scrape] = read_scrapes([("itl", itl_scrape(values))]).scrapes
    [hist] = scrape.histograms["inter_token_latency_seconds"].values()
    assert hist.count == 5030 and hist.total == pytest.approx(sum(values))
    exact = sorted(values)
    for q in (0.5, 0.9, 0.99, 0.999):
        found = quantile(hist, q)
        true = exact[math.ceil(q * len(exact)) - 1]
        assert found.lower <= true <= found.upper


def test_the_difference_of_two_scrapes_is_what_happened_between_them_and_a_drop_is_a_reset():
    earlier, later = Hist((1.0,), (4, 5), 3.0), Hist((1.0,), (10, 12), 9.0)
    assert minus(later, earlier) == (Hist((1.0,), (6, 7), 6.0), False)
    restarted = Hist((1.0,), (2, 2), 1.0)
    assert minus(restarted, later) == (restarted, True)
    other = Hist((2.0,), (1, 1), 1.0)
    assert added([later, earlier, other]) == Hist((1.0,), (14, 17), 12.0)  # other bounds: left out


# ---- the real shape: the test data's eight scrapes ---------------------------------------------------


@pytest.fixture(scope="session")
def recorded():
    return read_scrape_files([METRICS / "chat_long_prompt.prom"])


def test_the_test_scrapes_are_read_whole_with_their_times(recorded):
    assert (len(recorded.scrapes), recorded.num_malformed, recorded.left_out) == (8, 0, [])
    assert recorded.warnings == []
    assert [s.at_source for s in recorded.scrapes] == ["marker"] * 8
    assert [s.at - recorded.scrapes[0].at for s in recorded.scrapes] == [0, 5, 10, 15, 20, 25, 30, 35]
    last = recorded.scrapes[-1]
    assert sorted(last.histograms) == ["e2e_request_latency_seconds", "inter_token_latency_seconds",
                                       "queue_time_seconds", "request_time_per_output_token_seconds",
                                       "time_to_first_token_seconds"]
    [(labels, itl)] = last.histograms["inter_token_latency_seconds"].items()
    assert dict(labels) == {"engine_type": "unified", "model_name": "meta-llama/Llama-3.1-8B-Instruct"}
    assert itl.bounds == ITL_BUCKETS


def test_intervals_show_the_stall_as_silence_then_long_gaps(recorded):
    found = report(recorded)
    itl = [(i.tails["itl_s"].num_long if "itl_s" in i.tails else None) for i in found.intervals]
    # no gap recorded while the prompt's chunks ran (14:00:10-14:00:15), then the stalled replies' long gaps
    assert len(itl) == 7 and itl[2] is None and itl[3] > 0 and itl[:2] + itl[4:] == [0] * 5
    scraped, name = sample_scrapes(), "sglang:inter_token_latency_seconds"  # prometheus_client's parser
    assert itl[3] == (scraped[4][(f"{name}_count", None)] - scraped[4][(f"{name}_bucket", "0.4")]) - (
        scraped[3][(f"{name}_count", None)] - scraped[3][(f"{name}_bucket", "0.4")])
    assert found.intervals[2].gauges["num_running_reqs"] == scraped[3][("sglang:num_running_reqs", None)] > 0
    assert found.tails["itl_s"].count == sum(i.tails["itl_s"].count for i in found.intervals
                                             if "itl_s" in i.tails)
    assert found.tails["itl_s"].top == (6.0, 8.0)
    assert found.counters["num_requests"] == 91 and found.window.startswith("between the first and the last")


def test_one_scrape_is_everything_since_the_server_started(recorded):
    text = (METRICS / "chat_long_prompt.prom").read_text()
    last = text[text.rindex("# scraped_at"):]
    found = report(read_scrapes([("last", last)]))
    assert found.window == "since the server started (one scrape)" and found.intervals == []
    assert "inter_token_latency_seconds" not in recorded.scrapes[0].histograms  # before the first token
    assert found.tails["itl_s"].count == report(recorded).tails["itl_s"].count


def test_scrapes_pasted_without_markers_are_split_where_a_series_repeats_and_carry_no_time():
    found = read_scrapes([("two", itl_scrape([0.01] * 5) + itl_scrape([0.01] * 9))])
    assert [(s.at, s.at_source) for s in found.scrapes] == [(None, "none"), (None, "none")]
    assert report(found).intervals[0].tails["itl_s"].count == 4


def test_sample_timestamps_give_a_scrape_its_time():
    found = read_scrapes([("federate", 'sglang:num_running_reqs{tp_rank="0"} 7 1772460000000\n')])
    assert (found.scrapes[0].at, found.scrapes[0].at_source) == (1772460000.0, "sample timestamps")


def test_a_counter_that_went_down_is_a_reset_and_counts_what_accrued_since():
    scrape = "# scraped_at {}\nsglang:num_requests_total{{is_streaming=\"true\"}} {}\n"
    found = report(read_scrapes([("s", scrape.format("2026-03-02T14:00:00Z", 50) + scrape.format(
        "2026-03-02T14:00:05Z", 60) + scrape.format("2026-03-02T14:00:10Z", 3))]))
    assert [i.counters["num_requests"] for i in found.intervals] == [10, 3]
    assert [i.reset for i in found.intervals] == [False, True] and "(a restart?)" in found.notes[0]


def test_other_families_and_programs_are_skipped_and_counted():
    text = itl_scrape([0.01]) + 'sglang:per_stage_req_latency_seconds_bucket{le="1"} 3\nvllm:num_requests 2\n'
    found = read_scrapes([("mixed", text)])
    assert (found.num_other, found.num_malformed) == (3, 0)  # with the histogram's own _created line


def test_rank_zero_and_the_priority_total_are_the_gauges_read():
    text = ('sglang:num_queue_reqs{tp_rank="0",dp_rank="0",priority=""} 5\n'
            'sglang:num_queue_reqs{tp_rank="0",dp_rank="0",priority="1"} 2\n'
            'sglang:num_queue_reqs{tp_rank="1",dp_rank="0",priority=""} 5\n'
            'sglang:num_queue_reqs{tp_rank="0",dp_rank="1",priority=""} 4\n')
    found = report(read_scrapes([("dp", text)]))
    assert found.gauges["num_queue_reqs"] == [(None, 9.0)]  # both DP ranks' totals, TP rank 0 only
    assert any("2 DP ranks" in note for note in found.notes)


# ---- broken scrapes: a clear message or a partial result with counts ---------------------------------


@pytest.mark.parametrize(("text", "says"), [
    (lines(("0.1", 3), ("0.2", 5)), "has no +Inf bucket"),
    (lines(("0.1", 3), ("0.2", 2), ("+Inf", 4)), "decrease (le=0.2: 2 after 3)"),
    (lines(("0.1", "NaN"), ("+Inf", 4)), "negative, NaN or infinite"),
    (lines(("x", 1), ("+Inf", 4)), "le='x' is not a number"),
    ('sglang:num_running_reqs{tp_rank="0"} NaN\n', "is nan: not used"),
    ('sglang:num_requests_total{a="1"} -4\n', "is -4.0: not used"),
])
def test_a_broken_series_is_left_out_with_why(text, says):
    found = read_scrapes([("bad", text + 'sglang:token_usage{tp_rank="0"} 0.5\n')])
    assert len(found.left_out) == 1 and says in found.left_out[0]
    assert report(found).gauges["token_usage"] == [(None, 0.5)]  # the rest is still read


def test_a_count_that_disagrees_with_the_inf_bucket_is_a_warning():
    found = read_scrapes([("c", lines(("0.1", 3), ("+Inf", 4), count=5))])
    assert "differs from the +Inf bucket" in found.warnings[0]


def test_broken_lines_among_good_ones_are_counted_with_their_line_numbers():
    text = itl_scrape([0.01] * 3) + 'sglang:num_running_reqs{tp_rank="0" 4\nsglang:token_usage{a="1"} abc\n'
    found = read_scrapes([("scrape.prom", text)])
    assert found.num_malformed == 2 and found.scrapes[0].histograms["inter_token_latency_seconds"]
    first_bad = text.count("\n", 0, text.index("sglang:num_running_reqs")) + 1
    assert found.malformed_examples[0][0] == f"scrape.prom line {first_bad}"


def test_a_marker_without_a_time_is_malformed_and_says_how_to_write_one():
    found = read_scrapes([("m", "# scraped_at yesterday\n" + itl_scrape([0.01]))])
    assert found.num_malformed == 1
    assert "'# scraped_at 2025-10-22T20:23:10Z'" in found.malformed_examples[0][1]


@pytest.mark.parametrize(("text", "says"), [
    ("", "no SGLang metric sample"),
    ("[2026-03-02 14:00:12] Prefill batch, #new-seq: 1, #new-token: 8192\n", "is a server log"),
    ('{"model_path": "m"}\n', "is JSON, not /metrics text"),
    ("<html><body>Not Found</body></html>\n", "is not Prometheus text"),
    ("vllm:num_requests_running 3\nvllm:gpu_cache_usage_perc 0.5\n", "none of SGLang's (first: vllm:"),
    ("metrics\x00\x01binary", "NUL bytes"),
])
def test_text_that_is_no_sglang_scrape_is_refused_naming_the_line(text, says):
    with pytest.raises(InputError, match="^s line 1|^s: ") as err:
        read_scrapes([("s", text)])
    assert says in str(err.value) and "\n" not in str(err.value)


def test_a_scrape_over_the_size_limit_is_refused_before_it_is_parsed():
    with pytest.raises(InputError, match="the limit is 1,000"):
        read_scrapes([("big", itl_scrape([0.01] * 3) * 10)], max_bytes=1000)


def test_samples_beyond_the_limit_are_not_read_and_it_says_so():
    text = "".join(itl_scrape([0.01], f"2026-03-02T14:00:{i:02d}Z") for i in range(10))
    found = read_scrapes([("many", text)], max_samples=100)
    assert len(found.scrapes) == 4  # 26 samples each: 24 buckets, _count, _sum; the 4th cut after 22
    assert found.warnings == ["only the first 100 samples were read (4 scrapes, the last cut short); the "
                              "rest of the file was not"]
    assert len(found.left_out) == 1 and "has no +Inf bucket" in found.left_out[0]  # the cut histogram
