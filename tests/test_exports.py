"""Exports a person can paste as is (app/ui/exports.py): a chart's PNG/SVG carries its title, the settings
that produced it and its headline number, and no cursor; Compare's two sides make one image; the sweep
speaks in words and marks SGLang's defaults. The browser half is tests/test_browser_exports.py.
"""

from __future__ import annotations

import io
import json
import re

import pandas as pd
import pytest
import vl_convert as vlc
from PIL import Image

from app.charts import timelines
from app.charts.frames import build
from app.compare import charts as compare_charts
from app.compare.pair import pair_note, side_words
from app.compare.sweep import defaults_point
from app.present.export import EXPORT_WIDTH, export_spec, render, stacked_spec, wrapped
from app.present.fmt import fmt_seconds
from app.present.settings import story_note
from engine_model import STORIES, simulate
from engine_model.band import ranged

FORTY = STORIES["forty_replies"]
TITLE = "Token streams: who got a token, and when"


@pytest.fixture(scope="session")
def runs():
    before = build(simulate(FORTY.scenario(FORTY.defaults)))
    after = build(simulate(FORTY.scenario({**FORTY.defaults, "mixed": True})))
    return before, after


def tokens_spec(run, cursor_at: float | None) -> dict:
    chart = timelines.token_streams(run.tokens, run.stalls, run.chunks, run.waits, run.request_order,
                                    cursor_at, run.end_at, run.stall_threshold_s)
    return chart.to_dict(validate=False)


def gap(run) -> str:
    """The streams' longest pause as the page writes it."""
    return fmt_seconds(run.summary.metrics.value("streams", "max_itl_s", "max"))


def highest(values: dict, run) -> str:
    """The top of the longest pause's band: the setting rerun at each end of the H100's attention evidence
    (engine_model.band), as the note closes on it."""
    ends = ranged(FORTY.scenario(values))
    pauses = [s.metrics.value("streams", "max_itl_s", "max") for s in (ends.slow, ends.fast, run.summary)]
    return fmt_seconds(max(pauses))


def svg_text(spec: dict) -> str:
    return vlc.vegalite_to_svg(spec)


def test_the_story_note_names_flags_workload_and_headline_in_words(runs):
    before, after = runs
    flags, workload, number = story_note(FORTY, {**FORTY.defaults, "mixed": True}, after, before)
    assert flags == ("SGLang flags: Mixed chunk: on · Chunk size: 8,192 (auto, from GPU memory) · "
                     "Decode rounds between prefills: 0 · Speculative decoding: off · DP attention: off")
    assert workload.startswith("Workload and deployment: Streams: 40 · Log length (tokens): 100,000 · "
                               "Logprobs on 1 stream: off")
    assert workload.endswith("Logprobs on 1 stream: off · Llama-3.1-8B, bf16 weights, bf16 KV, on 1 × H100 "
                             "SXM 80GB, TP 1 · Random seed: 0")  # the model on its GPUs, from the run itself
    edited_values = {**FORTY.defaults, "tp": 2, "gpu.memory_gib": 96.0}
    edited_run = build(simulate(FORTY.scenario(edited_values)))
    edited = story_note(FORTY, edited_values, edited_run, edited_run)[1]
    assert "on 2 × H100 SXM 80GB, TP 2 · GPU memory (GiB): 96 · Random seed: 0" in edited
    mixed = {**FORTY.defaults, "mixed": True}
    assert number.startswith(f"Longest pause, the 40 streams: {gap(after)} "
                             f"(SGLang's defaults, same requests: {gap(before)}; range ")
    assert number.endswith(f"–{highest(mixed, after)})")
    said = story_note(FORTY, FORTY.defaults, before, before)[2]
    assert said.startswith(f"Longest pause, the 40 streams: {gap(before)} (SGLang's defaults; range ")
    assert said.endswith(f"–{highest(FORTY.defaults, before)})")


def test_the_headline_names_a_number_that_moved_or_the_change_that_moved_none(runs):
    """The note never reads "nothing changed" over a chart that changed: it names the first headline that
    moved; where none moved, the change itself."""
    before, _ = runs
    quiet = {**FORTY.defaults, "logprob": True}  # logprobs with mixing off: every pass as before
    run = build(simulate(FORTY.scenario(quiet)))
    assert run.summary.config != before.summary.config
    assert story_note(FORTY, quiet, run, before)[2].startswith(
        f"Longest pause, the 40 streams: {gap(run)}, as at SGLang's defaults (Logprobs on 1 stream off → on "
        "moves none of the story's headline numbers; range ")
    log_only = {**FORTY.defaults, "log": 10000}  # a short log: the first headline moves
    shorter = build(simulate(FORTY.scenario(log_only)))
    line = story_note(FORTY, log_only, shorter, before)[2]
    assert line.startswith("Longest pause, the 40 streams: ") and "same requests" in line
    assert gap(shorter) != gap(before)


def test_an_exported_chart_carries_title_and_settings_and_no_cursor(runs):
    before, _ = runs
    live = tokens_spec(before, cursor_at=2.0)
    assert "cursor 2.00 s" in svg_text({**live, "width": 600})  # the app's chart has the cursor ...
    note = story_note(FORTY, FORTY.defaults, before, before)
    spec = export_spec(live, TITLE, note)
    svg = svg_text(spec)
    assert "cursor" not in svg  # ... the export does not
    for text in (TITLE, "SGLang flags: Mixed chunk: off", f"Longest pause, the 40 streams: {gap(before)}"):
        assert text.replace("'", "&#39;") in svg or text in svg
    assert "on the lane" not in svg and "params" not in spec
    png = Image.open(io.BytesIO(render(spec, "png")))
    assert png.format == "PNG" and png.size[0] >= 1900  # 960 px wide at scale 2, plus padding


def test_the_pass_timeline_export_drops_the_cursor_outline_and_the_click_selection(runs):
    before, _ = runs
    live = timelines.pass_timeline(before.passes, 3.0, before.end_at, 20).to_dict(validate=False)
    assert live["params"] and json.dumps(live).count('"name": "cursor') == 2
    spec = export_spec(live, "Pass timeline", ("a line",))
    assert '"name": "cursor' not in json.dumps(spec) and "params" not in spec
    vlc.vegalite_to_vega(spec)  # still a valid spec


def test_compare_exports_one_image_of_the_pages_two_charts_a_above_b(runs):
    before, after = runs
    flags = [c.key for c in FORTY.controls if c.is_flag]
    a = {k: FORTY.defaults[k] for k in flags}
    b = {**a, "mixed": True}
    shared = {c.key: c.default for c in FORTY.controls if not c.is_flag}
    assert side_words(FORTY, a, b) == ("SGLang defaults (mixed chunk off)", "mixed chunk on")
    note = pair_note(FORTY, before, after, a, b, shared)
    views = compare_charts.pair_views(before, after, side_words(FORTY, a, b))
    assert [v.chart_id for v in views] == ["passes", "tokens"]
    spec = stacked_spec([(v.build().to_dict(validate=False), v.title) for v in views],
                        "The forty replies: A against B", note)
    assert len(spec["vconcat"]) == 2
    svg = svg_text(spec)
    for text in ("A: SGLang defaults (mixed chunk off); B: mixed chunk on", "A · engine", "B · engine",
                 f"Longest pause, the 40 streams: {gap(before)} (A) → {gap(after)} (B)",
                 "Token streams, A above B"):
        assert text in svg
    assert re.search(r">A</text>", svg) and re.search(r">B</text>", svg)  # each side named on the lanes' axis
    image = Image.open(io.BytesIO(render(spec, "png")))
    assert image.size[0] < 2 * 1.2 * EXPORT_WIDTH  # every line wrapped to the charts' width (scale 2)


def test_a_long_subtitle_line_wraps_after_a_separator():
    line = " · ".join(f"Setting {i}: value {i}" for i in range(20))
    lines = wrapped(line, 60)
    assert len(lines) > 1 and all(len(part) <= 60 for part in lines) and " ".join(lines) == line
    assert all(part.endswith("·") for part in lines[:-1])
    assert wrapped("short", 60) == ["short"]


def test_the_sweep_speaks_in_words_and_marks_sglang_defaults(runs):
    values = {**FORTY.defaults, "mixed": True}
    point = defaults_point(FORTY, values)
    first = fmt_seconds(runs[0].summary.metrics.value("log", "ttft_s", "p95"))
    label = f"SGLang defaults: pause {gap(runs[0])}, first token {first}"  # which number is on which axis
    assert point["label"].tolist() == [label]

    curve = pd.DataFrame({"x_s": [0.1, 1.6], "y_s": [12.0, 11.4], "label": ["512", "8,192"], "order": [0, 1],
                          "is_current": [False, True]})
    spec = compare_charts.tradeoff_curve(curve, "x", "y", point).to_dict()
    svg = svg_text({**spec, "width": 500})
    assert all(f">{line}</tspan>" in svg for line in label.replace(": ", ":\n", 1).split("\n")[:1]
               + label.split(": ", 1)[1].split(", "))  # the label on its three lines
    sweep = pd.DataFrame({"setting": [512.0, 1024.0], "label": ["512", "1,024"], "metric": ["m", "m"],
                          "seconds": [0.1, 0.2]})
    svg = svg_text({**compare_charts.sweep_lines(sweep, "chunk size", 1024.0).to_dict(), "width": 500})
    assert "1,024" in svg and "1.024k" not in svg and "seconds (log scale)" in svg
