"""Each chart in words, for a reader who cannot see it (a screen reader, a keyboard, an e-reader without
scripts): the few facts a sighted reader takes from the chart, read from the run it shows. The standalone
page puts them under each chart (a <details> a keyboard opens) and refills them when the run switches.
"""

from __future__ import annotations

import pandas as pd

from app.charts.frames import RunFrames
from app.present.fmt import fmt_count, fmt_seconds

TOP = 3  # the longest stalls a sentence names


def chart_words(chart_id: str, run: RunFrames) -> str:
    """The chart `chart_id` of `run` in a few sentences; the caption alone says the rest."""
    words = WORDS.get(chart_id.removeprefix("zoom-"))
    return words(run) if words else ""


def counted(count: int, word: str, plural: str = "") -> str:
    """'1 request', '2 requests', '1,305 stalls'."""
    return f"{fmt_count(count)} {word if count == 1 else plural or word + 's'}"


def tokens_words(run: RunFrames) -> str:
    lanes = f"{counted(len(run.request_order), 'request')}, one lane each."
    stalls = _longest_stalls(run.stalls, run.stall_threshold_s)
    return " ".join(p for p in (lanes, stalls, _waits(run.waits)) if p)


def _longest_stalls(stalls: pd.DataFrame, threshold_s: float) -> str:
    if stalls.empty:
        return f"No request went {fmt_seconds(threshold_s)} or more without a token."
    top = stalls.sort_values(["gap_s", "start_at"], ascending=[False, True]).head(TOP)
    named = "; ".join(f"{row.rid}, {fmt_seconds(row.gap_s)} from {fmt_seconds(row.start_at)}"
                      for row in top.itertuples())
    return f"{counted(len(stalls), 'stall')} of {fmt_seconds(threshold_s)} or more; the longest: {named}."


def _waits(waits: pd.DataFrame) -> str:
    if waits.empty:
        return ""
    retracted = waits["why"].str.startswith("retracted")
    out = f"{counted(waits.loc[~retracted, 'rid'].nunique(), 'request')} waited in the queue first"
    if retracted.any():
        again = counted(int(retracted.sum()), "time")
        out += f", and retracted requests waited {again} to be prefilled again"
    return out + f"; the longest wait: {fmt_seconds(float(waits['wait_s'].max()))}."


def wait_words(run: RunFrames) -> str:
    pauses = run.pauses
    if pauses.empty or float(pauses["wait_s"].max()) <= 0:
        return (f"Every reply got its tokens less than {fmt_seconds(run.stall_threshold_s)} apart: a flat "
                "line.")
    top = pauses.loc[pauses["wait_s"].idxmax()]
    paused = pauses.loc[pauses["wait_s"] > 0, "rid"].nunique()
    return (f"{counted(paused, 'reply', 'replies')} paused {fmt_seconds(run.stall_threshold_s)} or more. "
            f"The highest ramp: {top['rid']} waited {fmt_seconds(float(top['wait_s']))}, until "
            f"{fmt_seconds(float(top['at']))}.")


def passes_words(run: RunFrames) -> str:
    out = []
    for lane, part in run.passes.groupby("lane", sort=False):
        kinds = part.groupby("kind", sort=False).agg(n=("num_passes", "sum"), s=("duration_s", "sum"))
        said = ", ".join(f"{counted(int(r.n), f'{kind} pass', f'{kind} passes')} "
                         f"({fmt_seconds(float(r.s))} in all)" for kind, r in kinds.iterrows())
        out.append(f"{lane}: {said}.")
    return " ".join(out) + f" The run ends at {fmt_seconds(float(run.end_at))}."


def kv_words(run: RunFrames) -> str:
    kv = run.kv
    if kv.empty:
        return ""
    lane = next((x for x in dict.fromkeys(kv["lane"]) if x.startswith("decode")), kv["lane"].iloc[0])
    part = kv[kv["lane"] == lane]
    pool = int(part["capacity"].max())
    used = part[part["series"] == "used"]
    peak = used.loc[used["slots"].idxmax()]
    out = (f"{lane}: a pool of {fmt_count(pool)} tokens; at most {fmt_count(int(peak['slots']))} in use "
           f"({peak['slots'] / pool:.0%}), at {fmt_seconds(float(peak['at']))}.")
    reserved = part.loc[part["series"] == "reserved, not yet used", "slots"]
    if len(reserved) and reserved.max() > 0:
        out += f" At most {fmt_count(int(reserved.max()))} reserved for requests not yet decoding."
    return out + " " + _retractions(run.retractions)


def _retractions(retractions: pd.DataFrame) -> str:
    if retractions.empty:
        return "No retraction."
    times = ", ".join(fmt_seconds(float(t)) for t in retractions["at"].head(8))
    more = f" and {len(retractions) - 8} more" if len(retractions) > 8 else ""
    return (f"{counted(int(retractions['num_retracted'].sum()), 'request')} retracted, at {times}{more}: "
            "the pool could not give every running request its next token.")


def queue_words(run: RunFrames) -> str:
    out = []
    for series in ("waiting", "running"):
        part = run.queue[run.queue["series"] == series]
        if len(part):
            top = part.loc[part["requests"].idxmax()]
            at = fmt_seconds(float(top["at"]))
            out.append(f"at most {fmt_count(int(top['requests']))} {series}, at {at}")
    return ("; ".join(out).capitalize() + ".") if out else ""


WORDS = {"tokens": tokens_words, "wait": wait_words, "passes": passes_words, "kv": kv_words,
         "decode-kv": kv_words, "queue": queue_words}
