"""The stalls-apart verdict names the stall that paused requests longer, and never calls a run calm while
its replies pause; the longest back-to-back prefill run is found as a pass-by-pass walk would find it."""

import random

import pandas as pd
from story_runs import run

from app.story.diagnosis import diagnose, longest_prefill_streak, verdict


def found(chunk_s, kv_s, num_retractions, longest_s=0.0, mixed=0):
    return {"prefill_streak_s": chunk_s, "retracted_pause_s": kv_s, "num_retractions": num_retractions,
            "longest_pause_s": longest_s, "mixed_passes": mixed}


def test_verdicts():
    assert [verdict(found(*args), 0.25)
            for args in [(0.36, 25.2, 7), (9.0, 1.0, 1), (11.0, 0.0, 0), (0.1, 3.0, 2), (0.1, 0.0, 0, 0.1),
                         (0.0, 0.0, 0, 1.8, 12)]] == [
        "Both stalls happen in this run; the KV (retraction) stall is the longer one "
        "(back-to-back prefill 0.36 s, retracted requests paused up to 25.2 s).",
        "Both stalls happen in this run; the chunked-prefill stall is the longer one "
        "(back-to-back prefill 9.00 s, retracted requests paused up to 1.0 s).",
        "This run shows the chunked-prefill stall.",
        "This run shows the KV stall (retraction).",
        "Neither stall is large in this run: no reply pauses for more than a few decode passes.",
        "No back-to-back prefill and no retraction, but replies still pause up to 1.8 s: one mixed pass at a "
        "time (the chunked-prefill stall, spread into one pause per chunk).",
    ]


def test_mixed_chunk_on_is_not_called_calm():
    """With mixed chunk on, the forty replies still pause for a chunk pass each: the verdict says so, with
    the run's own longest pause."""
    mixed = run("forty_replies", (("mixed", True),))
    said = verdict(diagnose(mixed), mixed.stall_threshold_s)
    longest = mixed.summary.metrics.groups["streams"].max_itl_s.max
    assert said.startswith("No back-to-back prefill and no retraction") and f"{longest:.1f} s" in said


def streak_by_loop(its) -> tuple[float, int, float]:
    """The specification, pass by pass: a prefill-only pass while requests decode extends the run, an idle
    turn of no duration leaves it, anything else ends it; the first longest run wins."""
    best, start, count = (0.0, 0, 0.0), None, 0
    for row in its.itertuples(index=False):
        if row.kind == "prefill chunk" and row.num_running > 0:
            start, count = (row.start_at, 0) if start is None else (start, count)
            count += 1
            if row.end_at - start > best[0]:
                best = (row.end_at - start, count, start)
        elif row.kind != "idle" or row.duration_s > 0:
            start = None
    return best


def test_longest_prefill_streak_follows_the_passes_one_by_one():
    rng = random.Random(7)
    kinds = ["prefill chunk", "decode", "idle", "mixed"]
    for _ in range(500):
        rows, t = [], 0.0
        for _ in range(rng.randint(0, 25)):
            kind = rng.choice(kinds)
            took = rng.choice([0.0, 0.0, 0.1, 1.0]) if kind == "idle" else rng.choice([0.1, 0.3, 0.5, 1.0])
            rows.append({"kind": kind, "num_running": rng.randint(0, 2), "start_at": t, "end_at": t + took,
                         "duration_s": took})
            t += took
        its = pd.DataFrame(rows, columns=["kind", "num_running", "start_at", "end_at", "duration_s"])
        assert longest_prefill_streak(its) == streak_by_loop(its), rows
    for story, settings in [("forty_replies", ()), ("forty_replies", (("mixed", True),)), ("other_stall", ()),
                            ("ten_oclock_rush", ())]:
        its = run(story, settings).iterations
        assert longest_prefill_streak(its) == streak_by_loop(its)
    assert longest_prefill_streak(run("forty_replies", ()).iterations)[1] > 1  # the stall the story is about
