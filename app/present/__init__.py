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
from app.present.caption import source_line
from app.present.grid import _run, apply_sets, run_grid
from app.present.page import Figure, figure_html, story_figure
from app.present.pd import KEYS as PD_KEYS
from app.present.pd import layout_setting, pd_figure
from app.present.settings import deployment_line
from app.present.slides import Slide, slides_zip, step_slide, tour_slides, write_slides
from engine_model import MIX, STORIES, InputError, Story, decode_mix, mix_label, mix_words

__all__ = ["FIGURES", "Slide", "figure_epub", "figure_of", "figure_page", "page_values", "pd_options",
           "pd_page", "slides_zip", "story_of", "story_page", "story_slides", "write_slides"]

FIGURES = (*STORIES, *PD_KEYS)  # what `figure` takes: a story, or a PD preset (the PD figure opens on it)


def story_of(key: str, values: dict | None = None) -> Story:
    """A story by key; on `values` whose request mix is set, the story on that mix (Story.with_mix)."""
    if key not in STORIES:
        raise InputError("story", f"unknown story {key!r}; expected one of {', '.join(FIGURES)}")
    return STORIES[key].with_mix((values or {}).get(MIX))


def story_figure_of(key: str, vary: tuple[str, ...] | None = None, start: dict | None = None,
                    sets: tuple[str, ...] = (), runs=None) -> Figure:
    """A story's figure: `vary` the controls a reader flips, `start` the control values it opens at (as the
    app's export passes them), `sets` --set overrides."""
    story = story_of(key)
    story = story_of(key, apply_sets(story, {**story.defaults, **(start or {})}, sets)[0])
    grid = run_grid(story, vary, start, sets, runs)
    scenario = story.scenario(grid.first.values, grid.sets)
    setup = (f"{deployment_line(scenario)}; seed {scenario.seed}; SGLang {scenario.engine.version} as "
             "modelled by Who Waits" + mixed_words(grid.first.values.get(MIX), scenario.seed))
    return story_figure(grid, setup, source_line(scenario))


def mixed_words(text: str | None, seed: int) -> str:
    """'; request mix: support assistant — 3% of requests ...': a story's mix in words for its setup line."""
    if not text:
        return ""
    return f"; request mix: {mix_label(text)} — {mix_words(decode_mix(text), seed)}"


def story_page(key: str, vary: tuple[str, ...] | None = None, start: dict | None = None,
               sets: tuple[str, ...] = (), bare: bool = False, runs=None, bundle: str | None = None) -> str:
    """One self-contained HTML page of a story (see `story_figure_of`); `bare` leaves out the page's own
    heading, teaser and note (to sit inside a post)."""
    return figure_html(story_figure_of(key, vary, start, sets, runs), bare, bundle)


def pd_figure_of(key: str = "ten_oclock_rush_pd", runs=None, values: dict | None = None,
                 layout: dict | None = None) -> Figure:
    """The PD figure, opening on the workload and deployment of PD preset `key` (or on the workload the
    layout's `preset` names), the ten o'clock workload on the page's `values` split as `layout` says
    (app.present.pd)."""
    if key not in PD_KEYS:
        raise InputError("figure", f"unknown PD preset {key!r}; expected one of {', '.join(PD_KEYS)}")
    workload, arm = PD_KEYS[key]
    return pd_figure((layout or {}).get("preset", workload), arm, runs, values, layout)


def pd_page(key: str = "ten_oclock_rush_pd", bare: bool = False, bundle: str | None = None, runs=None,
            values: dict | None = None, layout: dict | None = None) -> str:
    return figure_html(pd_figure_of(key, runs, values, layout), bare, bundle)


def pd_options(sets: tuple[str, ...] = ()) -> dict:
    """`--set` for the PD figure: the ten o'clock page's controls (model=llama-3.1-70b, tp=8, or the scenario
    keys they write: model.name=…, hardware.tp_size=…) and its PD section's layout (pworkers=, dworkers=,
    wtp=, cap=, base=, preset=). {"values", "layout"}: `pd_figure_of`'s options."""
    layout, rest = {}, []
    for item in sets:
        found = layout_setting(item)
        if found is None:
            rest.append(item)
        else:
            layout[found[0]] = found[1]
    return {"values": page_values("ten_oclock_rush", tuple(rest), "the PD section's layout (pworkers, "
                                                                  "dworkers, wtp, cap, base, preset)"),
            "layout": layout}


def page_values(key: str, sets: tuple[str, ...], also: str = "") -> dict:
    """A story page's control values from `--set` (a control as the URL writes it, or a scenario key one
    control writes), over the story's defaults. A key no control writes is refused: the slides and the PD
    figure run what the page runs."""
    story = story_of(key)
    values, held = apply_sets(story, story.defaults, sets)
    if held:
        controls = ", ".join(c.key for c in story.controls if c.where in ("main", "more"))
        raise InputError(f"--set {held[0].split('=', 1)[0]}",
                         f"no control of {key} writes it; here --set takes the page's controls ({controls}, "
                         "or the scenario keys they write: model.name, hardware.tp_size, ...)"
                         + (f" and {also}" if also else ""))
    return values


def figure_of(key: str, **options) -> Figure:
    """A story's figure, or the PD figure for a PD preset (options: `values`, `layout`)."""
    return pd_figure_of(key, **options) if key in PD_KEYS else story_figure_of(key, **options)


def figure_page(key: str, bare: bool = False, bundle: str | None = None, **options) -> str:
    """A story's page, or the PD figure's."""
    return figure_html(figure_of(key, **options), bare, bundle)


def figure_epub(key: str | list[tuple[str, dict]], bundle: str | None = None, images: str = epub.IMAGES,
                **options) -> bytes:
    """Figures as one EPUB 3 book, a chapter each (app.present.epub): a story's figure or the PD figure
    (`key`, with `options`), or several, [(key, its options)]; `images`: the image folder inside the book."""
    items = [(key, options)] if isinstance(key, str) else key
    epub.image_folder(images)  # a bad folder stops before any run
    return epub.book([(k, figure_of(k, **o)) for k, o in items], bundle, images=images)


def story_slides(key: str, runs=None, values: dict | None = None) -> list[Slide]:
    """One slide per tour step of a story. A PD preset's deck: the ten o'clock rush's PD steps, those on the
    preset's own workload first, named for the preset (`upstream_pd_replica-01`), numbered from 1, each with
    its own deployment's settings line. `values`: the page's control values, whose deployment every step
    keeps as the app's tour keeps it (None: the story's defaults)."""
    if key in PD_KEYS:
        story, workload = story_of("ten_oclock_rush", values), PD_KEYS[key][0]
        steps = sorted((s for s in story.tour if s.focus == "pd"),
                       key=lambda s: s.section.get("preset", "rush") != workload)
        return [step_slide(story, i, step, runs or _run, values, deck=key) for i, step in enumerate(steps, 1)]
    return tour_slides(story_of(key, values), runs or _run, values)
