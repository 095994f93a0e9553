"""Cached runs. Pages call these; they never simulate themselves.

Every cache is keyed by the validated scenario's JSON (`scenario.model_dump_json()`), so the same
settings — a flip back, a shared link, the baseline beside the current run — are computed once for the
whole server. app/warm.py fills these caches with the stories' first views at start-up.

A run's frames are one object shared by every session (a resource, not data Streamlit copies for each
reader): copying them back out of a data cache on every page view was a sixth of a warm view's server time
(docs/performance.md). Never mutate a `RunFrames` or its frames.
"""

from __future__ import annotations

import hashlib

import streamlit as st

from app.charts import frames
from engine_model import Scenario, Trace, simulate, workload_trace


@st.cache_resource(max_entries=96, show_spinner="Running the scheduler model…")
def run(scenario_json: str) -> frames.RunFrames:
    """Simulate one validated scenario and build every frame the pages draw."""
    return frames.build(simulate(Scenario.model_validate_json(scenario_json)))


def run_scenario(scenario: Scenario) -> frames.RunFrames:
    return run(scenario.model_dump_json())


@st.cache_data(max_entries=32, show_spinner=False)
def _trace(scenario_json: str) -> Trace:
    scenario = Scenario.model_validate_json(scenario_json)
    return workload_trace(scenario.workload, scenario.seed)


def trace_of(scenario: Scenario) -> Trace:
    """A scenario's `workload.trace` read as its run reads it: the requests kept, every other row by why."""
    return _trace(scenario.model_dump_json())


def run_key(scenario: Scenario | None) -> str:
    """A short key for a run (its validated scenario): charts share their specs under it."""
    return "" if scenario is None else hashlib.sha1(scenario.model_dump_json().encode()).hexdigest()
