"""Cached compute for the "Your server" page: read a log, load a trace, run a trace. Pages never do this work.

A log's parse, timeline and diagnosis are cached on its text; a trace on its text (or bytes) and the
options; a trace run on the validated scenario's JSON and the trace's rows (arrival, prompt, output), so
flipping a switch back, or reopening a link, draws from the cache. "Simulate this server" builds a
normal scenario (its requests are explicit), so it uses app.compute's run cache like every story.
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from app.charts import frames
from app.server.input import LOG_LIMIT_MB, METRICS_LIMIT_MB
from engine_model import (
    Diagnosis,
    ParsedLog,
    Request,
    Scenario,
    ServerCheck,
    Timeline,
    Trace,
    build_timeline,
    check_server,
    diagnose,
    load_trace,
    num_observed,
    parse_log,
    read_scrapes,
    read_server_info,
    simulate,
)


@dataclass(frozen=True)
class ReadLog:
    parsed: ParsedLog
    timeline: Timeline
    diagnosis: Diagnosis
    num_observed: int = 0  # requests its Prefill lines introduce (a replay keeps the first of them)


@st.cache_data(max_entries=16, show_spinner="Reading the log…")
def read_log(text: str, rank: str | None = None) -> ReadLog:
    """Parse, rebuild one rank's timeline and diagnose it (raises InputError on unusable text)."""
    parsed = parse_log(text, max_bytes=LOG_LIMIT_MB * 1_000_000)
    return ReadLog(parsed, build_timeline(parsed, rank=rank), diagnose(parsed, rank=rank),
                   num_observed(parsed))


@st.cache_data(max_entries=16, show_spinner="Reading the metrics…")
def check(text: str, scrapes: tuple[tuple[str, str], ...], info: tuple[str, str] | None,
          rank: str | None = None) -> ServerCheck:
    """The log's verdict with its /metrics scrapes and /server_info beside it (raises InputError naming the
    scrape or /server_info and the line when one holds nothing usable)."""
    parsed = parse_log(text, max_bytes=LOG_LIMIT_MB * 1_000_000)
    found = read_scrapes(list(scrapes), max_bytes=METRICS_LIMIT_MB * 1_000_000) if scrapes else None
    server = read_server_info(info[1], source=info[0]) if info else None
    return check_server(parsed, found, server, rank=rank)


@st.cache_data(max_entries=32, show_spinner="Loading the trace…")
def read_trace(source: str | bytes, window: tuple[float, float] | None, speedup: float, sample: float,
               max_requests: int, seed: int) -> Trace:
    return load_trace(source, window=window, speedup=speedup, sample=sample, max_requests=max_requests,
                      seed=seed)


@st.cache_data(max_entries=32, show_spinner="Running the scheduler model on the trace…")
def run_trace(scenario_json: str, rows: tuple[tuple[float, int, int], ...],
              group: str = "trace") -> frames.RunFrames:
    """Simulate a scenario whose workload is the trace's requests, and build every frame the page draws."""
    requests = trace_requests(rows, group)
    return frames.build(simulate(Scenario.model_validate_json(scenario_json), trace_requests=requests))


def trace_requests(rows: tuple[tuple[float, int, int], ...], group: str = "trace") -> list[Request]:
    """A trace's (arrival, prompt, output) rows as the requests a run serves."""
    width = len(str(len(rows)))
    return [Request(rid=f"{group}-{i:0{width}d}", group=group, arrival_at=at, prompt_len=prompt,
                    output_len=output, max_new_tokens=output)
            for i, (at, prompt, output) in enumerate(rows)]
