"""The colours, scales and layers every chart shares. No `st.*` calls here.

One colour per meaning, on every chart and every surface (docs/app.md, "Colours"): `PALETTE` names each
meaning once with its colour and the labels charts give it, and every constant below is read from it. Pass
kinds are Okabe-Ito (colour-blind safe): prefill chunk vermillion, decode blue, mixed bluish green; pinks to
purples mean only "no token" (a stall, darker the longer); greys mean waiting (mid), retracted (dark) and
unused (light); a token is drawn in decode blue, never in a grey. A cursor (a time in seconds) draws the
same dashed rule on every timeline so step-through moves them together.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from app.charts.phases import PHASES

PALETTE = {  # meaning -> (colour, the labels charts give it)
    "prefill": ("#D55E00", ("prefill chunk", "prefill chunks")),
    # a token, a steady run's bar or a lone token's tick: what a decode pass gives a request (never the dark
    # grey of a retraction, which a near-black bar read as at projector scale)
    "decode": ("#0072B2", ("decode", "decoding", "running", "used", "token",
                           "gaps under the stall threshold")),
    "mixed": ("#009E73", ("mixed",)),
    "unused": ("#DDDDDD", ("idle", "free")),
    "waiting": ("#A6A6A6", ("waiting in queue", "waiting", "waiting at prefill")),
    "retracted": ("#4D4D4D", ("retracted, waiting to re-prefill", "retracted", "retraction")),
    "reserved": ("#E69F00", ("reserved, not yet used",)),
    "waiting for decode KV": ("#DDAA33", ("waiting for decode KV",)),
    "transfer": ("#56B4E9", ("KV transfer",)),
}
GAP_SHADES = ("#F2C4DD", "#DB86B8", "#A8437F", "#5E1449")  # "no token": a stall's length, short to long
SERIES_COLOURS = ("#332288", "#999933", "#44AA99", "#8C510A")  # series that are not a meaning (Tol's muted)


def colour(meaning: str) -> str:
    return PALETTE[meaning][0]


PHASE_COLOURS = tuple(colour(m) for m in ("prefill", "decode", "mixed", "unused"))
STALL = ("no token (stall)", GAP_SHADES[1])
QUEUED = ("waiting in queue", colour("waiting"))
RETRACTED = ("retracted, waiting to re-prefill", colour("retracted"))
KV_SERIES = ("used", "reserved, not yet used", "free")
KV_COLOURS = (colour("decode"), colour("reserved"), colour("unused"))
QUEUE_SERIES = ("waiting", "running")
QUEUE_COLOURS = (colour("waiting"), colour("decode"))
GROUP_COLOURS = SERIES_COLOURS
CURSOR_COLOUR = "#000000"
DIVIDER_COLOUR = "#000000"  # the line between two runs in one chart (Compare); a cursor is dashed
CURSOR_NAME = "cursor"  # the cursor's layers are named, so an exported image can leave them out
WIDTH = "container"


# Axis labels 0, 500, 2k, 20k: Vega's "~s" format prints a shared prefix ("0k") on some axes.
COUNT_LABEL = "datum.value >= 1000 ? format(datum.value / 1000, '~g') + 'k' : format(datum.value, '~g')"


def phase_scale() -> alt.Scale:
    return alt.Scale(domain=list(PHASES), range=list(PHASE_COLOURS))


def timeline_scale(present: set[str] | None = None) -> alt.Scale:
    """What a request lane shows: its own prefill/mixed chunks (the phase colours) and queue waits (stalls
    have their own scale of shades by length). `present`: only the states a chart draws, so its legend lists
    nothing absent; each state keeps its colour."""
    pairs = [(state, colour) for state, colour in zip((PHASES[0], PHASES[2], QUEUED[0], RETRACTED[0]),
                                                      (PHASE_COLOURS[0], PHASE_COLOURS[2], QUEUED[1],
                                                       RETRACTED[1]),
                                                      strict=True) if present is None or state in present]
    return alt.Scale(domain=[s for s, _ in pairs], range=[c for _, c in pairs])


def group_scale(groups: list[str]) -> alt.Scale:
    return alt.Scale(domain=list(groups),
                     range=[GROUP_COLOURS[i % len(GROUP_COLOURS)] for i in range(len(groups))])


def cursor_layer(cursor_at: float | None, label: bool = True,
                 end_at: float | str | None = None) -> alt.Chart | None:
    """The cursor's dashed rule and its label; the label reads leftwards from the rule past 60 % of
    the run (`end_at`), so it never reaches past the plot's right edge."""
    if cursor_at is None:
        return None
    frame = pd.DataFrame({"at": [cursor_at], "label": [f"cursor {cursor_at:.2f} s"]})
    rule = alt.Chart(frame).mark_rule(color=CURSOR_COLOUR, strokeDash=[6, 3], strokeWidth=2).encode(
        x="at:Q", tooltip=[alt.Tooltip("at:Q", title="cursor (s)", format=".3f")])
    if not label:
        return rule.properties(name=CURSOR_NAME)
    late = isinstance(end_at, int | float) and cursor_at > 0.6 * end_at
    text = alt.Chart(frame).mark_text(align="right" if late else "left", dx=-4 if late else 4, dy=-4,
                                      baseline="bottom", fontWeight="bold").encode(
        x="at:Q", y=alt.value(0), text="label:N")
    return (rule + text).properties(name=CURSOR_NAME)


def with_cursor(chart: alt.Chart, cursor_at: float | None, end_at: float | str | None = None) -> alt.Chart:
    layer = cursor_layer(cursor_at, end_at=end_at)
    return chart if layer is None else alt.layer(chart, layer)


def x_domain(end_at: float | str | None) -> alt.Scale:
    """Time from 0 to the run's end, never rounded up; Vega's own domain when the end is unknown. A page
    that switches between runs names the parameter holding the shown run's end instead (a string)."""
    if isinstance(end_at, str):
        return alt.Scale(domain=alt.ExprRef(f"[0, {end_at}]"), nice=False)
    return alt.Scale(domain=[0, end_at], nice=False) if end_at else alt.Scale(nice=False)
