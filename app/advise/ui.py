"""The "What should I set?" page's sections: the mix (a story's scenario), the budget, targets per group, the
search space; Run with a progress bar and Cancel; the recommendation and its trade in words, the Pareto chart,
the table with each candidate's links, and the exports (CSV, PNG, the benchmark to run on your own server)."""

from __future__ import annotations

import threading

import pandas as pd
import streamlit as st

from app import state
from app.present.advise import axis_title, chart_png, links, pareto_chart
from engine_model import (
    GPUS,
    MIX,
    MIX_PRESETS,
    MODELS,
    STORIES,
    WAITS,
    Advice,
    Budget,
    Cancelled,
    InputError,
    Target,
    advice_csv,
    advice_headline,
    advice_rows,
    advise,
    bench_export,
    counts_line,
    decode_mix,
    default_space,
    mix_label,
    mix_words,
    on_mix,
    trade_lines,
    why_not,
    zip_export,
)

PAGE = state.ADVISE_PAGE
KEYS = state.keys(PAGE)
STORY_KEYS = tuple(k for k in STORIES if STORIES[k].scenario(STORIES[k].defaults).workload.groups)
# Targets a person starts from, for the group most requests belong to (seconds; 0: none). An assumption: a
# chat user expects a first token within a couple of seconds and notices a pause of a few.
START_TARGETS = {"ttft_p95": 2.0, "longest_pause": 4.0}
MIX_BASE = "ten_oclock_rush"  # a request mix runs on this story's scenario (its deployment and flags)
LINKED = "mix:link"  # the mix a story page's link brought (?mix=c.…)
WAIT_LABELS = {
    "ttft_p95": "p95 first token (s)",
    "longest_pause": "longest pause (s)",
    "itl_p99": "p99 gap (s)",
}
GPU_COUNTS = (1, 2, 4, 8, 16)
CHUNKS = ("auto", 1024, 2048, 4096, 8192, 16384)
RUNNING = ("auto", 32, 64, 128, 256)


def mix_ui():
    """The mix: a story's workload as it opens, a request-mix preset, or the mix a story page sent
    (`?mix=…`, its link text), on the ten o'clock rush's scenario."""
    linked = st.query_params.get(MIX) or ""
    presets = [f"mix:{k}" for k in MIX_PRESETS]
    options = [*STORY_KEYS, *presets] + ([LINKED] if linked and linked not in MIX_PRESETS else [])
    start = (f"mix:{linked}" if linked in MIX_PRESETS else LINKED) if linked else MIX_BASE
    key = st.selectbox(
        "Request mix",
        options,
        index=options.index(start),
        format_func=lambda k: (STORIES[k].title if k in STORIES else "Your mix (from the link)" if k == LINKED
                               else f"Request mix: {MIX_PRESETS[k[4:]].label}"),
        key=KEYS.widget("story"),
        help="The workload of a story, as it opens: its groups, lengths and arrivals; or a request mix (the "
             "presets, or the one a story page's mix builder sent here).",
    )
    if key in STORIES:
        scenario = STORIES[key].scenario(STORIES[key].defaults)
        groups = ", ".join(f"{g.count:,} {g.name}" for g in scenario.workload.groups)
        st.caption(f"{scenario.about} Groups: {groups}.")
        return scenario
    text = linked if key == LINKED else key[4:]
    base = STORIES[MIX_BASE]
    try:
        scenario = on_mix(base.scenario(base.defaults), text, "mix")
    except InputError as err:
        st.error(f"`{err.where}`: {err.problem}", icon=":material/block:")
        st.stop()
    name = mix_label(text)
    st.caption(f"{name[:1].upper()}{name[1:]}: {mix_words(decode_mix(text), scenario.seed).rstrip('.')}. "
               f"Run on {base.title.lower()}'s flags; the search changes them.")
    return scenario


def budget_ui() -> Budget:
    cols = st.columns(3)
    gpus = cols[0].selectbox("GPUs", GPU_COUNTS, index=GPU_COUNTS.index(8), key=KEYS.widget("gpus"))
    gpu = cols[1].selectbox(
        "GPU",
        tuple(GPUS),
        index=tuple(GPUS).index("h100-sxm"),
        format_func=lambda k: GPUS[k].name,
        key=KEYS.widget("gpu"),
    )
    model = cols[2].selectbox(
        "Model",
        tuple(MODELS),
        index=tuple(MODELS).index("llama-3.1-70b"),
        format_func=lambda k: MODELS[k].name,
        key=KEYS.widget("model"),
    )
    return Budget(gpus, gpu, model)


def targets_ui(scenario) -> list[Target]:
    """Per group, a limit for each wait (0: no target)."""
    out = []
    most = max(scenario.workload.groups, key=lambda g: g.count).name  # its targets start set
    st.markdown("**Targets** (0: none)")
    for group in scenario.workload.groups:
        cols = st.columns([1, 2, 2, 2])
        cols[0].markdown(f"`{group.name}`")
        for col, (wait, label) in zip(cols[1:], WAIT_LABELS.items(), strict=True):
            start = START_TARGETS.get(wait, 0.0) if group.name == most else 0.0
            value = col.number_input(label, 0.0, 1e5, start, 0.1, key=KEYS.widget(f"t.{group.name}.{wait}"))
            if value > 0:
                out.append(Target(group.name, wait, float(value)))
    return out


def space_ui(budget: Budget):
    space = default_space(budget)
    with st.expander("What to search", icon=":material/tune:"):
        cols = st.columns(3)
        mixed = cols[0].multiselect(
            "Mixed chunk",
            (False, True),
            (False, True),
            key=KEYS.widget("s.mixed"),
            format_func=lambda v: "on" if v else "off",
        )
        chunk = cols[1].multiselect("Chunk size", CHUNKS, ("auto", 4096), key=KEYS.widget("s.chunk"))
        policy = cols[2].multiselect("Queue order", space.policy, space.policy, key=KEYS.widget("s.policy"))
        cons = cols[0].multiselect("Conservativeness", (0.5, 1.0, 1.5), (1.0,), key=KEYS.widget("s.cons"))
        running = cols[1].multiselect(
            "Max running requests", RUNNING, ("auto",), key=KEYS.widget("s.running")
        )
        pd_on = cols[2].toggle("PD layouts", True, key=KEYS.widget("s.pd"))
    layouts = tuple(lay for lay in space.layouts if pd_on or not lay.is_pd)
    return space.narrowed(
        layouts=layouts,
        mixed=mixed or (False,),
        chunk=chunk or ("auto",),
        policy=policy or ("fcfs",),
        conservativeness=cons or (1.0,),
        max_running=tuple(None if r == "auto" else r for r in running) or (None,),
    )


def _cancel() -> None:
    event = st.session_state.get(KEYS.widget("cancel_event"))
    if event is not None and not event.is_set():
        event.set()
        st.session_state[KEYS.widget("cancelled")] = True


def run_ui(scenario, budget: Budget, targets: list[Target], space) -> Advice | None:
    """Run with a progress bar and Cancel; the last advice for these inputs is kept in the session."""
    method = "the whole grid" if space.size <= 300 else "Optuna's NSGA-II, 200 of them"
    st.caption(
        f"{space.size:,} candidate settings ({len(space.layouts)} GPU layouts); this search runs "
        f"{method}, every candidate checked as SGLang checks at start-up first."
    )
    inputs = (scenario.model_dump_json(), budget, tuple(targets), space.to_json())
    cols = st.columns([1, 1, 4])
    run = cols[0].button("Run", type="primary", icon=":material/play_arrow:", key=KEYS.widget("run"))
    cols[1].button("Cancel", icon=":material/stop:", key=KEYS.widget("cancel"), on_click=_cancel)
    kept = st.session_state.get(KEYS.widget("advice"))
    if st.session_state.pop(KEYS.widget("cancelled"), False) and not run:
        st.warning(
            "Cancelled. The candidates that finished are kept: Run again and they are not rerun.",
            icon=":material/stop:",
        )
    if run:
        event = threading.Event()
        st.session_state[KEYS.widget("cancel_event")] = event
        bar = st.progress(0.0, text="Starting…")

        def progress(done: int, total: int) -> None:
            bar.progress(min(done / max(total, 1), 1.0), text=f"{done:,} of {total:,} candidates")

        try:
            advice = advise(scenario, budget, targets, space, progress=progress, cancel=event)
        except Cancelled as stop:
            st.warning(f"Cancelled after {len(stop.done):,} candidates.", icon=":material/stop:")
            return None
        except InputError as err:
            st.error(f"`{err.where}`: {err.problem}", icon=":material/block:")
            return None
        bar.empty()
        kept = (inputs, advice)
        st.session_state[KEYS.widget("advice")] = kept
    if kept is None:
        return None
    if kept[0] != inputs:
        st.info("The inputs changed since the last run: Run again to search them.", icon=":material/refresh:")
    return kept[1]


def advice_ui(advice: Advice) -> None:
    said = advice_headline(advice)
    (st.success if advice.best else st.warning)(said, icon=":material/recommend:")
    for line in trade_lines(advice):
        st.markdown(f"- {line}" if not line.startswith("Against") else line)
    st.caption(counts_line(advice))
    group, wait = axis_ui(advice)
    st.altair_chart(pareto_chart(advice, group, wait), width="stretch")
    st.caption(
        "Each point a candidate that ran every request to the end; the dashed line is the Pareto front "
        "(no other candidate has more output per GPU and a shorter wait). Ringed: today and the "
        "recommendation."
    )


def axis_ui(advice: Advice) -> tuple[str | None, str]:
    """Which wait the chart sets against output per GPU: the most-waiting group's, or one group's."""
    options = [(None, w) for w in WAITS] + [(g, w) for g in advice.groups for w in WAITS]
    picked = st.selectbox("Against", options, format_func=lambda o: axis_title(*o), key=KEYS.widget("axis"))
    return picked


def table_ui(advice: Advice) -> None:
    rows = advice_rows(advice)
    opened = {
        o.key: links(advice.scenario, advice.budget, o.candidate) for o in (advice.today, *advice.outcomes)
    }
    frame = pd.DataFrame(rows)
    frame["open"] = [opened[r["sets"]].get("story") for r in rows]
    frame["compare"] = [opened[r["sets"]].get("compare") for r in rows]
    frame["note"] = [opened[r["sets"]].get("missing", "") for r in rows]
    shown = frame[frame["not_proposed"] == ""]
    st.markdown(f"**Candidates that ran** ({len(shown):,}; best output per GPU first)")
    st.dataframe(
        shown.sort_values("output_per_gpu", ascending=False).drop(columns=["not_proposed", "sets"]),
        hide_index=True,
        column_config={
            "open": st.column_config.LinkColumn("open", display_text="story page"),
            "compare": st.column_config.LinkColumn("compare", display_text="Compare"),
        },
    )
    refused = [o for o in advice.outcomes if why_not(o)]
    if refused:
        with st.expander(f"Never proposed ({len(refused):,}): SGLang would refuse them, or a run stopped"):
            st.dataframe(
                pd.DataFrame([{"setting": o.candidate.words, "why": why_not(o)} for o in refused]),
                hide_index=True,
            )
    pick = advice.best or advice.closest
    if pick is not None:
        found = opened[pick.key]
        if found:
            st.markdown(
                f"Open the recommendation: [its story page]({found['story']})"
                + (f" · [Compare with SGLang's defaults]({found['compare']})" if "compare" in found else "")
                + (f" ({found['missing']})" if "missing" in found else "")
            )
        st.code(
            f"python -m engine_model run {advice.scenario} "
            + " ".join(f"--set '{s}'" for s in pick.candidate.sets(advice.budget)),
            language="bash",
        )


def exports_ui(advice: Advice, scenario) -> None:
    cols = st.columns(3)
    cols[0].download_button(
        "Every candidate (CSV)",
        advice_csv(advice_rows(advice)),
        "advice.csv",
        "text/csv",
        icon=":material/download:",
        key=KEYS.widget("csv"),
        on_click="ignore",
    )
    axis = st.session_state.get(KEYS.widget("axis")) or (None, "ttft_p95")
    cols[1].download_button(
        "The chart (PNG)",
        lambda: chart_png(advice, *axis),
        "advice.png",
        "image/png",
        icon=":material/download:",
        key=KEYS.widget("png"),
        on_click="ignore",
    )
    pick = advice.best or advice.closest
    if pick is not None:

        def bench() -> bytes:
            today = advice.today.candidate.scenario(scenario, advice.budget)
            best = pick.candidate.scenario(scenario, advice.budget)
            return zip_export(bench_export(best, {"today": today, "recommended": best}))

        cols[2].download_button(
            "The benchmark to run on your own server",
            bench,
            "who-waits-advise-test.zip",
            "application/zip",
            icon=":material/download:",
            key=KEYS.widget("bench"),
            on_click="ignore",
            help="Today's setting and the recommendation: the same requests, the launch "
            "lines for each, the client that replays them (docs/logs-and-traces.md §9).",
        )
