"""Settings in words, as every surface prints them: what changed from the story's defaults, the controls'
values on one line (the deployment as "Llama-3.1-70B, bf16 weights, bf16 KV, on 8 × H100 SXM 80GB, TP 8"), and
the lines an exported chart carries under its title: a story chart's (`story_note`) or a PD chart's
(`pd_note`). Pure functions."""

from __future__ import annotations

from app.charts.frames import RunFrames
from app.pd import tables
from app.present.fmt import fmt_seconds, shown_value
from app.present.numbers import card, fmt_rate, headline_rows
from engine_model import (
    MIX,
    Control,
    InputError,
    Scenario,
    Story,
    gpus_words,
    kv_dtype_of,
    pool_words,
    ranged,
    resolve,
)

DEPLOYMENT = ("gpu", "tp", "model", "wdtype", "kvdtype")  # the controls `deployment_words` says in one phrase


def changes_words(story: Story, values: dict | None) -> str:
    """'Changed: Mixed chunk off → on; KV pool (tokens) 60,000 → 120,000.' or that nothing changed."""
    found = story.changes(values) if values is not None else []
    if not found:
        return ("You are on the story's defaults: change a setting above, or take the tour, to see "
                "before → after.")
    return "Changed: " + "; ".join(f"{c.label} {shown_value(c, was)} → {shown_value(c, now)}"
                                   for c, was, now in found) + "."


def settings_words(controls: list[Control], values: dict, resolved_chunk=None, marked: bool = False) -> str:
    """'Mixed chunk: on · Chunk size: 8,192 (auto, from GPU memory)': the controls' values in words. A cost
    figure, a GPU figure or a model shape appears only when edited (left empty it is the preset's, which the
    GPU and model already say). `marked`: SGLang's flags marked ⚑, as their widgets are."""
    return " · ".join(f"{'⚑ ' if marked and c.is_flag else ''}{label_of(c)}: "
                      f"{shown_value(c, values[c.key], resolved_chunk)}" for c in controls
                      if c.where not in ("cost", "figure") or values[c.key] != c.default)


def label_of(control: Control) -> str:
    """A control's label; a figure's names its preset's kind: 'GPU memory (GiB)', 'model layers'."""
    if control.where != "figure":
        return control.label
    kind, label = control.key.split(".", 1)[0], control.label
    word = label if label[:2].isupper() else label[0].lower() + label[1:]  # 'BF16 TFLOPS' stays
    return f"{'GPU' if kind == 'gpu' else 'model'} {word}"


def deployment_words(config: dict) -> str:
    """'Llama-3.1-70B, bf16 weights, bf16 KV, on 8 × H100 SXM 80GB, TP 8': the model and its GPUs, from a
    run's config (`Summary.config`) or `config_of(scenario)`."""
    res, model = config["resolved"], config["model"]
    return (f"{res['model_name']}, {model['weight_dtype']} weights, {res['kv_dtype']} KV, "
            f"on {gpus_words(config)}")


def config_of(scenario: Scenario) -> dict:
    """What `deployment_words` reads, from a scenario that has not run (the same keys as `Summary.config`)."""
    return {"resolved": resolve(scenario).to_dict(), "engine": scenario.engine.model_dump(),
            "hardware": scenario.hardware.model_dump(), "model": scenario.model.model_dump()}


def model_words(scenario: Scenario) -> str:
    """'Llama-3.1-70B (bf16 weights, bf16 KV)': the model a scenario runs, with its precision."""
    m = scenario.model
    return f"{tables.model_name(scenario)} ({m.weight_dtype} weights, {kv_dtype_of(scenario)} KV)"


def deployment_line(scenario: Scenario) -> str:
    """'Llama-3.1-70B, bf16 weights, bf16 KV, on 8 × H100 SXM 80GB, TP 8; KV pool ...': what a scenario runs
    on, in the words of the app's resolved line (engine_model.gpus_words, pool_words)."""
    config = config_of(scenario)
    return f"{deployment_words(config)}{edited_words(config)}; {pool_words(config)}"


def run_settings(story: Story, values: dict, config: dict) -> tuple[str, str]:
    """(SGLang's flags, the workload and deployment) in words: the flags' values; the workload's controls,
    then the model on its GPUs in one phrase (`deployment_words`), then any edited figure and the seed."""
    chunk = config["resolved"]["chunked_prefill_size"]
    flags = settings_words([c for c in story.controls if c.is_flag], values, chunk)
    workload = [c for c in story.controls if not c.is_flag and c.where == "main"]
    rest = [c for c in story.controls if not c.is_flag and c.where != "main" and c.key not in DEPLOYMENT
            and not (c.key == MIX and not values.get(MIX))]  # the story's own workload is said above
    parts = [settings_words(workload, values, chunk), deployment_words(config),
             settings_words(rest, values, chunk)]
    return flags, " · ".join(p for p in parts if p)


def story_note(story: Story, values: dict, current: RunFrames, base: RunFrames) -> tuple[str, str, str]:
    """Three lines: the SGLang flags, the workload and deployment (model, GPUs and TP in one phrase, any
    edited figure, seed), and a headline number against SGLang's defaults on the same requests
    (`headline_words`)."""
    flags, rest = run_settings(story, values, current.summary.config)
    number = headline_words(story, values, current, base)
    return f"SGLang flags: {flags}", f"Workload and deployment: {rest}", number


def headline_words(story: Story, values: dict, current: RunFrames, base: RunFrames) -> str:
    """The story's first headline number that moved, against SGLang's defaults on the same requests. On
    SGLang's defaults: the first headline, said so. A change that moves none of them: the first headline,
    the same either way, and the change named."""
    try:
        ranges = ranged(story.scenario(values))
    except InputError:
        ranges = None
    rows = headline_rows(story, current, base, ranges)
    first = rows[0]
    if current.summary.config == base.summary.config:
        return f"{first.label}: {first.now} (SGLang's defaults{_band(first)})"
    for row in rows:
        if row.now != row.before:
            return f"{row.label}: {row.now} (SGLang's defaults, same requests: {row.before}{_band(row)})"
    changed = "; ".join(f"{c.label} {shown_value(c, was)} → {shown_value(c, to)}"
                        for c, was, to in story.changes(values)) or "this setting"
    return (f"{first.label}: {first.now}, as at SGLang's defaults ({changed} moves none of the story's "
            f"headline numbers{_band(first)})")


def _band(row) -> str:
    return f"; range {row.band}" if row.band else ""


def pd_note(arms: dict[str, tuple[Scenario, RunFrames | None]],
            runs: dict[str, RunFrames]) -> tuple[str, ...]:
    """The lines a PD chart carries under its title: the model and the PD layout on its GPUs, every other
    deployment beside it, and early -> prefill_complete on the numbers that moved (the page's cards'
    numbers). `arms`: label -> (scenario, run) as the section's table lists them (PD under each policy
    labelled "PD, <policy>"); `runs`: policy -> run, those that ran."""
    pd = next((s for label, (s, _) in arms.items() if label.startswith("PD")), None)
    lines = [] if pd is None else [f"PD: {model_words(pd)}, {tables.deployment(pd)}"]
    others = dict.fromkeys(tables.deployment(s) for label, (s, _) in arms.items()
                           if not label.startswith("PD"))
    if others:
        lines.append("Beside it, on the same requests: " + "; ".join(others))
    lines.append(trade_words(arms, runs))
    return tuple(lines)


def trade_words(arms: dict[str, tuple[Scenario, RunFrames | None]], runs: dict[str, RunFrames]) -> str:
    """'early → prefill_complete: p95 time to first token 75.7 s → 34.9 s; ...': the figures that moved, on
    the page's cards' numbers (app.pd.tables.tradeoff). Where one policy cannot run, the other against the
    first deployment without PD, and the refusal said; where nothing moved, said so with the numbers."""
    if set(runs) == {"early", "prefill_complete"}:
        return _moved("early", runs["early"], "prefill_complete", runs["prefill_complete"])
    if not runs:
        return "PD cannot run on this deployment under either policy"
    policy, run = next(iter(runs.items()))
    other = next(p for p in ("early", "prefill_complete") if p != policy)
    without = next(((label, r) for label, (_, r) in arms.items() if not label.startswith("PD") and r), None)
    said = f" ({other} cannot run on this deployment)"
    if without is None:
        return f"PD ran under {policy} only{said}"
    return _moved(without[0], without[1], f"PD, {policy}", run) + said


def _moved(left: str, a: RunFrames, right: str, b: RunFrames) -> str:
    said = []
    for row in tables.tradeoff(a, b):
        fmt = fmt_rate if row["unit"] == "tok/s" else fmt_seconds
        value = card(row["early"], row["prefill_complete"], fmt)[0]
        said.append((row["label"], value, "→" in value))
    moved = [f"{label} {value}" for label, value, changed in said if changed]
    if moved:
        return f"{left} → {right}: " + "; ".join(moved)
    return f"{left} and {right} alike: " + "; ".join(f"{label} {value}" for label, value, _ in said)


def edited_words(config: dict) -> str:
    """' (edited: memory_gib 96; model num_layers 40)' when a preset's figures were edited, else ''."""
    edits = [*(f"{k} {v:g}" if isinstance(v, float) else f"{k} {v}"
               for k, v in config["hardware"]["gpu_overrides"].items()),
             *(f"model {k} {v}" for k, v in config["model"]["overrides"].items())]
    return f" (edited: {'; '.join(edits)})" if edits else ""
