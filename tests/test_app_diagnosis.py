"""The stalls-apart verdict names the stall that paused requests longer, and never calls a run calm while
its replies pause."""

from story_runs import run

from app.story.diagnosis import diagnose, verdict


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
