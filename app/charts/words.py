"""Words for what tables print: prompt-length buckets, numbers with thousands separators, the sentence that
says why a value is missing, and how many rows of a trace a run keeps. Pure functions: no Streamlit, no
Altair."""

from __future__ import annotations

import re

import pandas as pd

# the cell of a seconds column for requests that never got a token (a sentence says why)
NO_TOKEN = "no token"


def bucket_words(label: str) -> str:
    """The engine's bucket label in words: '0-8191' -> 'under 8,192', '8192-32767' -> '8,192 to 32,767',
    '>=32768' -> '32,768 or more'."""
    if label.startswith(">="):
        return f"{int(label[2:]):,} or more"
    low, high = (int(part) for part in label.split("-"))
    return f"under {high + 1:,}" if low == 0 else f"{low:,} to {high:,}"


def with_commas(text: str) -> str:
    """Every whole number of five digits or more in `text` with thousands separators."""
    return re.sub(r"\d{5,}", lambda m: f"{int(m.group()):,}", text)


def never_got_a_token(requests: pd.DataFrame, extra: str = "") -> list[str]:
    """One sentence per group none of whose requests got a token, with the engine's reason for the first
    refused one (e.g. a prompt that never fits the decode cap). `extra` is appended to each reason."""
    out = []
    for group, members in requests.groupby("group", sort=False):
        if members["num_tokens_in_run"].sum() > 0:
            continue
        reasons = [r for r in members["reject_reason"] if r]
        why = with_commas(reasons[0]) if reasons else "the run ended before their first token"
        out.append(f"The {len(members)} {group} never got a token: {why}{extra}.")
    return out


def kept_words(trace, cap: int, control: str, most: str) -> tuple[str, bool]:
    """How many rows of a trace (engine_model.Trace) became requests, and every row that did not, by why;
    True when the cap dropped some, which the person raises with `control` (`most`: how far, in words). The
    one wording of a trace's count: Your server's upload and the real-traffic story."""
    dropped, unread = trace.dropped, trace.num_unread
    past = dropped.get("past_max_requests", 0) + (unread if trace.stopped_by == "max_requests" else 0)
    parts = [f"{n:,} {why}" for n, why in (
        (trace.num_skipped, "unusable (see above)"), (dropped.get("outside_window", 0), "outside the window"),
        (unread if trace.stopped_by == "window" else 0, "after the window (counted, not read)"),
        (dropped.get("not_sampled", 0), "not in the sample"),
        (past, f"past the cap of {cap:,} requests" + (" (counted, not read)" if unread and
                                                       trace.stopped_by == "max_requests" else "")),
        (unread if trace.stopped_by == "max_rows" else 0, "past the reader's row limit (counted, not read)"),
    ) if n]
    total = len(trace.requests) + trace.num_not_kept
    words = (f"Kept {len(trace.requests):,} of the trace's {total:,} rows"
             + (": " + "; ".join(parts) + "." if parts else ": every row."))
    if past:
        words += f" Raise **{control}** ({most}) to keep them."
    return words, past > 0
