"""Specification of a server check: the log's verdict, the metrics beside it in time, /server_info's settings
and mismatches, and `python -m engine_model diagnose [LOG] --metrics ... --server-info ... --json`."""

import json

import pytest

from engine_model import InputError
from engine_model.cli import main
from engine_model.logs import parse_log, parse_log_file
from engine_model.logs.check import check_server
from engine_model.logs.scrape import read_scrape_files, read_scrapes
from engine_model.logs.server_info import read_server_info, read_server_info_file

from conftest import DATA, LOGS, sample_scrapes

METRICS = DATA / "sglang_metrics"
LOG, PROM = METRICS / "chat_long_prompt.log", METRICS / "chat_long_prompt.prom"
INFO = METRICS / "server_info.json"
SCRAPED = sample_scrapes()  # the sample's scrapes as prometheus_client's parser reads them
ITL = "sglang:inter_token_latency_seconds"
SILENT, STALLED = 2, 3  # the intervals 14:00:10-14:00:15 (the paste's chunks run) and 14:00:15-14:00:20


def itl_in(k: int, le: str | None = None) -> float:
    """The ITL gaps recorded between the sample's scrapes k and k+1 (those up to `le` s; all by default)."""
    key = (f"{ITL}_bucket", le) if le else (f"{ITL}_count", None)
    return SCRAPED[k + 1].get(key, 0.0) - SCRAPED[k].get(key, 0.0)


def long_in(k: int) -> float:
    return itl_in(k) - itl_in(k, "0.4")  # the reader's long bound: 0.4 s


def longest_bucket_in(k: int) -> tuple[float, float]:
    """(low, high] of the bucket the interval's longest gap is in."""
    bounds = sorted((le for name, le in SCRAPED[k + 1] if name == f"{ITL}_bucket"), key=float)
    high = next(i for i, le in enumerate(bounds) if itl_in(k, le) == itl_in(k))
    return float(bounds[high - 1]), float(bounds[high])


def gauge(k: int, name: str) -> float:
    return SCRAPED[k][(f"sglang:{name}", None)]


def test_the_sample_is_built_to_show_a_silent_interval_then_long_gaps():
    """What make_data.py's run is for (its SOURCE.md): while the paste's chunks run, one scrape interval
    records no gap at all, and the next records the stalled replies' long gaps."""
    assert [k for k in range(len(SCRAPED) - 1) if itl_in(k) == 0] == [SILENT]
    assert gauge(SILENT + 1, "num_running_reqs") > 0 and long_in(STALLED) > 0
    assert [long_in(k) for k in range(len(SCRAPED) - 1) if k not in (SILENT, STALLED)] == [0] * 5


@pytest.fixture(scope="session")
def checked():
    return check_server(parse_log_file(LOG), read_scrape_files([PROM]), read_server_info_file(INFO))


def test_the_metrics_confirm_the_logs_chunked_prefill_stall_beside_its_lines(checked):
    assert (checked.verdict, checked.metrics_say) == ("chunked_prefill_stall", "confirms")
    assert checked.alignment == ""
    low, high = longest_bucket_in(STALLED)
    running = gauge(SILENT + 1, "num_running_reqs")
    assert checked.sentence.startswith(
        f"The metrics agree: from 14:00:10 to 14:00:15 no inter-token gap was recorded while {running:g} "
        f"replies were running; then {long_in(STALLED):g} gaps longer than 0.4 s were recorded by 14:00:20 "
        f"(the longest in the {low:g}–{high:g} s bucket), beside the back-to-back Prefill lines 54-71: the "
        "chunked-prefill stall."), checked.sentence
    assert "ITL p99 is only 0.132 s" in checked.sentence and "so p99 hides it" in checked.sentence


def test_a_stall_no_scrape_interval_is_silent_for_is_told_by_its_long_gaps_alone():
    """Without the 14:00:10 scrape no interval is silent: the sentence gives the long gaps, with no empty
    "then" clause."""
    parts = PROM.read_text().split("# scraped_at ")[1:]
    scrapes = read_scrapes([("cut", "".join("# scraped_at " + p for i, p in enumerate(parts) if i != 2))])
    found = check_server(parse_log_file(LOG), scrapes, read_server_info_file(INFO))
    assert found.metrics_say == "confirms"
    low, high = longest_bucket_in(STALLED)
    assert found.sentence.startswith(f"The metrics agree: {long_in(STALLED):g} gaps longer than 0.4 s were "
                                     f"recorded by 14:00:20 (the longest in the {low:g}–{high:g} s bucket), "
                                     "beside the back-to-back Prefill lines 54-71: the chunked-prefill "
                                     "stall."), found.sentence
    assert "then ," not in found.sentence


def test_each_scrape_interval_stands_beside_the_prefill_lines_of_the_same_seconds(checked):
    rows = [(r.start_s, r.end_s, r.num_full_chunks, r.lines) for r in checked.aligned]
    assert rows == [(0.0, 5.0, 0, (4, 32)), (5.0, 10.0, 3, (33, 56)), (10.0, 15.0, 9, (57, 65)),
                    (15.0, 20.0, 5, (66, 85)), (20.0, 25.0, 0, (87, 107)), (25.0, 30.0, 0, (112, 132)),
                    (30.0, 35.0, 0, (134, 135))]
    assert [r.itl is None for r in checked.aligned] == [itl_in(k) == 0 for k in range(len(SCRAPED) - 1)]


def test_server_info_gives_the_resolved_settings_and_agrees_with_the_log(checked):
    assert checked.info.version == "0.5.23" and checked.mismatches == []
    assert {k: checked.info.settings[k] for k in ("chunked_prefill_size", "max_total_tokens",
                                                  "max_running_requests", "stream_interval")} == {
        "chunked_prefill_size": 8192, "max_total_tokens": 410849, "max_running_requests": 2048,
        "stream_interval": 1}
    assert checked.understates == []


def info_with(**changes) -> str:
    doc = json.loads(INFO.read_text())
    doc.update(changes)
    return json.dumps(doc)


def test_a_setting_the_log_and_server_info_disagree_on_is_reported():
    found = check_server(parse_log_file(LOG), None, read_server_info(info_with(chunked_prefill_size=4096)))
    assert [(m.key, m.log, m.server_info) for m in found.mismatches] == [("chunked_prefill_size", 8192, 4096)]


def test_server_info_sets_what_a_log_without_server_args_does_not_say():
    parsed = parse_log_file(LOGS / "07_issue11970_prefill_chunk8192_v0.5.3.log")
    found = check_server(parsed, None, read_server_info(info_with(enable_mixed_chunk=True)))
    [finding] = found.diagnosis.findings
    assert "Mixed chunk is on" in finding.explanation and found.settings["enable_mixed_chunk"] is True
    assert "no server_args line" not in " ".join(found.diagnosis.notes)


@pytest.mark.parametrize(("changes", "says"), [
    ({"stream_interval": 4}, "stream_interval is 4: SGLang sends a streamed reply every 4 tokens"),
    ({"speculative_algorithm": "EAGLE"}, "speculative decoding (EAGLE) emits several tokens a step"),
])
def test_settings_that_spread_a_stall_over_several_tokens_are_named(changes, says):
    found = check_server(None, read_scrape_files([PROM]), read_server_info(info_with(**changes)))
    assert any(says in note for note in found.understates)


def test_speculative_decoding_in_the_logs_server_args_is_named_too():
    text = LOG.read_text().replace("'speculative_algorithm': None", "'speculative_algorithm': 'EAGLE'")
    found = check_server(parse_log(text), read_scrape_files([PROM]))
    assert found.settings["speculative_algorithm"] == "EAGLE"
    assert any("speculative decoding (EAGLE)" in note for note in found.understates)


def test_requests_not_streamed_are_named_as_hiding_a_stall():
    text = PROM.read_text().replace('is_streaming="true"', 'is_streaming="false"')
    found = check_server(None, read_scrapes([("s", text)]), read_server_info(INFO.read_text()))
    assert any("91 of 91 finished requests were not streamed" in n for n in found.understates)


def test_scrapes_a_time_zone_apart_from_the_log_are_not_aligned_and_it_says_why():
    shifted = PROM.read_text().replace("T14:", "T22:")
    found = check_server(parse_log_file(LOG), read_scrapes([("s", shifted)]))
    assert found.metrics_say == "cannot_tell" and found.aligned == []
    assert "do not overlap on the same day" in found.alignment and "time zone" in found.alignment


def test_scrapes_without_times_cannot_be_aligned_and_say_how_to_mark_them():
    untimed = "".join(line for line in PROM.read_text().splitlines(keepends=True) if "scraped_at" not in line)
    found = check_server(parse_log_file(LOG), read_scrapes([("s", untimed)]))
    assert found.metrics_say == "cannot_tell" and "put a '# scraped_at" in found.alignment
    assert len(found.metrics.intervals) == 7  # the differences are still there, in order


def test_metrics_alone_say_replies_paused_but_not_which_stall():
    assert check_server(None, read_scrape_files([PROM])).verdict == "needs_log"
    retracted = 'sglang:num_retracted_requests_total{tp_rank="0"} 3\n'
    assert check_server(None, read_scrapes([("s", retracted)])).verdict == "kv_retraction"
    # no gap recorded at all: nothing to call healthy
    assert check_server(None, read_scrapes([("s", 'sglang:num_running_reqs{tp_rank="0"} 3\n')])).verdict == (
        "unknown")


def test_server_info_that_is_not_sglangs_is_refused_naming_the_line():
    for text, says in [("{not json", "line 1: is not JSON"), ("[1, 2]", "is a JSON list"),
                       ('{"hello": 1}', "holds none of SGLang's settings"),
                       ("[" * 100_000, "nested too deep")]:
        with pytest.raises(InputError) as err:
            read_server_info(text, source="info.json")
        assert says in str(err.value) and str(err.value).startswith("info.json")


def test_a_server_info_value_no_server_holds_is_not_used():
    info = read_server_info(info_with(chunked_prefill_size=1e400, stream_interval=10**30))
    assert "chunked_prefill_size" not in info.settings and len(info.warnings) == 2


# ---- the CLI --------------------------------------------------------------------------------------


def run(capsys, *argv) -> tuple[int, dict | str, str]:
    status = main(["diagnose", *argv])
    out, err = capsys.readouterr()
    return status, (json.loads(out) if "--json" in argv and status == 0 else out), err


def test_diagnose_with_metrics_reports_the_itl_p99_from_the_histogram_and_keeps_the_verdict(capsys):
    status, doc, _ = run(capsys, str(LOG), "--metrics", str(PROM), "--json")
    assert (status, doc["verdict"]) == (0, "chunked_prefill_stall")
    assert doc["metrics"]["itl_s"]["p99"] == pytest.approx(0.0728, abs=1e-4)
    assert doc["metrics"]["itl_s"]["p99_bucket"] == [0.06, 0.08]
    assert doc["metrics_check"]["says"] == "confirms" and len(doc["metrics"]["intervals"]) == 7
    assert doc["metrics"]["intervals"][SILENT]["log"]["lines"] == [57, 65]


def test_two_scrape_files_give_what_happened_between_them(tmp_path, capsys):
    text = PROM.read_text()
    parts = text.split("# scraped_at ")[1:]
    first, second = tmp_path / "a.prom", tmp_path / "b.prom"
    first.write_text("# scraped_at " + parts[STALLED])
    second.write_text("# scraped_at " + parts[STALLED + 1])
    status, doc, _ = run(capsys, "--metrics", str(first), "--metrics", str(second), "--json")
    assert (status, doc["metrics"]["num_scrapes"]) == (0, 2)
    assert doc["metrics"]["sources"] == [str(first), str(second)]
    interval = doc["metrics"]["intervals"][0]  # 14:00:15 to 14:00:20: the stalled replies' long gaps
    assert interval["itl_s"]["count"] == doc["metrics"]["itl_s"]["count"] == itl_in(STALLED) > 0
    assert interval["itl_s"]["num_above_long_bound"] == long_in(STALLED) > 0


def test_server_info_on_the_command_line_sets_the_settings_and_reports_mismatches(tmp_path, capsys):
    info = tmp_path / "info.json"
    info.write_text(info_with(chunked_prefill_size=4096, stream_interval=2))
    status, doc, _ = run(capsys, str(LOG), "--server-info", str(info), "--json")
    assert status == 0 and doc["server_info"]["mismatches"] == [
        {"key": "chunked_prefill_size", "log": 8192, "server_info": 4096},
        {"key": "stream_interval", "log": 1, "server_info": 2}]
    status, out, _ = run(capsys, str(LOG), "--server-info", str(info))
    assert "mismatch: chunked_prefill_size is 8192 in the log, 4096 in /server_info" in out


def test_the_text_output_sets_each_interval_beside_its_log_lines(capsys):
    status, out, _ = run(capsys, str(LOG), "--metrics", str(PROM))
    assert status == 0 and "metrics check (confirms): The metrics agree" in out
    running, queued = gauge(SILENT + 1, "num_running_reqs"), gauge(SILENT + 1, "num_queue_reqs")
    assert (f"14:00:10-14:00:15  no ITL recorded, running {running:.1f}, queued {queued:.1f} | log: "
            "9 Prefill lines, 9 full" in out)
    assert "itl_s: p50 0.00965 s in (0.008, 0.01]" in out


@pytest.mark.parametrize(("argv", "says"), [
    ([], "diagnose: give a LOG, --metrics SCRAPE or --server-info FILE"),
    (["--metrics", str(LOG)], "chat_long_prompt.log line 1: is a server log, not /metrics text"),
    (["--server-info", str(PROM)], "chat_long_prompt.prom line 1: is not JSON"),
    (["--metrics", "/nonexistent.prom"], "/nonexistent.prom: is not a readable file"),
])
def test_a_bad_input_exits_2_with_one_line_naming_the_file_and_line(capsys, argv, says):
    status, out, err = run(capsys, *argv)
    assert (status, out) == (2, "") and err.count("\n") == 1 and says in err


def test_a_log_alone_gives_the_document_it_always_gave(capsys):
    status, doc, _ = run(capsys, str(LOGS / "07_issue11970_prefill_chunk8192_v0.5.3.log"), "--json")
    assert status == 0 and "metrics" not in doc and "server_info" not in doc
    assert doc["verdict"] == "prefill_queue_ramp" and doc["timeline"]["longest_chunk_run"] == 9


def test_parse_then_check_is_the_same_for_a_pasted_log(checked):
    again = check_server(parse_log(LOG.read_text()), read_scrapes([("p", PROM.read_text())]))
    assert (again.sentence, again.verdict) == (checked.sentence, checked.verdict)
