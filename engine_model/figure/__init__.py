"""A story outside the app: one standalone interactive HTML page, or its guided tour as 16:9 slides.

    from engine_model.figure import figure_html, slide_images
    open("forty.html", "w").write(figure_html("forty_replies"))

Both are built from the stories as data (engine_model.stories) and plain Vega-Lite dicts; vl-convert (the
Vega scripts a page inlines, the PNG renderer of a slide) is imported only inside the functions that use it.
"""

from __future__ import annotations

from engine_model.errors import InputError
from engine_model.figure.grid import axes_of, initial_index, run_grid
from engine_model.figure.page import standalone_html
from engine_model.figure.slides import slide_images, slides_zip, write_slides
from engine_model.figure.specs import figure_spec
from engine_model.hardware import GPUS, MODELS
from engine_model.resolve import resolve
from engine_model.stories import STORIES, Story

__all__ = ["figure_html", "figure_spec_of", "slide_images", "slides_zip", "story_of", "write_slides"]


def story_of(key: str) -> Story:
    if key not in STORIES:
        raise InputError("story", f"unknown story {key!r}; expected one of {', '.join(STORIES)}")
    return STORIES[key]


def figure_spec_of(story: Story) -> dict:
    """The story's figure: every precomputed setting, switched by radio buttons."""
    axes = axes_of(story)
    cells = run_grid(story)
    chunk = resolve(story.scenario(story.defaults)).chunked_prefill_size
    return figure_spec(story, axes, cells, initial_index(story, axes, chunk))


def figure_html(key: str, bundle: str | None = None) -> str:
    """One self-contained HTML page (no server, no network) holding the story's figure."""
    story = story_of(key)
    scenario = story.scenario(story.defaults)
    gpu, model = GPUS[scenario.hardware.gpu].name, MODELS[scenario.model.name].name
    setup = (f"{model} on one {gpu}, seed {scenario.seed}; "
             f"SGLang {scenario.engine.version} as modelled by Who Waits")
    note = (f"Every setting above was simulated in advance ({setup}); the buttons switch between the runs. "
            "Purple: a reply got no token for a quarter second or more. Numbers beside SGLang's defaults use "
            "the same requests and seed.")
    return standalone_html(figure_spec_of(story), story.title, story.teaser, note, bundle)
