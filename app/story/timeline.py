"""The step-through section: stepper, the decision under the cursor, and every timeline with the cursor on it.

It is a fragment, so stepping, scrubbing and playing redraw only this section. Play re-runs the fragment
every TICK_S seconds and moves the cursor to the next event (a prefill, mixed or retraction) or a
fiftieth of the run later, whichever comes first.
"""

from __future__ import annotations

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
        if t is None and state.cursor_param() is not None:
            try:
                t = float(state.cursor_param())
            except ValueError:
                st.warning(f"URL parameter `{state.CURSOR_T}={state.cursor_param()}`: expected seconds; "
                           "using the story's default cursor.")
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

    st.markdown("#### Step through the scheduler's decisions")
    stepper_ui(story, run)
    decision_ui(row, st.session_state.get(keys.scenario))
    _timelines_ui(story, run, row, (run_key(story.key), pos))


def _timelines_ui(story: Story, run: RunFrames, row, key: tuple) -> None:
    """The four timelines, each with the cursor at `row`'s start; their specs are cached under `key`."""
    cursor_at, end_at = float(row["start_at"]), run.end_at
    chart_ui(story.key, "passes", "Pass timeline: what the GPU ran",
             "One bar per forward pass (runs of identical decode passes merged), width = how long it took. Orange: a "
             "prefill chunk; blue: decode; green: a mixed pass (chunk + one decode token for each running request). "
             "The black outline is the pass under the cursor. Click a bar to move the cursor there.",
             lambda: timelines.pass_timeline(run.passes, cursor_at, end_at,
                                             int(row["index"]) if len(run.lanes) == 1 else None),
             tour.pointer(story, "passes"), key, on_pick=lambda point: _pick(story, run, point))
    chart_ui(story.key, "tokens", "Token streams: who got a token, and when",
             f"One lane per request, a tick per token (thinned where nothing happens). Pink to dark purple: no "
             f"token for {run.stall_threshold_s:g} s or more — a stall, darker the longer it lasts"
             f"{' (' + timelines.chunk_pass_words(run.chunk_pass_s) + ')' if run.chunk_pass_s else ''}. "
             "Orange/green blocks: this request's prompt being prefilled, chunk by chunk. Light grey: waiting in "
             "the queue; dark grey: retracted, waiting to be prefilled again.",
             lambda: timelines.token_streams(run.tokens, run.stalls, run.chunks, run.waits, run.request_order,
                                             cursor_at, end_at, run.stall_threshold_s, run.chunk_pass_s),
             tour.pointer(story, "tokens"), key)
    chart_ui(story.key, "kv", "KV cache slots",
             "How much of the KV pool holds tokens (blue), is reserved for requests not yet running (orange, PD decode "
             "only) or is free. Purple rules: retractions — the pool could not give every running request its next "
             "token.", lambda: timelines.kv_occupancy(run.kv, run.retractions, cursor_at, end_at),
             tour.pointer(story, "kv"), key)
    chart_ui(story.key, "queue", "Queue depth",
             "Requests waiting for a prefill, and requests in the running (decode) batch, as the scheduler saw them.",
             lambda: timelines.queue_depth(run.queue, cursor_at, end_at), tour.pointer(story, "queue"), key)


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
