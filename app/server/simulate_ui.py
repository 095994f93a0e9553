"""Simulate this server: the log's settings and requests (those its Prefill lines imply and those already
streaming when it begins) run through the model on a GPU and model the person picks, the log beside the
model, and the same log replayed under the story switches (mixed chunk, chunk size, prefill-decode
interval)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app import compute, state
from app.charts import timelines
from app.charts.frames import RunFrames
from app.pd.section import checklist_ui
from app.server import frames as sf
from app.server.compute import ReadLog
from app.server.controls import (
    AS_LOGGED,
    FIGURES,
    GPU,
    OUTPUT,
    PAGE,
    REPLAY_CONTROLS,
    REPLAY_DEPLOYMENT,
    REPLAY_MAX,
    REPLAY_ROW,
    REPLAY_SWITCHES,
    base_data,
    picked,
)
from app.server.log_ui import VERDICTS
from app.server.page import cache_key, headline_ui
from app.server.replay import replay_scenario, streak_note, with_switches
from app.story import diagnosis
from app.ui.chart import chart_ui
from app.ui.controls import control_ui
from app.ui.deployment import figures_ui
from app.ui.fold import folded
from app.ui.resolved import cut_off_ui, resolved_ui
from engine_model import (
    MAX_OBSERVED_REQUESTS,
    MODELS,
    NOT_MATCHED,
    InputError,
    checklist,
    deployment_from_log,
    longest_run,
    mix_of,
    settings_of_log,
    validate,
)
from engine_model import log_settings as settings

SIMULATE = state.keys(PAGE).widget("simulate")  # the replay's fold (open: the replay runs)


def simulate_log_ui(read: ReadLog, values: dict) -> None:
    """The replay, in a fold built when opened (its run on the server and its controls and tables in the
    browser were a third of the page's first view); a link that sets any of its controls opens it."""
    st.divider()
    st.markdown("### Simulate this server")
    st.markdown("The model runs the log's own deployment — its model (from `model_path`), tensor parallel "
                "and precision — on the GPU you pick (a log does not name it), with the log's settings and "
                "the requests the Prefill lines imply (arrival: the line's time, or earlier when a "
                "`#queue-req` said the request was already waiting) and those already streaming when the log "
                "begins (the log does not say how long replies were). Pick another model, TP or precision "
                "to ask what if.")
    asked = any(values[c.key] != c.default for c in REPLAY_CONTROLS)
    with folded("Replay the log in the model: the GPU, the deployment and the story switches",
                SIMULATE, expanded=asked, icon=":material/play_circle:") as is_open:
        if is_open:
            _replay_ui(read, values)


def _replay_ui(read: ReadLog, values: dict) -> None:
    replay_deployment_ui(read, values)
    switches = switches_ui()
    scenarios = replay_or_stop(read, values, switches)
    if scenarios is None:
        return
    (logged, notes), switched = scenarios
    kept_ui(read, logged, values[REPLAY_MAX.key])
    run = compute.run_scenario(logged)
    unmatched = [n.removeprefix(NOT_MATCHED) for n in notes if n.startswith(NOT_MATCHED)]
    st.info("**What the replay could not match**\n" + "\n".join(f"- {n}" for n in unmatched),
            icon=":material/rule:")
    with folded("What was read and estimated from the log", state.keys(PAGE).widget("read")) as is_open:
        if is_open:
            st.markdown("\n".join(f"- {note}" for note in notes if not note.startswith(NOT_MATCHED)))
    resolved_ui(run)
    cut_off_ui(run)
    _log_vs_model_ui(read, run)
    shown = run if switched is None else compute.run_scenario(switched)
    if switched is not None:
        _switched_ui(run, shown, switches)
    key = cache_key(shown.summary.config)
    which = "as the log ran it" if switched is None else "under your switches"
    with folded(f"The model's pass timeline and KV cache, {which}", state.keys(PAGE).widget("sim_charts"),
                icon=":material/view_timeline:") as is_open:
        if is_open:
            _model_charts_ui(shown, which, key)
    log_checklist_ui(read, logged)


def _model_charts_ui(shown, which: str, key) -> None:
    chart_ui(PAGE, "sim_passes", f"The model's pass timeline, {which}",
             "One bar per forward pass the model ran (runs of identical decode passes merged): orange "
             "prefill chunk, blue decode, green mixed. Compare its shape with the log's timeline above.",
             lambda: timelines.pass_timeline(shown.passes, end_at=shown.end_at), cache_key=key)
    chart_ui(PAGE, "sim_kv", f"The model's KV cache slots, {which}",
             "KV slots used (blue) and free, with the model's retractions as dark grey rules.",
             lambda: timelines.kv_occupancy(shown.kv, shown.retractions, end_at=shown.end_at), cache_key=key)


def log_checklist_ui(read: ReadLog, scenario) -> None:
    """The checklist from what a log shows: the mix of the requests its Prefill lines introduce and its own
    server's settings (server_args: one role, no environment variables)."""
    seen = [r for r in scenario.workload.requests if r.group == "observed"]
    mix = (mix_of([r.prompt_len for r in seen], [r.output_len for r in seen], [r.arrival_at for r in seen],
                  scenario.metrics.bucket_edges[0]) if seen else None)
    st.divider()
    checklist_ui(checklist(mix, settings=settings_of_log(read.parsed.server_args or {}),
                           model=scenario.model.name))
    mode = (read.parsed.server_args or {}).get("disaggregation_mode", "not in the log")
    st.caption(f"From your log: the prompts its Prefill lines imply and its own server's settings "
               f"(disaggregation_mode {mode}); a log shows one server, not the other role, and no "
               "environment variables. (b) and (c) need runs under both policies: load the requests as a "
               "trace (*A request trace*) and split prefill from decode there.")


def kept_ui(read: ReadLog, scenario, cap: int) -> None:
    """How many of the requests the log's Prefill lines introduce the replay keeps, and the rest dropped."""
    kept = sum(r.group == "observed" for r in scenario.workload.requests)
    seen = read.num_observed
    if seen <= kept:
        st.caption(f"The replay keeps all {seen:,} requests the log's Prefill lines introduce.")
        return
    at_cap = " (the most the engine reads from a log)" if seen >= MAX_OBSERVED_REQUESTS else ""
    st.warning(f"The replay keeps the first {kept:,} of the {seen:,} requests the log's Prefill lines "
               f"introduce{at_cap}: {seen - kept:,} past the cap of {cap:,} are dropped. Raise **Replay at "
               f"most (requests)** (up to {MAX_OBSERVED_REQUESTS:,}) to keep them.",
               icon=":material/filter_alt:")


# px: each label and value whole, so the seven wrap as 5 + 2 at 1440 px and 4 + 3 at 1280 px inside the
# replay's fold, a small gap apart (TP and the precisions take the rest: 150)
REPLAY_WIDTH = {GPU.key: 200, REPLAY_DEPLOYMENT["model"].key: 200, OUTPUT.key: 260, REPLAY_MAX.key: 210}


def replay_deployment_ui(read: ReadLog, values: dict) -> None:
    """The GPU, the log's model, TP and precision (each 'as in the log' or a pick), the reply length, and the
    GPU's figures and the model's shapes."""
    with st.container(horizontal=True, gap="small", vertical_alignment="bottom"):  # one row; wraps
        for control in REPLAY_ROW:
            with st.container(width=REPLAY_WIDTH.get(control.key, 150)):
                control_ui(PAGE, control)
    logged = deployment_from_log(settings(read.parsed))
    fallback = "" if logged.model else (f"; it names no model, so \"as in the log\" runs "
                                        f"{MODELS[values['model']].name}")
    st.caption("As in the log: " + ("; ".join(logged.matched) or "it states none of these") + fallback)
    model = picked(values).get("model") or logged.model or values["model"]
    figures_ui(PAGE, list(FIGURES), values, values[GPU.key], model)


def switches_ui() -> dict:
    """The story switches for a replay: each 'as in the log' or a value. Returns {switch: value}."""
    st.markdown("**Replay it under the story switches** — what would your own traffic have seen?")
    out = {}
    for col, (name, control) in zip(st.columns(len(REPLAY_SWITCHES)), REPLAY_SWITCHES.items(), strict=True):
        with col:
            out[name] = control_ui(PAGE, control)
    return out


def replay_or_stop(read: ReadLog, values: dict, switches: dict):
    """((scenario as logged, notes), scenario under the switches or None), or None with the reason shown."""
    try:
        output_len = None if values[OUTPUT.key] == "auto" else values[OUTPUT.key]
        base = validate(base_data(values))
        logged = replay_scenario(read.parsed, read.timeline, base, output_len, picked=picked(values),
                                 max_requests=values[REPLAY_MAX.key])
        if not logged[0].workload.requests:
            st.info("Nothing to simulate: the log has no Prefill line with new requests and no request "
                    "running.")
            return None
        moved = any(v != AS_LOGGED for v in switches.values())
        switched = with_switches(logged[0], switches) if moved else None
    except InputError as err:
        st.error(f"**This server cannot be simulated.** `{err.where}`: {err.problem}",
                 icon=":material/block:")
        return None
    return logged, switched


def _log_vs_model_ui(read: ReadLog, run: RunFrames) -> None:
    parsed, timeline = read.parsed, read.timeline
    run_lines = longest_run(parsed, timeline)
    stalled = sum((r.num_running_reqs or 0) > 0 for r in run_lines)
    model = diagnosis.diagnose(run)
    peak = max((s.token_usage for s in timeline.samples if s.token_usage is not None), default=None)
    start, end = sf.log_span(timeline)
    rows = [
        ("which stall", VERDICTS.get(read.diagnosis.verdict, VERDICTS["unknown"])[2],
         diagnosis.verdict(model, run.stall_threshold_s)),
        ("retractions (requests sent back)",
         f"{len(timeline.retractions)} ({sum(r.num_retracted_reqs for r in timeline.retractions)})",
         f"{model['num_retractions']} ({model['num_retracted_requests']})"),
        ("back-to-back prefill passes while replies ran",
         f"{stalled} Prefill lines ({len(run_lines)} in the run)" if len(run_lines) >= 2 else "none",
         f"{model['prefill_streak_passes']} passes, {model['prefill_streak_s']:.2f} s"
         if model["prefill_streak_passes"] >= 2 else "none"),
        ("peak KV use", "—" if peak is None else f"{peak:.0%}", f"{model['kv_peak_fraction']:.0%}"),
        ("time covered", f"{end - start:.0f} s", f"{run.end_at:.0f} s"),
    ]
    st.markdown("#### Your log beside the model (the log's own settings)")
    st.table(pd.DataFrame(rows, columns=["", "your log", "the model"]).set_index(""))
    st.caption(":material/info: " + streak_note(run_lines, stalled, model["prefill_streak_passes"],
                                                run.summary.config["resolved"], timeline))
    log_kv, model_kv = bool(timeline.retractions), bool(model["num_retractions"])
    if log_kv != model_kv:
        st.caption(":material/info: The model and your log disagree on retraction. The model's requests are "
                   "guesses: every reply has the assumed length (try a shorter or longer one), arrivals are "
                   "the Prefill lines' times (late by the queue wait), and the pass cost is the preset's, "
                   "not your GPU's measured speed.")
    headline_ui(run)


def _switched_ui(logged: RunFrames, switched: RunFrames, switches: dict) -> None:
    """The same requests under the switches: which stall now, and the cards as logged -> switched."""
    said = ", ".join(f"{REPLAY_SWITCHES[k].label.lower()} {REPLAY_SWITCHES[k].fmt(v)}"
                     for k, v in switches.items() if v != AS_LOGGED)
    model = diagnosis.diagnose(switched)
    st.markdown(f"#### Your traffic with {said}")
    verdict = diagnosis.verdict(model, switched.stall_threshold_s)
    st.markdown(f"Same requests, same GPU and model. **{verdict}** "
                "Each card: as the log ran → under your switches.")
    headline_ui(logged, switched)
