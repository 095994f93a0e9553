"""A story outside the app: the standalone figure (engine_model.figure) and the tour as slides.

The figure is checked as data (every precomputed setting has its rows, every stall survives, the spec is
valid Vega-Lite), as a file (self-contained, <= 3 MB, well-formed XHTML for an EPUB) and, in
tests/test_browser_figure.py, in Chromium with the network blocked.
"""

from __future__ import annotations

import csv
import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from PIL import Image

from engine_model import STORIES, gaps, load_scenario, simulate, summary
from engine_model.cli import main
from engine_model.figure import figure_html, figure_spec_of, slide_images
from engine_model.figure.grid import axes_of
from engine_model.figure.page import cdata_safe, json_for_script
from engine_model.figure.rows import fmt_value, pass_rows, stall_threshold, stream_rows

FORTY = STORIES["forty_replies"]
SITE = Path(jsonschema.__file__).parents[1]
SCHEMA = SITE / "altair" / "vegalite" / "v6" / "schema" / "vega-lite-schema.json"
MAX_BYTES = 3_000_000


@pytest.fixture(scope="module")
def forty_spec() -> dict:
    return figure_spec_of(FORTY)


@pytest.fixture(scope="module")
def forty_html() -> str:
    return figure_html("forty_replies")


def rows_of(view: dict) -> list[dict]:
    return list(csv.DictReader(io.StringIO(view["data"]["values"])))


def views(spec: dict) -> tuple[dict, dict, dict]:
    head, timelines = spec["vconcat"]
    streams, passes = timelines["vconcat"]
    return head["layer"][0], streams, passes


# -- rows --------------------------------------------------------------------------------------------
def test_every_gap_at_or_over_the_threshold_is_a_stall_row_and_nothing_else_is():
    result = simulate(FORTY.scenario({**FORTY.defaults, "mixed": True, "chunk": 4096}))
    threshold = stall_threshold(result)
    want = sorted(round(float(g), 6) for r in result.requests for g in gaps(r) if g >= threshold)
    got = sorted(round(e - b, 6) for _, part, b, e in stream_rows(result, threshold) if part == "x")
    assert want and got == want


def test_pass_rows_merge_only_back_to_back_decode_passes():
    result = simulate(FORTY.scenario(FORTY.defaults))
    rows = pass_rows(result)
    prefills = [it for it in result.iterations if it.kind.value == "prefill"]
    want = [("prefill chunk", it.start_at, it.end_at) for it in prefills]
    assert [r for r in rows if r[0] == "prefill chunk"] == want
    decode_time = sum(it.duration_s for it in result.iterations if it.kind.value == "decode")
    assert sum(e - b for k, b, e in rows if k == "decode") == pytest.approx(decode_time)
    assert len(rows) < len(result.iterations) / 5
    assert all(b1 <= b2 for (_, b1, _), (_, b2, _) in zip(rows, rows[1:], strict=False))


# -- the figure's spec -------------------------------------------------------------------------------
def test_the_forty_replies_grid_is_mixed_by_chunk_size_by_logprobs():
    axes = axes_of(FORTY)
    assert [(a.control.key, a.values) for a in axes] == [
        ("mixed", (False, True)), ("chunk", (512, 1024, 2048, 4096, 8192, 16384)), ("logprob", (False, True))]


def test_the_figure_spec_is_valid_vega_lite(forty_spec):
    jsonschema.validate(forty_spec, json.loads(SCHEMA.read_text()))


def test_each_setting_has_its_rows_and_the_parameters_start_on_sglang_defaults(forty_spec):
    head, streams, passes = views(forty_spec)
    keys = {f"{m}|{c}|{lp}" for m in range(2) for c in range(6) for lp in range(2)}
    for view in (head, streams, passes):
        assert {row["s"] for row in rows_of(view)} == keys
    params = {p["name"]: p["value"] for p in forty_spec["params"]}
    assert params == {"mixed": 0, "chunk": 4, "logprob": 0}  # chunk "auto" resolves to 8,192 on the H100
    assert all(p["bind"]["input"] == "radio" for p in forty_spec["params"])
    assert head["transform"] == [{"filter": "datum.s == '' + mixed + '|' + chunk + '|' + logprob"}]


def test_the_headline_moves_with_mixed_chunk_and_comes_back_with_logprobs(forty_spec):
    head = {(r["s"], r["i"]): r for r in rows_of(views(forty_spec)[0])}
    pause = [head[(f"{m}|4|{lp}", "0")]["now"] for m, lp in ((0, 0), (1, 0), (1, 1))]
    defaults = summary(simulate(load_scenario("forty_replies"))).metrics.value("streams", "max_itl_s", "max")
    assert head[("0|4|0", "0")]["before"] == head[("0|4|0", "0")]["now"] == fmt_value(defaults, "s")
    assert pause[1] != pause[0] and pause[2].endswith(" s") and float(pause[2][:-2]) > 10
    assert head[("1|0|0", "0")]["label"] == "Longest pause, the 40 streams"


# -- the file ----------------------------------------------------------------------------------------
def test_the_page_is_self_contained_small_and_well_formed_xhtml(forty_html):
    data = forty_html.encode()
    assert len(data) <= MAX_BYTES
    root = ET.fromstring(data)  # an EPUB 3 content document must be well-formed XML
    assert root.tag == "{http://www.w3.org/1999/xhtml}html"
    assert [e.tag for e in root.iter() if {"src", "href"} & set(e.attrib)] == []  # nothing to fetch
    assert "vegaEmbed(" in forty_html
    assert forty_html.count("<script>") == 2


def test_scripts_and_json_are_made_safe_for_cdata():
    assert cdata_safe("if(s[t[r]]>n)x()") == "if(s[t[r]] >n)x()"
    with pytest.raises(ValueError):
        cdata_safe("var a = ']]>';")
    assert json_for_script({"a": "</script>]]>&"}) == '{"a":"\\u003c/script\\u003e]]\\u003e\\u0026"}'


@pytest.mark.slow
@pytest.mark.parametrize("key", ["other_stall", "ten_oclock_rush", "real_traffic"])
def test_every_story_has_a_figure_under_the_size_limit(key):
    spec = figure_spec_of(STORIES[key])
    size = len(json_for_script(spec))
    assert size < MAX_BYTES - 1_000_000  # the Vega scripts take ~0.9 MB
    num_settings = int(np.prod([len(a.values) for a in axes_of(STORIES[key])]))
    assert len({r["s"] for r in rows_of(views(spec)[1])}) == num_settings


# -- slides ------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_the_tour_as_slides_is_one_16_9_image_per_step():
    slides = slide_images("forty_replies")
    names = [f"forty_replies-{i:02d}.png" for i in range(1, len(FORTY.tour) + 1)]
    assert [name for name, _ in slides] == names
    sizes = set()
    for _, data in slides:
        image = Image.open(io.BytesIO(data))
        image.load()
        sizes.add(image.size)
        pixels = np.asarray(image.convert("L"))
        assert (pixels < 128).mean() > 0.01  # something is drawn, not a blank page
    assert sizes == {(1920, 1080)}


# -- the command line --------------------------------------------------------------------------------
def test_the_figure_command_writes_the_page(tmp_path, capsys, forty_html):
    out = tmp_path / "forty.html"
    assert main(["figure", "forty_replies", "--out", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == forty_html  # deterministic: same story, same file
    assert "wrote" in capsys.readouterr().out


@pytest.mark.parametrize("argv, where", [
    (["figure", "no_such_story"], "story"),
    (["figure", "forty_replies", "--out", "/no/such/folder/x.html"], "--out"),
])
def test_the_figure_command_refuses_bad_input_in_one_line(argv, where, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {where}:") and "\n" not in err
