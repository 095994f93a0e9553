"""The PD section's chart: where each request's time went, one lane per request. No `st.*` calls here."""

from __future__ import annotations

import altair as alt
import pandas as pd

from app.charts.scales import WIDTH, colour, x_domain

SPAN_COLOURS = {"waiting": colour("waiting"), "waiting_for_decode_kv": colour("waiting for decode KV"),
                "prefill": colour("prefill"), "transfer": colour("transfer"), "decode": colour("decode"),
                "retracted": colour("retracted")}
SPAN_LABELS = {"waiting": "waiting at prefill", "waiting_for_decode_kv": "waiting for decode KV",
               "prefill": "prefill chunks", "transfer": "KV transfer", "decode": "decoding",
               "retracted": "retracted"}


def request_phases(spans: pd.DataFrame, end_at: float | None = None) -> alt.Chart:
    """One lane per request, a bar per phase: where its time went. Transfers draw thin, over the chunks they
    overlap (under `early` each chunk's KV leaves as soon as it is computed)."""
    frame = spans.assign(label=spans["phase"].map(SPAN_LABELS))
    order = list(dict.fromkeys(frame["rid"]))
    scale = alt.Scale(domain=[SPAN_LABELS[p] for p in SPAN_COLOURS], range=list(SPAN_COLOURS.values()))
    base = alt.Chart(frame).encode(
        x=alt.X("start_at:Q", title="time (s)", scale=x_domain(end_at)), x2="end_at:Q",
        y=alt.Y("rid:N", title=f"{len(order)} requests (sampled per group)", scale=alt.Scale(domain=order),
                axis=alt.Axis(labels=len(order) <= 24)),  # the domain orders the lanes (no `sort` formula)
        color=alt.Color("label:N", scale=scale, title="phase",
                        legend=alt.Legend(orient="top")),  # columns: app.present.shown.room_spec
        tooltip=[alt.Tooltip("rid:N", title="request"), alt.Tooltip("group:N"),
                 alt.Tooltip("label:N", title="phase"),
                 alt.Tooltip("start_at:Q", title="from (s)", format=".3f"),
                 alt.Tooltip("duration_s:Q", title="for (s)", format=".3f")])
    main = base.transform_filter("datum.phase != 'transfer'").mark_bar(height={"band": 0.8})
    thin = base.transform_filter("datum.phase == 'transfer'").mark_bar(height={"band": 0.3})
    return alt.layer(main, thin).properties(width=WIDTH, height=max(120, 9 * len(order)))
