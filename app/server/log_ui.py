"""The log half of the "Your server" page: pick or bring a log, read it, and show the verdict, what the server
resolved, every line counted, the log's timeline and the diagnosis with its evidence lines."""

from __future__ import annotations

import streamlit as st
from pydantic import ValidationError

from app import state
from app.charts import timelines
from app.present.fmt import markdown_table
from app.server import charts as server_charts
from app.server import compute
from app.server import frames as sf
from app.server.controls import LOG, PAGE
from app.server.input import LOG_LIMIT_MB, LOG_SAMPLES, Sample, check_pasted, first_line, sample_text
from app.server.page import cache_key, error_ui, upload_ui
from app.server.replay import named
from app.ui.chart import chart_ui
from app.ui.controls import control_ui
from app.ui.exports import set_export_note
from app.ui.fold import folded
from app.ui.markup import lines_ui
from engine_model import InputError, followed_ranks
from engine_model import log_settings as settings

VERDICTS = {  # verdict -> (colour, icon, in a few words, in a sentence); as engine_model's VERDICTS
    "crash_oom": ("red", ":material/error:", "a crash or out of memory",
                  "The server crashed or ran out of memory: the line that says so is quoted below. That "
                  "stopped the replies, whatever the scheduler lines before it show."),
    "outside_model": ("violet", ":material/help:", "outside what this model can see",
                      "A hang, a bug, slow GPU work or a queue at an empty pool: the cause is not a "
                      "scheduling rule, so no scheduling flag is advised. The lines that point there, and "
                      "what to report upstream, are below."),
    "runaway_output": ("red", ":material/all_inclusive:", "a runaway output",
                       "A few requests hold far more tokens than any reply should: replies that never "
                       "stopped hold the pool, and what waits behind them waits on them."),
    "kv_retraction": ("red", ":material/memory:", "the KV stall",
                      "The KV cache filled and SGLang retracted running requests. Mixed chunk will not fix "
                      "this one; memory and admission will."),
    "chunked_prefill_stall": ("orange", ":material/view_week:", "the chunked-prefill stall",
                              "Prefill chunks ran back to back while replies were mid-stream, so those "
                              "replies got no token until the last chunk."),
    "prefill_queue_ramp": ("orange", ":material/stacks:", "a queue ramp under prefill-first admission",
                           "A queue of new requests was prefilled pass after pass while replies were "
                           "mid-stream, so those replies got no token until the queue drained. Not one long "
                           "prompt: a smaller chunk will not help; mixed chunk or a prefill-decode interval "
                           "will."),
    "queueing_running_cap": ("blue", ":material/hourglass_top:",
                             "neither stall: a queue behind max_running_requests",
                             "Requests queued behind the --max-running-requests cap."),
    "queueing_token_pool": ("blue", ":material/hourglass_top:",
                            "neither stall yet: a queue behind a nearly full KV pool",
                            "Requests queued because the KV pool was nearly full; no retraction in this "
                            "log."),
    "healthy": ("green", ":material/check_circle:", "looks healthy",
                "Replies are progressing and nobody waits for long in this log. What would contradict it is "
                "below."),
    "unknown": ("gray", ":material/help_outline:", "no verdict",
                "No trouble shows, but too little to call it healthy: paste a longer stretch, with Decode "
                "lines and the startup server_args line."),
}


def log_source_ui() -> tuple[str, str] | None:
    """(name, text) of the log to read, or None (nothing yet, or unreadable: the message is on the page)."""
    choice = control_ui(PAGE, LOG, radio=True)
    if choice in LOG_SAMPLES:
        sample: Sample = LOG_SAMPLES[choice]
        st.caption(f"{sample.says} {sample.origin} {sample.source}.")
        return sample.file, sample_text(sample)
    if choice == "paste":
        text = st.text_area(f"Server log (up to {LOG_LIMIT_MB} MB)", key=state.keys(PAGE).widget("paste"),
                            height=180,
                            placeholder="[2025-10-22 20:23:08] Prefill batch. #new-seq: 9, "
                                        "#new-token: 8192, …",
                            help="The scheduler's stdout: Prefill batch / Decode batch lines, retraction "
                                 "warnings and, if you have it, the server_args line from startup.")
        if not text.strip():
            st.info("Paste the lines around the stall — include the startup `server_args` line if you can.")
            return None
        try:
            return "pasted log", check_pasted(text, "the pasted log", LOG_LIMIT_MB)
        except InputError as err:
            error_ui(err, "log")
            return None
    return upload_ui(f"Server log file (text, up to {LOG_LIMIT_MB} MB)", "log_file", LOG_LIMIT_MB,
                     f"Upload the server's log as a text file, up to {LOG_LIMIT_MB} MB.")


def read_log_or_stop(name: str, text: str) -> compute.ReadLog:
    """The parsed log, its timeline and diagnosis; a clear message and a stop when none of it is usable."""
    try:
        read = compute.read_log(text)
    except InputError as err:
        error_ui(err, "log")
        st.stop()
    except ValidationError as err:
        error_ui(named(err), "log")
        st.stop()
    except (OverflowError, ValueError) as err:  # a number no real log holds: one line, never a traceback
        error_ui(InputError(name, f"a value in it cannot be read ({err}); numbers must fit what a real "
                                  "log holds"), "log")
        st.stop()
    ranks = [shards[0] for shards in followed_ranks(read.parsed).values()]  # one per scheduler, not shard
    if len(ranks) > 1 and read.timeline.rank in ranks:
        rank = st.selectbox("Rank (each DP rank has its own scheduler)", ranks,
                            index=ranks.index(read.timeline.rank),
                            key=state.keys(PAGE).widget("rank"), format_func=lambda r: r or "(no tag)")
        read = compute.read_log(text, rank)
    words = VERDICTS.get(read.diagnosis.verdict, VERDICTS["unknown"])[2]
    set_export_note(PAGE, (f"From the SGLang server log “{name}”: it is {words}.",))
    if sf.num_scheduler_lines(read.parsed) == 0 and read.parsed.server_args is None:
        st.error(f"**No SGLang scheduler line in `{name}`.** None of its {read.parsed.num_lines:,} lines is "
                 "a `Prefill batch`, `Decode batch`, retraction, crash or out-of-memory, or `server_args` "
                 "line. Line 1 reads: "
                 f"`{first_line(text)}`. Is this an SGLang server log? (A request trace goes under *A "
                 "request trace* above.)", icon=":material/block:")
        _dropped_ui(read.parsed, expanded=True)
        st.stop()
    return read


def verdict_ui(read: compute.ReadLog) -> None:
    colour, icon, words, sentence = VERDICTS.get(read.diagnosis.verdict, VERDICTS["unknown"])
    with st.container(border=True):
        st.markdown(f"### :{colour}[{icon}] Verdict: it is {words}")
        st.markdown(sentence + " The evidence and the fix are under *Diagnosis* below.")


def resolved_settings_ui(read: compute.ReadLog) -> None:
    """What the log says the server resolved, a row per setting. In presenter mode a closed fold: the room
    reads the verdict and the timeline; the table is one click away."""
    if state.is_presenting():
        with folded("What did your server actually resolve? — a row per setting", RESOLVED_FOLD,
                    icon=":material/tune:") as is_open:
            if is_open:
                _resolved_settings(read)
        return
    st.markdown("#### What did your server actually resolve?")
    _resolved_settings(read)


RESOLVED_FOLD = "server.resolved.open"


def _resolved_settings(read: compute.ReadLog) -> None:
    st.caption("SGLang prints every setting once at startup (`server_args=…`, after its own defaults) and "
               "the scheduler prints the resolved KV pool and chunk size; those lines win. A flag the log "
               "does not state is assumed at SGLang's default — check `/server_info` on the running server.")
    table = sf.settings_table(read.parsed, read.timeline)
    st.markdown(markdown_table(table.set_index("setting"), literal=("value",)))
    hints = read.parsed.version_hints
    if hints:
        st.caption("Format hints about the SGLang release: " + "; ".join(hints) + ".")
    if read.parsed.formats:
        st.caption("Line formats read: " + "; ".join(read.parsed.formats) + ".")


def line_counts_ui(read: compute.ReadLog) -> None:
    parsed = read.parsed
    st.markdown(f"**{parsed.num_lines:,} lines read:** {sf.num_scheduler_lines(parsed):,} scheduler lines, "
                f"{parsed.num_unrecognised:,} unrecognised, {parsed.num_malformed:,} malformed, "
                f"{parsed.num_blank:,} blank."
                + (f" **{parsed.num_lines_not_read:,} lines not read** (over the line limit)."
                   if parsed.num_lines_not_read else ""))
    for warning in parsed.warnings:
        st.warning(warning)
    if parsed.num_malformed:
        first = parsed.malformed_examples[0]
        st.warning(f"{parsed.num_malformed:,} line(s) looked like scheduler lines but could not be read, "
                   f"first line {first[0]}: {first[1]}")
    _dropped_ui(parsed)


def _dropped_ui(parsed, expanded: bool = False) -> None:
    with folded("Every line, counted — and the first lines not read", state.keys(PAGE).widget("lines"),
                expanded=expanded) as is_open:
        if not is_open:
            return
        st.dataframe(sf.line_counts(parsed), hide_index=True)
        if parsed.unrecognised_examples:
            st.markdown(f"First {len(parsed.unrecognised_examples)} unrecognised lines (startup, HTTP "
                        "access, other programs — not scheduler lines):")
            lines_ui(parsed.unrecognised_examples)
        if parsed.malformed_examples:
            st.markdown("First malformed lines, with the reason:")
            lines_ui(parsed.malformed_examples)


def log_timeline_ui(read: compute.ReadLog, text: str) -> None:
    timeline, parsed = read.timeline, read.parsed
    found = settings(parsed)
    is_mixed = found.get("enable_mixed_chunk") is True
    pool = found.get("max_total_tokens") if isinstance(found.get("max_total_tokens"), int) else None
    _, end_at = sf.log_span(timeline)
    end_at = max(end_at, 1.0)
    retractions = sf.log_retractions(timeline)
    key = cache_key(text, timeline.rank)
    st.markdown("#### The log's timeline")
    st.caption("Rebuilt from the log lines, one rank" + (f" ({timeline.rank})" if timeline.rank else "")
               + ". Estimates: " + "; ".join(timeline.notes) + ".")
    if not timeline.timed:
        st.warning("This log has no timestamps: the charts' time axis is the lines' order (one step per "
                   "line), not seconds. How long any pass or pause took cannot be read from it.")
    axis = (lambda chart: chart) if timeline.timed else server_charts.in_line_order
    chart_ui(PAGE, "log_prefill", "Prefill batches: #new-token per Prefill line",
             "One bar per Prefill line, as tall as the prompt tokens it computed. A row of bars at the chunk "
             "size (dashed) with no Decode line between them is the chunked-prefill stall; dark grey rules "
             "are retractions."
             + (" Mixed chunk is on, so passes with requests running are drawn as mixed (green)."
                if is_mixed else ""),
             lambda: axis(server_charts.prefill_tokens(sf.log_prefills(timeline, is_mixed), retractions,
                                                       timeline.chunk_size, end_at)), cache_key=key)
    with folded("The rest of the log's timeline: passes, KV cache, queue",
                state.keys(PAGE).widget("log_more"), icon=":material/view_timeline:") as is_open:
        if is_open:
            _more_timeline_ui(timeline, is_mixed, pool, retractions, end_at, key, axis)


def _more_timeline_ui(timeline, is_mixed: bool, pool: int | None, retractions, end_at: float, key,
                      axis) -> None:
    """The log's passes, KV cache and queue, on the prefill chart's clock (a fold: built when opened)."""
    chart_ui(PAGE, "log_passes", "Pass timeline: what the log says the GPU ran",
             "Same colours as a simulated run. The log does not say how long a pass took: a full chunk "
             "followed by another Prefill line is drawn up to it (prefill back to back — the chunked-prefill "
             f"stall); any other Prefill line is a thin mark. Blue: the {timeline.decode_log_interval} "
             "decode passes one Decode line stands for, somewhere since the previous Decode line.",
             lambda: axis(timelines.pass_timeline(sf.log_passes(timeline, is_mixed), end_at=end_at)),
             cache_key=key)
    kv = sf.log_kv(timeline, pool)
    if pool:
        chart_ui(PAGE, "log_kv", "KV cache slots (token usage × pool)",
                 f"`token usage` from each line times the pool of {pool:,} tokens the scheduler resolved. "
                 "Dark grey rules: retractions — the pool could not give every running request its next "
                 "token.",
                 lambda: axis(timelines.kv_occupancy(kv, retractions, end_at=end_at)), cache_key=key)
    else:
        chart_ui(PAGE, "log_kv", "KV cache: token usage",
                 "`token usage` from each line, as a share of the pool (the log does not say the pool's "
                 "size). Dark grey rules: retractions.",
                 lambda: axis(server_charts.token_usage(kv, retractions, end_at)), cache_key=key)
    chart_ui(PAGE, "log_queue", "Running and queued requests",
             "`#running-req` and `#queue-req` as each line reported them. On a Prefill line, running counts "
             "the batch before the new requests join.",
             lambda: axis(timelines.queue_depth(sf.log_queue(timeline), end_at=end_at)), cache_key=key)


def diagnosis_ui(read: compute.ReadLog) -> None:
    found = read.diagnosis
    st.markdown("#### Diagnosis: the evidence, and the flag that would change it")
    if not found.findings:
        st.markdown("No crash, no run of back-to-back prefill passes with requests running, no retraction, "
                    "no queue behind a limit, and too little to call it healthy. If you still see long "
                    "pauses, look at the client side, `--stream-interval`, or a longer stretch of the log.")
    for finding in found.findings:
        with st.container(border=True):
            badge = ("" if finding.severity == "observed"
                     else " :gray-badge[latent: seen, but not what held the replies here]")
            st.markdown(f"**{finding.title}**{badge}")
            st.markdown(finding.explanation)
            st.markdown("Evidence (log line numbers):")
            lines_ui(finding.evidence)
            if finding.fixes:
                st.markdown("What would change it:\n"
                            + "\n".join(f"- `{fix.flag}` — {fix.effect}" for fix in finding.fixes))
            if finding.contradicts:
                st.caption(f"What would contradict it: {finding.contradicts}")
    for note in found.notes:
        st.caption(f"Note: {note}.")
    st.caption("The rules read Prefill, Decode, retraction, crash, out-of-memory and hang lines; a Decode "
               f"line comes only every {read.timeline.decode_log_interval} decode passes "
               "(decode_log_interval), so a missing one is a hint, not proof; stamps are to the second"
               + ("." if read.timeline.timed else ", and this log has none."))
