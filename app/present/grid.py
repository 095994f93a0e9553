"""Which settings a page outside the app precomputes, and their runs.

A standalone page cannot simulate in the reader's browser, so it carries a grid of runs: every combination
of a few of the story's controls (`--vary`; by default the ones in VARY), each beside its baseline (SGLang's
defaults for every flag, the workload as in the run, as the app's headline cards). Every other control stays
where the page was (`start`) or at the story's default. `--set` takes a control's URL form (`mixed=1`) or a
scenario key (`engine.enable_mixed_chunk=true`); a key a varied control writes picks where the page opens,
any other key holds for every run.
"""

from __future__ import annotations

import copy
import functools
import itertools
from dataclasses import dataclass

from app.charts.frames import RunFrames, build
from engine_model import (
    Control,
    InputError,
    Ranged,
    Scenario,
    Story,
    parse_value,
    ranged,
    read_toml,
    resolve,
    simulate,
)

MAX_RUNS = 48  # settings a page may carry: each is a run (plus its baseline) and a share of the file
CHUNK_SWEEP = (512, 1024, 2048, 4096, 8192, 16384)  # as Compare's sweep
VALUES = {"chunk": CHUNK_SWEEP}  # a control's values on an axis where its options are not the right set
STORY_VALUES = {"ten_oclock_rush": {"chunk": (2048, 8192, 16384)}}  # fewer, where a page holds more axes
VARY = {  # story -> the controls a reader flips by default
    "forty_replies": ("mixed", "chunk", "logprob"),
    "other_stall": ("mixed", "pool"),
    "ten_oclock_rush": ("mixed", "policy", "chunk"),
    "real_traffic": ("mixed", "chunk"),
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
    run: RunFrames
    base: RunFrames
    ranges: Ranged | None = None  # the run across its GPU's attention evidence (engine_model.band)

    @property
    def key(self) -> str:
        """The setting as the page spells it: axis indices joined by '|'."""
        return "|".join(map(str, self.index))


@dataclass
class Grid:
    story: Story
    axes: tuple[Axis, ...]
    cells: list[Cell]
    start: tuple[int, ...]  # where the page opens
    sets: tuple[str, ...]  # scenario overrides every run holds

    @property
    def first(self) -> Cell:
        return next(c for c in self.cells if c.index == self.start)


# -- the plan: axes, where the page opens, what holds -------------------------------------------------
def axis_values(story: Story, control: Control) -> tuple:
    if control.widget == "toggle":
        return (False, True)
    if control.key in STORY_VALUES.get(story.key, {}):
        return STORY_VALUES[story.key][control.key]
    if control.key in VALUES:
        return VALUES[control.key]
    if control.widget == "select":
        return tuple(control.options)
    choices = ", ".join(c.key for c in story.controls if c.widget in ("toggle", "select"))
    raise InputError("--vary", f"{control.key} is a {control.widget}; a page can vary switches and lists "
                               f"({choices})")


def plan(story: Story, vary: tuple[str, ...] | None = None, start: dict | None = None,
         sets: tuple[str, ...] = ()) -> tuple[tuple[Axis, ...], dict, tuple[str, ...]]:
    """(axes, every control's value where the page opens, the scenario overrides every run holds)."""
    controls = {c.key: c for c in story.controls}
    keys = VARY.get(story.key, ("mixed",)) if vary is None else vary
    unknown = [k for k in keys if k not in controls]
    if unknown or not keys:
        raise InputError("--vary", f"{', '.join(unknown) or 'nothing'}: expected control names of "
                                   f"{story.key}: {', '.join(controls)}")
    values, held = apply_sets(story, {**story.defaults, **(start or {})}, sets)
    axes = []
    for key in dict.fromkeys(keys):
        control, options = controls[key], axis_values(story, controls[key])
        value = _on_axis(story, control, values, held)
        values[key] = value
        if value not in options:  # the page opens where the person was, even off the usual values
            order = control.options if control.widget == "select" else options
            options = tuple(v for v in order if v in options or v == value)
        axes.append(Axis(control, options))
    size = 1
    for axis in axes:
        size *= len(axis.values)
    if size > MAX_RUNS:
        counts = " × ".join(str(len(a.values)) for a in axes)
        raise InputError("--vary", f"{','.join(keys)} gives {counts} = {size} settings to precompute; a page "
                                   f"carries at most {MAX_RUNS}: vary fewer controls")
    return tuple(axes), values, tuple(held)


def _on_axis(story: Story, control: Control, values: dict, held: list[str]):
    """A control's value where the page opens; chunk "auto" is the size SGLang resolves for this GPU and
    model."""
    value = values[control.key]
    if value != "auto":
        return value
    scenario = story.scenario(values, tuple(held))
    resolved = resolve(scenario).chunked_prefill_size
    return min(axis_values(story, control), key=lambda v: abs(v - resolved))


def apply_sets(story: Story, values: dict, sets) -> tuple[dict, list[str]]:
    """`--set` items over control `values`: those a control writes become its value, the rest are held as
    plain scenario overrides. Returns (the values, the held items)."""
    values, held = dict(values), []
    for item in sets:
        found = control_setting(story, item)
        if found is None:
            held.append(item)
        else:
            values[found[0]] = found[1]
    return values, held


def control_setting(story: Story, item: str) -> tuple[str, object] | None:
    """`--set` as a control value: `mixed=1` (the URL's form), or a scenario key that one control writes
    with one of its values (`engine.enable_mixed_chunk=true`). None: a plain scenario override."""
    key, sep, text = item.partition("=")
    key, text = key.strip(), text.strip()
    if not sep:
        raise InputError(f"--set {item[:60]}", "expected key=value, e.g. mixed=1 or "
                                               "engine.enable_mixed_chunk=true")
    for control in story.controls:
        if key == control.key:
            try:
                return key, control.parse(text)
            except ValueError as err:
                raise InputError(f"--set {key}", str(err)) from None
    wanted = parse_value(text, key)
    for control in story.controls:
        if key in written_keys(story, control):
            if control.widget in ("number", "slider"):  # a figure: any value its range allows
                try:
                    return control.key, control.parse(str(wanted))
                except ValueError as err:
                    raise InputError(f"--set {key}", str(err)) from None
            for value in _candidates(control):
                if _written(story, control, value).get(key) == wanted:
                    return control.key, value
            raise InputError(f"--set {key}", f"{control.label} writes this key; its values are "
                                             f"{', '.join(control.fmt(v) for v in _candidates(control))}")
    return None


def _candidates(control: Control) -> tuple:
    if control.widget == "toggle":
        return (False, True)
    return tuple(control.options) if control.widget == "select" else ()


def _written(story: Story, control: Control, value) -> dict:
    data = copy.deepcopy(read_toml(story.key))
    control.apply(data, value)
    return flat(data)


def written_keys(story: Story, control: Control) -> set[str]:
    """The scenario keys a control writes: those that differ between two of its values."""
    options = _candidates(control) or tuple(control.options[:2])
    if len(options) < 2:
        return set()
    a, b = _written(story, control, options[0]), _written(story, control, options[1])
    return {k for k in a.keys() | b.keys() if a.get(k) != b.get(k)}


def flat(data, prefix: str = "") -> dict:
    """{'engine.enable_mixed_chunk': True, 'workload.groups.0.count': 40, ...}"""
    if isinstance(data, dict):
        return {k: v for key, value in data.items() for k, v in flat(value, f"{prefix}{key}.").items()}
    if isinstance(data, list):
        return {k: v for i, value in enumerate(data) for k, v in flat(value, f"{prefix}{i}.").items()}
    return {prefix[:-1]: data}


# -- the runs ----------------------------------------------------------------------------------------
def run_grid(story: Story, vary: tuple[str, ...] | None = None, start: dict | None = None,
             sets: tuple[str, ...] = (), runs=None) -> Grid:
    """Every combination of the axes, simulated, with baselines (each distinct run simulated once).
    `runs(scenario) -> RunFrames` may be a cache (the app passes its own)."""
    axes, values, held = plan(story, vary, start, sets)
    runs = runs or _run
    cells = []
    for index in itertools.product(*(range(len(a.values)) for a in axes)):
        here = {**values, **{a.control.key: a.values[i] for a, i in zip(axes, index, strict=True)}}
        scenario = story.scenario(here, held)
        run = runs(scenario)
        base = runs(story.scenario(story.baseline_values(here), held))
        cells.append(Cell(index, here, run, base, ranged(scenario)))
    start_index = tuple(a.values.index(values[a.control.key]) for a in axes)
    return Grid(story, axes, cells, start_index, held)


def _run(scenario) -> RunFrames:
    """One run per distinct scenario in this process (a grid's baselines repeat; the CLI has no other
    cache)."""
    return _run_json(scenario.model_dump_json())


@functools.lru_cache(maxsize=4 * MAX_RUNS)
def _run_json(scenario_json: str) -> RunFrames:
    return build(simulate(Scenario.model_validate_json(scenario_json)))
