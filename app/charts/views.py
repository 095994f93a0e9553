"""The charts a run is shown with, each once: its id, title, caption and builder. The Streamlit page, an
exported image, the standalone page and the slides all take a chart from here, so a chart's picture and its
words are written in one place. No `st.*` calls here.

A view's builder is called only when its spec is needed (the page caches specs per run and cursor).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import pandas as pd

from app.charts import latency, timelines
from app.charts.frames import RunFrames
from app.pd.charts import request_phases
from app.present.fmt import fmt_seconds


class View(NamedTuple):
    """One chart of a run: what a surface needs to draw it, title and caption included."""

    chart_id: str
    title: str
    caption: str
    build: Callable[[], object]  # -> an Altair chart, built only when its spec is not cached


# -- a story's timelines -----------------------------------------------------------------------------
TOKENS_TITLE = "Token streams: who got a token, and when"


def tokens_caption(stall_s: float, chunk_pass_s: tuple[float, float] | None) -> str:
    yardstick = timelines.chunk_pass_words(chunk_pass_s)
    return ("One lane per request: a solid blue bar while its tokens come steadily, a blue tick per token "
            f"in a trickle. Pink to dark purple: no token for {stall_s:g} s or more — a stall, darker the "
            f"longer it lasts{' (' + yardstick + ')' if yardstick else ''}. Orange/green blocks: a prompt "
            "being prefilled, chunk by chunk; one block across several lanes when one pass prefilled them "
            "together. Light grey: waiting in the queue; dark grey: retracted or preempted, waiting to be "
            "prefilled again.")


def alike_words(stalls: pd.DataFrame) -> str:
    """' The 40 ramps of 6.4 s are one line: one pass froze those replies together.' where several replies
    stalled in the same passes (their lines coincide), else ''."""
    num, gap_s = timelines.stacked_ramp(stalls)
    if num < 2:
        return ""
    return (f" Replies that froze in the same passes draw one line over another: the ramp to "
            f"{fmt_seconds(gap_s)} is {num:,} replies' lines at once.")


def story_views(run: RunFrames, at: float | None = None, index: int | None = None,
                marked: pd.DataFrame | None = None, veil_from: float | None = None) -> list[View]:
    """The timelines of one run on one time axis: passes, token streams, tokens so far, KV, queue. `at`: the
    cursor's time (None: no cursor, as a standalone page or a slide shows them); `index`: the pass under
    it; `marked` (rid, how, label): the lanes that pass touched, marked on the token streams."""
    end = run.end_at
    stall_s = run.stall_threshold_s
    return [
        View("passes", "Pass timeline: what the GPU ran",
             "One bar per forward pass (runs of identical decode passes merged), width = how long it took. "
             "Orange: a prefill chunk; blue: decode; green: a mixed pass (chunk + one decode token for each "
             "running request)." + (" The black outline is the pass under the cursor. Click a bar to move "
                                    "the cursor there." if at is not None else ""),
             lambda: timelines.pass_timeline(run.passes, at, end, index)),
        View("tokens", TOKENS_TITLE, tokens_caption(stall_s, run.chunk_pass_s) + marked_words(marked),
             lambda: timelines.token_streams(run.tokens, run.stalls, run.chunks, run.waits,
                                             run.request_order, at, end, stall_s, run.chunk_pass_s,
                                             marked=marked, veil_from=veil_from)),
        View("wait", "Waiting for the next token: a ramp is a freeze, small teeth a trickle",
             "One line per reply: how long it has waited for its next token. It climbs while no token comes "
             f"and drops to 0 when one arrives, so a tall ramp is a freeze and small teeth are a trickle; "
             f"gaps under {stall_s:g} s stay at 0.{alike_words(run.stalls)}",
             lambda: timelines.next_token_wait(run.pauses, at, end)),
        View("kv", "KV cache slots",
             "How much of the KV pool holds tokens (blue), is reserved for requests not yet running "
             "(orange, PD decode only) or is free. Dark grey rules: retractions — the pool could not give "
             "every running request its next token.",
             lambda: timelines.kv_occupancy(run.kv, run.retractions, at, end)),
        View("queue", "Queue depth",
             "Requests waiting for a prefill, and requests in the running (decode) batch, as the scheduler "
             "saw them.",
             lambda: timelines.queue_depth(run.queue, at, end)),
    ]


def marked_words(marked: pd.DataFrame | None) -> str:
    """The caption's sentence for the marked lanes: how many of each, from the frame the chart draws."""
    if marked is None or not len(marked):
        return ""
    counts = marked["how"].value_counts(sort=False)
    said = "; ".join(f"{n} {'request' if n == 1 else 'requests'} {how}" for how, n in counts.items())
    return f" A diamond at the cursor marks each lane its pass touched: {said}."


def story_view(run: RunFrames, chart_id: str, veil_from: float | None = None) -> View:
    """One of `story_views` (no cursor), or a group's gaps histogram ('itl-GROUP')."""
    if chart_id.startswith("itl-"):
        return itl_views(run)[chart_id]
    return next(v for v in story_views(run, veil_from=veil_from) if v.chart_id == chart_id)


ITL_CAPTION = ("How long readers waited between two tokens. Most gaps are one decode pass; a stall shows up "
               "as a lonely bar far to the right. Dashed lines: p50, p95, p99. Both axes are logarithmic; "
               "every group's chart shares one time axis.")


def itl_views(run: RunFrames) -> dict[str, View]:
    """One gaps histogram per group, every group on one shared x axis."""
    groups = [g for g in run.summary.metrics.groups if g in set(run.itl_hist.get("group", []))]
    domain = latency.gap_domain(run.itl_hist)
    return {f"itl-{group}": View(
        f"itl-{group}", f"Gaps between tokens: {group}", ITL_CAPTION,
        lambda group=group: latency.itl_distribution(run.itl_hist, run.itl_stats, group, groups, domain))
        for group in groups}


# -- a PD run ----------------------------------------------------------------------------------------
def pd_views(run: RunFrames, policy: str, end: float, y_max: dict[str, float] | None = None) -> list[View]:
    """One PD run's charts on a shared time axis ending at `end`: its workers' passes, KV per worker (each
    worker's axis top `y_max`, shared with the run beside it: timelines.shared_y_max), and where each
    request's time went."""
    views = [View(f"{policy}-passes", f"{policy}: one lane per worker",
                  "Each worker's forward passes. Prefill workers run prefill chunks; decode workers decode.",
                  lambda: timelines.pass_timeline(run.passes, None, end))]
    for lane, chart, pool in timelines.kv_panels(run.kv, run.retractions, None, end, y_max):
        what = ("Orange: decode KV reserved for requests still in prefill or transfer — held, not yet used. "
                "With prefill_complete it stays near zero." if lane.startswith("decode")
                else "A prefill worker holds a prompt's KV only until it is sent to decode.")
        size, _, use = pool.partition(";")
        said = f"{size}{ranks_words(run, lane)}" + (f";{use}" if use else "")
        views.append(View(f"{policy}-kv-{lane}", f"{policy}: KV on {lane}",
                          f"{said[:1].upper()}{said[1:]}. {what}", lambda chart=chart: chart))
    views.append(View(f"{policy}-phases", f"{policy}: each request's time",
                      "One lane per request: grey waiting at prefill, ochre waiting for decode KV, orange "
                      "prefill chunks, thin blue the KV transfer, dark blue decoding. Under early, decode KV "
                      "is reserved before prefill may start; under prefill_complete, after it ends.",
                      lambda: request_phases(run.spans, end)))
    return views


def ranks_words(run: RunFrames, lane: str) -> str:
    """A PD worker's pool as its DP ranks' pools: ' (the worker's 4 DP ranks × 163,840 tokens each)'."""
    role = lane.split("-")[0]
    pd = run.summary.config.get("pd") or {}
    if run.summary.pd is None or role not in pd:
        return ""
    dp, rank = pd[role]["dp_size"], run.summary.pd.roles[role]["max_total_tokens"]
    return f" (the worker's {dp} DP ranks × {rank:,} tokens each)" if dp > 1 else " (one rank: the worker)"


def decode_kv_view(run: RunFrames, end) -> View:
    """The KV of the worker requests decode on: the engine, the first of several engines, or a PD run's
    first decode worker; in use and reserved-not-yet-used. (The PD figure merges runs of all three kinds, so
    each keeps its own lane.)"""
    lanes = timelines.kv_lanes(run.kv)
    first_decode = next((x for x in lanes if x.startswith("decode")), None)
    shown = [x for x in (first_decode, "engine", "engine-0", "dp-0") if x in lanes]
    part = run.kv[run.kv["lane"].isin(shown)] if len(run.kv) else run.kv
    kind = shown[0].split("-")[0] if shown else "engine"
    num = sum(x.split("-")[0] == kind for x in lanes)
    which = f" ({shown[0]}, the first of {num})" if num > 1 else ""
    return View("decode-kv", "KV where requests decode",
                f"The KV pool of the worker requests decode on{which}: in use (blue), reserved for requests "
                "still in prefill or transfer (orange: held, not yet used), free. Dark grey rules: "
                "retractions.",
                lambda: timelines.kv_panel(part, run.retractions, None, end))


def phases_view(run: RunFrames, end) -> View:
    return View("phases", "Each request's time",
                "One lane per request (sampled per group): grey waiting at prefill, ochre waiting for "
                "decode KV, orange prefill chunks, thin blue the KV transfer, dark blue decoding. One engine "
                "has no such phases.", lambda: request_phases(run.spans, end))
