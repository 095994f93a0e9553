"""UI pieces of the "Your server" page. `*_ui()` functions draw widgets and return plain values.

Bring a log (paste, upload or a bundled sample): see what the server resolved, its timeline drawn like a
simulated run, which stall it shows and the flag that changes it, then simulate it. Or bring a request
trace: its request mix first, then a run under the story switches, by prompt-length bucket.
"""

from __future__ import annotations

import hashlib

import pandas as pd
import streamlit as st

from app import charts, compute, diagnosis, server_charts, server_compute, state
from app import server_frames as sf
from app.server_input import (
    LOG_LIMIT_MB,
    LOG_SAMPLES,
    TRACE_LIMIT_MB,
    TRACE_SAMPLES,
    Sample,
    check_pasted,
    decode_upload,
    first_line,
    sample_text,
)
from app.stories import Control, chunk_control, common_controls, interval_control, mixed_control
from app.widgets import chart_ui, fmt_seconds, resolved_ui
from engine_model import (
    ASSUMED_OUTPUT_LEN,
    InputError,
    Trace,
    longest_chunk_run,
    request_mix,
    scenario_from_log,
    validate,
)
from engine_model import log_settings as settings

PAGE = "your_server"
OVERLOADED_QUEUE_S = 10.0
LIMITS = {"max_iterations": 400_000, "max_sim_seconds": 7_200.0}  # a click cannot run away


def _keeps(data: dict, value) -> None:
    """For controls that choose what to read, not how the server runs."""


VIEW = Control("view", "What do you have?", "select", "log", _keeps, ("log", "trace"), is_flag=False,
               fmt=lambda v: {"log": "A server log", "trace": "A request trace"}[v])
LOG = Control("log", "Log", "select", "retraction", _keeps, (*LOG_SAMPLES, "paste", "upload"), is_flag=False,
              fmt=lambda v: LOG_SAMPLES[v].label if v in LOG_SAMPLES else {"paste": "Paste a log", "upload": "Upload a file"}[v])
OUTPUT = Control("out", "Reply length (tokens)", "select", "auto", _keeps,
                 ("auto", 32, 64, 128, 256, 512, 1024, 2048, 4096), is_flag=False,
                 fmt=lambda v: "estimated from the Decode lines" if v == "auto" else f"{v:,}",
                 help="A log does not say how long replies were. 'Estimated': decode steps x running requests from "
                      f"the Decode lines, over the requests seen ({ASSUMED_OUTPUT_LEN} if there are none); or pick one.")
TRACE = Control("trace", "Trace", "select", "azure", _keeps, (*TRACE_SAMPLES, "upload"), is_flag=False,
                fmt=lambda v: TRACE_SAMPLES[v].label if v in TRACE_SAMPLES else "Upload a file")
WINDOW_START = Control("wstart", "Window starts at (s after the first request)", "slider", 0, _keeps, (0, 3600, 10),
                       is_flag=False)
WINDOW_LEN = Control("wlen", "Window length", "select", "all", _keeps, ("all", 30, 60, 120, 300, 600, 1800),
                     is_flag=False, fmt=lambda v: "the whole trace" if v == "all" else f"{v:,} s")
SPEEDUP = Control("speedup", "Speed-up", "select", 1.0, _keeps, (0.25, 0.5, 1.0, 2.0, 4.0, 8.0), is_flag=False,
                  fmt=lambda v: f"{v:g}×", help="Arrivals come this many times faster (gaps divided by it).")
SAMPLE = Control("sample", "Keep a share of requests", "select", 1.0, _keeps, (1.0, 0.5, 0.25, 0.1), is_flag=False,
                 fmt=lambda v: f"{v:.0%}", help="Each request is kept with this probability (seeded).")
MAX_REQUESTS = Control("maxreq", "At most (requests)", "select", 1500, _keeps, (100, 250, 500, 1000, 1500, 2000, 3000),
                       is_flag=False, fmt=lambda v: f"{v:,}", help="The first N requests after the window and sample.")
LONG = Control("long", "A long prompt has at least (tokens)", "select", 8192, _keeps,
               (1024, 2048, 4096, 8192, 16384, 32768), is_flag=False, fmt=lambda v: f"{v:,}",
               help="Splits the mix, and sets the prompt-length buckets of the metrics: below it, up to 4× it, above.")
RUN_CONTROLS = (mixed_control(), chunk_control(), interval_control(), *common_controls())
GPU, MODEL, SEED = RUN_CONTROLS[3:]
CONTROLS = (VIEW, LOG, OUTPUT, TRACE, WINDOW_START, WINDOW_LEN, SPEEDUP, SAMPLE, MAX_REQUESTS, LONG, *RUN_CONTROLS)

VERDICTS = {  # verdict -> (colour, icon, in a few words, in a sentence)
    "kv_retraction": ("red", ":material/memory:", "the KV stall",
                      "The KV cache filled and SGLang retracted running requests. Mixed chunk will not fix this one; "
                      "memory and admission will."),
    "chunked_prefill_stall": ("orange", ":material/view_week:", "the chunked-prefill stall",
                              "Prefill chunks ran back to back while replies were mid-stream, so those replies got no "
                              "token until the last chunk."),
    "queueing_running_cap": ("blue", ":material/hourglass_top:", "neither stall: a queue behind max_running_requests",
                             "Requests queued behind the --max-running-requests cap."),
    "queueing_token_pool": ("blue", ":material/hourglass_top:", "neither stall yet: a queue behind a nearly full KV pool",
                            "Requests queued because the KV pool was nearly full; no retraction in this log."),
    "none": ("green", ":material/check_circle:", "neither stall", "Neither stall shows in this log."),
}



# -- page frame --------------------------------------------------------------------------------------
def page_header_ui() -> dict:
    """Title, what the page answers, notes about the link; puts the settings into the address bar."""
    state.seed_widgets(PAGE, CONTROLS)
    st.title(":material/dns: Your server")
    st.markdown("**Is my stall the chunked-prefill one or the KV one?** Paste a log from your SGLang server to see "
                "what it resolved, its timeline and which stall it shows — then run it through the model. Or load a "
                "request trace and see who waits under each switch.")
    for note in state.notes(PAGE):
        st.warning(note, icon=":material/link:")
    values = state.values(PAGE, CONTROLS)
    state.write_url(CONTROLS, values, {"present": "1" if st.session_state.get("present") else None})
    return values


def control_ui(control: Control, radio: bool = False) -> object:
    key = state.widget_key(PAGE, control.key)
    label = ("⚑ " if control.is_flag else "") + control.label
    if radio:
        return st.radio(label, control.options, key=key, format_func=control.fmt, horizontal=True, help=control.help)
    if control.widget == "toggle":
        return st.toggle(label, key=key, help=control.help)
    if control.widget == "select":
        return st.selectbox(label, control.options, key=key, format_func=control.fmt, help=control.help)
    low, high, step = control.options
    return st.slider(label, low, high, step=step, key=key, help=control.help)


def view_ui() -> str:
    return control_ui(VIEW, radio=True)


def _error(err: InputError, what: str) -> None:
    st.error(f"**This {what} cannot be read.** `{err.where}`: {err.problem}", icon=":material/block:")


def _key(*parts) -> str:
    return hashlib.sha1("\x1f".join(map(str, parts)).encode()).hexdigest()[:16]


# -- 1. the log --------------------------------------------------------------------------------------
def log_source_ui() -> tuple[str, str] | None:
    """(name, text) of the log to read, or None (nothing yet, or unreadable: the message is on the page)."""
    choice = control_ui(LOG, radio=True)
    if choice in LOG_SAMPLES:
        sample: Sample = LOG_SAMPLES[choice]
        st.caption(f"{sample.says} A real SGLang log, `app/samples/{sample.file}` (see app/samples/SOURCE.md; "
                   "Apache-2.0).")
        return sample.file, sample_text(sample)
    if choice == "paste":
        text = st.text_area(f"Server log (up to {LOG_LIMIT_MB} MB)", key=f"{PAGE}.paste", height=180,
                            placeholder="[2025-10-22 20:23:08] Prefill batch. #new-seq: 9, #new-token: 8192, …",
                            help="The scheduler's stdout: Prefill batch / Decode batch lines, retraction warnings and, "
                                 "if you have it, the server_args line from startup.")
        if not text.strip():
            st.info("Paste the lines around the stall — include the startup `server_args` line if you can.")
            return None
        try:
            return "pasted log", check_pasted(text, "the pasted log", LOG_LIMIT_MB)
        except InputError as err:
            _error(err, "log")
            return None
    return upload_ui(f"Server log file (text, up to {LOG_LIMIT_MB} MB)", "log_file", LOG_LIMIT_MB,
                     f"Upload the server's log as a text file, up to {LOG_LIMIT_MB} MB.")


def upload_ui(label: str, key: str, limit_mb: int, empty_note: str) -> tuple[str, str] | None:
    """(file name, text) of an uploaded file within `limit_mb`, or None with the reason on the page."""
    upload = st.file_uploader(label, key=f"{PAGE}.{key}", max_upload_size=limit_mb)
    if upload is None:
        st.info(empty_note)
        return None
    try:
        text, notes = decode_upload(upload.getvalue(), upload.name, limit_mb)
    except InputError as err:
        _error(err, "file")
        return None
    for note in notes:
        st.warning(note)
    return upload.name, text


def read_log_or_stop(name: str, text: str) -> server_compute.ReadLog:
    """The parsed log, its timeline and diagnosis; a clear message and a stop when none of it is usable."""
    try:
        read = server_compute.read_log(text)
    except InputError as err:
        _error(err, "log")
        st.stop()
    ranks = sorted(read.parsed.ranks)
    if len(ranks) > 1:
        rank = st.selectbox("Rank (each DP rank has its own scheduler)", ranks, index=ranks.index(read.timeline.rank),
                            key=f"{PAGE}.rank", format_func=lambda r: r or "(no tag)")
        read = server_compute.read_log(text, rank)
    if sf.num_scheduler_lines(read.parsed) == 0 and read.parsed.server_args is None:
        st.error(f"**No SGLang scheduler line in `{name}`.** None of its {read.parsed.num_lines:,} lines is a "
                 "`Prefill batch`, `Decode batch`, retraction or `server_args` line. Line 1 reads: "
                 f"`{first_line(text)}`. Is this an SGLang server log? (A request trace goes under *A request "
                 "trace* above.)", icon=":material/block:")
        _dropped_ui(read.parsed, expanded=True)
        st.stop()
    return read


def verdict_ui(read: server_compute.ReadLog) -> None:
    colour, icon, words, sentence = VERDICTS.get(read.diagnosis.verdict, VERDICTS["none"])
    with st.container(border=True):
        st.markdown(f"### :{colour}[{icon}] Verdict: it is {words}")
        st.markdown(sentence + " The evidence and the fix are under *Diagnosis* below.")


def resolved_settings_ui(read: server_compute.ReadLog) -> None:
    st.markdown("#### What did your server actually resolve?")
    st.caption("SGLang prints every setting once at startup (`server_args=…`, after its own defaults) and the scheduler "
               "prints the resolved KV pool and chunk size; those lines win. A flag the log does not state is "
               "assumed at SGLang's default — check `/server_info` on the running server.")
    table = sf.settings_table(read.parsed, read.timeline)
    st.dataframe(table, hide_index=True, width="stretch", height=35 * (len(table) + 1) + 3)
    hints = read.parsed.version_hints
    if hints:
        st.caption("Format hints about the SGLang release: " + "; ".join(hints) + ".")


def line_counts_ui(read: server_compute.ReadLog) -> None:
    parsed = read.parsed
    st.markdown(f"**{parsed.num_lines:,} lines read:** {sf.num_scheduler_lines(parsed):,} scheduler lines, "
                f"{parsed.num_unrecognised:,} unrecognised, {parsed.num_malformed:,} malformed, {parsed.num_blank:,} blank."
                + (f" **{parsed.num_lines_not_read:,} lines not read** (over the line limit)." if parsed.num_lines_not_read else ""))
    for warning in parsed.warnings:
        st.warning(warning)
    if parsed.num_malformed:
        first = parsed.malformed_examples[0]
        st.warning(f"{parsed.num_malformed:,} line(s) looked like scheduler lines but could not be read, first line "
                   f"{first[0]}: {first[1]}")
    _dropped_ui(parsed)


def _dropped_ui(parsed, expanded: bool = False) -> None:
    with st.expander("Every line, counted — and the first lines not read", expanded=expanded):
        st.dataframe(sf.line_counts(parsed), hide_index=True)
        if parsed.unrecognised_examples:
            st.markdown(f"First {len(parsed.unrecognised_examples)} unrecognised lines (startup, HTTP access, other "
                        "programs — not scheduler lines):")
            st.code("\n".join(f"{n:>6} | {text}" for n, text in parsed.unrecognised_examples), language=None)
        if parsed.malformed_examples:
            st.markdown("First malformed lines, with the reason:")
            st.code("\n".join(f"{n:>6} | {why}" for n, why in parsed.malformed_examples), language=None)


def log_timeline_ui(read: server_compute.ReadLog, text: str) -> None:
    timeline, parsed = read.timeline, read.parsed
    found = settings(parsed)
    is_mixed = found.get("enable_mixed_chunk") is True
    pool = found.get("max_total_tokens") if isinstance(found.get("max_total_tokens"), int) else None
    _, end_at = sf.log_span(timeline)
    end_at = max(end_at, 1.0)
    retractions = sf.log_retractions(timeline)
    key = _key(text, timeline.rank)
    st.markdown("#### The log's timeline")
    st.caption("Rebuilt from the log lines, one rank" + (f" ({timeline.rank})" if timeline.rank else "")
               + ". Estimates: " + "; ".join(timeline.notes) + " (docs/logs-and-traces.md §3).")
    chart_ui(PAGE, "log_prefill", "Prefill batches: #new-token per Prefill line",
             "One bar per Prefill line, as tall as the prompt tokens it computed. A row of bars at the chunk size "
             "(dashed) with no Decode line between them is the chunked-prefill stall; purple rules are retractions."
             + (" Mixed chunk is on, so passes with requests running are drawn as mixed (green)." if is_mixed else ""),
             lambda: server_charts.prefill_tokens(sf.log_prefills(timeline, is_mixed), retractions, timeline.chunk_size,
                                                  end_at), cache_key=key)
    chart_ui(PAGE, "log_passes", "Pass timeline: what the log says the GPU ran",
             "Same colours as a simulated run. The log does not say how long a pass took: a full chunk followed by "
             "another Prefill line is drawn up to it (prefill back to back — the chunked-prefill stall); any other "
             f"Prefill line is a thin mark. Blue: the {timeline.decode_log_interval} decode passes one Decode line "
             "stands for, somewhere since the previous Decode line.",
             lambda: charts.pass_timeline(sf.log_passes(timeline, is_mixed), end_at=end_at), cache_key=key)
    kv = sf.log_kv(timeline, pool)
    if pool:
        chart_ui(PAGE, "log_kv", "KV cache slots (token usage × pool)",
                 f"`token usage` from each line times the pool of {pool:,} tokens the scheduler resolved. Purple "
                 "rules: retractions — the pool could not give every running request its next token.",
                 lambda: charts.kv_occupancy(kv, retractions, end_at=end_at), cache_key=key)
    else:
        chart_ui(PAGE, "log_kv", "KV cache: token usage",
                 "`token usage` from each line, as a share of the pool (the log does not say the pool's size). "
                 "Purple rules: retractions.", lambda: server_charts.token_usage(kv, retractions, end_at), cache_key=key)
    chart_ui(PAGE, "log_queue", "Running and queued requests",
             "`#running-req` and `#queue-req` as each line reported them. On a Prefill line, running counts the batch "
             "before the new requests join.", lambda: charts.queue_depth(sf.log_queue(timeline), end_at=end_at),
             cache_key=key)


def diagnosis_ui(read: server_compute.ReadLog) -> None:
    found = read.diagnosis
    st.markdown("#### Diagnosis: the evidence, and the flag that would change it")
    if not found.findings:
        st.markdown("No run of back-to-back full chunks with requests running, no retraction, no queue behind a "
                    "limit. If you still see long pauses, look at the client side, `--stream-interval`, or a longer "
                    "stretch of the log.")
    for finding in found.findings:
        with st.container(border=True):
            badge = "" if finding.severity == "observed" else " :gray-badge[latent: nobody was waiting]"
            st.markdown(f"**{finding.title}**{badge}")
            st.markdown(finding.explanation)
            st.markdown("Evidence (log line numbers):")
            st.code("\n".join(f"{n:>6} | {text}" for n, text in finding.evidence), language=None, wrap_lines=True)
            st.markdown("What would change it:\n" + "\n".join(f"- `{fix.flag}` — {fix.effect}" for fix in finding.fixes))
    for note in found.notes:
        st.caption(f"Note: {note}.")
    st.caption("The rules and their limits: docs/logs-and-traces.md §5. Decode lines come every "
               f"{read.timeline.decode_log_interval} passes, and stamps are to the second.")


# -- 2. simulate this server -------------------------------------------------------------------------
def _base_data(values: dict) -> dict:
    data = {"name": PAGE, "hardware": {}, "model": {}, "engine": {}, "limits": dict(LIMITS)}
    for control in (GPU, MODEL, SEED):
        control.apply(data, values[control.key])
    return data


def simulate_log_ui(read: server_compute.ReadLog, values: dict) -> None:
    st.divider()
    st.markdown("### Simulate this server")
    st.markdown("The model runs the log's settings on a GPU and model you pick, with the requests the Prefill lines "
                "imply (arrival = the line's time; the log does not say how long replies were).")
    model_path = settings(read.parsed).get("model_path")
    cols = st.columns(3)
    with cols[0]:
        control_ui(GPU)
    with cols[1]:
        control_ui(MODEL)
    with cols[2]:
        control_ui(OUTPUT)
    if model_path:
        st.caption(f"The log's model is `{model_path}`; pick the nearest preset (the pass cost comes from it).")
    try:
        scenario, notes = scenario_from_log(read.parsed, validate(_base_data(values)), output_len=None if values["out"] == "auto" else values["out"])
        if not scenario.workload.requests:
            st.info("Nothing to simulate: the log has no Prefill line with new requests.")
            return
        run = compute.run_scenario(scenario)
    except InputError as err:
        st.error(f"**This server cannot be simulated.** `{err.where}`: {err.problem}", icon=":material/block:")
        return
    st.session_state[f"{PAGE}.scenario"] = scenario
    with st.expander("What was estimated from the log", expanded=False):
        st.markdown("\n".join(f"- {note}" for note in notes))
    resolved_ui(run)
    if run.summary["cut_off"]:
        st.warning(f"The run stopped early: {run.summary['cut_off']}. The numbers cover what ran.")
    _log_vs_model_ui(read, run)
    key = _key(scenario.model_dump_json())
    chart_ui(PAGE, "sim_passes", "The model's pass timeline",
             "One bar per forward pass the model ran (runs of identical decode passes merged): orange prefill chunk, "
             "blue decode, green mixed. Compare its shape with the log's timeline above.",
             lambda: charts.pass_timeline(run.passes, end_at=run.end_at), cache_key=key)
    chart_ui(PAGE, "sim_kv", "The model's KV cache slots",
             "KV slots used (blue) and free, with the model's retractions as purple rules.",
             lambda: charts.kv_occupancy(run.kv, run.retractions, end_at=run.end_at), cache_key=key)


def _log_vs_model_ui(read: server_compute.ReadLog, run) -> None:
    parsed, timeline = read.parsed, read.timeline
    longest = longest_chunk_run(parsed, timeline)
    model = diagnosis.diagnose(run)
    peak = max((s.token_usage for s in timeline.samples if s.token_usage is not None), default=None)
    start, end = sf.log_span(timeline)
    rows = [
        ("which stall", VERDICTS.get(read.diagnosis.verdict, VERDICTS["none"])[2], diagnosis.verdict(model, run.stall_threshold_s)),
        ("retractions (requests sent back)", f"{len(timeline.retractions)} ({sum(r.num_retracted_reqs for r in timeline.retractions)})",
         f"{model['num_retractions']} ({model['num_retracted_requests']})"),
        ("longest run of full prefill chunks back to back", f"{longest} Prefill lines" if longest >= 2 else "none",
         f"{model['prefill_streak_passes']} passes, {model['prefill_streak_s']:.2f} s" if model["prefill_streak_passes"] >= 2
         else "none"),
        ("peak KV use", "—" if peak is None else f"{peak:.0%}", f"{model['kv_peak_fraction']:.0%}"),
        ("time covered", f"{end - start:.0f} s", f"{run.end_at:.0f} s"),
    ]
    st.markdown("#### Your log beside the model")
    st.table(pd.DataFrame(rows, columns=["", "your log", "the model"]).set_index(""))
    log_kv, model_kv = bool(timeline.retractions), bool(model["num_retractions"])
    if log_kv != model_kv:
        st.caption(":material/info: The model and your log disagree on retraction. The model's requests are guesses: "
                   "every reply has the assumed length (try a shorter or longer one), arrivals are the Prefill lines' "
                   "times (late by the queue wait), and the pass cost is the preset's, not your GPU's measured speed.")
    _headline_ui(run)


def _headline_ui(run) -> None:
    overall = run.summary["metrics"]["overall"]
    cards = (("p95 first token (TTFT)", fmt_seconds(overall["ttft_s"]["p95"])),
             ("p99 gap between tokens", fmt_seconds(overall["itl_s"]["p99"])),
             ("Longest pause, any reply", fmt_seconds(overall["max_itl_s"]["max"])),
             ("Requests retracted", f"{overall['num_retracted']:,} of {overall['num_requests']:,}"))
    for col, (label, value) in zip(st.columns(len(cards)), cards, strict=True):
        col.metric(label, value, border=True)


# -- 3. a request trace ------------------------------------------------------------------------------
def trace_source_ui() -> tuple[str, str | bytes] | None:
    choice = control_ui(TRACE, radio=True)
    if choice in TRACE_SAMPLES:
        sample: Sample = TRACE_SAMPLES[choice]
        st.caption(f"{sample.says} `app/samples/{sample.file}`, the head of a public trace (see app/samples/SOURCE.md).")
        return sample.file, sample_text(sample)
    return upload_ui(f"Trace file (up to {TRACE_LIMIT_MB} MB): Azure CSV, Mooncake JSONL, BurstGPT CSV or JSONL "
                     "with arrival_at, prompt_len, output_len", "trace_file", TRACE_LIMIT_MB,
                     "Upload a trace. Formats: Azure (`TIMESTAMP,ContextTokens,GeneratedTokens`), Mooncake "
                     "(`timestamp`, `input_length`, `output_length`), BurstGPT (`Timestamp`, `Request tokens`, "
                     "`Response tokens`) or JSON Lines with `arrival_at`, `prompt_len`, `output_len`.")


def trace_options_ui() -> None:
    with st.container(border=True):
        st.markdown("**Which requests** — window, speed, sample, cap (applied in that order)")
        cols = st.columns(6)
        for col, control in zip(cols, (WINDOW_START, WINDOW_LEN, SPEEDUP, SAMPLE, MAX_REQUESTS, LONG), strict=True):
            with col:
                control_ui(control)


def load_trace_or_stop(name: str, source: str | bytes, values: dict) -> Trace:
    window = None
    if values["wstart"] or values["wlen"] != "all":
        window = (float(values["wstart"]), float("inf") if values["wlen"] == "all" else values["wstart"] + values["wlen"])
    try:
        trace = server_compute.read_trace(source, window, values["speedup"], values["sample"], values["maxreq"],
                                          values["seed"])
    except InputError as err:
        _error(err, "trace")
        st.stop()
    if trace.num_skipped:
        kinds = ", ".join(f"{k.replace('_', ' ')} {n:,}" for k, n in trace.skipped_by_kind.items())
        st.warning(f"{trace.num_skipped:,} of {trace.num_rows:,} rows in `{name}` were skipped ({kinds}). First: "
                   + "; ".join(reason for _, reason in trace.skipped_examples[:3]))
    for warning in trace.warnings:
        st.warning(warning)
    return trace


def mix_words(trace: Trace, long_threshold: int) -> str:
    """The mix in one sentence: who carries the tokens, or that almost every request is short."""
    mix = request_mix(trace, long_threshold)
    longest = int(mix.prompt_len_percentiles[100])
    if mix.num_long == 0:
        return (f"Almost every request is short: none of the {mix.num_requests:,} prompts reaches {long_threshold:,} "
                f"tokens (the longest has {longest:,}).")
    return f"{mix.headline()}; the longest prompt has {longest:,} tokens."


def mix_ui(trace: Trace, name: str, long_threshold: int) -> None:
    mix = request_mix(trace, long_threshold)
    st.markdown("#### The request mix")
    st.info(f"**{mix_words(trace, long_threshold)}**", icon=":material/pie_chart:")
    rate = "—" if mix.mean_arrival_rate is None else f"{mix.mean_arrival_rate:.1f} /s"
    cards = (("Requests", f"{mix.num_requests:,}"), ("Over", f"{mix.duration_s:,.0f} s"), ("Arrivals", rate),
             (f"Long (≥ {long_threshold:,})", f"{mix.num_long:,}"),
             ("Median prompt", f"{mix.prompt_len_percentiles[50]:,.0f}"), ("p99 prompt", f"{mix.prompt_len_percentiles[99]:,.0f}"),
             ("Median reply", f"{mix.output_len_percentiles[50]:,.0f}"))
    for col, (label, value) in zip(st.columns(len(cards)), cards, strict=True):
        col.metric(label, value, border=True)
    key = _key(name, sf.trace_rows(trace)[:50], len(trace.requests), long_threshold)
    chart_ui(PAGE, "mix_prompts", "Prompt lengths: requests vs the tokens they carry",
             "For each prompt length (bins double), the share of requests (light blue) beside the share of all prompt "
             "tokens (orange). Orange bars far to the right of the blue ones: a few long prompts carry the work — "
             "and cause the stalls.",
             lambda: server_charts.prompt_mix(sf.prompt_mix(trace), long_threshold), cache_key=key)
    chart_ui(PAGE, "mix_outputs", "Reply lengths", "The share of requests per reply length (bins double).",
             lambda: server_charts.output_mix(sf.output_mix(trace)), cache_key=key)


def trace_run_ui(trace: Trace, values: dict) -> None:
    st.divider()
    st.markdown("### Run it through the scheduler")
    with st.container(border=True):
        st.markdown("**Server** — flags marked ⚑ are SGLang server flags")
        for row in (RUN_CONTROLS[:3], RUN_CONTROLS[3:]):
            for col, control in zip(st.columns(3), row, strict=True):
                with col:
                    control_ui(control)
    data = _base_data(values)
    data["name"] = "your_trace"
    data["metrics"] = {"bucket_edges": [values["long"], 4 * values["long"]]}
    for control in RUN_CONTROLS[:3]:
        control.apply(data, values[control.key])
    try:
        scenario = validate(data)
        run = server_compute.run_trace(scenario.model_dump_json(), sf.trace_rows(trace))
    except InputError as err:
        st.error(f"**This combination cannot run.** `{err.where}`: {err.problem}", icon=":material/block:")
        return
    resolved_ui(run)
    if run.summary["cut_off"]:
        st.warning(f"The run stopped early: {run.summary['cut_off']}. The numbers cover what ran.")
    _headline_ui(run)
    if (run.summary["metrics"]["overall"]["queue_s"]["p50"] or 0) > OVERLOADED_QUEUE_S:
        st.warning("**This server cannot keep up with these arrivals:** the median request waits more than "
                   f"{OVERLOADED_QUEUE_S:g} s in the queue, so first-token times are mostly queueing. Slow the arrivals "
                   "(speed-up below 1×), keep a share of the requests, or pick a faster GPU or a smaller model.",
                   icon=":material/traffic:")
    st.markdown("#### Who waits, by prompt length")
    st.dataframe(sf.bucket_table(run.summary, fmt_seconds), hide_index=True, width="stretch")
    key = _key(scenario.model_dump_json(), sf.trace_rows(trace)[:50], len(trace.requests))
    chart_ui(PAGE, "buckets", "TTFT and gaps between tokens, by prompt-length bucket",
             "p50, p95 and p99 of each wait for requests in each prompt-length bucket (log scale). Flip mixed chunk or "
             "the chunk size and watch the short prompts' gaps and the long prompts' first token trade places.",
             lambda: server_charts.bucket_latency(sf.bucket_latency(run.summary)), cache_key=key)
    chart_ui(PAGE, "trace_passes", "Pass timeline",
             "One bar per forward pass (runs of identical decode passes merged): orange prefill chunk, blue decode, "
             "green mixed.", lambda: charts.pass_timeline(run.passes, end_at=run.end_at), cache_key=key)
    chart_ui(PAGE, "trace_kv", "KV cache slots", "KV slots used (blue) and free; purple rules are retractions.",
             lambda: charts.kv_occupancy(run.kv, run.retractions, end_at=run.end_at), cache_key=key)
    chart_ui(PAGE, "trace_queue", "Queue depth", "Requests waiting for a prefill, and requests decoding.",
             lambda: charts.queue_depth(run.queue, end_at=run.end_at), cache_key=key)
    with st.expander("Export this run: per-request metrics (CSV)"):
        st.download_button("Per-request metrics (CSV)", lambda: compute.csv_bytes(run.requests),
                           file_name="your_trace-requests.csv", mime="text/csv", on_click="ignore")


def share_ui(values: dict) -> None:
    st.caption(":material/link: Link to this view: copy the address bar — the sample and every option are in it (`"
               + state.url_for(PAGE, CONTROLS, values) + "`). A pasted or uploaded file is not in the link.")
