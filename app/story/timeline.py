"""The step-through section: the token streams with the cursor on them; then, each in a fold built when opened
(app/ui/fold.py), the stepper with the decision under the cursor and the pass timeline, the wait for the next
token, and the KV pool with the queue. A first view draws one chart (docs/performance.md).

It is a fragment, so stepping, scrubbing and playing redraw only this section. Play re-runs the fragment
every TICK_S seconds and moves the cursor to the next event (a prefill, mixed or retraction) or a
fiftieth of the run later, whichever comes first.
"""

from __future__ import annotations

import streamlit as st

from app import state
from app.charts import views
from app.charts.frames import RunFrames
from app.present.fmt import fmt_count, fmt_share
from app.room import ui as room
from app.story import cursor, tour
from app.story.cursor import marked_lanes
from app.story.decision import decision_ui
from app.story.stepper import stepper_ui
from app.story.top import run_key
from app.ui.chart import chart_ui
from app.ui.fold import folded, open_fold
from engine_model import Story
from engine_model import longest_block as longest

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
            if t is not None:  # the URL keeps milliseconds: a pass starting within half of one is meant
                t += 0.5e-3
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
    room.publish_view()  # the cursor moves inside this fragment: the room follows it too

    key = (run_key(story.key), pos)
    index = int(row["index"]) if len(run.lanes) == 1 else None
    step = tour.active_step(story)  # a step that keeps what comes next for later veils it, up to the cursor
    veil = float(row["start_at"]) if step is not None and step.veiled else None
    views_now = views.story_views(run, float(row["start_at"]), index, marked_lanes(run, row), veil)
    charts = {chart.chart_id: chart for chart in views_now}
    _chart(story, run, charts["tokens"], key)  # the lesson, right under the headline cards
    with folded(f"Step through the scheduler's decisions — {_where(row)}", tour.STEPS,
                expanded=state.is_presenting(), icon=":material/footprint:") as is_open:
        if is_open:
            stepper_ui(story, run)
            decision_ui(row, st.session_state.get(keys.scenario))
            block = longest(run.front_end, float(row["start_at"]), float(row["end_at"]))
            if block is not None:
                st.caption(front_end_note(block))
            _chart(story, run, charts["passes"], key)
    with folded("How long each reply waited for its next token", tour.WAIT,
                icon=":material/show_chart:") as is_open:
        if is_open:
            _chart(story, run, charts["wait"], key)
    memory = f"KV cache and queue — {memory_words(its)}"
    with folded(memory, tour.MEMORY, icon=":material/memory_alt:") as is_open:
        if is_open:
            _chart(story, run, charts["kv"], key)
            _chart(story, run, charts["queue"], key)


def _chart(story: Story, run: RunFrames, chart, key) -> None:
    pick = (lambda point: _pick(story, run, point)) if chart.chart_id == "passes" else None
    chart_ui(story.key, *chart, tour.pointer(story, chart.chart_id), key, on_pick=pick)


def front_end_note(block) -> str:
    """The front end during this pass, in words from the run (engine_model/frontend.py)."""
    return (f"Meanwhile, outside the scheduler: {block.words()} from t = {block.start_at:.3f} s to "
            f"{block.end_at:.3f} s (`TokenizerManager._tokenize_texts` runs on the event loop that streams "
            "every reply); the tokens made meanwhile reach each client as one chunk.")


def _where(row) -> str:
    """The cursor in words, for the step-through's title."""
    return f"iteration {int(row['index'])} · {row['lane']} · t = {row['start_at']:.3f} s · {row['kind']}"


def memory_words(its) -> str:
    """The KV pool and the queue over the run in one line, for the fold's title."""
    peak = float((its["kv_used"] / its["kv_capacity"].where(its["kv_capacity"] > 0)).max() or 0.0)
    retractions = int((its["retracted"] != "").sum())
    waiting = int(its["num_waiting"].max()) if len(its) else 0
    pushed = {0: "no retractions", 1: "1 retraction"}.get(retractions,
                                                          f"{fmt_count(retractions)} retractions")
    queued = f"up to {fmt_count(waiting)} waiting" if waiting else "none waiting"
    return f"the pool at most {fmt_share(peak)} full · {pushed} · {queued}"


def _pick(story: Story, run: RunFrames, point: dict) -> None:
    """A click on a pass bar: move the cursor to that pass (the first of a merged run)."""
    picked = (point.get("lane"), point.get("first_index"))
    if None in picked:
        return
    its = run.iterations
    hits = its.index[(its["lane"] == picked[0]) & (its["index"] == int(picked[1]))]
    if len(hits):  # the slider owning the position is already drawn: hand it over on the rerun
        st.session_state[state.keys(story.key).picked_pos] = int(its.index.get_loc(hits[0]))
        open_fold(tour.STEPS)  # the decision at that pass
        st.rerun(scope="fragment")
