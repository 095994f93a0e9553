"""Chart builders for the "Your server" page: a tidy frame in, an Altair chart out. No `st.*` calls here.

The pass timeline, queue and KV charts of a log reuse app.charts.timelines (same look as a simulated run);
these are the ones a simulated run has no counterpart for. Colours come from app.charts.scales.
"""

from __future__ import annotations

import math

import altair as alt
import pandas as pd

from app.charts.scales import (
    COUNT_LABEL,
    KV_COLOURS,
    RETRACTED,
    SERIES_COLOURS,
    STALL,
    WIDTH,
    colour,
    phase_scale,
    x_domain,
)

LINE_ORDER = "log line order (the log has no timestamps: not seconds)"


def in_line_order(chart: alt.TopLevelMixin) -> alt.TopLevelMixin:
    """A log chart of a log without timestamps: its time axis is the lines' order, so every title and
    tooltip that says seconds says the order instead (the same chart builders as a timed log)."""
    for part in getattr(chart, "layer", None) or getattr(chart, "vconcat", None) or []:
        in_line_order(part)
    encoding = getattr(chart, "encoding", alt.Undefined)
    if encoding is alt.Undefined:
        return chart
    x = getattr(encoding, "x", alt.Undefined)
    if isinstance(x, alt.X):
        x["title"] = LINE_ORDER
        if x["axis"] is not None:  # a hidden axis stays hidden
            axis = x["axis"] if isinstance(x["axis"], alt.Axis) else alt.Axis()
            axis["format"], axis["tickMinStep"] = "d", 1  # lines, not fractions of one
            x["axis"] = axis
    tooltips = getattr(encoding, "tooltip", alt.Undefined)
    for tip in tooltips if isinstance(tooltips, list) else []:
        title = tip["title"] if isinstance(tip, alt.Tooltip) else alt.Undefined
        if isinstance(title, str) and "(s)" in title:
            tip["title"] = title.replace("(s)", "(line order)")
            tip["format"] = ".0f"
    return chart


def _retraction_rules(retractions: pd.DataFrame) -> alt.Chart:
    return alt.Chart(retractions).mark_rule(color=RETRACTED[1], strokeWidth=2).encode(
        x="at:Q", tooltip=[alt.Tooltip("at:Q", title="retraction at (s)", format=".1f"),
                           alt.Tooltip("rids:N", title="retracted"),
                           alt.Tooltip("ratio:N", title="new_token_ratio")])


def prefill_tokens(prefills: pd.DataFrame, retractions: pd.DataFrame, chunk_size: int | None,
                   end_at: float | None = None) -> alt.Chart:
    """One bar per Prefill line, as tall as its #new-token; the chunk size dashed; retractions as rules."""
    bars = alt.Chart(prefills).mark_bar(size=6).encode(
        x=alt.X("at:Q", title="time since the first log line (s)", scale=x_domain(end_at)),
        y=alt.Y("num_new_tokens:Q", title="#new-token", axis=alt.Axis(labelExpr=COUNT_LABEL)),
        color=alt.Color("kind:N", title="pass", scale=phase_scale(), legend=alt.Legend(orient="top")),
        tooltip=[alt.Tooltip("line_no:Q", title="log line"),
                 alt.Tooltip("at:Q", title="at (s)", format=".2f"),
                 alt.Tooltip("num_new_tokens:Q", title="#new-token", format=","),
                 alt.Tooltip("num_cached_tokens:Q", title="#cached-token", format=","),
                 alt.Tooltip("num_new_reqs:Q", title="#new-seq"),
                 alt.Tooltip("num_running_reqs:Q", title="#running-req"),
                 alt.Tooltip("num_queue_reqs:Q", title="#queue-req"),
                 alt.Tooltip("is_full_chunk:N", title="full chunk")],
    )
    layers = [bars]
    if chunk_size:
        mark = pd.DataFrame({"tokens": [chunk_size], "label": [f"chunk size {chunk_size:,}"]})
        layers.append(alt.Chart(mark).mark_rule(color="#000000", strokeDash=[6, 3]).encode(y="tokens:Q"))
        layers.append(alt.Chart(mark).mark_text(align="left", dx=4, dy=-6, baseline="bottom").encode(
            x=alt.value(0), y="tokens:Q", text="label:N"))
    if len(retractions):
        layers.append(_retraction_rules(retractions))
    return alt.layer(*layers).properties(width=WIDTH, height=300)


def token_usage(kv: pd.DataFrame, retractions: pd.DataFrame, end_at: float | None = None) -> alt.Chart:
    """`token usage` as a share of the pool, when the log does not say how big the pool is."""
    used = kv[kv["series"] == "used"]
    area = alt.Chart(used).mark_area(interpolate="step-after", color=KV_COLOURS[0], opacity=0.85).encode(
        x=alt.X("at:Q", title="time since the first log line (s)", scale=x_domain(end_at)),
        y=alt.Y("slots:Q", title="token usage (share of the KV pool)", scale=alt.Scale(domain=[0, 1]),
                axis=alt.Axis(format="%")),
        tooltip=[alt.Tooltip("at:Q", title="at (s)", format=".2f"),
                 alt.Tooltip("slots:Q", title="token usage", format=".0%")])
    layers = [area] + ([_retraction_rules(retractions)] if len(retractions) else [])
    return alt.layer(*layers).properties(width=WIDTH, height=280)


def prompt_mix(mix: pd.DataFrame, long_threshold: int) -> alt.Chart:
    """Per prompt-length bin, the share of requests beside the share of prompt tokens they carry."""
    order = list(dict.fromkeys(mix.sort_values("order")["bin"]))
    series = ["share of requests", "share of prompt tokens"]
    base = alt.Chart(mix).encode(
        x=alt.X("bin:N", title="prompt length (tokens, bins double)", sort=order,
                axis=alt.Axis(labelAngle=0)),
        y=alt.Y("share:Q", title="share", axis=alt.Axis(format="%")),
        xOffset=alt.XOffset("series:N", sort=series),
        color=alt.Color("series:N", title="", sort=series, legend=alt.Legend(orient="top"),
                        scale=alt.Scale(domain=series, range=[SERIES_COLOURS[0], SERIES_COLOURS[1]])),
        tooltip=[alt.Tooltip("bin:N", title="prompt length"), alt.Tooltip("series:N", title=""),
                 alt.Tooltip("share:Q", format=".1%"),
                 alt.Tooltip("num_requests:Q", title="requests", format=",")])
    layers = [base.mark_bar()]
    first_long = mix[mix["low"] >= long_threshold]
    if len(first_long):
        mark = pd.DataFrame({"bin": [first_long.sort_values("order")["bin"].iloc[0]],
                             "label": [f"long: {long_threshold:,} tokens or more →"]})
        layers.append(alt.Chart(mark).mark_text(align="left", baseline="top", dy=4, fontWeight="bold").encode(
            x=alt.X("bin:N", sort=order, bandPosition=0), y=alt.value(0), text="label:N"))
    return alt.layer(*layers).properties(width=WIDTH, height=300)


def output_mix(mix: pd.DataFrame) -> alt.Chart:
    order = list(dict.fromkeys(mix.sort_values("order")["bin"]))
    return alt.Chart(mix).mark_bar(color=SERIES_COLOURS[2]).encode(
        x=alt.X("bin:N", title="reply length (tokens, bins double)", sort=order, axis=alt.Axis(labelAngle=0)),
        y=alt.Y("share:Q", title="share of requests", axis=alt.Axis(format="%")),
        tooltip=[alt.Tooltip("bin:N", title="reply length"), alt.Tooltip("share:Q", format=".1%"),
                 alt.Tooltip("num_requests:Q", title="requests", format=",")],
    ).properties(width=WIDTH, height=300)


PANEL_WIDTH = 165  # px: three panels and their axes fit the page's column (wider ones were cut at its edge)


def decade_above(seconds: float) -> float:
    """The power of ten above `seconds` with room to spare (10 ms at least): a bar's top never touches the
    frame."""
    if not seconds or not math.isfinite(seconds) or seconds <= 0:
        return 0.01
    return max(0.01, 10.0 ** math.ceil(math.log10(seconds * 1.2)))


def bucket_latency(frame: pd.DataFrame) -> alt.Chart:
    """p50 / p95 / p99 of each wait, per prompt-length bucket; one panel per wait (symmetric log scale, so a
    bar can start at 0 and milliseconds and minutes both read)."""
    stats = ["p50", "p95", "p99"]
    buckets = list(dict.fromkeys(frame.sort_values("order")["bucket"]))
    panels = []
    for metric in dict.fromkeys(frame["metric"]):
        part = frame[frame["metric"] == metric]
        top = decade_above(part["seconds"].max())  # the tallest bar ends inside the frame, never at its edge
        ticks = [10.0**k for k in range(-3, round(math.log10(top)) + 1)]
        panels.append(alt.Chart(part).mark_bar().encode(
            x=alt.X("bucket:N", title="prompt length (tokens)", sort=buckets, axis=alt.Axis(labelAngle=0)),
            xOffset=alt.XOffset("stat:N", sort=stats),
            y=alt.Y("seconds:Q", title="seconds (log scale)",
                    scale=alt.Scale(type="symlog", constant=0.001, domain=[0, top], nice=False),
                    axis=alt.Axis(values=ticks, format=",~r")),
            y2=alt.datum(0),
            color=alt.Color("stat:N", title="", sort=stats, legend=alt.Legend(orient="top"),
                            scale=alt.Scale(domain=stats, range=[SERIES_COLOURS[2], SERIES_COLOURS[0],
                                                                 "#000000"])),
            tooltip=[alt.Tooltip("bucket:N", title="prompt length"), alt.Tooltip("stat:N"),
                     alt.Tooltip("seconds:Q", format=".3f"), alt.Tooltip("num_requests:Q", title="requests")],
        ).properties(width=PANEL_WIDTH, height=280, title=metric))
    if not panels:
        return alt.Chart(pd.DataFrame({"x": []})).mark_bar().encode(x=alt.X("x:Q", title="seconds"))
    return alt.hconcat(*panels).resolve_scale(y="independent")


TAIL_COLOURS = {"p50": SERIES_COLOURS[2], "p99": SERIES_COLOURS[0], "p99.9": "#000000"}  # not meanings


def itl_tail(tails: pd.DataFrame, prefills: pd.DataFrame | None = None, end_at: float | None = None,
             x_title: str = "time since the first log line (s)",
             silent: pd.DataFrame | None = None) -> alt.Chart:
    """The ITL tail per scrape interval (a segment across each interval, log scale), over the log's Prefill
    lines when given (bars in the prefill colour, #new-token on the right axis): a stall shows as silence,
    then long gaps, after a row of full chunks."""
    series = list(TAIL_COLOURS)
    segments = alt.Chart(tails).mark_rule(strokeWidth=3).encode(
        x=alt.X("start_s:Q", title=x_title, scale=x_domain(end_at)), x2="end_s:Q",
        y=alt.Y("seconds:Q", title="inter-token gap (s, log scale)",
                scale=alt.Scale(type="log", domain=[0.001, 10], clamp=True)),
        color=alt.Color("series:N", title="ITL in each scrape interval", sort=series,
                        scale=alt.Scale(domain=series, range=list(TAIL_COLOURS.values())),
                        legend=alt.Legend(orient="top")),
        tooltip=[alt.Tooltip("series:N", title="percentile"), alt.Tooltip("seconds:Q", format=".3g"),
                 alt.Tooltip("bucket:N", title="within the bucket"),
                 alt.Tooltip("num_gaps:Q", title="gaps in the interval", format=",")])
    layers = [segments]
    if silent is not None and len(silent):  # intervals with no gap while replies ran: the stall itself
        layers.insert(0, alt.Chart(silent).mark_rect(color=STALL[1], opacity=0.25).encode(
            x="start_s:Q", x2="end_s:Q", tooltip=[alt.Tooltip("label:N", title="in this interval")]))
    if prefills is None:
        return alt.layer(*layers).properties(width=WIDTH, height=260)
    bars = alt.Chart(prefills).mark_bar(size=4, color=colour("prefill"), opacity=0.5).encode(
        x=alt.X("at:Q", scale=x_domain(end_at)),
        y=alt.Y("num_new_tokens:Q", title="#new-token (prefill bars)",
                axis=alt.Axis(orient="right", labelExpr=COUNT_LABEL)),
        tooltip=[alt.Tooltip("line_no:Q", title="log line"),
                 alt.Tooltip("at:Q", title="at (s)", format=".1f"),
                 alt.Tooltip("num_new_tokens:Q", title="#new-token", format=","),
                 alt.Tooltip("is_full_chunk:N", title="full chunk")])
    return alt.layer(bars, *layers).resolve_scale(y="independent").properties(width=WIDTH, height=300)
