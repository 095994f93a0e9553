"""The test on your own server, from a story page: the page's workload as a test to run against a person's
SGLang (engine_model/benchtest.py: requests, launch lines, client lines, a runner), and its results read back
beside the model (engine_model/logs/bench_results.py), per prompt-length bucket and per group, both waits.

On the ten o'clock page with the PD section shown, the test has three settings on the same requests: today's
engine, and PD under each policy that can start, as the section splits the GPUs."""

from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from app import state
from app.pd.presets import baseline
from app.present.fmt import fmt_seconds, signed_seconds
from app.present.pd import section_scenarios
from engine_model import (
    InputError,
    Scenario,
    Story,
    bench_export,
    compare_measured,
    read_bench_results,
    simulate,
    validate,
    zip_export,
)

MAX_BYTES = 256 * 1024 * 1024  # bench_results' own cap; the uploader is told the same


def settings_of(story: Story, scenario: Scenario, values: dict, layout: dict | None) -> dict[str, Scenario]:
    """The test's settings: the page's scenario ("today"), and with the PD section shown on the ten o'clock
    page, PD under each policy that can start (as the section builds it) on the same requests."""
    if layout is None:
        return {"today": scenario}
    pds = {p: pd for p, pd in section_scenarios(values, layout).items() if not isinstance(pd, InputError)}
    if not pds:
        return {"today": scenario}
    first = next(iter(pds.values()))
    try:  # today on PD's GPUs, as the section's verdict compares (copies of the engine where PD needs more)
        today = baseline(first.model_dump(mode="json", exclude_none=True), "today", first)
    except InputError:
        today = scenario
    return {"today": today, **pds}


@st.cache_data(max_entries=4, show_spinner="Writing the test…")
def test_zip(settings_json: str) -> bytes:
    settings = {name: validate(data) for name, data in json.loads(settings_json).items()}
    first = next(iter(settings.values()))
    return zip_export(bench_export(first, settings))


@st.cache_resource(max_entries=4, show_spinner="Running the model on the test's requests…")
def model_requests(scenario_json: str) -> list:
    """The model's run of a setting: its requests with every token time (compare needs the gaps)."""
    return simulate(validate(json.loads(scenario_json))).requests


def export_test_ui(col, story: Story, settings: dict[str, Scenario]) -> None:
    """A download: the page's workload as a test for the person's own SGLang server."""
    payload = json.dumps({name: s.model_dump(mode="json", exclude_none=True) for name, s in settings.items()},
                         sort_keys=True)
    col.download_button(
        "Export → the test for your server (ZIP)", lambda: test_zip(payload),
        file_name=f"{story.key}-test.zip", mime="application/zip", on_click="ignore",
        icon=":material/lab_research:", width="stretch",
        help="This page's requests (lengths, arrivals, groups), the SGLang launch lines for "
             + ", ".join(settings) + ", the client lines and a runner that sends each request at its own "
             "time and records first token and every gap in bench_serving's output format. Read its results "
             "back below.")


def results_ui(story: Story, settings: dict[str, Scenario]) -> None:
    """Upload the test's output file(s): each run beside the model's run of the same setting."""
    st.markdown("##### Your server's results, beside the model")
    upload = st.file_uploader("bench_serving or run_test.py output (.jsonl)", type=["jsonl", "json", "txt"],
                              key=state.keys(story.key).widget("bench_results"),
                              help="The file the exported test's client lines write (--output-file). Each "
                                   "line is one run; its tag names the setting (today, early, "
                                   "prefill_complete).")
    if upload is None:
        st.caption("Run the exported test on your server, then upload its output here: first token and gaps "
                   "per prompt length and group, measured beside the model, for each setting.")
        return
    try:
        runs = read_bench_results(upload.getvalue(), upload.name)
        for run in runs:
            setting = settings.get(run.tag or "", next(iter(settings.values())))
            requests = model_requests(setting.model_dump_json())
            found = compare_measured(run, requests, setting.metrics.bucket_edges)
            st.markdown(f"**{found.run}**" + ("" if run.tag in settings else
                                              " (no setting of this name: compared with today's)"))
            st.dataframe(comparison_frame(found), hide_index=True, width="stretch")
            for note in found.notes:
                st.caption(note)
    except InputError as err:
        st.error(f"**{err.where}**: {err.problem}", icon=":material/error:")


def comparison_frame(found) -> pd.DataFrame:
    """One row per set of requests and statistic: measured, the model, the difference."""
    return pd.DataFrame([{"requests": f"{row.scope}: {row.name}", "wait": row.metric, "statistic": row.stat,
                          "measured": fmt_seconds(row.measured_s), "model": fmt_seconds(row.model_s),
                          "measured − model": "—" if row.diff_s is None else signed_seconds(row.diff_s)}
                         for row in found.rows])
