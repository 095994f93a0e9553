"""One pass's cost as a small stacked bar: a GPU row and a CPU row laid out in time. No `st.*` here.

With the overlap schedule both rows start at 0 and the pass lasts as long as the longer one (the CPU's
part hides behind the GPU). Without it the scheduler's CPU work runs first and the kernels start after it.
The linear predictor has one row of its three terms.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from app.charts.scales import CURSOR_COLOUR, WIDTH
from engine_model import PassCost

# Cost terms are not the timelines' meanings, so none of their colours (app.charts.scales.PALETTE): Paul Tol's
# muted set, the GPU terms in cool colours, the CPU terms in browns
TERM_COLOURS = {
    "GEMMs": "#332288", "attention": "#88CCEE", "element-wise": "#44AA99", "all-reduce": "#117733",
    "floors": "#999933", "kernel launches": "#DDCC77", "scheduler per pass": "#8C510A",
    "per running request": "#BF812D", "a, per pass": "#999933", "b × new tokens": "#332288",
    "c × past tokens": "#88CCEE",
}
ROW_PX = 30
ROWS = ("GPU", "CPU", "pass")  # top to bottom
SCHEDULER = ("scheduler per pass", "per running request")  # the CPU work that waits without overlap


def cost_frame(cost: PassCost) -> pd.DataFrame:
    """One row per non-zero term: its row (GPU / CPU / pass), where it starts and ends within the pass
    (ms)."""
    starts = {"GPU": 0.0, "CPU": 0.0, "pass": 0.0}
    if not cost.overlap and cost.kind == "roofline":
        starts["GPU"] = 1e3 * sum(cost.seconds(name) for name in SCHEDULER)
    order = [t for t in cost.terms if t.name in SCHEDULER and not cost.overlap] + \
            [t for t in cost.terms if t.name not in SCHEDULER or cost.overlap]
    rows = []
    for term in order:
        if term.seconds <= 0:
            continue
        start = starts[term.side]
        end = start + term.seconds * 1e3
        rows.append({"row": term.side, "term": term.name, "start_ms": start, "end_ms": end,
                     "ms": term.seconds * 1e3, "how": term.detail})
        starts[term.side] = end
    return pd.DataFrame(rows, columns=["row", "term", "start_ms", "end_ms", "ms", "how"])


def cost_bar(frame: pd.DataFrame, total_ms: float) -> alt.Chart:
    """The terms as stacked bars per row, and a rule where the pass ends."""
    terms = list(dict.fromkeys(frame["term"]))
    scale = alt.Scale(domain=terms, range=[TERM_COLOURS.get(t, "#000000") for t in terms])
    rows = [row for row in ROWS if row in set(frame["row"])]
    bars = alt.Chart(frame).mark_bar().encode(
        x=alt.X("start_ms:Q", title="time within the pass (ms)"),
        x2="end_ms:Q",
        y=alt.Y("row:N", title=None, sort=rows),
        color=alt.Color("term:N", scale=scale, title=None, legend=alt.Legend(orient="bottom", columns=4)),
        tooltip=[alt.Tooltip("term:N"), alt.Tooltip("ms:Q", title="ms", format=".3f"), alt.Tooltip("how:N")],
    )
    end = pd.DataFrame({"at": [total_ms], "label": [f"pass ends {total_ms:.2f} ms"]})
    rule = alt.Chart(end).mark_rule(color=CURSOR_COLOUR, strokeDash=[4, 2], strokeWidth=2).encode(x="at:Q")
    text = alt.Chart(end).mark_text(align="right", dx=-4, dy=-2, baseline="bottom", fontWeight="bold").encode(
        x="at:Q", y=alt.value(0), text="label:N")
    # a discrete y axis sizes by step, not by height (as the pass timeline does)
    return alt.layer(bars, rule, text).properties(width=WIDTH, height=alt.Step(ROW_PX))
