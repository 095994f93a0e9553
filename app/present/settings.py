"""Settings in words, as every surface prints them: what changed from the story's defaults, the controls'
values on one line, and the three lines an exported chart carries under its title. Pure functions."""

from __future__ import annotations

from app.charts.frames import RunFrames
from app.present.fmt import shown_value
from app.present.numbers import headline_fmt, headline_label, headline_value
from engine_model import Control, Scenario, Story, gpus_words, pool_words, resolve


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


def deployment_line(scenario: Scenario) -> str:
    """'Llama-3.1-70B, bf16 weights, bf16 KV, on 8 × H100 SXM 80GB, TP 8; KV pool ...': what a scenario runs
    on, in the words of the app's resolved line (engine_model.gpus_words, pool_words)."""
    config = {"resolved": resolve(scenario).to_dict(), "engine": scenario.engine.model_dump(),
              "hardware": scenario.hardware.model_dump(), "model": scenario.model.model_dump()}
    res, model = config["resolved"], scenario.model
    return (f"{res['model_name']}, {model.weight_dtype} weights, {model.kv_dtype} KV, on {gpus_words(config)}"
            f"{edited_words(config)}; {pool_words(config)}")


def story_note(story: Story, values: dict, current: RunFrames, base: RunFrames) -> tuple[str, str, str]:
    """Three lines: the SGLang flags, the workload and deployment (GPU, tensor parallel, model, precision,
    any edited figure, seed), and the story's headline number against SGLang's defaults on the same
    requests."""
    resolved_chunk = current.summary.config["resolved"]["chunked_prefill_size"]
    flags = settings_words([c for c in story.controls if c.is_flag], values, resolved_chunk)
    rest = settings_words([c for c in story.controls if not c.is_flag], values, resolved_chunk)
    head = story.headlines[0]
    fmt = headline_fmt(head)
    now, before = headline_value(current, head), headline_value(base, head)
    number = f"{headline_label(head, current)}: {fmt(now)}" + (
        " (SGLang's defaults)" if fmt(now) == fmt(before)
        else f" (SGLang's defaults, same requests: {fmt(before)})")
    return f"SGLang flags: {flags}", f"Workload and deployment: {rest}", number


def edited_words(config: dict) -> str:
    """' (edited: memory_gib 96; model num_layers 40)' when a preset's figures were edited, else ''."""
    edits = [*(f"{k} {v:g}" if isinstance(v, float) else f"{k} {v}"
               for k, v in config["hardware"]["gpu_overrides"].items()),
             *(f"model {k} {v}" for k, v in config["model"]["overrides"].items())]
    return f" (edited: {'; '.join(edits)})" if edits else ""
