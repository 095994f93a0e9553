"""The trace half of the "Your server" page: pick or bring a request trace, choose which requests, see the
request mix first, then run it under the story switches and read who waits by prompt length."""

from __future__ import annotations

import streamlit as st

from app.charts import timelines
from app.charts.words import kept_words
from app.present.export import csv_bytes
from app.present.fmt import fmt_seconds
from app.present.settings import settings_words
from app.server import charts as server_charts
from app.server import compute
from app.server import frames as sf
from app.server.controls import DEPLOYMENT, FLAGS, MIXED, PAGE, TRACE, TRACE_OPTIONS, base_data
from app.server.input import TRACE_LIMIT_MB, TRACE_SAMPLES, Sample, sample_text
from app.server.page import cache_key, error_ui, headline_ui, upload_ui
from app.server.trace_pd import trace_pd_ui
from app.ui.cards import Card, cards_ui
from app.ui.chart import chart_ui
from app.ui.controls import control_ui
from app.ui.deployment import deployment_ui, deployment_words
from app.ui.exports import set_export_note
from app.ui.mix import mix_builder_ui, mix_text
from app.ui.resolved import cut_off_ui, resolved_ui
from engine_model import MAX_REQUESTS as HARD_CAP
from engine_model import (
    InputError,
    Trace,
    check_deployment,
    decode_mix,
    mix_jsonl,
    mix_label,
    request_mix,
    validate,
)
from engine_model import mix_words as built_mix_words

OVERLOADED_QUEUE_S = 10.0

def trace_source_ui(values: dict) -> tuple[str, str | bytes] | None:
    choice = control_ui(PAGE, TRACE, radio=True)
    if choice in TRACE_SAMPLES:
        sample: Sample = TRACE_SAMPLES[choice]
        st.caption(f"{sample.says} The head of a public trace: {sample.source}.")
        return sample.file, sample_text(sample)
    if choice == MIXED:
        return built_mix_ui(values)
    st.caption(":material/link_off: An uploaded trace stays in this session: a link carries settings, never "
               "a file, so it cannot go in one. To hand a workload over by link, build it as a request mix "
               "(the choice above).")
    return upload_ui(f"Trace file (up to {TRACE_LIMIT_MB} MB): Azure CSV, Mooncake JSONL, BurstGPT CSV or "
                     "JSONL with arrival_at, prompt_len, output_len", "trace_file", TRACE_LIMIT_MB,
                     "Upload a trace. Formats: Azure (`TIMESTAMP,ContextTokens,GeneratedTokens`), Mooncake "
                     "(`timestamp`, `input_length`, `output_length`), BurstGPT (`Timestamp`, "
                     "`Request tokens`, `Response tokens`) or JSON Lines with `arrival_at`, `prompt_len`, "
                     "`output_len`.")


def built_mix_ui(values: dict) -> tuple[str, str] | None:
    """A request mix built here (app.ui.mix), its requests drawn with the page's seed and read as a trace
    file: everything below (window, speed-up, buckets, the run, PD) treats it as one. In the link."""
    mix_builder_ui(PAGE, own="None yet: pick a preset")
    text = mix_text(PAGE)
    if not text:
        return None
    mix = decode_mix(text)
    try:
        lines = mix_jsonl(mix, values["seed"])
    except InputError as err:
        st.warning(f"`{err.where}`: {err.problem}. (The story pages run closed loops.)",
                   icon=":material/block:")
        return None
    st.caption(f"{built_mix_words(mix, values['seed'])} As a trace here, each request keeps its prompt and "
               "reply length and arrival; mid-reply and logprobs apply on the story pages only.")
    return f"request mix: {mix_label(text)}", lines


def trace_options_ui() -> None:
    with st.container(border=True):
        st.markdown("**Which requests** — window, speed, sample, cap (applied in that order)")
        cols = st.columns(6)
        for col, control in zip(cols, TRACE_OPTIONS, strict=True):
            with col:
                control_ui(PAGE, control)


def load_trace_or_stop(name: str, source: str | bytes, values: dict) -> Trace:
    window = None
    if values["wstart"] or values["wlen"] != "all":
        window = (float(values["wstart"]),
                  float("inf") if values["wlen"] == "all" else values["wstart"] + values["wlen"])
    try:
        trace = compute.read_trace(source, window, values["speedup"], values["sample"], values["maxreq"],
                                          values["seed"])
    except InputError as err:
        error_ui(err, "trace")
        st.stop()
    if trace.num_skipped:
        kinds = ", ".join(f"{k.replace('_', ' ')} {n:,}" for k, n in trace.skipped_by_kind.items())
        st.warning(f"{trace.num_skipped:,} of {trace.num_rows:,} rows in `{name}` were skipped ({kinds}). "
                   "First: "
                   + "; ".join(reason for _, reason in trace.skipped_examples[:3]))
    for warning in trace.warnings:
        st.warning(warning)
    words, capped = kept_words(trace, values["maxreq"], "At most (requests)",
                               f"up to {HARD_CAP:,}, the engine's cap on a run")
    if capped:
        st.warning(words, icon=":material/filter_alt:")
    else:
        st.caption(words)
    return trace


def mix_words(trace: Trace, long_threshold: int) -> str:
    """The mix in one sentence: who carries the tokens, or that almost every request is short."""
    mix = request_mix(trace, long_threshold)
    longest = int(mix.prompt_len_percentiles[100])
    if mix.num_long == 0:
        return (f"Almost every request is short: none of the {mix.num_requests:,} prompts reaches "
                f"{long_threshold:,} tokens (the longest has {longest:,}).")
    return f"{mix.headline()}; the longest prompt has {longest:,} tokens."


def mix_ui(trace: Trace, name: str, long_threshold: int) -> None:
    mix = request_mix(trace, long_threshold)
    st.markdown("#### The request mix")
    st.info(f"**{mix_words(trace, long_threshold)}**", icon=":material/pie_chart:")
    rate = "—" if mix.mean_arrival_rate is None else f"{mix.mean_arrival_rate:.1f} /s"
    cards = (("Requests", f"{mix.num_requests:,}"), ("Over", f"{mix.duration_s:,.0f} s"), ("Arrivals", rate),
             (f"Long (≥ {long_threshold:,})", f"{mix.num_long:,}"),
             ("Median prompt", f"{mix.prompt_len_percentiles[50]:,.0f}"),
             ("p99 prompt", f"{mix.prompt_len_percentiles[99]:,.0f}"),
             ("Median reply", f"{mix.output_len_percentiles[50]:,.0f}"))
    cards_ui([Card(label, value) for label, value in cards])
    key = cache_key(name, sf.trace_rows(trace)[:50], len(trace.requests), long_threshold)
    chart_ui(PAGE, "mix_prompts", "Prompt lengths: requests vs the tokens they carry",
             "For each prompt length (bins double), the share of requests (light blue) beside the share of "
             "all prompt tokens (orange). Orange bars far to the right of the blue ones: a few long prompts "
             "carry the work — and cause the stalls.",
             lambda: server_charts.prompt_mix(sf.prompt_mix(trace), long_threshold), cache_key=key)
    chart_ui(PAGE, "mix_outputs", "Reply lengths", "The share of requests per reply length (bins double).",
             lambda: server_charts.output_mix(sf.output_mix(trace)), cache_key=key)


def trace_data(values: dict, num_requests: int, switches: bool = True) -> dict:
    """The trace's scenario (its requests come separately): the page's GPU, model and seed, the long
    threshold's buckets, and the switches (False: SGLang's defaults)."""
    data = base_data(values)
    data["name"] = "your_trace"
    data["metrics"] = {"bucket_edges": [values["long"], 4 * values["long"]]}
    data["limits"]["max_requests"] = max(num_requests, 1)
    for control in FLAGS:
        control.apply(data, values[control.key] if switches else control.default)
    return data


def trace_note(trace: Trace, values: dict, name: str) -> tuple[str, ...]:
    """What every chart exported from the trace's run carries under its title: which requests, the flags and
    the deployment."""
    return (f"Requests: {name or 'a trace'}, {len(trace.requests):,} of them",
            f"SGLang flags: {settings_words(list(FLAGS), values)}",
            f"Deployment: {deployment_words(values)} · seed {values['seed']}")


def trace_runner(trace: Trace):
    """A run of any scenario on the trace's requests, and the key its charts are cached under."""
    rows = sf.trace_rows(trace)

    def run(scenario):
        return (compute.run_trace(scenario.model_dump_json(), rows),
                cache_key(scenario.model_dump_json(), rows[:50], len(rows)))

    return run


def trace_run_ui(trace: Trace, values: dict, name: str = "") -> None:
    st.divider()
    st.markdown("### Run it through the scheduler")
    with st.container(border=True):
        st.markdown("**Server** — flags marked ⚑ are SGLang server flags")
        for col, control in zip(st.columns(len(FLAGS)), FLAGS, strict=True):
            with col:
                control_ui(PAGE, control)
        st.markdown(f"**Deployment** — {deployment_words(values)}")
        deployment_ui(PAGE, DEPLOYMENT, values)
    runner = trace_runner(trace)
    try:
        scenario = validate(trace_data(values, len(trace.requests)))
        check_deployment(scenario, compute.trace_requests(sf.trace_rows(trace)))
        defaults = validate(trace_data(values, len(trace.requests), switches=False))
        run, key = runner(scenario)
        before = run if defaults == scenario else runner(defaults)[0]
    except InputError as err:
        st.error(f"**This combination cannot run.** `{err.where}`: {err.problem}", icon=":material/block:")
        return
    resolved_ui(run)
    cut_off_ui(run)
    set_export_note(PAGE, trace_note(trace, values, name))
    headline_ui(before, run if before is not run else None)
    st.caption("SGLang's defaults → your switches (mixed chunk, chunk size, decode rounds between prefills, "
               "queue order), "
               "on the same requests, GPU and model." if before is not run else
               "At SGLang's defaults: flip a switch above to see each number before → after.")
    if (run.summary.metrics.overall.queue_s.p50 or 0) > OVERLOADED_QUEUE_S:
        st.warning("**This server cannot keep up with these arrivals:** the median request waits more than "
                   f"{OVERLOADED_QUEUE_S:g} s in the queue, so first-token times are mostly queueing. Slow "
                   "the arrivals (speed-up below 1×), keep a share of the requests, or pick a faster GPU or "
                   "a smaller model.",
                   icon=":material/traffic:")
    st.markdown("#### Who waits, by prompt length")
    st.dataframe(sf.bucket_table(run.summary, fmt_seconds), hide_index=True, width="stretch")
    chart_ui(PAGE, "buckets", "TTFT and gaps between tokens, by prompt-length bucket",
             "p50, p95 and p99 of each wait for requests in each prompt-length bucket (log scale). Flip "
             "mixed chunk or the chunk size and watch the short prompts' gaps and the long prompts' first "
             "token trade places.",
             lambda: server_charts.bucket_latency(sf.bucket_latency(run.summary)), cache_key=key)
    chart_ui(PAGE, "trace_passes", "Pass timeline",
             "One bar per forward pass (runs of identical decode passes merged): orange prefill chunk, "
             "blue decode, green mixed.",
             lambda: timelines.pass_timeline(run.passes, end_at=run.end_at), cache_key=key)
    chart_ui(PAGE, "trace_kv", "KV cache slots",
             "KV slots used (blue) and free; dark grey rules are retractions.",
             lambda: timelines.kv_occupancy(run.kv, run.retractions, end_at=run.end_at), cache_key=key)
    chart_ui(PAGE, "trace_queue", "Queue depth", "Requests waiting for a prefill, and requests decoding.",
             lambda: timelines.queue_depth(run.queue, end_at=run.end_at), cache_key=key)
    with st.expander("Export this run: per-request metrics (CSV)"):
        st.download_button("Per-request metrics (CSV)", lambda: csv_bytes(run.requests),
                           file_name="your_trace-requests.csv", mime="text/csv", on_click="ignore")
    trace_pd_ui(trace, values, runner, trace_data(values, len(trace.requests)))
