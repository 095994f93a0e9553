"""Which settings a standalone figure precomputes, and their runs.

A figure cannot simulate in the reader's browser, so it carries a small grid of runs: every combination
of a few of the story's controls (for the forty replies: mixed chunk off/on x the Compare sweep's chunk
sizes x logprobs on/off, 24 runs). Everything else stays at the story's defaults. Each run also has its
baseline: SGLang's defaults for every server flag, the workload as in the run (as the app's headline cards).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from engine_model.report import Summary, summary
from engine_model.simulation import Result, simulate
from engine_model.stories import Control, Story

CHUNK_SWEEP = (512, 1024, 2048, 4096, 8192, 16384)  # as Compare's sweep
TOGGLE = (False, True)
AXES = {  # story -> the controls a reader flips in the figure, with their values
    "forty_replies": (("mixed", TOGGLE), ("chunk", CHUNK_SWEEP), ("logprob", TOGGLE)),
    "other_stall": (("mixed", TOGGLE), ("pool", (40000, 60000, 80000, 120000, 200000))),
    "ten_oclock_rush": (("mixed", TOGGLE), ("chunk", CHUNK_SWEEP)),
    "real_traffic": (("mixed", TOGGLE), ("chunk", CHUNK_SWEEP)),
}


@dataclass(frozen=True)
class Axis:
    control: Control
    values: tuple

    def label(self, value) -> str:
        if self.control.widget == "toggle":
            return "on" if value else "off"
        return self.control.fmt(value)


@dataclass
class Cell:
    """One precomputed setting: its index on every axis, its control values, its run and its baseline."""

    index: tuple[int, ...]
    values: dict
    result: Result
    summary: Summary
    baseline: Summary

    @property
    def key(self) -> str:
        """The setting as the page's parameters spell it: axis indices joined by '|'."""
        return "|".join(map(str, self.index))


def axes_of(story: Story) -> tuple[Axis, ...]:
    controls = {c.key: c for c in story.controls}
    return tuple(Axis(controls[key], values) for key, values in AXES[story.key])


def initial_index(story: Story, axes: tuple[Axis, ...], resolved_chunk: int) -> tuple[int, ...]:
    """The story's defaults on every axis; chunk "auto" is the size SGLang resolves on the story's GPU."""
    out = []
    for axis in axes:
        value = axis.control.default
        if value == "auto":
            value = min(axis.values, key=lambda v: abs(v - resolved_chunk))
        out.append(axis.values.index(value) if value in axis.values else 0)
    return tuple(out)


def run_grid(story: Story) -> list[Cell]:
    """Every combination of the story's axes, simulated, with baselines (each distinct baseline run once)."""
    axes = axes_of(story)
    baselines: dict[str, Summary] = {}
    cells = []
    for index in itertools.product(*(range(len(a.values)) for a in axes)):
        values = {**story.defaults, **{a.control.key: a.values[i] for a, i in zip(axes, index, strict=True)}}
        base_scenario = story.scenario(story.baseline_values(values))
        key = base_scenario.model_dump_json()
        if key not in baselines:
            baselines[key] = summary(simulate(base_scenario))
        result = simulate(story.scenario(values))
        cells.append(Cell(index, values, result, summary(result), baselines[key]))
    return cells
