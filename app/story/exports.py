"""The foot of a story page: the run as CSV and TOML (the link that reopens the view: app.story.link)."""

from __future__ import annotations

import streamlit as st

from app import state
from app.charts.frames import RunFrames
from app.ui.exports import csv_bytes, scenario_toml
from engine_model import Story


def export_ui(story: Story, run: RunFrames) -> None:
    scenario = st.session_state.get(state.keys(story.key).scenario)
    with st.expander("Export this run: CSV and scenario TOML"):
        cols = st.columns(4)
        cols[0].download_button("Per-request metrics (CSV)", lambda: csv_bytes(run.requests),
                                file_name=f"{story.key}-requests.csv", mime="text/csv", on_click="ignore")
        cols[1].download_button("Per-iteration trace (CSV)", lambda: csv_bytes(run.iterations),
                                file_name=f"{story.key}-iterations.csv", mime="text/csv", on_click="ignore")
        if scenario is not None:
            cols[2].download_button("Scenario (TOML)", lambda: scenario_toml(scenario),
                                    file_name=f"{story.key}.toml", mime="application/toml", on_click="ignore")
        cols[3].download_button("Retractions (CSV)", lambda: csv_bytes(run.retractions),
                                file_name=f"{story.key}-retractions.csv", mime="text/csv", on_click="ignore")
        st.caption("Run it yourself: `python -m engine_model run " + f"{story.key}.toml` (the same model, no app).")
