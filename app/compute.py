"""Cached runs. Pages call these; they never simulate themselves.

Every cache is keyed by the validated scenario's JSON (`scenario.model_dump_json()`), so the same
settings — a flip back, a shared link, the baseline beside the current run — are computed once.
"""

from __future__ import annotations

import streamlit as st

from app.charts import frames
from engine_model import Scenario, simulate


@st.cache_data(max_entries=96, show_spinner="Running the scheduler model…")
def run(scenario_json: str) -> frames.RunFrames:
    """Simulate one validated scenario and build every frame the pages draw."""
    return frames.build(simulate(Scenario.model_validate_json(scenario_json)))


def run_scenario(scenario: Scenario) -> frames.RunFrames:
    return run(scenario.model_dump_json())
