"""The step-through section: stepper, the decision under the cursor, and every timeline with the cursor on it.

It is a fragment, so stepping, scrubbing and playing redraw only this section. Play re-runs the fragment
every TICK_S seconds and moves the cursor to the next event (a prefill, mixed or retraction) or a
fiftieth of the run later, whichever comes first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import streamlit as st

from app import state
from app.charts import timelines
from app.charts.frames import RunFrames
from app.story import cursor, tour
from app.story.decision import decision_ui
from app.story.stepper import stepper_ui
from app.story.top import run_key
from app.ui.chart import chart_ui
from engine_model import Story

TICK_S = 1.2


def timeline_ui(story: Story, run: RunFrames) -> None:
    keys = state.keys(story.key)
    scenario = st.session_state.get(keys.scenario)
    _settle_cursor(story, run, scenario.model_dump_json() if scenario is not None else "")
    playing = st.session_state.get(keys.playing, False)
    st.fragment(_timeline, run_every=TICK_S if playing else None)(story, run)


def _settle_cursor(story: Story, run: RunFrames, this_run: str) -> None:
    """Keep the cursor meaningful across runs: a tour step's spec, else the same time, else the URL's t, else
    the story's default."""
    its, keys = run.iterations, state.keys(story.key)
    pending = st.session_state.pop(keys.pending_cursor, None)
    if pending is not None:
        pos = cursor.resolve(its, pending)
    elif st.session_state.get(keys.run_key) != this_run:
        t = st.session_state.get(keys.cursor_t)
        if t is None:
            t, note = state.cursor_param(run.end_at)
            if note is not None:
                st.warning(note, icon=":material/link:")
        pos = cursor.at_time(its, t) if t is not None else cursor.resolve(its, story.default_cursor)
    else:
        pos = st.session_state.get(keys.position, 0)
    st.session_state[keys.position] = min(max(int(pos), 0), max(len(its) - 1, 0))
    st.session_state[keys.run_key] = this_run


def _timeline(story: Story, run: RunFrames) -> None:
    its, keys = run.iterations, state.keys(story.key)
    if its.empty:
        st.info("Nothing ran.")
        return
    if keys.picked_pos in st.session_state:
        st.session_state[keys.position] = st.session_state.pop(keys.picked_pos)
    if st.session_state.get(keys.playing):
        nxt = cursor.play_step(its, st.session_state[keys.position])
        st.session_state[keys.position] = nxt
        if nxt >= len(its) - 1:
            st.session_state[keys.playing] = False
            st.rerun(scope="app")
    pos = st.session_state[keys.position]
    row = its.iloc[pos]
    st.session_state[keys.cursor_t] = float(row["start_at"])
    state.set_cursor_param(float(row["start_at"]))

    key = (run_key(story.key), pos)
    charts = timeline_charts(run, row)
    if state.is_presenting():  # the token streams right under the headline cards, on the first screen
        chart_ui(story.key, *charts[1], tour.pointer(story, charts[1].chart_id), key)
        charts = charts[:1] + charts[2:]
    st.markdown("#### Step through the scheduler's decisions")
    stepper_ui(story, run)
    decision_ui(row, st.session_state.get(keys.scenario))
    for chart in charts:
        pick = (lambda point: _pick(story, run, point)) if chart.chart_id == "passes" else None
        chart_ui(story.key, *chart, tour.pointer(story, chart.chart_id), key, on_pick=pick)


class TimelineChart(NamedTuple):
    """One of the step-through's timelines: what chart_ui needs to draw it."""

    chart_id: str
    title: str
    caption: str
    build: Callable[[], object]  # -> an Altair chart, built only when its spec is not cached


def timeline_charts(run: RunFrames, row) -> list[TimelineChart]:
    """The four timelines, each with the cursor at `row`'s start: passes, tokens, KV, queue."""
    at, end = float(row["start_at"]), run.end_at
    index = int(row["index"]) if len(run.lanes) == 1 else None
    stall_s = run.stall_threshold_s
    return [
        TimelineChart(
            "passes", "Pass timeline: what the GPU ran",
            "One bar per forward pass (runs of identical decode passes merged), width = how long it took. "
            "Orange: a prefill chunk; blue: decode; green: a mixed pass (chunk + one decode token for each "
            "running request). The black outline is the pass under the cursor. Click a bar to move the "
            "cursor there.",
            lambda: timelines.pass_timeline(run.passes, at, end, index)),
        TimelineChart(
            "tokens", "Token streams: who got a token, and when",
            f"One lane per request, a tick per token (thinned where nothing happens). Pink to dark purple: "
            f"no token for {stall_s:g} s or more — a stall, darker the longer it lasts"
            f"{' (' + timelines.chunk_pass_words(run.chunk_pass_s) + ')' if run.chunk_pass_s else ''}. "
            "Orange/green blocks: this request's prompt being prefilled, chunk by chunk. Light grey: waiting "
            "in the queue; dark grey: retracted, waiting to be prefilled again.",
            lambda: timelines.token_streams(run.tokens, run.stalls, run.chunks, run.waits,
                                            run.request_order, at, end, stall_s, run.chunk_pass_s)),
        TimelineChart(
            "kv", "KV cache slots",
            "How much of the KV pool holds tokens (blue), is reserved for requests not yet running "
            "(orange, PD decode only) or is free. Purple rules: retractions — the pool could not give "
            "every running request its next token.",
            lambda: timelines.kv_occupancy(run.kv, run.retractions, at, end)),
        TimelineChart(
            "queue", "Queue depth",
            "Requests waiting for a prefill, and requests in the running (decode) batch, as the scheduler "
            "saw them.",
            lambda: timelines.queue_depth(run.queue, at, end)),
    ]


def _pick(story: Story, run: RunFrames, point: dict) -> None:
    """A click on a pass bar: move the cursor to that pass (the first of a merged run)."""
    picked = (point.get("lane"), point.get("first_index"))
    if None in picked:
        return
    its = run.iterations
    hits = its.index[(its["lane"] == picked[0]) & (its["index"] == int(picked[1]))]
    if len(hits):  # the slider owning the position is already drawn: hand it over on the rerun
        st.session_state[state.keys(story.key).picked_pos] = int(its.index.get_loc(hits[0]))
        st.rerun(scope="fragment")
