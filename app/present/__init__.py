"""The presentation layer: one picture, one number, on every surface.

A run's tidy frames (app.charts.frames) go through the app's chart builders (app.charts, one Vega-Lite spec
per chart) and its formatters and narration (app.present.numbers, .fmt, .settings). Every surface renders
those same objects: the Streamlit page, each chart's PNG / SVG / PDF export (.export), the standalone page
(.page over .grid's precomputed runs), the tour's slides and speaker notes (.slides) and the PD figure (.pd).
No Streamlit here: the CLI (`who-waits figure`, .cli) and the tests import it as it is.

    from app.present import story_page, story_slides, write_slides
    open("forty.html", "w").write(story_page("forty_replies", sets=("engine.enable_mixed_chunk=true",)))
"""

from __future__ import annotations

from app.present import epub
from app.present.grid import _run, run_grid
from app.present.page import Figure, figure_html, story_figure
from app.present.pd import KEYS as PD_KEYS
from app.present.pd import pd_figure
from app.present.settings import deployment_line
from app.present.slides import Slide, slides_zip, step_slide, tour_slides, write_slides
from engine_model import STORIES, InputError, Story

__all__ = ["FIGURES", "Slide", "figure_epub", "figure_of", "figure_page", "pd_page", "slides_zip", "story_of",
           "story_page", "story_slides", "write_slides"]

FIGURES = (*STORIES, *PD_KEYS)  # what `figure` takes: a story, or a PD preset (the PD figure opens on it)


def story_of(key: str) -> Story:
    if key not in STORIES:
        raise InputError("story", f"unknown story {key!r}; expected one of {', '.join(FIGURES)}")
    return STORIES[key]


def story_figure_of(key: str, vary: tuple[str, ...] | None = None, start: dict | None = None,
                    sets: tuple[str, ...] = (), runs=None) -> Figure:
    """A story's figure: `vary` the controls a reader flips, `start` the control values it opens at (as the
    app's export passes them), `sets` --set overrides."""
    story = story_of(key)
    grid = run_grid(story, vary, start, sets, runs)
    scenario = story.scenario(grid.first.values, grid.sets)
    setup = (f"{deployment_line(scenario)}; seed {scenario.seed}; SGLang {scenario.engine.version} as "
             "modelled by Who Waits")
    return story_figure(grid, setup)


def story_page(key: str, vary: tuple[str, ...] | None = None, start: dict | None = None,
               sets: tuple[str, ...] = (), bare: bool = False, runs=None, bundle: str | None = None) -> str:
    """One self-contained HTML page of a story (see `story_figure_of`); `bare` leaves out the page's own
    heading, teaser and note (to sit inside a post)."""
    return figure_html(story_figure_of(key, vary, start, sets, runs), bare, bundle)


def pd_figure_of(key: str = "ten_oclock_rush_pd", runs=None) -> Figure:
    """The PD figure, opening on the workload and deployment of PD preset `key`."""
    if key not in PD_KEYS:
        raise InputError("figure", f"unknown PD preset {key!r}; expected one of {', '.join(PD_KEYS)}")
    return pd_figure(*PD_KEYS[key], runs=runs)


def pd_page(key: str = "ten_oclock_rush_pd", bare: bool = False, bundle: str | None = None, runs=None) -> str:
    return figure_html(pd_figure_of(key, runs), bare, bundle)


def figure_of(key: str, **options) -> Figure:
    """A story's figure, or the PD figure for a PD preset (which takes no options)."""
    return pd_figure_of(key) if key in PD_KEYS else story_figure_of(key, **options)


def figure_page(key: str, bare: bool = False, bundle: str | None = None, **options) -> str:
    """A story's page, or the PD figure's."""
    return figure_html(figure_of(key, **options), bare, bundle)


def figure_epub(key: str, bundle: str | None = None, **options) -> bytes:
    """A story's figure (or the PD figure) as an EPUB 3 book of one chapter (app.present.epub)."""
    return epub.book(figure_of(key, **options), bundle)


def story_slides(key: str, runs=None) -> list[Slide]:
    """One slide per tour step of a story (the PD presets: the ten o'clock rush's PD steps)."""
    if key in PD_KEYS:
        story = STORIES["ten_oclock_rush"]
        return [step_slide(story, i, step, runs or _run) for i, step in enumerate(story.tour, 1)
                if step.focus == "pd"]
    return tour_slides(story_of(key), runs or _run)
