"""The step-through section: stepper, the decision under the cursor, and every timeline with the cursor on it.

It is a fragment, so stepping, scrubbing and playing redraw only this section. Play re-runs the fragment
every TICK_S seconds and moves the cursor to the next event (a prefill, mixed or retraction) or a
fiftieth of the run later, whichever comes first.
"""

from __future__ import annotations

import streamlit as st

from app import charts, cursor, rules
from app.frames import RunFrames
from app.stories import Story
from app.widgets import chart_ui, fmt_seconds, run_key

TICK_S = 1.2


def timeline_ui(story: Story, run: RunFrames) -> None:
    scenario = st.session_state.get(f"{story.key}.scenario")
    run_key = scenario.model_dump_json() if scenario is not None else ""
    playing = st.session_state.get(f"{story.key}.playing", False)
    _settle_cursor(story, run, run_key)
    st.fragment(_timeline, run_every=TICK_S if playing else None)(story, run)


def _pos_key(story: Story) -> str:
    return f"{story.key}.it"


def _settle_cursor(story: Story, run: RunFrames, run_key: str) -> None:
    """Keep the cursor meaningful across runs: a tour step's spec, else the same time, else the URL's t, else the story's default."""
    its = run.iterations
    key, last_run = _pos_key(story), f"{story.key}.run_key"
    pending = st.session_state.pop(f"{story.key}.pending_cursor", None)
    if pending is not None:
        pos = cursor.resolve(its, pending)
    elif st.session_state.get(last_run) != run_key:
        t = st.session_state.get(f"{story.key}.cursor_t")
        if t is None and "t" in st.query_params:
            try:
                t = float(st.query_params["t"])
            except ValueError:
                st.warning(f"URL parameter `t={st.query_params['t']}`: expected seconds; using the story's default cursor.")
        pos = cursor.at_time(its, t) if t is not None else cursor.resolve(its, story.default_cursor)
    else:
        pos = st.session_state.get(key, 0)
    st.session_state[key] = min(max(int(pos), 0), max(len(its) - 1, 0))
    st.session_state[last_run] = run_key


def _move(story: Story, run: RunFrames, how: str) -> None:
    its, key = run.iterations, _pos_key(story)
    pos = st.session_state.get(key, 0)
    st.session_state[key] = {
        "start": 0, "end": len(its) - 1, "prev": max(pos - 1, 0), "next": min(pos + 1, len(its) - 1),
        "prev_event": cursor.prev_event(its, pos), "next_event": cursor.next_event(its, pos),
    }[how]


def _timeline(story: Story, run: RunFrames) -> None:
    its, key = run.iterations, _pos_key(story)
    playing_key = f"{story.key}.playing"
    if its.empty:
        st.info("Nothing ran.")
        return
    if f"{story.key}.picked_pos" in st.session_state:
        st.session_state[key] = st.session_state.pop(f"{story.key}.picked_pos")
    if st.session_state.get(playing_key):
        nxt = cursor.play_step(its, st.session_state[key])
        st.session_state[key] = nxt
        if nxt >= len(its) - 1:
            st.session_state[playing_key] = False
            st.rerun(scope="app")
    pos = st.session_state[key]
    row = its.iloc[pos]
    st.session_state[f"{story.key}.cursor_t"] = float(row["start_at"])
    st.query_params["t"] = f"{row['start_at']:.3f}"

    st.markdown("#### Step through the scheduler's decisions")
    _stepper_ui(story, run)
    _why_ui(row)

    cursor_at, end_at = float(row["start_at"]), run.end_at
    key = (run_key(story.key), pos)
    chart_ui(story.key, "passes", "Pass timeline: what the GPU ran",
             "One bar per forward pass (runs of identical decode passes merged), width = how long it took. Orange: a "
             "prefill chunk; blue: decode; green: a mixed pass (chunk + one decode token for each running request). "
             "The black outline is the pass under the cursor. Click a bar to move the cursor there.",
             lambda: charts.pass_timeline(run.passes, cursor_at, end_at, int(row["index"]) if len(run.lanes) == 1 else None),
             story, key, on_pick=lambda point: _pick(story, run, point))
    chart_ui(story.key, "tokens", "Token streams: who got a token, and when",
             f"One lane per request, a tick per token (thinned where nothing happens). Purple: no token for "
             f"{run.stall_threshold_s:g} s or more — a stall. Orange/green blocks: this request's prompt being "
             "prefilled, chunk by chunk. Grey: waiting in the queue.",
             lambda: charts.token_streams(run.tokens, run.stalls, run.chunks, run.waits, run.request_order, cursor_at,
                                          end_at, run.stall_threshold_s), story, key)
    chart_ui(story.key, "kv", "KV cache slots",
             "How much of the KV pool holds tokens (blue), is reserved for requests not yet running (orange, PD decode "
             "only) or is free. Purple rules: retractions — the pool could not give every running request its next "
             "token.", lambda: charts.kv_occupancy(run.kv, run.retractions, cursor_at, end_at), story, key)
    chart_ui(story.key, "queue", "Queue depth",
             "Requests waiting for a prefill, and requests in the running (decode) batch, as the scheduler saw them.",
             lambda: charts.queue_depth(run.queue, cursor_at, end_at), story, key)


def _pick(story: Story, run: RunFrames, point: dict) -> None:
    """A click on a pass bar: move the cursor to that pass (the first of a merged run)."""
    picked = (point.get("lane"), point.get("first_index"))
    if None in picked:
        return
    its = run.iterations
    hits = its.index[(its["lane"] == picked[0]) & (its["index"] == int(picked[1]))]
    if len(hits):  # the slider owning the position is already drawn: hand it over on the rerun
        st.session_state[f"{story.key}.picked_pos"] = int(its.index.get_loc(hits[0]))
        st.rerun(scope="fragment")


def _stepper_ui(story: Story, run: RunFrames) -> None:
    its, key = run.iterations, _pos_key(story)
    playing_key = f"{story.key}.playing"
    cols = st.columns([1, 1, 1, 1.4, 1, 1, 1])
    buttons = (("Start", "start", ":material/first_page:"), ("Event", "prev_event", ":material/fast_rewind:"),
               ("Step", "prev", ":material/chevron_left:"), None, ("Step", "next", ":material/chevron_right:"),
               ("Event", "next_event", ":material/fast_forward:"), ("End", "end", ":material/last_page:"))
    for col, spec in zip(cols, buttons, strict=True):
        if spec is None:
            continue
        label, how, icon = spec
        col.button(label, key=f"{story.key}.move.{how}", on_click=_move, args=(story, run, how), width="stretch",
                   icon=icon, icon_position="right" if how in ("next", "next_event", "end") else "left",
                   help={"prev_event": "back to the previous prefill, mixed pass or retraction",
                         "next_event": "on to the next prefill, mixed pass or retraction"}.get(how))
    playing = st.session_state.get(playing_key, False)
    if cols[3].button("Pause" if playing else "Play", key=f"{story.key}.play", type="primary", width="stretch",
                      icon=":material/pause:" if playing else ":material/play_arrow:"):
        st.session_state[playing_key] = not playing
        st.rerun(scope="app")
    row = its.iloc[st.session_state[key]]
    st.slider(f"Iteration (t = {row['start_at']:.3f} s)", 0, len(its) - 1, key=key, label_visibility="collapsed")


def _why_ui(row) -> None:
    """The decision under the cursor, the SGLang function it mirrors, and the model's code for it."""
    with st.container(border=True):
        left, right = st.columns([1, 2.2])
        with left:
            st.markdown(f"**Iteration {int(row['index'])}** · {row['lane']}  \n"
                        f"t = {row['start_at']:.3f} s · {row['kind']} · {fmt_seconds(row['duration_s'])}  \n"
                        f"{int(row['num_prefill_tokens']):,} prompt tokens, {int(row['num_decode_rows'])} decode rows  \n"
                        f"waiting {int(row['num_waiting'])} · running {int(row['num_running'])}  \n"
                        f"KV {int(row['kv_used']):,} / {int(row['kv_capacity']):,} slots"
                        + (f" · reserved {int(row['kv_reserved']):,}" if row["kv_reserved"] else ""))
        with right:
            st.markdown(f"**Why:** {row['reason'] or '—'}")
            st.markdown(f"**SGLang rule:** `{row['mirrors'] or '—'}`")
            names = [n for n in rules.chain(row["mirrors"] or "") if rules.source(n) is not None]
            with st.expander("Show the rule (the model's own code)"):
                if not names:
                    st.caption("No model code is linked to this decision.")
                else:
                    tabs = st.tabs([n.split(".")[-1] for n in reversed(names)])
                    for tab, name in zip(tabs, reversed(names), strict=True):
                        qualname, code = rules.source(name)
                        tab.caption(f"SGLang `{name}` → model `{qualname}`")
                        tab.code(code, language="python")
