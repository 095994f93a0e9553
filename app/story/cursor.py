"""The time cursor: which iteration the step-through is on. Positions index `RunFrames.iterations` rows.

Pure functions over the iterations frame; the stepper (app.story.stepper) and the tour call them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def at_time(its: pd.DataFrame, t: float) -> int:
    """The iteration running at time t (the last one starting at or before t)."""
    if its.empty:
        return 0
    pos = int(np.searchsorted(its["start_at"].to_numpy(), t, side="right")) - 1
    return min(max(pos, 0), len(its) - 1)


def resolve(its: pd.DataFrame, spec: tuple) -> int:
    """A cursor spec -> a position. Specs: ("at", t), ("first", kind), ("last", kind),
    ("first_after", t): the first prefill/mixed pass starting at or after t, ("retraction", n)."""
    if its.empty:
        return 0
    how, arg = spec
    if how == "at":
        return at_time(its, float(arg))
    if how in ("first", "last"):
        hits = np.flatnonzero(its["kind"].to_numpy() == arg)
        if how == "first" and arg == "prefill chunk" and not len(hits):
            hits = np.flatnonzero(its["kind"].to_numpy() == "mixed")
        if not len(hits):
            return 0
        return int(hits[0] if how == "first" else hits[-1])
    if how == "first_after":
        mask = (its["kind"].isin(["prefill chunk", "mixed"]).to_numpy()
                & (its["start_at"].to_numpy() >= float(arg) - 1e-9))
        hits = np.flatnonzero(mask)
        return int(hits[0]) if len(hits) else at_time(its, float(arg))
    if how == "retraction":
        hits = np.flatnonzero(its["retracted"].to_numpy() != "")
        if not len(hits):
            return resolve(its, ("first", "prefill chunk"))
        return int(hits[int(arg)] if -len(hits) <= int(arg) < len(hits) else hits[-1])
    raise ValueError(f"unknown cursor spec {spec}")


def is_event(its: pd.DataFrame) -> np.ndarray:
    """Iterations worth stopping at: prefill and mixed passes, retractions, idle waits with duration."""
    kind = its["kind"].to_numpy()
    return ((kind != "decode") & ((kind != "idle") | (its["duration_s"].to_numpy() > 0))
            | (its["retracted"].to_numpy() != ""))


def next_event(its: pd.DataFrame, pos: int) -> int:
    hits = np.flatnonzero(is_event(its)[pos + 1:])
    return pos + 1 + int(hits[0]) if len(hits) else len(its) - 1


def prev_event(its: pd.DataFrame, pos: int) -> int:
    hits = np.flatnonzero(is_event(its)[:pos])
    return int(hits[-1]) if len(hits) else 0


def play_step(its: pd.DataFrame, pos: int, num_frames: int = 50) -> int:
    """One play tick: the next event, or 1/num_frames of the run later, whichever comes first."""
    if pos >= len(its) - 1:
        return len(its) - 1
    span = float(its["end_at"].max() - its["start_at"].min()) or 1.0
    by_time = at_time(its, float(its["start_at"].iloc[pos]) + span / num_frames)
    return max(pos + 1, min(next_event(its, pos), by_time))


# -- the lanes the decision under the cursor touched (marked on the token streams) -------------------------
RETRACTED, PREFILLED, NO_TOKEN = "retracted", "prefilled in this pass", "got no token in this pass"


def touched(tokens: pd.DataFrame, row, no_token: bool = True) -> pd.DataFrame:
    """The requests the pass under the cursor (a row of the iterations frame) touched, from the run's own
    data: the one(s) it retracted (`retracted`), the prompt(s) it prefilled (`prefill_rids`: the long
    prompt), and — `no_token` — the replies mid-stream that got no token from it (a pass without a decode
    row; mid-stream: a token before the pass and one after; `tokens` holds runs of tokens from `at` to
    `until`).
    Columns rid, how; a request once, under the first of those it is."""
    eps = 1e-9
    start, end = float(row["start_at"]), float(row["end_at"])
    named = [(rid, how) for col, how in (("retracted", RETRACTED), ("prefill_rids", PREFILLED))
             for rid in str(row[col] or "").replace(",", " ").split()]
    missed: list[str] = []
    if no_token and len(tokens) and not row.get("num_decode_rows", 0):
        # a pass with no decode row gives no running request a token (the scheduler's truth: the client may
        # still receive tokens queued earlier during it, engine_model/frontend.py); a decode or mixed pass
        # gives every running request one
        by_rid = tokens.groupby("rid", sort=False)
        before = by_rid["at"].min() <= start + eps
        after = by_rid["until"].max() > end + eps
        missed = list(before.index[before & after])
    out = pd.DataFrame(named + [(rid, NO_TOKEN) for rid in missed], columns=["rid", "how"])
    return out.drop_duplicates("rid", keep="first").reset_index(drop=True)


def marked_lanes(run, row) -> pd.DataFrame:
    """The lanes the pass under the cursor (`row`) touched in `run` (app.charts.frames.RunFrames; `touched`),
    labelled where few: the retracted request and the prompt prefilled by name, the replies left without a
    token by a diamond alone. With several engines (lanes), a pass of one says nothing of the others'
    replies: those are left out."""
    marked = touched(run.tokens, row, no_token=len(run.lanes) == 1)
    return marked.assign(label=[f"{rid}: {how}" if how != NO_TOKEN else ""
                                for rid, how in zip(marked["rid"], marked["how"], strict=True)])
