"""A story outside the app (app/present): the standalone page over a grid of precomputed runs, the PD figure
and the `figure` command.

The page is checked as data (its grid, where it opens, every setting's numbers, the app's own charts with
the app's colours, valid Vega-Lite), as a file (self-contained, <= 3 MB, well-formed XHTML for an EPUB) and,
in tests/test_browser_figure.py, in Chromium with the network blocked.
"""

from __future__ import annotations

import html
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest
from story_runs import channels
from story_runs import scenario_run as run_of

from app.charts import views
from app.present import docs, figure_page, notices, pd_page, story_page
from app.present.cli import main
from app.present.described import chart_words
from app.present.fmt import fmt_seconds, seconds_finer
from app.present.grid import MAX_RUNS, plan, run_grid
from app.present.grid import _run as grid_run
from app.present.numbers import card, headline_fmt, headline_value, percentile_trap, prices
from app.present.page import cdata_safe, figure_html, json_for_script, same_setting, story_figure
from app.present.pd import pd_figure
from engine_model import STORIES, InputError

FORTY = STORIES["forty_replies"]
SITE = Path(jsonschema.__file__).parents[1]
VEGA_LITE = jsonschema.Draft7Validator(
    json.loads((SITE / "altair" / "vegalite" / "v6" / "schema" / "vega-lite-schema.json").read_text()))
MAX_BYTES = 3_000_000
pytestmark = pytest.mark.xdist_group("figures")  # shares the run cache with tests/test_slides.py
PLACEHOLDER = ("{now:", "{before:", "{trap}")


@pytest.fixture(scope="session")
def forty():
    grid = run_grid(FORTY, runs=run_of)
    return grid, story_figure(grid, "setup")


@pytest.fixture(scope="session")
def forty_html(forty) -> str:
    return figure_html(forty[1], bundle="/* bundle */")


# -- the grid ----------------------------------------------------------------------------------------
def test_the_forty_replies_grid_is_mixed_by_chunk_size_by_logprobs_and_opens_on_sglang_defaults(forty):
    grid, figure = forty
    assert [(a.control.key, a.values) for a in grid.axes] == [
        ("mixed", (False, True)), ("chunk", (512, 1024, 2048, 4096, 8192, 16384)), ("logprob", (False, True))]
    assert grid.start == (0, 4, 0)  # chunk "auto" resolves to 8,192 on the H100
    assert len(figure.cells) == 24 and len(figure.ends) < 24  # runs that change nothing are kept once


def test_set_picks_where_the_page_opens_by_control_or_by_scenario_key():
    axes, values, held = plan(FORTY, sets=("engine.enable_mixed_chunk=true", "hardware.gpu=h200"))
    assert values["mixed"] is True and values["gpu"] == "h200" and held == ()
    axes, values, held = plan(FORTY, sets=("mixed=1", "chunk=2048", "engine.max_running_requests=64"))
    assert values["mixed"] is True and values["chunk"] == 2048 and held == ("engine.max_running_requests=64",)
    axes, values, _ = plan(FORTY, vary=("mixed", "chunk"), start={"chunk": "off"})
    assert values["chunk"] == "off" and axes[1].values[-1] == "off"  # the page opens where the person was


@pytest.mark.parametrize("vary, sets, where, says", [
    (("mixed", "chunk", "logprob", "log"), (), "--vary", f"2 × 6 × 2 × 5 = 120 settings to precompute; a "
                                                         f"page carries at most {MAX_RUNS}"),
    (("streams",), (), "--vary", "streams is a slider"),
    (("nonsense",), (), "--vary", "nonsense: expected control names of forty_replies"),
    (None, ("mixed=maybe",), "--set mixed", "expected 1 or 0"),
    (None, ("engine.chunked_prefill_size=3000",), "--set engine.chunked_prefill_size", "Chunk size writes"),
])
def test_a_page_that_cannot_be_built_says_why_before_any_run(vary, sets, where, says):
    with pytest.raises(InputError) as err:
        plan(FORTY, vary, None, sets)
    assert err.value.where == where and says in err.value.problem


def test_every_setting_has_its_numbers_from_its_own_run(forty):
    grid, figure = forty
    for cell in grid.cells:
        table = figure.cells[cell.key]["tables"][0]
        pause = cell.run.summary.metrics.value("streams", "max_itl_s", "max")
        assert table["rows"][0][0] == "Longest pause, the 40 streams"
        now, _, band = table["rows"][0][2].partition(" (")
        before = cell.base.summary.metrics.value("streams", "max_itl_s", "max")
        if now != fmt_seconds(pause):  # one more digit, as the app's cards, where two that differ print alike
            assert now == seconds_finer(pause) and fmt_seconds(pause) == fmt_seconds(before) != now
            assert table["rows"][0][1] == seconds_finer(before)
        # on an H100 the long prompt's pause carries its band: the same setting with attention at each end
        ends = sorted(r.metrics.value("streams", "max_itl_s", "max")
                      for r in (cell.ranges.slow, cell.ranges.fast))
        low, high = min(ends[0], pause), max(ends[1], pause)
        lo, hi = fmt_seconds(low), fmt_seconds(high)
        same_unit = lo.rpartition(" ")[2] == hi.rpartition(" ")[2]
        if high - low < 0.05 * pause:  # a pause that is not attention (the front end tokenizing) has none
            assert band == ""
            continue
        assert band == f"range {lo.rpartition(' ')[0] if same_unit else lo}–{hi})"
    off, on = figure.cells["0|4|0"]["tables"][0], figure.cells["1|4|0"]["tables"][0]
    assert off["rows"][0][1] == off["rows"][0][2].partition(" (")[0] == on["rows"][0][1]  # the defaults
    assert on["rows"][0][2] != off["rows"][0][2]  # mixed chunk moves the longest pause
    assert figure.cells["0|4|1"]["run"] == figure.cells["0|4|0"]["run"]  # logprobs change nothing unmixed


def test_the_pages_numbers_costs_and_p99_note_are_the_apps_cards(forty):
    """One number: each headline pair reads as the app's card reads it (numbers.card: one more digit where two
    differ but print alike), the cost table is the app's cost cards (numbers.prices) and the note is its
    "Read p99 with care" (numbers.percentile_trap), per setting."""
    grid, figure = forty
    finer = 0
    for cell in grid.cells:
        shown = figure.cells[cell.key]
        same = same_setting(cell.run, cell.base)
        for h, row in zip(FORTY.headlines, shown["tables"][0]["rows"], strict=True):
            fmt = headline_fmt(h)
            value, delta = card(headline_value(cell.base, h), headline_value(cell.run, h), fmt, same)
            now = row[2].partition(" (range")[0]
            expected = now if delta is None else f"{row[1]} → {now}"
            assert value.replace("\u00a0", " ") == expected, (cell.key, h.label)
            finer += delta is not None and fmt(headline_value(cell.run, h)) != now
        costs = [(p.label, *card(p.before, p.after, p.fmt, same)) for p in prices(FORTY, cell.base, cell.run)]
        assert [r[0] for r in shown["tables"][1]["rows"]] == [c[0] for c in costs]
        for row, (_, value, delta) in zip(shown["tables"][1]["rows"], costs, strict=True):
            assert value.replace("\u00a0", " ") == (row[2] if delta is None else f"{row[1]} → {row[2]}")
        assert shown["trap"] == (percentile_trap("streams", cell.run if same else cell.base, cell.run) or "")
    assert finer > 0  # the grid has pairs that one digit less would print alike
    assert any(c["trap"].startswith("Read p99 with care") for c in figure.cells.values())


# -- the charts are the app's ------------------------------------------------------------------------
def colour_scales(spec) -> list:
    """Every colour scale in a spec, in order: its field and {value: colour}."""
    return [(c.get("field"), dict(zip(c["scale"]["domain"], c["scale"]["range"], strict=True)))
            for c in channels(spec, "color") if "domain" in c.get("scale", {})]


def assert_valid_vega_lite(spec: dict, datasets: dict) -> None:
    """The spec is valid Vega-Lite with the datasets it names; each dataset (a list of rows, every row of a
    kind the schema accepts the same way) is checked on its first rows, which keeps jsonschema off the
    hundreds of thousands of values (30 s a page)."""
    text = json.dumps(spec)
    named = {name: rows for name, rows in datasets.items() if name in text}
    assert all(isinstance(rows, list) and rows for rows in named.values())
    VEGA_LITE.validate({**spec, "datasets": {name: rows[:3] for name, rows in named.items()}})


def test_each_chart_of_the_page_has_the_apps_colours_and_is_valid_vega_lite(forty):
    grid, figure = forty
    for chart in figure.charts:
        app_spec = views.story_view(grid.first.run, chart.chart_id).build().to_dict()
        page, app = colour_scales(chart.spec), colour_scales(app_spec)
        assert [field for field, _ in page] == [field for field, _ in app], chart.chart_id
        for (_, shown), (_, drawn) in zip(page, app, strict=True):  # the page may list states other runs have
            assert drawn.items() <= shown.items(), chart.chart_id
        assert_valid_vega_lite(chart.spec, figure.datasets)
        assert {"name": "run", "value": figure.first["run"]} in chart.spec["params"]


def test_every_tooltip_names_its_field_in_words_with_its_unit(forty):
    """A tooltip reads "no token for (s): 12.551", never "gap_s: 12.551"."""
    _, figure = forty
    lists = [re.findall(r'"tooltip": (\[[^\]]*\])', json.dumps(chart.spec)) for chart in figure.charts]
    tips = [tip for found in lists for text in found for tip in json.loads(text)]
    assert len(tips) > 20
    for tip in tips:
        label = tip.get("title", tip["field"])
        assert "_" not in label, tip
        if tip["field"].endswith("_s") or tip["field"] in ("at", "start_at"):
            assert "(s)" in label, tip


def test_every_view_keeps_only_the_shown_runs_rows(forty):
    _, figure = forty
    text = json.dumps([c.spec for c in figure.charts])
    assert text.count('"filter": "datum.r == run"') >= 5  # tokens: stalls, waits, ticks, chunks; passes
    rows = figure.datasets.values()
    assert all({"r"} <= set(next(iter(r), {})) for r in rows)


# -- the file ----------------------------------------------------------------------------------------
def test_the_page_is_self_contained_and_well_formed_xhtml(forty_html):
    root = ET.fromstring(forty_html.encode())  # an EPUB 3 content document must be well-formed XML
    assert root.tag == "{http://www.w3.org/1999/xhtml}html"
    linked = [e.attrib.get("src", e.attrib.get("href", "")) for e in root.iter()
              if {"src", "href"} & set(e.attrib)]
    assert linked and all(link.startswith("data:image/png;base64,") for link in linked)  # fallback images
    assert forty_html.count("<script>") == 2 and "wwMount(" in forty_html
    for text in PLACEHOLDER:
        assert text not in forty_html


def test_every_control_group_is_labelled_and_ids_are_scoped_to_the_figure(forty, forty_html):
    _, figure = forty
    root = ET.fromstring(forty_html.encode())
    ns = "{http://www.w3.org/1999/xhtml}"
    legends = [e.text for e in root.iter(f"{ns}legend")]
    assert legends == ["Mixed chunk", "Chunk size", "Logprobs on 1 stream"]
    ids = [e.attrib["id"] for e in root.iter() if "id" in e.attrib]
    assert ids and all(i.startswith(figure.uid) for i in ids) and len(ids) == len(set(ids))
    images = [e for e in root.iter(f"{ns}img")]
    pause = fmt_seconds(forty[0].first.run.summary.metrics.value("streams", "max_itl_s", "max"))
    assert images and all(f"Longest pause, the 40 streams: {pause}" in img.attrib["alt"] for img in images)


def test_the_fallback_images_alt_text_states_the_headline_and_what_mixed_chunk_gives(forty):
    grid, figure = forty
    pause = forty[0].first.run.summary.metrics.value("streams", "max_itl_s", "max")
    mixed = next(c for c in grid.cells if c.index == (1, *grid.start[1:]))
    mixed_pause = mixed.run.summary.metrics.value("streams", "max_itl_s", "max")
    for chart in figure.charts:
        assert chart.alt.startswith(f"{chart.title}. Longest pause, the 40 streams: {fmt_seconds(pause)}")
        said = f"With mixed chunk on: longest pause, the 40 streams: {fmt_seconds(mixed_pause)} ("
        assert said in chart.alt


def test_each_chart_in_words_reads_its_own_run(forty):
    """The words under each chart, per distinct run: the token streams name the run's longest stall."""
    grid, figure = forty
    tokens = next(c for c in figure.charts if c.chart_id == "tokens")
    assert len(tokens.words) == len(figure.ends)
    for key, cell in figure.cells.items():
        run = next(c.run for c in grid.cells if c.key == key)
        pause = fmt_seconds(run.summary.metrics.value("streams", "max_itl_s", "max"))
        words = tokens.words[cell["run"]]
        stalled = len(run.stalls)
        assert ("the longest: streams-" in words and f", {pause} from " in words if stalled
                else "No request went 250 ms or more without a token." in words), key
    passes = next(c for c in figure.charts if c.chart_id == "passes")
    assert all(w.startswith("engine: ") and " decode passes (" in w for w in passes.words)
    assert all(c.spec["config"]["aria"] is False for c in figure.charts)  # no raw field lists per mark


def test_the_other_stalls_kv_chart_in_words_counts_its_retractions():
    run = run_of(STORIES["other_stall"].scenario(STORIES["other_stall"].defaults))
    words = chart_words("kv", run)
    assert f"{run.summary.metrics.value(None, 'num_retracted')} requests retracted, at " in words
    assert words.startswith("engine: a pool of ")


@pytest.mark.slow
def test_real_traffic_zooms_on_its_longest_stall_with_the_requests_of_that_moment():
    grid = run_grid(STORIES["real_traffic"], runs=run_of)
    figure = story_figure(grid, "setup")
    assert [c.chart_id for c in figure.charts] == ["tokens", "zoom-tokens", "wait", "passes"]
    cell = max(grid.cells, key=lambda c: c.run.stalls["gap_s"].max())
    worst, shown = cell.run, figure.cells[cell.key]["run"]
    stall = worst.stalls.loc[worst.stalls["gap_s"].idxmax()]
    zoom = figure.charts[1]
    domains = [c["scale"]["domain"] for c in channels(zoom.spec, "x")]
    assert domains and all(d == domains[0] for d in domains)
    t0, t1 = domains[0]
    assert t0 < stall["start_at"] and stall["end_at"] < t1 < stall["end_at"] + stall["gap_s"] / 2
    assert fmt_seconds(t0) in zoom.title
    assert f"{stall['rid']}, {fmt_seconds(stall['gap_s'])}" in zoom.words[shown]
    lanes = int(zoom.words[shown].split()[0])
    assert 0 < lanes < len(worst.request_order)  # only the requests of that moment
    assert_valid_vega_lite(zoom.spec, figure.datasets)


def test_scripts_and_json_are_made_safe_for_cdata():
    assert cdata_safe("if(s[t[r]]>n)x()") == "if(s[t[r]] >n)x()"
    with pytest.raises(ValueError):
        cdata_safe("var a = ']]>';")
    assert json_for_script({"a": "</script>]]>&"}) == '{"a":"\\u003c/script\\u003e]]\\u003e\\u0026"}'


def test_a_bare_page_has_no_heading_teaser_or_note(forty):
    bare = figure_html(forty[1], bare=True, bundle="")
    assert "<h1>" not in bare and FORTY.teaser not in bare and "simulated in advance" not in bare


@pytest.mark.slow
@pytest.mark.parametrize("key", ["forty_replies", "other_stall", "ten_oclock_rush", "real_traffic"])
def test_every_story_has_a_page_under_the_size_limit_with_no_placeholder(key):
    text = story_page(key, runs=run_of)
    assert len(text.encode()) <= MAX_BYTES
    for marker in PLACEHOLDER:
        assert marker not in text
    # the credits travel with the page, the data its runs read among them (tests/test_notices.py)
    read = STORIES[key].scenario(STORIES[key].defaults).workload.trace
    assert '<details class="ww-credits">' in text and notices.SCRIPTS[0].holder in text
    assert read is None or html.escape(notices.covering(read.path).name) in text
    assert_documented_size(key, len(text.encode()))


def assert_documented_size(key: str, size: int) -> None:
    """The README and docs/figure.md quote the page's size as it is (app/present/docs.py's page marks)."""
    quoted = [m for file in docs.FILES for m in docs.marks((docs.ROOT / file).read_text(), file)
              if m.kind == "page" and m.what == key]
    assert [m.shown for m in quoted] == [docs.megabytes(size)] * len(quoted), (key, size)


# -- PD ----------------------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def pd_fig():
    """The PD figure as the figure command builds it (its own run cache, which the command's test, the phone's
    and the checklist's below then read)."""
    return pd_figure()


@pytest.mark.slow
def test_the_pd_figure_compares_four_deployments_on_two_workloads_with_their_gpu_counts(pd_fig):
    figure = pd_fig
    assert len(figure.cells) == 8 and [a["labels"] for a in figure.axes] == [
        ["The ten o'clock rush", "The upstream test replica"],
        ["one engine", "one engine per PD worker", "PD, early", "PD, prefill_complete"]]
    rush, upstream = figure.cells["0|2"]["tables"][0], figure.cells["1|2"]["tables"][0]
    assert rush["rows"][0] == ["GPUs", "1", "2", "2", "2"]
    assert upstream["rows"][0] == ["GPUs", "4", "12", "12", "12"]
    assert rush["head"] == ["every request", "one engine", "2 engines, round robin", "PD, early",
                            "PD, prefill_complete"]
    assert upstream["head"][2] == "3 engines, round robin"
    assert [c.chart_id for c in figure.charts] == ["passes", "decode-kv", "phases"]
    assert "the numbers here are the model's" in figure.note
    assert len(figure_html(figure, bundle="").encode()) < MAX_BYTES - 1_000_000
    assert_documented_size("ten_oclock_rush_pd", len(figure_html(figure).encode()))


@pytest.mark.slow
def test_the_equal_gpu_preset_opens_the_pd_figure_on_its_engines(tmp_path):
    out = tmp_path / "engines.html"
    assert main(["figure", "ten_oclock_rush_engines", "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert 'value="1" checked="checked"/> one engine per PD worker' in text
    assert ("clock rush: 2 engines, round robin: Llama-3.1-8B (bf16 weights, bf16 KV), 2 engines × TP 1 on "
            "2 × H100 SXM 80GB.") in text


@pytest.mark.slow
def test_the_pd_figure_carries_the_checklist_of_each_workload(pd_fig):
    from app.present import checklist
    from app.present.pd import scenarios, today_run

    figure = pd_fig
    for w, workload in enumerate(("rush", "upstream")):
        cases = scenarios(workload)
        one, early, late = (grid_run(cases[i]) for i in (0, 2, 3))
        expected = checklist.table(checklist.of_runs(cases[3], early, late, one, today_run(workload)))
        tables = [figure.cells[f"{w}|{a}"]["tables"][3] for a in range(4)]
        assert tables == [expected] * 4 and len(expected["rows"]) == len(checklist.QUESTIONS)
        assert {row[1] for row in expected["rows"]} <= set(checklist.MARKS.values())
    reads = [row[1] for row in figure.cells["1|0"]["tables"][3]["rows"]]
    # the upstream replica, the case the policy targets: long prompts, scarce decode KV; its gaps rise with
    # the front end (the decode server tokenizes each prompt inline), as PR #40703 reports (p99 ITL +93 %)
    assert reads[:3] == ["✓ pass", "✗ fail", "✓ pass"]


# -- the command line --------------------------------------------------------------------------------
def test_the_figure_command_writes_the_page_opening_where_set(tmp_path, capsys):
    out = tmp_path / "forty.html"
    argv = ["figure", "forty_replies", "--vary", "mixed", "--set", "engine.enable_mixed_chunk=true", "--out",
            str(out)]
    assert main(argv) == 0
    text = out.read_text(encoding="utf-8")
    assert "wrote" in capsys.readouterr().out
    assert text == figure_page("forty_replies", vary=("mixed",), sets=("engine.enable_mixed_chunk=true",))
    assert 'value="1" checked="checked"/> on' in text  # mixed chunk starts on
    caption = out.with_suffix(".txt").read_text(encoding="utf-8")  # its caption and credit line beside it
    assert caption.startswith("Figure 1. The forty replies.") and caption.endswith(".\n")
    assert "Source: Who Waits model of the SGLang" in caption and "seed " in caption
    assert "Licence: " in caption
    from app.story.exports import page_caption  # the app's export says the same

    assert caption == page_caption(FORTY, {**FORTY.defaults, "mixed": True})


@pytest.mark.parametrize("argv, where", [
    (["figure", "no_such_story"], "story"),
    (["figure", "forty_replies", "--out", "/no/such/folder/x.html"], "--out"),
    (["figure", "forty_replies", "--formats", "gif"], "--formats"),
    (["figure", "upstream_pd_replica", "--vary", "mixed"], "--vary"),
    (["figure", "forty_replies", "--epub", "/no/such/folder/b.epub"], "--epub"),
    (["figure", "forty_replies", "--print"], "--print"),
])
def test_the_figure_command_refuses_bad_input_in_one_line(argv, where, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {where}:") and "\n" not in err


def test_the_engine_says_where_figures_moved(capsys):
    from engine_model.cli import main as engine_main

    assert engine_main(["figure", "forty_replies"]) == 2
    assert "who-waits figure" in capsys.readouterr().err


def test_the_other_commands_pass_through_to_the_engine(capsys):
    assert main(["scenarios"]) == 0
    assert "forty_replies" in capsys.readouterr().out


def test_pd_page_refuses_a_story_name():
    with pytest.raises(InputError):
        pd_page("forty_replies")


def test_the_playback_carries_every_token_of_its_replies_to_the_millisecond(forty):
    from app.present.playback import NUM_PANES, panes

    grid, figure = forty
    run = grid.first.run
    shown = panes(run, "streams", "log")
    assert [p["rid"] for p in shown] == [f"streams-{i:02d}" for i in range(NUM_PANES - 1)] + ["log"]
    for pane in shown:
        times = [round(t * 1000) for t in run.replies[pane["rid"]]]
        steps = pane["z"]
        assert [sum(steps[:i + 1]) for i in range(len(steps))] == times
    assert len(figure.playback["runs"]) == len(figure.ends)  # one set of panes per distinct run
