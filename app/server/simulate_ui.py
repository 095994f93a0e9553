"""Simulate this server: the log's settings and the requests its Prefill lines imply, run through the model
on a GPU and model the person picks, and the log beside the model."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app import compute
from app.charts import timelines
from app.server import frames as sf
from app.server.compute import ReadLog
from app.server.controls import GPU, MODEL, OUTPUT, PAGE, base_data
from app.server.log_ui import VERDICTS
from app.server.page import cache_key, headline_ui
from app.story import diagnosis
from app.ui.chart import chart_ui
from app.ui.controls import control_ui
from app.ui.resolved import cut_off_ui, resolved_ui
from engine_model import InputError, longest_chunk_run, scenario_from_log, validate
from engine_model import log_settings as settings


def simulate_log_ui(read: ReadLog, values: dict) -> None:
    st.divider()
    st.markdown("### Simulate this server")
    st.markdown("The model runs the log's settings on a GPU and model you pick, with the requests the Prefill lines "
                "imply (arrival = the line's time; the log does not say how long replies were).")
    model_path = settings(read.parsed).get("model_path")
    cols = st.columns(3)
    with cols[0]:
        control_ui(PAGE, GPU)
    with cols[1]:
        control_ui(PAGE, MODEL)
    with cols[2]:
        control_ui(PAGE, OUTPUT)
    if model_path:
        st.caption(f"The log's model is `{model_path}`; pick the nearest preset (the pass cost comes from it).")
    try:
        output_len = None if values["out"] == "auto" else values["out"]
        scenario, notes = scenario_from_log(read.parsed, validate(base_data(values)), output_len=output_len)
        if not scenario.workload.requests:
            st.info("Nothing to simulate: the log has no Prefill line with new requests.")
            return
        run = compute.run_scenario(scenario)
    except InputError as err:
        st.error(f"**This server cannot be simulated.** `{err.where}`: {err.problem}", icon=":material/block:")
        return
    with st.expander("What was estimated from the log", expanded=False):
        st.markdown("\n".join(f"- {note}" for note in notes))
    resolved_ui(run)
    cut_off_ui(run)
    _log_vs_model_ui(read, run)
    key = cache_key(scenario.model_dump_json())
    chart_ui(PAGE, "sim_passes", "The model's pass timeline",
             "One bar per forward pass the model ran (runs of identical decode passes merged): orange prefill chunk, "
             "blue decode, green mixed. Compare its shape with the log's timeline above.",
             lambda: timelines.pass_timeline(run.passes, end_at=run.end_at), cache_key=key)
    chart_ui(PAGE, "sim_kv", "The model's KV cache slots",
             "KV slots used (blue) and free, with the model's retractions as purple rules.",
             lambda: timelines.kv_occupancy(run.kv, run.retractions, end_at=run.end_at), cache_key=key)


def _log_vs_model_ui(read: ReadLog, run) -> None:
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
    headline_ui(run)
