"""Compare two configurations of a story on the same seed, and sweep one setting into a trade-off curve."""

from __future__ import annotations

import dataclasses

import pandas as pd
import streamlit as st

from app import charts, compute, state
from app.frames import RunFrames
from app.stories import STORIES, Control, Story
from app.widgets import _control_widget, chart_ui, fmt_seconds, headline_label, headline_value
from engine_model import InputError, Scenario, simulate, summary

PAGE = "compare"
CHUNK_SWEEP = (512, 1024, 2048, 4096, 8192, 16384)
LOAD_SWEEP = {  # story -> (control key, values, axis title)
    "forty_replies": ("streams", (10, 20, 40, 60, 80, 120), "streaming replies"),
    "other_stall": ("rate", (4.0, 8.0, 12.0, 16.0, 24.0, 32.0), "arrivals per second"),
    "ten_oclock_rush": ("qps", (1.0, 2.0, 4.0, 6.0, 8.0), "questions per second"),
}
B_DEFAULTS = {"mixed": True}  # B starts as "the one flag flipped"


def side_controls(story: Story, side: str) -> tuple[Control, ...]:
    """The story's server flags, once per side, with URL keys a_<key> / b_<key>."""
    out = []
    for control in story.controls:
        if control.is_flag:
            default = B_DEFAULTS.get(control.key, control.default) if side == "b" else control.default
            out.append(dataclasses.replace(control, key=f"{side}_{control.key}", default=default))
    return tuple(out)


def shared_controls(story: Story) -> tuple[Control, ...]:
    return tuple(c for c in story.controls if not c.is_flag)


def story_ui() -> Story:
    if "compare.story" not in st.session_state:
        wanted = st.query_params.get("story", "forty_replies")
        if wanted not in STORIES:
            st.warning(f"URL parameter `story={wanted}`: expected one of {', '.join(STORIES)}; using forty_replies.")
            wanted = "forty_replies"
        st.session_state["compare.story"] = wanted
    key = st.segmented_control("Story", list(STORIES), key="compare.story", format_func=lambda k: STORIES[k].title,
                               required=True)
    return STORIES[key]


def all_controls(story: Story) -> tuple[Control, ...]:
    return (*side_controls(story, "a"), *side_controls(story, "b"), *shared_controls(story))


def configurations_ui(story: Story) -> tuple[dict, dict, dict]:
    """A's flags, B's flags, and the shared workload / GPU / model / seed. Returns three {key: value} dicts."""
    page = f"{PAGE}.{story.key}"
    controls = all_controls(story)
    state.seed_widgets(page, controls, extra=("story", "sweep"))
    for note in state.notes(page):
        st.warning(note, icon=":material/link:")
    left, right = st.columns(2)
    for col, side in ((left, "a"), (right, "b")):
        with col.container(border=True):
            st.markdown(f"**Configuration {side.upper()}**" + (" — starts at SGLang defaults" if side == "a" else ""))
            for control in side_controls(story, side):
                _control_widget(page, control)
    with st.expander("Shared by A and B: workload, GPU, model, seed"):
        cols = st.columns(3)
        for i, control in enumerate(shared_controls(story)):
            with cols[i % 3]:
                _control_widget(page, control)
    values = state.values(page, controls)
    strip = lambda side: {k[2:]: v for k, v in values.items() if k.startswith(f"{side}_")}  # noqa: E731
    shared = {c.key: values[c.key] for c in shared_controls(story)}
    return strip("a"), strip("b"), shared


def run_pair(story: Story, a: dict, b: dict, shared: dict) -> tuple[RunFrames, RunFrames, Scenario]:
    try:
        sa, sb = story.scenario({**shared, **a}), story.scenario({**shared, **b})
        return compute.run_scenario(sa), compute.run_scenario(sb), sb
    except InputError as err:
        st.error(f"**This combination cannot run.** `{err.where}`: {err.problem}", icon=":material/block:")
        st.stop()


def headline_pair_ui(story: Story, ra: RunFrames, rb: RunFrames) -> None:
    st.markdown("#### A → B")
    cols = st.columns(len(story.headlines))
    for col, headline in zip(cols, story.headlines, strict=True):
        va, vb = headline_value(ra, headline), headline_value(rb, headline)
        fmt = fmt_seconds if headline.unit == "s" else (lambda v: "—" if v is None else f"{v:,}")
        delta = None
        if va is not None and vb is not None and abs(vb - va) > 1e-9:
            delta = (f"{'-' if vb < va else '+'}{fmt(abs(vb - va))}" if headline.unit == "s" else f"{vb - va:+,}")
        col.metric(headline_label(headline, rb), f"{fmt(va)} → {fmt(vb)}", delta, delta_color="inverse", border=True)


def delta_table(ra: RunFrames, rb: RunFrames) -> pd.DataFrame:
    rows = []
    for group, mb in rb.summary["metrics"]["groups"].items():
        ma = ra.summary["metrics"]["groups"].get(group, {})
        for metric, title in (("ttft_s", "first token"), ("itl_s", "gap between tokens"), ("max_itl_s", "longest pause")):
            for stat in ("p50", "p95", "p99", "max"):
                a, b = ma.get(metric, {}).get(stat), mb[metric][stat]
                if a is None and b is None:
                    continue
                rows.append({"group": group, "metric": title, "stat": stat, "A": fmt_seconds(a), "B": fmt_seconds(b),
                             "B − A (s)": None if a is None or b is None else round(b - a, 4),
                             "change": "" if not a or b is None else f"{(b - a) / a:+.0%}"})
        rows.append({"group": group, "metric": "requests retracted", "stat": "count", "A": str(ma.get("num_retracted", "")),
                     "B": str(mb["num_retracted"]), "B − A (s)": None, "change": ""})
    return pd.DataFrame(rows)


def side_by_side_ui(story: Story, ra: RunFrames, rb: RunFrames) -> None:
    end = max(ra.end_at, rb.end_at)
    for title, chart_id, build in (
        ("Pass timeline", "passes", lambda r: charts.pass_timeline(r.passes, None, end)),
        ("Token streams", "tokens", lambda r: charts.token_streams(r.tokens, r.stalls, r.chunks, r.waits, r.request_order,
                                                                   None, end, r.stall_threshold_s)),
    ):
        left, right = st.columns(2)
        with left:
            chart_ui(PAGE, f"a-{chart_id}", f"A: {title}", "Configuration A.", build(ra))
        with right:
            chart_ui(PAGE, f"b-{chart_id}", f"B: {title}", "Configuration B, same seed and x-axis.", build(rb))


# -- sweep -------------------------------------------------------------------------------------------
@st.cache_data(max_entries=512, show_spinner=False)
def _summary(scenario_json: str) -> dict:
    return summary(simulate(Scenario.model_validate_json(scenario_json))).to_json()


def _stat(s: dict, group: str, metric: str, stat: str):
    return s["metrics"]["groups"].get(group, {}).get(metric, {}).get(stat)


def sweep(story: Story, values: dict, what: str) -> tuple[pd.DataFrame, str, float | None]:
    """One run per setting (the rest as configuration B). Returns (rows, x title, current setting)."""
    if what == "chunk size":
        key, settings, title = "chunk", CHUNK_SWEEP, "chunk size (tokens, log scale)"
    else:
        key, settings, title = LOAD_SWEEP[story.key]
    rows = []
    progress = st.progress(0.0, text="Sweeping…")
    for i, setting in enumerate(settings):
        try:
            s = _summary(story.scenario({**values, key: setting}).model_dump_json())
        except InputError:
            continue
        rows.append({"setting": float(setting), "label": f"{setting:,}" if isinstance(setting, int) else f"{setting:g}",
                     "streams_p99_itl_s": _stat(s, story.stream_group, "itl_s", "p99"),
                     "streams_max_gap_s": _stat(s, story.stream_group, "max_itl_s", "max"),
                     "long_ttft_s": _stat(s, story.long_group, "ttft_s", "p95")})
        progress.progress((i + 1) / len(settings), text=f"Sweeping… {i + 1}/{len(settings)}")
    progress.empty()
    current = values.get(key)
    if key == "chunk":
        current = st.session_state.get(f"{PAGE}.resolved_chunk")
    return pd.DataFrame(rows), title, (float(current) if isinstance(current, int | float) else None)


def sweep_ui(story: Story, b: dict, shared: dict, rb: RunFrames) -> None:
    st.markdown("### Sweep: one setting against the waits")
    st.session_state[f"{PAGE}.resolved_chunk"] = rb.summary["config"]["resolved"]["chunked_prefill_size"]
    if "compare.sweep" not in st.session_state:
        st.session_state["compare.sweep"] = st.query_params.get("sweep", "chunk size")
        if st.session_state["compare.sweep"] not in ("chunk size", "load"):
            st.session_state["compare.sweep"] = "chunk size"
    what = st.segmented_control("Sweep over", ["chunk size", "load"], key="compare.sweep", required=True,
                                help="Every other setting as in configuration B.")
    frame, title, current = sweep(story, {**shared, **b}, what)
    if frame.empty:
        st.info("No setting in this sweep could run.")
        return
    stream, long = story.stream_group, story.long_group
    long_frame = frame.melt(id_vars=["setting", "label"], value_vars=["streams_p99_itl_s", "streams_max_gap_s", "long_ttft_s"],
                            var_name="metric", value_name="seconds").dropna()
    long_frame["metric"] = long_frame["metric"].map({
        "streams_p99_itl_s": f"{stream}: p99 gap between tokens", "streams_max_gap_s": f"{stream}: longest pause",
        "long_ttft_s": f"{long}: p95 first token"})
    left, right = st.columns(2)
    with left:
        chart_ui(PAGE, "sweep", f"{what.capitalize()} against the waits",
                 f"Each point is one run with configuration B's flags. The dashed rule is B's current {what}.",
                 charts.sweep_lines(long_frame, title, current, log_x=what == "chunk size"))
    curve = frame.assign(x_s=frame["streams_max_gap_s"], y_s=frame["long_ttft_s"], order=range(len(frame)),
                         is_current=(frame["setting"] == current) if current is not None else False).dropna(subset=["x_s", "y_s"])
    with right:
        chart_ui(PAGE, "tradeoff", "The trade-off curve",
                 f"Left is better for the {stream} (shorter longest pause); down is better for the {long} (earlier first "
                 "token). No point is best at both: anyone who quotes you a universal chunk size is guessing.",
                 charts.tradeoff_curve(curve, f"{stream}: longest pause (s)", f"{long}: p95 first token (s)"))
    st.dataframe(frame.rename(columns={"label": what}).drop(columns=["setting"]), hide_index=True)
