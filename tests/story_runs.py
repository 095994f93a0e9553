"""One story run as the app draws it, cached: tests compute what a page should say from the run itself."""

from __future__ import annotations

import logging

from app import compute
from app.charts import frames
from app.present.fmt import fmt_seconds
from app.story import cursor
from app.warm import QUIET
from engine_model import STORIES, Scenario


def run(story_key: str, settings: tuple = ()) -> frames.RunFrames:
    """The story on its defaults, with `settings` (sorted (name, value) pairs) on top."""
    story = STORIES[story_key]
    return scenario_run(story.scenario({**story.defaults, **dict(settings)}))


def opening_t(story_key: str) -> str:
    """The cursor's time as the URL writes it when the story opens (its default cursor)."""
    its = run(story_key).iterations
    return f"{its.iloc[cursor.resolve(its, STORIES[story_key].default_cursor)]['start_at']:.3f}"


def longest_pause(story_key: str, group: str, settings: tuple = ()) -> str:
    """A group's longest gap between two tokens, as the headline card writes it."""
    return fmt_seconds(run(story_key, settings).summary.metrics.value(group, "max_itl_s", "max"))


def retractions(story_key: str, settings: tuple = ()) -> int:
    return run(story_key, settings).summary.metrics.value(None, "num_retracted")


def scenario_run(scenario: Scenario) -> frames.RunFrames:
    """Any scenario's run as the app draws it, from the app's own cache (app.compute), so a test and the page
    it opens in AppTest on the same worker share one run."""
    return compute.run_scenario(scenario)


for _name in QUIET:  # "no runtime found": the app's cache used outside a page, on purpose (as the warm-up)
    logging.getLogger(_name).setLevel(logging.ERROR)


def channels(spec, channel: str) -> list[dict]:
    """Every encoding of `channel` ("x", "color", …) in a chart spec, in order; data is not walked."""
    found = []

    def walk(node) -> None:
        if isinstance(node, dict):
            encoding = node.get("encoding")
            if isinstance(encoding, dict) and isinstance(encoding.get(channel), dict):
                found.append(encoding[channel])
            for key, value in node.items():
                if key not in ("datasets", "data"):
                    walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(spec)
    return found
