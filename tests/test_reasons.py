"""The scheduler's "why" for each iteration, as the step-through prints it: plain words (no "request(s)",
no latched flags, no "half-prefilled" at 82 %), numbers with thousands separators, and counts that add up
(waiting + running never more than the requests that have arrived)."""

from __future__ import annotations

import re

import pytest

from engine_model import simulate
from engine_model.core import count
from engine_model.stories import FORTY, OTHER_STALL


@pytest.fixture(scope="module", params=[FORTY, OTHER_STALL], ids=lambda s: s.key)
def run(request):
    story = request.param
    return simulate(story.scenario(story.defaults))


def test_count_is_plain_words():
    assert count(1, "request") == "1 request"
    assert count(2, "request") == "2 requests"
    assert count(91808, "token") == "91,808 tokens"
    assert count(0, "decode round") == "0 decode rounds"


def test_every_reason_reads_as_words(run):
    for it in run.iterations:
        assert "(s)" not in it.reason, (it.index, it.reason)
        one_plural = r"\b1 \w+ requests\b|\bthe 1 \b|\b1 (?:\w+ )?request (?:fit|take|leave|get)\b"
        assert not re.search(one_plural, it.reason), (it.index, it.reason)
        assert not re.search(r"(?<![\w.])\d{5,}(?![\w.])", it.reason), (it.index, it.reason)  # 91808
        for jargon in ("half-prefilled", "is latched"):
            assert jargon not in it.reason, (it.index, it.reason)


def test_a_chunk_says_how_much_was_prefilled_before_it(run):
    """'part-way through its prompt (N % prefilled)': N is the share before this pass's chunk, under 100 %."""
    shares = [int(m[1]) for it in run.iterations
              for m in [re.search(r"\((\d+) % prefilled\)", it.reason)] if m]
    if run.scenario.name != "forty_replies":
        return
    assert shares and shares == sorted(shares) and 0 < shares[0] < 100 and shares[-1] < 100


def test_waiting_and_running_add_up(run):
    """A retracted request is waiting, not also running, in the pass that retracts it."""
    arrivals = sorted(r.arrival_at for r in run.requests)
    for it in run.iterations:
        arrived = sum(a <= it.start_at for a in arrivals)
        assert it.num_waiting + it.num_running <= arrived, (it.index, it.num_waiting, it.num_running, arrived)
    if run.scenario.name == "other_stall":
        assert any(it.retraction is not None for it in run.iterations)
