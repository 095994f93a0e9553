"""The step-through marks the lanes its pass touched (issue 40): the request retracted, the prompt
prefilled, the replies that got no token — taken from the run, drawn on the token streams at the cursor."""

from __future__ import annotations

import json

from story_runs import run

from app.charts import views
from app.story import cursor
from app.story.timeline import marked_lanes
from engine_model import STORIES


def at(name: str, spec: tuple, settings: tuple = ()):
    frames = run(name, settings)
    row = frames.iterations.iloc[cursor.resolve(frames.iterations, spec)]
    return frames, row, marked_lanes(frames, row)


def by_how(marked, how: str) -> set[str]:
    return set(marked.loc[marked["how"] == how, "rid"])


def test_a_retraction_marks_the_request_it_retracted_by_name():
    frames, row, marked = at("other_stall", ("retraction", 0))
    assert row["retracted"]  # the pass the tour's "Retraction" step shows
    assert by_how(marked, cursor.RETRACTED) == set(row["retracted"].split(", "))
    named = marked[marked["label"] != ""]
    assert list(named["label"]) == [f"{rid}: {cursor.RETRACTED}" for rid in row["retracted"].split(", ")]


def test_a_chunk_pass_without_mixed_chunk_leaves_every_stream_without_a_token():
    story = STORIES["forty_replies"]
    frames, row, marked = at("forty_replies", ("first", "prefill chunk"))
    streams = set(frames.requests.loc[frames.requests["group"] == story.stream_group, "rid"])
    assert by_how(marked, cursor.PREFILLED) == {row["prefill_rids"]}  # the long prompt
    assert by_how(marked, cursor.NO_TOKEN) == streams and len(streams) == 40


def test_a_mixed_pass_gives_every_stream_a_token_so_none_is_marked():
    frames, row, marked = at("forty_replies", ("first", "mixed"), (("mixed", True),))
    assert row["kind"] == "mixed"
    assert by_how(marked, cursor.NO_TOKEN) == set()
    assert by_how(marked, cursor.PREFILLED) == {row["prefill_rids"]}


def test_a_plain_decode_pass_marks_nothing():
    _, row, marked = at("forty_replies", ("at", 0.25))
    assert row["kind"] == "decode" and marked.empty


def test_the_chart_and_its_caption_carry_the_marks():
    frames, row, marked = at("other_stall", ("retraction", 0))
    tokens = next(v for v in views.story_views(frames, float(row["start_at"]), None, marked)
                  if v.chart_id == "tokens")
    spec = json.dumps(tokens.build().to_dict(validate=False))
    for label in marked.loc[marked["label"] != "", "label"]:
        assert label in spec
    assert '"diamond"' in spec
    counts = marked["how"].value_counts()
    for how, n in counts.items():
        assert f"{n} {'request' if n == 1 else 'requests'} {how}" in tokens.caption
    plain = next(v for v in views.story_views(frames, float(row["start_at"])) if v.chart_id == "tokens")
    assert '"diamond"' not in json.dumps(plain.build().to_dict(validate=False))
    assert "diamond" not in plain.caption
