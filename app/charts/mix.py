"""A request mix as a chart: each group's share of the requests beside its share of the prompt tokens, so a
group that is few requests but most of the prefill work stands out. No `st.*` calls here."""

from __future__ import annotations

import altair as alt
import pandas as pd

from app.charts.scales import SERIES_COLOURS
from engine_model import GroupShare

MEASURES = ("share of requests", "share of prompt tokens")


def mix_frame(shares: list[GroupShare]) -> pd.DataFrame:
    return pd.DataFrame([{"group": s.name, "measure": measure, "share": value}
                         for s in shares
                         for measure, value in zip(MEASURES, (s.request_share, s.prompt_share), strict=True)])


def mix_chart(shares: list[GroupShare]) -> alt.Chart:
    """Horizontal bars, two per group (requests, prompt tokens), 0–100 %; each bar labelled with its value."""
    frame = mix_frame(shares)
    base = alt.Chart(frame).encode(
        y=alt.Y("group:N", title=None, sort=[s.name for s in shares]),
        yOffset=alt.YOffset("measure:N", sort=list(MEASURES)),
        x=alt.X("share:Q", title=None, scale=alt.Scale(domain=[0, 1]), axis=alt.Axis(format="%")),
        tooltip=["group", "measure", alt.Tooltip("share:Q", format=".1%")],
    )
    bars = base.mark_bar().encode(color=alt.Color("measure:N", sort=list(MEASURES), title=None,
                                                  scale=alt.Scale(domain=list(MEASURES),
                                                                  range=list(SERIES_COLOURS[:2])),
                                                  legend=alt.Legend(orient="bottom")))
    labels = base.mark_text(align="left", dx=3, fontSize=11).encode(text=alt.Text("share:Q", format=".0%"))
    return (bars + labels).properties(height={"step": 16}, width="container")
