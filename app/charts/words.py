"""Words for what tables print: prompt-length buckets, numbers with thousands separators, and the sentence
that says why a value is missing. Pure functions: no Streamlit, no Altair."""

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
