"""Words that misled a newcomer, each kept from coming back: "→" means only before → after; a throughput
at the story's load is not the GPU's capacity; forty lines drawn as one say so."""

from __future__ import annotations

from story_runs import run

from app.charts.views import alike_words, story_views
from app.present.numbers import OUTPUT_LABEL, prices
from app.present.settings import changes_words
from engine_model import STORIES
from engine_model.stories import CONSERVATIVENESS_OPTIONS, conservativeness_label


def test_a_settings_label_never_uses_the_arrow_of_before_to_after():
    for value in CONSERVATIVENESS_OPTIONS:
        assert "→" not in conservativeness_label(value), value
    story = STORIES["other_stall"]
    said = changes_words(story, {**story.defaults, "conservativeness": 1.5})
    assert said.count("→") == 1, said  # the change itself, once


def test_throughput_is_the_offered_loads_not_the_gpus_capacity():
    story = STORIES["real_traffic"]
    base = run("real_traffic")
    [output] = [p for p in prices(story, base, base) if p.label == OUTPUT_LABEL]
    assert "load" in output.label and "not what the GPU could do" in output.help


def test_replies_drawn_as_one_line_say_so():
    """The forty replies freeze in the same passes: forty ramps, one line."""
    forty = run("forty_replies")
    words = alike_words(forty.stalls)
    assert "40 replies' lines at once" in words, words
    [wait] = [v for v in story_views(forty) if v.chart_id == "wait"]
    assert words.strip() in wait.caption
    assert alike_words(run("other_stall").stalls) == ""  # retractions: each reply its own pause
