"""Warm-up: every page's first view, every tour step and the PD presets are computed once at start-up, in a
background thread, so a person never waits for a cold default.

The jobs fill the same server-wide caches the pages read (app.compute's runs, app.ui.chart's specs, the
sweep's summaries) under the same keys, in the order a visitor meets them: each page's first view, then
the tour steps, then the upstream PD preset (the slowest runs). `app/serve.py` starts it with the server
and reports its progress at /warmup; `streamlit run app/main.py` (and AppTest) serve the pages without it.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from app import compute, state
from app.charts import views
from app.compare.pair import B_DEFAULTS, DEFAULT_STORY, shared_controls
from app.compare.sweep import CHUNK_SWEEP, _summary
from app.pd import params
from app.pd.presets import baseline, pd_scenario, preset_data, split
from app.story import cursor, pass_cost
from app.story.timeline import marked_lanes
from app.ui.chart import warm_spec
from engine_model import STORIES, InputError, Story, ranged


@dataclass
class Progress:
    """What the warm-up has done so far (read by /warmup and the bench)."""

    total: int = 0
    done: int = 0
    failed: list[str] = field(default_factory=list)
    started_at: float | None = None
    finished_at: float | None = None

    def as_dict(self) -> dict:
        took = None if self.started_at is None else (self.finished_at or time.monotonic()) - self.started_at
        return {"total": self.total, "done": self.done, "failed": self.failed,
                "finished": self.finished_at is not None, "seconds": None if took is None else round(took, 2)}


PROGRESS = Progress()
_LOCK = threading.Lock()
THREAD = "who-waits-warm-up"
# Streamlit warns once per cached call made outside a page's script run; in the warm-up that is the point.
QUIET = ("streamlit.runtime.scriptrunner_utils.script_run_context",
         "streamlit.runtime.caching.cache_data_api")


def _not_from_warm_up(record: logging.LogRecord) -> bool:
    return record.threadName != THREAD


def start() -> bool:
    """Start the warm-up once per process (later calls do nothing). Returns whether this call started it."""
    with _LOCK:
        if PROGRESS.started_at is not None:
            return False
        PROGRESS.started_at = time.monotonic()
    for name in QUIET:
        logging.getLogger(name).addFilter(_not_from_warm_up)
    threading.Thread(target=run_jobs, args=(jobs(),), name=THREAD, daemon=True).start()
    return True


def run_jobs(todo: list[tuple[str, Callable[[], None]]]) -> None:
    """Each job in order; a job that fails is named in the progress and the rest go on."""
    PROGRESS.total = len(todo)
    for name, job in todo:
        try:
            job()
        except Exception as err:  # a warm-up must never take the server down; the page shows the error itself
            PROGRESS.failed.append(f"{name}: {type(err).__name__}: {err}")
        PROGRESS.done += 1
    PROGRESS.finished_at = time.monotonic()


def jobs() -> list[tuple[str, Callable[[], None]]]:
    """(name, job) in the order a visitor meets them."""
    first = [(f"{s.key} first view", _view_job(s, s.defaults, s.default_cursor)) for s in STORIES.values()]
    first += [("ten o'clock PD section", _pd_job("rush")), ("compare first view", _compare_job)]
    tours = [(f"{s.key} tour step {i + 1}", _view_job(s, _step_values(s, i), s.tour[i].cursor))
             for s in STORIES.values() for i in range(len(s.tour))]
    return first + tours + [("upstream PD preset", _pd_job("upstream"))]


def _step_values(story: Story, i: int) -> dict:
    """The control values a tour step sets when clicked from the story's defaults (app.story.tour)."""
    return {c.key: story.tour[i].settings.get(c.key, c.default) for c in story.controls}


def _view_job(story: Story, values: dict, cursor_spec: tuple) -> Callable[[], None]:
    """A story page's view: its run and baseline, the specs of its charts at the cursor and what the pass
    under the cursor cost."""

    def job() -> None:
        scenario = story.scenario(values)
        compute.run_scenario(story.scenario(story.baseline_values(values)))
        run = compute.run_scenario(scenario)
        ranged(scenario)  # the headline cards' band (engine_model.band: its two runs, cached per process)
        key = compute.run_key(scenario)
        pos = cursor.resolve(run.iterations, cursor_spec)
        row = run.iterations.iloc[pos]
        index = int(row["index"]) if len(run.lanes) == 1 else None
        for view in views.story_views(run, float(row["start_at"]), index, marked_lanes(run, row)):
            warm_spec(story.key, view.chart_id, view.build, (key, pos))
        for view in views.itl_views(run).values():
            warm_spec(story.key, view.chart_id, view.build, key)
        with contextlib.suppress(InputError):  # a pass with no breakdown: the page says so itself
            if pass_cost.ran(row):
                pass_cost.breakdown(key, pass_cost.shape_of(row), scenario)

    return job


def _pd_job(preset: str) -> Callable[[], None]:
    rush = STORIES["ten_oclock_rush"]

    def job() -> None:
        for policy in ("early", "prefill_complete"):
            scenario = pd_scenario(preset, rush.defaults, policy, 0, 1, 1)
            compute.run_scenario(scenario)
            if preset == "rush":  # the today → PD cards carry the band
                ranged(scenario)
        data = preset_data(preset, rush.defaults)  # the section's default comparison on the same GPUs
        compute.run_scenario(baseline(data, params.DEFAULTS[state.PD_BASE], split(data, "early", 0, 1, 1)))

    return job


def _compare_job() -> None:
    """Compare's first view: A at SGLang defaults, B with mixed chunk on, and B's chunk-size sweep."""
    story = STORIES[DEFAULT_STORY]
    shared = {c.key: c.default for c in shared_controls(story)}
    flags = {c.key: c.default for c in story.controls if c.is_flag}
    b = {**shared, **flags, **B_DEFAULTS}
    compute.run_scenario(story.scenario({**shared, **flags}))
    compute.run_scenario(story.scenario(b))
    for chunk in CHUNK_SWEEP:
        _summary(story.scenario({**b, "chunk": chunk}).model_dump_json())
