"""Sweep one setting (chunk size, or the story's load) with configuration B's flags, and draw the waits
against it and the trade-off curve between the streams and the long prompt."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app import state
from app.charts.frames import RunFrames
from app.compare import charts
from app.compare.pair import PAGE
from app.present import numbers
from app.present.fmt import fmt_seconds
from app.ui.chart import chart_ui
from app.ui.fold import folded
from engine_model import (
    MIX,
    InputError,
    Scenario,
    Story,
    Summary,
    checked_mix,
    decode_mix,
    encode_mix,
    simulate,
    summary,
)

CHUNK_SWEEP = (512, 1024, 2048, 4096, 8192, 16384)
LOAD_SWEEP = {  # story -> (control key, values, axis title)
    "forty_replies": ("streams", (10, 20, 40, 60, 80, 120), "streaming replies"),
    "other_stall": ("rate", (4.0, 8.0, 12.0, 16.0, 24.0, 32.0), "arrivals per second"),
    "ten_oclock_rush": ("qps", (1.0, 2.0, 4.0, 6.0, 8.0), "questions per second"),
}
SWEEPS = ("chunk size", "load")
MIX_LOADS = (0.25, 0.5, 1.0, 1.5, 2.0)  # a request mix's load times these


def mix_loads(text: str) -> tuple[list[tuple[float, dict]], str, float]:
    """A request mix's load, swept: its Poisson rate, its closed loop's clients or its burst's requests, each
    times MIX_LOADS, as (x, the mix control's value) points, the axis title and the mix's own x."""
    mix = decode_mix(text)
    field, title = {"poisson": ("rate", "requests per second"), "closed": ("concurrency", "clients"),
                    "burst": ("requests", "requests at once")}[mix.arrival]
    now = getattr(mix, field)
    points = []
    for times in MIX_LOADS:
        x = round(now * times, 3) if field == "rate" else max(1, round(now * times))
        try:
            points.append((x, {MIX: encode_mix(checked_mix({**mix.model_dump(), field: x}))}))
        except InputError:  # past the builder's limits (a burst of more than 5,000 requests)
            continue
    return list(dict(points).items()), f"{title} (the request mix's load)", now


@st.cache_data(max_entries=512, show_spinner=False)
def _summary(scenario_json: str) -> Summary:
    """Only the summary: a sweep needs no frames."""
    return summary(simulate(Scenario.model_validate_json(scenario_json)))


def _stat(s: Summary, group: str, metric: str, stat: str):
    return s.metrics.value(group, metric, stat)


def sweep(story: Story, values: dict, what: str) -> tuple[pd.DataFrame, str, float | None]:
    """One run per setting (the rest as configuration B). Returns (rows, x title, current setting). On a
    request mix the load is the mix's own: its rate, its clients or its burst, scaled (`mix_loads`)."""
    if what == "chunk size":
        key, settings, title = "chunk", CHUNK_SWEEP, "chunk size (tokens, log scale)"
        points = [(setting, {key: setting}) for setting in settings]
    elif values.get(MIX):
        key, points, title, now = MIX, *mix_loads(values[MIX])
    else:
        key, settings, title = LOAD_SWEEP[story.key]
        points = [(setting, {key: setting}) for setting in settings]
    rows = []
    progress = st.progress(0.0, text="Sweeping…")
    for i, (setting, change) in enumerate(points):
        try:
            s = _summary(story.scenario({**values, **change}).model_dump_json())
        except InputError:
            continue
        rows.append({"setting": float(setting),
                     "label": f"{setting:,}" if isinstance(setting, int) else f"{setting:g}",
                     "streams_p99_itl_s": _stat(s, story.stream_group, "itl_s", "p99"),
                     "streams_max_gap_s": _stat(s, story.stream_group, "max_itl_s", "max"),
                     "long_ttft_s": _stat(s, story.long_group, "ttft_s", "p95")})
        progress.progress((i + 1) / len(points), text=f"Sweeping… {i + 1}/{len(points)}")
    progress.empty()
    if key == MIX:
        return pd.DataFrame(rows), title, float(now)
    current = values.get(key)
    if key == "chunk":
        current = st.session_state.get(state.keys(PAGE).resolved_chunk)
    return pd.DataFrame(rows), title, (float(current) if isinstance(current, int | float) else None)


def _what(text: str) -> str:
    if text not in SWEEPS:
        raise ValueError(f"expected one of {', '.join(SWEEPS)}")
    return text


def sweep_ui(story: Story, b: dict, shared: dict, rb: RunFrames) -> None:
    with folded("Sweep: one setting against the waits — the trade-off curve",
                state.keys(PAGE).widget("sweep.open"), expanded=state.SWEEP in st.query_params,  # a link's
                icon=":material/show_chart:") as is_open:
        if is_open:
            _sweep_ui(story, b, shared, rb)


def _sweep_ui(story: Story, b: dict, shared: dict, rb: RunFrames) -> None:
    resolved = rb.summary.config["resolved"]
    st.session_state[state.keys(PAGE).resolved_chunk] = resolved["chunked_prefill_size"]
    what_key = state.keys(PAGE).widget(state.SWEEP)
    note = state.seed_param(what_key, state.SWEEP, SWEEPS[0], _what)
    if note is not None:
        st.warning(note)
    what = st.segmented_control("Sweep over", list(SWEEPS), key=what_key, required=True,
                                help="Every other setting as in configuration B.")
    frame, title, current = sweep(story, {**shared, **b}, what)
    if frame.empty:
        st.info("No setting in this sweep could run.")
        return
    left, right = st.columns(2)
    with left:
        chart_ui(PAGE, "sweep", f"{what.capitalize()} against the waits",
                 "Each point is one run with configuration B's flags. "
                 f"The dashed rule is B's current {what}.",
                 charts.sweep_lines(_long_form(story, frame), title, current, log_x=what == "chunk size"))
    curve = frame.assign(x_s=frame["streams_max_gap_s"], y_s=frame["long_ttft_s"], order=range(len(frame)),
                         is_current=(frame["setting"] == current) if current is not None else False
                         ).dropna(subset=["x_s", "y_s"])
    stream, long = story.stream_group, story.long_group
    defaults = defaults_point(story, {**shared, **b})
    with right:
        chart_ui(PAGE, "tradeoff", "The trade-off curve",
                 f"Left is better for the {stream} (shorter longest pause); down is better for the {long} "
                 "(earlier first token). No point is best at both: anyone who quotes you a universal chunk "
                 "size is guessing. The diamond is SGLang's defaults (mixed chunk off) on the same requests, "
                 "for contrast. A setting with no room for its label keeps it in its tooltip and in the "
                 "table below.",
                 charts.tradeoff_curve(curve, f"{possessive(stream)} longest pause (s)",
                                       f"{possessive(long)} p95 first token (s)", defaults))
    st.dataframe(sweep_table(story, frame, what), hide_index=True)


METRIC_WORDS = {"streams_p99_itl_s": "{stream}: p99 gap between tokens",
                "streams_max_gap_s": "{stream}: longest pause",
                "long_ttft_s": "{long}: p95 first token"}


def metric_words(story: Story) -> dict[str, str]:
    """The sweep's columns named after the story's groups."""
    return {k: v.format(stream=story.stream_group, long=story.long_group) for k, v in METRIC_WORDS.items()}


def sweep_table(story: Story, frame: pd.DataFrame, what: str) -> pd.DataFrame:
    """One row per setting, in words and units (ms or s)."""
    out = pd.DataFrame({what: frame["label"]})
    for column, words in metric_words(story).items():
        out[words] = [fmt_seconds(v) if v is not None and v == v else "not measured" for v in frame[column]]
    return out


def defaults_point(story: Story, values: dict) -> pd.DataFrame:
    """SGLang's defaults for every server flag, the workload as swept: where the curve started from."""
    try:
        s = _summary(story.scenario(story.baseline_values(values)).model_dump_json())
    except InputError:
        return pd.DataFrame(columns=["x_s", "y_s", "label"])
    x, y = _stat(s, story.stream_group, "max_itl_s", "max"), _stat(s, story.long_group, "ttft_s", "p95")
    if x is None or y is None:
        return pd.DataFrame(columns=["x_s", "y_s", "label"])
    return pd.DataFrame([{"x_s": x, "y_s": y,
                          "label": f"SGLang defaults: pause {fmt_seconds(x)}, first token {fmt_seconds(y)}"}])


def possessive(group: str) -> str:
    """'the streams'' / 'the log's': a group's name as words in a legend."""
    return f"the {numbers.possessive(group)}"


def _long_form(story: Story, frame: pd.DataFrame) -> pd.DataFrame:
    """The sweep's three waits as (setting, label, metric, seconds) rows, named after the story's groups."""
    out = frame.melt(id_vars=["setting", "label"],
                     value_vars=["streams_p99_itl_s", "streams_max_gap_s", "long_ttft_s"],
                     var_name="metric", value_name="seconds").dropna()
    out["metric"] = out["metric"].map(metric_words(story))
    return out
