"""The "Your server" page: each bundled sample runs and says the right thing; bad input gets a message,
never a traceback."""

import gzip
import json
import random
from pathlib import Path

import pytest
from markup import cards_of, lines_of
from streamlit.testing.v1 import AppTest
from tables import markdown_table
from unfold import unfold

from app.charts import timelines
from app.charts.words import bucket_words
from app.server import charts as server_charts
from app.server import frames as sf
from app.server.input import LOG_SAMPLES, METRICS_EXAMPLE, TRACE_SAMPLES, decode_upload, sample_text
from app.server.simulate_ui import SIMULATE
from engine_model import InputError, load_scenario, simulate, summary
from engine_model.logs import build_timeline, parse_log
from engine_model.traces import load_trace

MAIN = str(Path(__file__).resolve().parents[1] / "app" / "main.py")
DATA = Path(__file__).resolve().parent / "data"
PAGE = "app_pages/your_server.py"
SAMPLES = Path(__file__).resolve().parents[1] / "app" / "samples"


def open_page(replay: bool = True, **params) -> AppTest:
    """The page as a link with `params` opens it; `replay`: with the log's replay open (a click on its
    fold)."""
    at = AppTest.from_file(MAIN, default_timeout=120)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    at.switch_page(PAGE)
    if replay:
        at.session_state[SIMULATE] = True
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def texts(elements) -> str:
    return "\n".join(str(e.value) for e in elements)


def verdict(at: AppTest) -> str:
    """The verdict heading, without its coloured icon."""
    line = next(m.value for m in at.markdown if "Verdict:" in m.value)
    return line[line.index("Verdict:"):]


def upload(at: AppTest, label_start: str, name: str, data: bytes, mime: str = "text/plain") -> AppTest:
    uploader = next(u for u in at.file_uploader if u.label.startswith(label_start))
    uploader.set_value((name, data, mime))
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


# -- the bundled samples -----------------------------------------------------------------------------
@pytest.mark.parametrize("sample", list(LOG_SAMPLES))
def test_each_log_sample_runs_and_shows_settings_timeline_diagnosis_and_a_simulation(sample):
    at = open_page(log=sample)
    assert not at.error, texts(at.error)
    headings = texts(at.markdown)
    for part in ("What did your server actually resolve?", "The log's timeline", "Diagnosis",
                 "Simulate this server", "Your log beside the model"):
        assert part in headings
    assert [m.label for m in cards_of(at)] == ["p95 first token (TTFT)", "p99 gap between tokens",
                                            "Longest pause, any reply", "Requests retracted"]
    assert at.query_params.get("log") in (None, sample, [sample])


def test_the_replay_runs_when_its_fold_is_opened_or_a_link_sets_one_of_its_controls():
    """A first view shows the log's verdict and evidence; the replay (a run of the model) waits in its fold
    until it is opened, and a shared link that picked a replay setting opens it."""
    at = open_page(replay=False, log="chunk")
    assert "Simulate this server" in texts(at.markdown) and not cards_of(at)
    assert "Your log beside the model" not in texts(at.markdown)
    [fold] = [e for e in at.expander if e.label.startswith("Replay the log in the model")]
    at.session_state[SIMULATE] = True  # what a click on the fold does (app.ui.fold)
    at.run()
    assert "Your log beside the model" in texts(at.markdown) and len(cards_of(at)) == 4
    linked = open_page(replay=False, log="chunk", rmax="500")
    assert "Your log beside the model (the log's own settings)" in texts(linked.markdown)


def test_a_logs_values_read_as_written_in_the_settings_table():
    """The settings table is one Markdown element; a value from a person's log (an image, a link, HTML,
    emphasis, a pipe, a trailing backslash) is escaped, so it shows as the characters it is."""
    import re

    import pandas as pd

    from app.present.fmt import markdown_table as table_of

    values = ["![x](http://example.com/i.png)", "<img src=x onerror=alert(1)>", "*bold* _it_ `code`",
              "a|b", "trailing\\", "[link](javascript:alert(1))", "8,192"]
    frame = pd.DataFrame({"setting": [f"--s{i}" for i in range(len(values))], "value": values,
                          "from": "server_args line"}).set_index("setting")
    text = table_of(frame, literal=("value",))
    cells = [re.split(r"(?<!\\)\|", line)[2] for line in text.splitlines()[2:]]
    assert all(re.search(r"(?<!\\)[!\[\]()<>*_`]", cell) is None for cell in cells), cells
    at = AppTest.from_string(f"import streamlit as st\nst.markdown({text!r})").run()
    assert list(markdown_table(at, "setting")["value"]) == values


def test_the_retraction_sample_shows_the_kv_verdict_with_its_evidence_lines_and_fixes():
    at = unfold(open_page(log="retraction"))  # the line counts and the first lines not read are a fold
    assert not at.error, texts(at.error)
    assert verdict(at) == "Verdict: it is the KV stall"
    settings = markdown_table(at, "setting")["value"]
    assert settings["--chunked-prefill-size"] == "8,192"
    assert settings["--enable-mixed-chunk"] == "off"
    assert settings["--max-total-tokens (the KV pool, in tokens)"] == "20,480"
    assert settings["--max-running-requests"] == "200"
    evidence = lines_of(at)  # numbers right-aligned: 65 under 110
    assert " 65 | [2025-04-30 23:19:42 TP0] Decode out of memory happened. #retracted_reqs: 23" in evidence
    assert "--max-total-tokens (raise or drop)" in texts(at.markdown)
    counts = at.dataframe[0].value.set_index("lines")["count"]
    assert counts["unrecognised lines (startup, HTTP, other programs)"] == 42  # counted, and quoted below
    assert "[2025-04-30" in evidence


def test_the_chunk_sample_shows_a_queue_ramp_and_its_replay_runs_the_logs_passes():
    """Issue 11970's lines admit eight ~1,000-token prompts a pass from a queue of 114: a queue ramp, not a
    long prompt; its replay prefills as many passes back to back as the log shows (it ran 4 at first)."""
    at = open_page(log="chunk")
    assert verdict(at) == "Verdict: it is a queue ramp under prefill-first admission"
    assert "`--enable-mixed-chunk`" in texts(at.markdown)
    assert "`--chunked-prefill-size (smaller)`" not in texts(at.markdown)
    row = at.table[0].value.loc["back-to-back prefill passes while replies ran"]
    assert row["your log"] == "8 Prefill lines (9 in the run)" and row["the model"].startswith("8 passes, ")
    assert "ends with 53 requests still queued" in texts(at.caption)
    settings = markdown_table(at, "setting")
    assert settings.loc["--chunked-prefill-size", "value"] == "8,192"
    assert settings.loc["--chunked-prefill-size", "from"].startswith("inferred")
    assert "1 | [2025-10-22 20:23:08] Prefill batch. #new-seq: 9, #new-token: 8192" in lines_of(at)


@pytest.mark.parametrize(("sample", "headline"), [
    ("azure", "Almost every request is short: none of the 1,500 prompts reaches 8,192 tokens"),
    ("mooncake", "53 % of requests carry 89 % of the prompt tokens (prompts of 8,192 tokens or more)"),
])
def test_each_trace_sample_shows_the_request_mix_first_then_latency_by_prompt_length(sample, headline):
    at = open_page(view="trace", trace=sample)
    assert not at.error, texts(at.error)
    assert headline in texts(at.info)
    labels = [m.label for m in cards_of(at)]
    assert labels.index("Requests") < labels.index("p95 first token (TTFT)")  # the mix comes first
    buckets = at.dataframe[0].value
    assert list(buckets.columns[:3]) == ["prompt length (tokens)", "requests", "retracted"]
    assert {"TTFT p50", "TTFT p95", "TTFT p99", "ITL p50", "ITL p95", "ITL p99"} <= set(buckets.columns)
    expected = ["under 8,192"] if sample == "azure" else ["under 8,192", "8,192 to 32,767", "32,768 or more"]
    assert list(buckets["prompt length (tokens)"]) == expected
    assert buckets["requests"].sum() == (1500 if sample == "azure" else 300)


def test_trace_options_change_what_runs_and_live_in_the_link():
    at = open_page(view="trace", trace="mooncake", long="4096", maxreq="100", mixed="1")
    assert "of the prompt tokens (prompts of 4,096 tokens or more)" in texts(at.info)
    buckets = at.dataframe[0].value
    assert list(buckets["prompt length (tokens)"]) == ["under 4,096", "4,096 to 16,383", "16,384 or more"]
    assert buckets["requests"].sum() == 100
    assert "mixed chunk **on**" in texts(at.caption)
    assert at.query_params["maxreq"] in ("100", ["100"]) and at.query_params["view"] in ("trace", ["trace"])


# -- bad input ---------------------------------------------------------------------------------------
BINARY = (bytes([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D])
          + bytes(range(256)) * 4)


@pytest.mark.parametrize(("data", "says"), [
    (b"[2025-10-22 20:23:08] Prefill batch. #new-seq: 1\n" + bytes(range(256)) * 4, "line 2"),
    (BINARY, "line 3"),  # a PNG: its header holds two newlines before the first NUL
    (bytes(random.Random(1).randrange(128, 256) for _ in range(4000)), "not UTF-8 text"),
    (gzip.compress(b"[2025-10-22 20:23:08] Prefill batch.", mtime=0), "compressed"),
], ids=["binary-after-line-1", "png", "latin-bytes", "gzip"])
def test_a_binary_log_upload_gets_a_message_naming_the_line_not_a_traceback(data, says):
    at = open_page(log="upload")
    upload(at, "Server log file", "server.log", data)
    message = texts(at.error)
    assert "cannot be read" in message and says in message


def test_a_file_from_another_program_uploaded_as_a_log_says_so_and_quotes_line_one():
    at = open_page(log="upload")
    upload(at, "Server log file", "trace.csv", (SAMPLES / TRACE_SAMPLES["azure"].file).read_bytes())
    message = texts(at.error)
    assert "No SGLang scheduler line" in message and "TIMESTAMP,ContextTokens,GeneratedTokens" in message
    assert "Diagnosis" not in texts(at.markdown)


def test_a_truncated_log_is_read_and_the_cut_line_is_named():
    text = sample_text(LOG_SAMPLES["chunk"])
    cut = text[: text.rindex("#running-req") + len("#running-req: ")].rstrip() + "sixty"
    at = open_page(log="paste")
    at.text_area(key="your_server.paste").input(cut)
    at.run()
    assert not at.exception
    assert "line 9" in texts(at.warning)
    assert verdict(at) == "Verdict: it is a queue ramp under prefill-first admission"


@pytest.mark.parametrize(("data", "says"), [
    (b"time,prompt,reply\n1,100,20\n2,200,30\n", "found columns"),
    (BINARY, "binary"),
    (b"TIMESTAMP,ContextTokens,GeneratedTokens\n", "nothing usable"),
], ids=["wrong-columns", "png", "header-only"])
def test_a_broken_trace_upload_gets_a_message_not_a_traceback(data, says):
    at = open_page(view="trace", trace="upload")
    upload(at, "Trace file", "trace.csv", data, "text/csv")
    message = texts(at.error)
    assert "cannot be read" in message and says in message
    assert "Run it through the scheduler" not in texts(at.markdown)


def test_bad_url_values_become_notes():
    at = open_page(log="banana", long="7")
    notes = texts(at.warning)
    assert "log=banana" in notes and "long=7" in notes
    assert verdict(at) == "Verdict: it is the KV stall"  # fell back to the default sample


def test_decode_upload_refuses_files_over_the_limit_before_reading_them():
    with pytest.raises(InputError, match="the limit here is 1 MB"):
        decode_upload(b"x" * 1_000_001, "big.log", 1)
    # one bad byte: text
    text, notes = decode_upload("ok\nbad \udcff".encode("utf-8", "surrogateescape"), "a.log", 1)
    assert text.startswith("ok\n") and notes == ["line 2: bytes that are not UTF-8 were replaced by �"]


# -- every chart builder validates against the Vega-Lite schema --------------------------------------
@pytest.mark.parametrize("sample", list(LOG_SAMPLES))
def test_every_log_chart_builds_a_valid_spec(sample):
    parsed = parse_log(sample_text(LOG_SAMPLES[sample]))
    timeline = build_timeline(parsed)
    retractions = sf.log_retractions(timeline)
    passes = sf.log_passes(timeline, is_mixed=False)
    assert set(passes["lane"]) <= {sf.PREFILL_LANE, sf.DECODE_LANE}
    assert (passes["end_at"] > passes["start_at"]).all()
    for chart in (server_charts.prefill_tokens(sf.log_prefills(timeline, False), retractions,
                                               timeline.chunk_size, 50),
                  timelines.pass_timeline(passes, end_at=50),
                  timelines.kv_occupancy(sf.log_kv(timeline, 20480), retractions),
                  server_charts.token_usage(sf.log_kv(timeline, None), retractions),
                  timelines.queue_depth(sf.log_queue(timeline))):
        chart.to_dict()


def test_a_log_without_timestamps_says_line_order_on_every_axis_and_tooltip_not_seconds():
    timeline = build_timeline(parse_log(PASTES["no-stamp"]))
    assert not timeline.timed
    retractions = sf.log_retractions(timeline)
    for build in (lambda: server_charts.prefill_tokens(sf.log_prefills(timeline, False), retractions, None),
                  lambda: timelines.pass_timeline(sf.log_passes(timeline, is_mixed=False)),
                  lambda: timelines.kv_occupancy(sf.log_kv(timeline, 20480), retractions),
                  lambda: server_charts.token_usage(sf.log_kv(timeline, None), retractions),
                  lambda: timelines.queue_depth(sf.log_queue(timeline))):
        timed = json.dumps(build().to_dict())
        assert "(s)" in timed  # a timed log's charts say seconds ...
        untimed = json.dumps(server_charts.in_line_order(build()).to_dict())
        assert "(s)" not in untimed and server_charts.LINE_ORDER in untimed  # ... this one the order


def test_mix_and_bucket_charts_build_valid_specs():
    trace = load_trace((SAMPLES / TRACE_SAMPLES["mooncake"].file).read_text())
    mix = sf.prompt_mix(trace)
    assert mix.groupby("series")["share"].sum().round(6).to_dict() == {"share of prompt tokens": 1.0,
                                                                        "share of requests": 1.0}
    server_charts.prompt_mix(mix, 8192).to_dict()
    server_charts.output_mix(sf.output_mix(trace)).to_dict()
    run = summary(simulate(load_scenario("real_traffic", ["workload.trace.max_requests=30"])))
    frame = sf.bucket_latency(run)
    assert list(frame["bucket"].unique()) == [bucket_words(b) for b in run.metrics.buckets]  # in words
    first = frame[(frame["bucket"] == frame["bucket"].iloc[0]) & (frame["stat"] == "p95")]
    block = next(iter(run.metrics.buckets.values()))
    assert set(first["seconds"].dropna()) <= {block.value(m, "p95") for m in ("ttft_s", "itl_s", "max_itl_s")}
    server_charts.bucket_latency(frame).to_dict()


def test_the_bundled_samples_stay_small_and_keep_their_licences():
    files = {p.name: p.stat().st_size for p in SAMPLES.iterdir()}
    assert sum(files.values()) < 400_000  # the example's eight scrapes are 167 KB of it
    for licence in ("LICENSE.SGLang-Apache-2.0.txt", "LICENSE.AzurePublicDataset-CC-BY-4.0.txt",
                    "LICENSE.Mooncake-Apache-2.0.txt", "SOURCE.md"):
        assert licence in files
    source = (SAMPLES / "SOURCE.md").read_text()
    for sample in (*LOG_SAMPLES.values(), *TRACE_SAMPLES.values()):
        assert sample.file in files and sample.file in source
    for name in METRICS_EXAMPLE:
        assert name in files and name in source
        assert (SAMPLES / name).read_bytes() == (DATA / "sglang_metrics" / name).read_bytes()


# -- nothing dropped silently, before -> after, PD on the person's trace ----------------------------------
def jsonl_trace(num: int, long_at: int | None = None) -> bytes:
    """`num` requests a tenth of a second apart, in time order; one 100,000-token document at `long_at`."""
    rows = [{"arrival_at": 0.1 * i, "prompt_len": 100_000 if i == long_at else 600, "output_len": 50}
            for i in range(num)]
    return "".join(f'{{"arrival_at": {r["arrival_at"]:.1f}, "prompt_len": {r["prompt_len"]}, '
                   f'"output_len": {r["output_len"]}}}\n' for r in rows).encode()


def test_an_upload_past_the_cap_says_how_many_rows_it_kept_and_dropped_and_the_cap_can_be_raised():
    data = jsonl_trace(1855, long_at=1700)  # the long document sits past the default cap of 1,500
    at = upload(open_page(view="trace", trace="upload"), "Trace file", "t.jsonl", data)
    said = texts(at.warning)
    assert ("Kept 1,500 of the trace's 1,855 rows: 355 past the cap of 1,500 requests (counted, not read)"
            in said) and "Raise **At most (requests)** (up to 1,000,000" in said
    assert "none of the 1,500 prompts reaches 8,192 tokens" in texts(at.info)  # the document was dropped
    at = upload(open_page(view="trace", trace="upload", maxreq="3000"), "Trace file", "t.jsonl", data)
    assert "Kept 1,855 of the trace's 1,855 rows: every row." in texts(at.caption)
    assert "past the cap" not in texts(at.warning)
    assert "1 of 1,855 requests" not in texts(at.info) and "the longest prompt has 100,000 tokens" in texts(
        at.info)


def test_the_cap_reaches_the_engines_hard_cap_and_a_window_says_what_it_left_out():
    from app.server.controls import MAX_REQUESTS
    from engine_model import MAX_REQUESTS as HARD_CAP

    assert MAX_REQUESTS.options[-1] == HARD_CAP
    at = upload(open_page(view="trace", trace="upload", wlen="30"), "Trace file", "t.jsonl", jsonl_trace(400))
    said = "Kept 300 of the trace's 400 rows: 1 outside the window; 99 after the window (counted, not read)."
    assert said in texts(at.caption)  # the row at 30 s was read, so reading stopped there


def test_the_trace_run_reads_before_and_after_like_the_stories():
    at = open_page(view="trace", trace="mooncake", maxreq="100", mixed="1")
    cards = {m.label: m.value for m in cards_of(at)}
    assert "→" in cards["Longest pause, any reply"]  # SGLang's defaults -> mixed chunk on
    assert "SGLang's defaults → your switches" in texts(at.caption)
    at = open_page(view="trace", trace="mooncake", maxreq="100")
    assert "→" not in {m.label: m.value for m in cards_of(at)}["Longest pause, any reply"]


def test_pd_on_an_uploaded_trace_shows_every_deployment_with_its_gpus_and_the_checklist():
    from app.present.checklist import MARKS

    at = open_page(view="trace", trace="upload", pd="1", dworkers="2", long="4096")
    at = upload(at, "Trace file", "t.jsonl", jsonl_trace(120, long_at=10))
    table = next(df.value for df in at.dataframe if "deployment" in df.value.columns)
    assert list(dict.fromkeys(table["deployment"])) == ["3 copies of your engine, round robin", "PD, early",
                                                        "PD, prefill_complete"]
    assert set(table["GPUs"]) == {3}
    verdict = next(m.value for m in at.markdown if m.value.startswith("**On 3 × H100 SXM 80GB: PD ("))
    assert "Your engine runs on 1 GPU; PD needs 3, so today is shown as 3 copies of it" in verdict
    checks = next(t.value for t in at.table if t.value.index.name == "check")
    assert len(checks) == 12 and set(checks["reads"]) <= set(MARKS.values())
    assert checks["reads"].iloc[-1] != "? unknown"  # (e): PD against today, both ran
    assert "? unknown" not in set(checks["reads"][:3])  # the mix, the waits and the headroom all ran
    assert checks["behind it"].iloc[0].startswith("1 of 120 requests (0.8 %) carry 58 % of the prompt tokens")
    off = upload(open_page(view="trace", trace="upload", long="4096"), "Trace file", "t.jsonl",
                 jsonl_trace(120, long_at=10))
    reads = list(next(t.value for t in off.table if t.value.index.name == "check")["reads"])
    assert reads[1:3] == ["? unknown"] * 2  # without the runs, (b) and (c) cannot be known


@pytest.mark.parametrize("pd", ["1", "0"])
def test_pd_workers_that_cannot_hold_the_model_are_refused_with_the_one_message(pd):
    """Llama-3.1-405B at fp8 runs the trace at TP 8; on 1-GPU PD workers it cannot: the same message and fix
    as every entry point (engine_model.deployment), with the split on or off, never a traceback."""
    at = open_page(view="trace", trace="upload", model="llama-3.1-405b", tp="8", wdtype="fp8", wtp="1", pd=pd)
    at = upload(at, "Trace file", "t.jsonl", jsonl_trace(40))
    said = texts(at.warning) + texts(at.error)
    assert "`pd.prefill`: Llama-3.1-405B's fp8 weights (378 GiB) are 378.0 GiB per GPU at TP 1" in said
    assert "Fix: " in said and "Traceback" not in said


def test_a_log_replay_past_its_cap_says_how_many_requests_it_kept_and_the_cap_can_be_raised():
    from engine_model import num_observed

    seen = num_observed(parse_log(sample_text(LOG_SAMPLES["retraction"])))
    at = open_page(log="retraction", rmax="500")
    assert (f"The replay keeps the first 500 of the {seen:,} requests the log's Prefill lines introduce: "
            f"{seen - 500:,} past the cap of 500 are dropped.") in texts(at.warning)
    at = open_page(log="retraction")
    assert f"The replay keeps all {seen:,} requests the log's Prefill lines introduce." in texts(at.caption)
    assert "past the cap" not in texts(at.warning)


def test_a_logs_checklist_reads_its_own_requests_and_server_args():
    at = open_page(log="retraction")
    table = next(t.value for t in at.table if t.value.index.name == "check")
    reads = dict(zip(table.index, table["reads"], strict=True))
    behind = dict(zip(table.index, table["behind it"], strict=True))
    backend = "(d2) Transfer backend Mooncake (its TCP mode included)"
    assert reads[backend] == "✓ pass" and "mooncake (from the log)" in behind[backend]
    assert [reads[q] for q in list(reads)[1:3]] == ["? unknown"] * 2
    assert reads["(d8) Both roles on the same policy"] == "? unknown"  # not a PD server: no role
    assert behind["(a) Long prompts carry much of the work"].startswith("0 of 1,108 requests")


PASTES = {  # a paste in each shape the page must take, and the verdict the engine gives it
    "container": "\n".join(
        f"sglang-1  | [2025-03-11 09:12:0{i}] [2025-03-11 09:12:0{i} TP0] Decode batch. #running-req: 12, "
        f"#token: {9000 + 480 * i}, token usage: 0.12, gen throughput (token/s): 640.50, #queue-req: 0"
        for i in range(3)),
    "time-only-crlf": "\r\n".join([
        "[04:40:55 TP0] Decode batch. #running-req: 40, #token: 90000, token usage: 0.95, "
        "gen throughput (token/s): 900.00, #queue-req: 3",
        "[04:40:56 TP0] Decode out of memory. Try to lower your batch size.",
        "[04:40:56 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        "RuntimeError: Decode out of memory. Try to lower your batch size."]),
    "no-stamp": "\n".join(
        f"[TP0] Decode batch. #running-req: 2, #token: {900 + 80 * i}, token usage: 0.01, "
        f"gen throughput (token/s): 80.00, #queue-req: {40 * (i + 1)}" for i in range(3)),
}


@pytest.mark.parametrize("shape", list(PASTES))
def test_a_paste_in_any_format_gets_the_engines_verdict_and_its_words(shape):
    from app.server.log_ui import VERDICTS
    from engine_model.logs import diagnose

    expected = diagnose(parse_log(PASTES[shape])).verdict
    at = open_page(replay=False, log="paste")
    at.text_area(key="your_server.paste").input(PASTES[shape])
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    wanted = {"container": "healthy", "time-only-crlf": "crash_oom", "no-stamp": "outside_model"}
    assert expected == wanted[shape]
    assert verdict(at) == f"Verdict: it is {VERDICTS[expected][2]}"
    if shape == "no-stamp":
        assert "no timestamps" in texts(at.warning)
