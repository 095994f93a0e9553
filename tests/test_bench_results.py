"""bench_serving's output read back (engine_model/logs/bench_results.py), and measured beside the model."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from engine_model import InputError, load_scenario, simulate
from engine_model.logs.bench_results import compare, read_bench_results
from engine_model.metrics import gaps, ttft

DATA = Path(__file__).parent / "data" / "bench_serving"  # made by make_data.py: see SOURCE.md there
FORTY_SMALL = ["workload.groups.0.count=3", "workload.groups.1.prompt_len=9000"]


def _line(name: str) -> dict:
    return json.loads((DATA / name).read_text().splitlines()[0])


def test_every_request_of_every_run_is_read_with_its_lengths_ttft_and_gaps():
    runs = read_bench_results(DATA / "ten_oclock_rush_pd_small.jsonl")
    assert [(run.line_no, run.tag, run.backend, run.request_rate, len(run.requests)) for run in runs] == [
        (1, "early", "sglang-oai", "trace", 5), (2, "prefill_complete", "sglang-oai", "trace", 5)]
    raw = _line("ten_oclock_rush_pd_small.jsonl")
    read = [(m.input_len, m.output_len, m.ttft_s, list(m.itls_s), m.rid, m.group) for m in runs[0].requests]
    assert read == list(zip(raw["input_lens"], raw["output_lens"], raw["ttfts"], raw["itls"],
                            raw["who_waits"]["rids"], raw["who_waits"]["groups"], strict=True))


def test_measured_beside_the_model_per_bucket_and_group():
    scenario = load_scenario("forty_replies", FORTY_SMALL)
    model = simulate(scenario).requests
    [run] = read_bench_results(DATA / "forty_replies_small.jsonl")
    result = compare(run, model, scenario.metrics.bucket_edges)
    assert result.run == "this" and result.notes == ()
    assert sorted({(row.scope, row.name) for row in result.rows}) == [
        ("all", "all"), ("bucket", "0-8191"), ("bucket", "8192-32767"),
        ("group", "log"), ("group", "streams")]
    table = {(row.scope, row.name, row.metric, row.stat): row for row in result.rows}
    # mid-reply streams: no TTFT on either side; their measured gaps from the 120th token on
    streams = [m for m in run.requests if m.group == "streams"]
    measured_gaps = [g for m in streams for g in m.itls_s[119:]]
    model_gaps = [float(g) for r in model if r.group == "streams" for g in gaps(r)]
    row = table[("group", "streams", "ITL", "p99")]
    assert (row.measured_s, row.model_s, row.num_measured, row.num_model) == (
        pytest.approx(np.percentile(measured_gaps, 99)), pytest.approx(np.percentile(model_gaps, 99)),
        len(measured_gaps), len(model_gaps))
    assert row.diff_s == pytest.approx(row.measured_s - row.model_s)
    assert table[("group", "streams", "TTFT", "max")].measured_s is None
    log_ttft = table[("group", "log", "TTFT", "max")]
    assert (log_ttft.measured_s, log_ttft.model_s) == (
        next(m.ttft_s for m in run.requests if m.group == "log"),
        ttft(next(r for r in model if r.group == "log")))


def test_bench_servings_own_keys_match_by_position():
    scenario = load_scenario("forty_replies", FORTY_SMALL)
    [run] = read_bench_results(DATA / "forty_replies_plain.jsonl")
    assert run.tag is None and all(m.rid is None for m in run.requests)
    result = compare(run, simulate(scenario).requests, scenario.metrics.bucket_edges)
    assert result.run == "line 1"
    log_rows = [row for row in result.rows if row.scope == "group" and row.name == "log"]
    assert {row.num_measured for row in log_rows} == {1, 199}


def test_failed_requests_are_kept_and_counted():
    obj = _line("forty_replies_plain.jsonl")
    obj["errors"][0], obj["ttfts"][0], obj["itls"][0], obj["output_lens"][0] = "Timeout", 0.0, [], 0
    [run] = read_bench_results(json.dumps(obj) + "\n")
    assert run.num_failed == 1 and run.requests[0].ttft_s is None
    scenario = load_scenario("forty_replies", FORTY_SMALL)
    assert compare(run, simulate(scenario).requests, [8192]).notes[0].startswith("1 of 4 requests failed")


def _refused(text: str | bytes) -> str:
    with pytest.raises(InputError) as err:
        read_bench_results(text, where="results.jsonl")
    return str(err.value)


def test_bad_or_partial_files_are_refused_naming_the_line():
    whole = (DATA / "ten_oclock_rush_pd_small.jsonl").read_text()
    first, second = whole.splitlines()
    assert _refused(first + "\n" + second[:500]).startswith("results.jsonl line 2: is cut off")
    assert _refused("\n" + first[:100] + "}\n").startswith("results.jsonl line 2: is not JSON")
    assert _refused("[1, 2]\n") == ("results.jsonl line 1: is a JSON list, not an object; allowed: one JSON "
                                    "object per line, as `python -m sglang.bench_serving --output-file F "
                                    "--output-details` or the export's run_test.py writes it")
    summary = {k: v for k, v in json.loads(first).items() if k not in ("ttfts", "itls")}
    assert "--output-details" in _refused(json.dumps(summary))
    short = json.loads(first) | {"itls": json.loads(first)["itls"][:2]}
    assert _refused(json.dumps(short)).startswith("results.jsonl line 1 itls: has 2 entries but ttfts has 5")
    negative = json.loads(first)
    negative["itls"][3][7] = -1
    assert _refused(json.dumps(negative)).startswith("results.jsonl line 1 request 3 itls[7]: is '-1'")
    assert "holds no results" in _refused("\n\n")
    assert "compressed" in _refused(gzip.compress(whole.encode())) or "gzip" in _refused(gzip.compress(b"x"))
    assert "NUL" in _refused(b"{}\x00\n")


def test_a_run_from_another_scenario_is_refused():
    [run] = read_bench_results(DATA / "forty_replies_small.jsonl")
    other = load_scenario("ten_oclock_rush_pd", ["workload.groups.0.count=4", "workload.groups.1.count=1"])
    with pytest.raises(InputError, match="not among the scenario's requests"):
        compare(run, simulate(other).requests, [8192])


def as_measured(tag: str, requests) -> str:
    """A results line in the runner's format (engine_model/bench_runner.py `result_of`) for a server that
    behaved exactly as the model did: each request's first token and gaps are the model's own."""
    line = {"tag": tag, "backend": "sglang-oai", "input_lens": [r.prompt_len for r in requests],
            "output_lens": [len(r.token_times) for r in requests],
            "ttfts": [ttft(r) or 0.0 for r in requests],
            "itls": [[float(g) for g in gaps(r)] for r in requests],
            "errors": ["" for _ in requests],
            "who_waits": {"rids": [r.rid for r in requests], "groups": [r.group for r in requests],
                          "num_generated_before": [0 for _ in requests]}}
    return json.dumps(line) + "\n"


def test_a_story_page_exports_the_test_and_reads_its_results_back_beside_the_model():
    """The ten o'clock page with PD shown: the test's settings are today and PD under each policy that can
    start; an output file whose runs are named by setting reads back, each run beside the model's run of its
    own setting (a server that behaved as the model did differs by nothing, bucket by bucket); a cut file is
    refused with its line named."""
    from test_app_deployment import open_page
    from test_app_server import upload

    from app.story.measured import settings_of
    from engine_model import STORIES

    story = STORIES["ten_oclock_rush"]
    assert list(settings_of(story, story.scenario(story.defaults), story.defaults, None)) == ["today"]
    layout = {"preset": "rush", "cap": 0, "pworkers": 1, "dworkers": 1, "wtp": 0, "base": "today"}
    settings = settings_of(story, story.scenario(story.defaults), story.defaults, layout)
    assert list(settings) == ["today", "early", "prefill_complete"]
    assert settings["today"].engine.dp_size == 2  # today on PD's two GPUs, as the verdict compares
    at = open_page("ten_oclock_rush", {"pd": "1"}, opened=True)
    assert any(b.label == "Export → the test for your server (ZIP)" for b in at.get("download_button"))
    data = "".join(as_measured(tag, simulate(settings[tag]).requests) for tag in ("today", "early"))
    at = upload(at, "bench_serving or run_test.py output", "results.jsonl", data.encode())
    heads = [m.value for m in at.markdown if m.value in ("**today**", "**early**")]
    assert heads == ["**today**", "**early**"]
    frames = [df.value for df in at.dataframe if "measured − model" in df.value.columns]
    assert len(frames) == 2
    for frame in frames:
        assert set(frame["wait"]) == {"TTFT", "ITL"} and any(frame["requests"].str.startswith("bucket: "))
        assert list(frame["measured"]) == list(frame["model"])  # the same run: not a digit apart
    at = upload(at, "bench_serving or run_test.py output", "results.jsonl", data.encode()[:-40])
    assert any("line" in e.value for e in at.error), [e.value for e in at.error]
