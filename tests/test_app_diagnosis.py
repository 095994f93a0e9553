"""The stalls-apart verdict names the stall that paused requests longer."""

from app.story.diagnosis import verdict


def found(chunk_s, kv_s, num_retractions):
    return {"prefill_streak_s": chunk_s, "retracted_pause_s": kv_s, "num_retractions": num_retractions}


def test_verdicts():
    assert [verdict(found(*args), 0.25)
            for args in [(0.36, 25.2, 7), (9.0, 1.0, 1), (11.0, 0.0, 0), (0.1, 3.0, 2), (0.1, 0.0, 0)]] == [
        "Both stalls happen in this run; the KV (retraction) stall is the longer one "
        "(back-to-back prefill 0.36 s, retracted requests paused up to 25.2 s).",
        "Both stalls happen in this run; the chunked-prefill stall is the longer one "
        "(back-to-back prefill 9.00 s, retracted requests paused up to 1.0 s).",
        "This run shows the chunked-prefill stall.",
        "This run shows the KV stall (retraction).",
        "Neither stall is large in this run.",
    ]
