"""Your server's trace on prefill and decode workers: the PD section's comparison (app.pd.section) on the
person's own requests, and the checklist before enabling prefill_complete."""

from __future__ import annotations

import streamlit as st

from app.pd.presets import shape
from app.pd.section import Case, checklist_ui, compare_ui
from app.server.controls import PAGE, PD_CONTROLS, PD_SPLIT
from app.ui.controls import control_ui
from engine_model import InputError, Trace, check_deployment, request_mix, scenario_checklist


def trace_pd_ui(trace: Trace, values: dict, runner, data: dict) -> None:
    """The trace (`data`: its scenario; `runner`: a run on its requests) on prefill and decode workers under
    both policies, beside the same requests on the same GPUs without PD, and the checklist; off, the
    checklist's mix and settings alone."""
    st.divider()
    st.markdown("### Split prefill from decode (PD disaggregation)")
    on = control_ui(PAGE, PD_SPLIT)
    if on:
        row = st.container(horizontal=True, gap="medium", vertical_alignment="bottom")  # wraps when narrow
        counts = []
        for control, width in zip(PD_CONTROLS[1:], (140, 140, 250, 170), strict=True):
            with row.container(width=width):
                counts.append(control_ui(PAGE, control))
        compare_ui(Case(data, runner, preset="trace", group="trace", who="the trace's requests",
                        page=PAGE), 0, *counts)
        return
    num_prefill, num_decode, tp = values["pworkers"], values["dworkers"], values["wtp"]
    try:  # the workers must be able to run at all; prefill_complete's own needs are the checklist's (d)
        check_deployment(shape(data, "early", 0, num_prefill, num_decode, tp))
        scenario = shape(data, "prefill_complete", 0, num_prefill, num_decode, tp)
    except InputError as err:
        st.error(f"**PD cannot run here.** `{err.where}`: {err.problem}", icon=":material/block:")
        return
    checklist_ui(scenario_checklist(scenario, request_mix(trace, values["long"])))
    st.caption("(b) and (c) need the runs: turn on the split above.")
