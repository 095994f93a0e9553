"""Exports keep the view (issue 36): a sales engineer sets the ten o'clock page to the buyer's deployment —
Llama-3.1-70B on 8 × H100 SXM at TP 8 — shows the PD section and exports. Every export says that deployment:
each slide's settings line and speaker notes (a step on the upstream replica says the replica's own, and only
that), the PD figure (its page, its tables, its words; `who-waits figure ten_oclock_rush_pd --set …`), a PNG's
subtitle lines (a PD chart's name the PD layout), the PD section's cards and table as an image, and the PD
scenarios as TOML that the engine's own command runs. The PD figure's numbers count the requests the page's
cards count, and its words are computed from the numbers it prints.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import vl_convert as vlc
from story_runs import scenario_run

from app.charts import views
from app.present import page_values, pd_figure_of, pd_options, story_slides
from app.present.cli import main
from app.present.export import export_spec, render, scenario_toml
from app.present.fmt import fmt_change
from app.present.numbers import headline_rows
from app.present.page import figure_html
from app.present.pd import LAYOUT, PARSERS, arms, change, pd_toml, printed, section_scenarios, section_spec
from app.present.settings import pd_note, story_note
from app.present.slides import step_values
from engine_model import STORIES, InputError, load_scenario, ranged

pytestmark = pytest.mark.xdist_group("exports_deployment")  # one worker builds the 70B runs once
RUSH = STORIES["ten_oclock_rush"]
BUYER = {"model": "llama-3.1-70b", "tp": 8}  # ?model=llama-3.1-70b&tp=8
SETS = ("model.name=llama-3.1-70b", "hardware.tp_size=8")
GPUS, MODEL, SPLIT = "8 × H100 SXM 80GB", "Llama-3.1-70B", "1 prefill × TP 4 + 1 decode × TP 4"
NOT_THE_PAGE = re.compile(r"Llama-3\.1-8B|\bTP 1\b")  # the story's default deployment


def svg_words(svg: str) -> str:
    """Every text an SVG draws, in order, one space between lines."""
    drawn = re.findall(r"<text[^>]*>(.*?)</text>", svg, re.S)
    return " ".join(" ".join(re.sub(r"<[^>]+>", " ", t).split()) for t in drawn).replace("&#39;", "'")


def assert_the_buyers(text: str, where: str = "") -> None:
    assert GPUS in text and MODEL in text, (where, text)
    found = NOT_THE_PAGE.search(text)
    assert not found, (where, found and found[0], text)


@pytest.fixture(scope="module")
def deck() -> list:
    """The ten o'clock tour as slides on the buyer's page (text and notes; not drawn)."""
    return story_slides("ten_oclock_rush", scenario_run, {**RUSH.defaults, **BUYER})


@pytest.fixture(scope="module")
def figure():
    """The PD figure as `who-waits figure ten_oclock_rush_pd --set model.name=… --set hardware.tp_size=8`
    builds it (the command's own run cache, which the command's test below reads again)."""
    return pd_figure_of("ten_oclock_rush_pd", **pd_options(SETS))


@pytest.fixture(scope="module")
def rush_arms() -> list:
    return arms("rush", BUYER)


# -- slides and speaker notes ----------------------------------------------------------------------------
def test_every_slide_keeps_the_pages_deployment_and_the_upstream_step_says_its_own(deck):
    steps = list(zip(deck, RUSH.tour, strict=True))
    for slide, step in steps:
        if step.section.get("preset", "rush") == "upstream":
            for text in (slide.settings, slide.notes()):
                assert "GLM-5" in text and "12 × Rubin" in text and "decode KV capped at 163,840" in text
                assert "Llama" not in text and "H100" not in text, text  # not the page's deployment
            continue
        assert_the_buyers(slide.settings, slide.name)
        assert_the_buyers(slide.notes(), slide.name)
        assert slide.settings.startswith("Settings: ") and f"on {GPUS}, TP 8" in slide.settings
    split = next(slide for slide, step in steps if step.focus == "pd" and not step.section)
    assert split.numbers.startswith("one engine (8 GPUs) → PD, early (8 GPUs):")
    assert f"right: PD, early, {SPLIT} on {GPUS}" in split.settings
    assert "**Numbers** (left → right)" in split.notes()


def test_the_slides_numbers_are_the_buyers_runs(deck):
    slide, step = deck[0], RUSH.tour[0]
    values = step_values(RUSH, step, BUYER)
    assert values["model"] == "llama-3.1-70b" and values["tp"] == 8
    now = scenario_run(RUSH.scenario(values))
    rows = headline_rows(RUSH, now, scenario_run(RUSH.scenario(RUSH.baseline_values(values))),
                         ranged(RUSH.scenario(values)))[:2]
    assert all(h.band for h in rows)  # the buyer's H100s: each number with its range
    assert slide.numbers == "   ·   ".join(f"{h.label}: {h.card} (range {h.band})" for h in rows)


def test_step_values_are_the_apps_tour(monkeypatch):
    """A tour step in the app (app.story.tour.apply_step) and on a slide set the same values: the step's,
    SGLang's flags and the story's row at their defaults, the rest of the page as it was."""
    import streamlit as st

    from app import state
    from app.story import tour

    page = {**RUSH.defaults, **BUYER, "mixed": True, "qps": 6.0, "seed": 7, "gpu.memory_gib": 96.0}
    keys = state.keys(RUSH.key)
    for i, step in enumerate(RUSH.tour):
        session = {keys.widget(c.key): page[c.key] for c in RUSH.controls}
        monkeypatch.setattr(st, "session_state", session)
        tour.apply_step(RUSH, i)
        assert {c.key: session[keys.widget(c.key)] for c in RUSH.controls} == step_values(RUSH, step, page)


def test_the_slides_command_takes_the_deployment_and_draws_it(tmp_path, capsys):
    """`--slides DIR --set model=… --set tp=8` (URL style) on the PD steps: a slide's SVG text, its notes."""
    out = tmp_path / "deck"
    argv = ["figure", "ten_oclock_rush_pd", "--slides", str(out), "--formats", "svg", "--set",
            "model=llama-3.1-70b", "--set", "tp=8"]
    assert main(argv) == 0, capsys.readouterr().err
    svg = svg_words((out / "ten_oclock_rush_pd-01.svg").read_text())
    for text in (GPUS.split(" ", 2)[2], MODEL, "TP 8", SPLIT.split(" + ")[0]):
        assert text in svg, text
    assert not NOT_THE_PAGE.search(svg)
    assert_the_buyers((out / "ten_oclock_rush_pd-01.md").read_text())
    upstream = (out / "ten_oclock_rush_pd-02.md").read_text()
    assert "GLM-5" in upstream and "Llama" not in upstream


def test_slides_refuse_a_setting_the_page_has_not(tmp_path, capsys):
    argv = ["figure", "forty_replies", "--slides", str(tmp_path), "--set", "engine.max_queued_requests=4"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --set engine.max_queued_requests: no control of forty_replies writes it")


# -- the PD figure -----------------------------------------------------------------------------------------
def test_the_pd_figure_opens_on_the_buyers_deployment(figure):
    assert f"runs {MODEL} (bf16 weights, bf16 KV) on {GPUS}, TP 8; PD splits them as {SPLIT} on {GPUS}" in (
        figure.teaser)
    assert "The upstream test replica runs its own deployment: GLM-5" in figure.teaser
    for a in range(4):
        cell = figure.cells[f"0|{a}"]
        numbers, runs_as = cell["tables"][:2]
        assert numbers["rows"][0] == ["GPUs", "8", "8", "8", "8"]
        assert runs_as["head"][0] == f"what runs: {MODEL} (bf16 weights, bf16 KV)"
        assert [row[1:] for row in runs_as["rows"]] == [
            [GPUS, "one engine × TP 8"], [GPUS, "2 engines × TP 4"], [GPUS, SPLIT], [GPUS, SPLIT]]
        assert f"{MODEL} (bf16 weights, bf16 KV), " in cell["summary"] or "cannot run" in cell["summary"]
    # prefill_complete cannot start at attention TP 4: said in SGLang's words, with the fix; nothing hidden
    refused = figure.cells["0|3"]["summary"]
    assert "cannot run. pd.prefill.tp_size: SGLang refuses to start the prefill worker" in refused
    assert "The charts show PD, early" in refused
    assert figure.cells["0|3"]["tables"][0]["rows"][1][-1] == "cannot run"
    said = [figure.teaser, figure.note]  # the refusal names its fix (workers of TP 1); nothing else says TP 1
    for key in ("0|0", "0|1", "0|2"):
        said += [figure.cells[key]["summary"], str(figure.cells[key]["tables"][:3])]
    for text in said:
        assert not NOT_THE_PAGE.search(text), NOT_THE_PAGE.search(text)[0]


def test_the_figure_command_takes_set_and_names_the_deployment(figure, tmp_path, capsys):
    out = tmp_path / "pd.html"
    argv = ["figure", "ten_oclock_rush_pd", *(x for s in SETS for x in ("--set", s)), "--out", str(out)]
    assert main(argv) == 0, capsys.readouterr().err
    text = out.read_text(encoding="utf-8")
    assert text == figure_html(figure)
    for words in (GPUS, MODEL, SPLIT, "one engine × TP 8"):
        assert words in text
    assert "Llama-3.1-8B" not in text


def percent(words: str) -> int:
    """'+57 %' -> 57, '−44 %' -> -44, '±0 %' -> 0."""
    return 0 if words.startswith("±") else int(words.replace("−", "-").replace("+", "").replace(" %", ""))


def test_the_figures_numbers_count_the_cards_requests_and_its_words_its_own_numbers(figure):
    from app.pd import tables

    upstream = figure.cells["1|2"]
    numbers = upstream["tables"][0]
    assert numbers["head"][0] == "the 256 benchmark requests (without the 64 warm-up)"
    assert figure.cells["0|2"]["tables"][0]["head"][0] == "every request"
    found = arms("upstream")
    cards = tables.tradeoff(found[2].run, found[3].run)  # what the page's cards read
    trade = numbers["rows"][1:5]
    assert [row[0] for row in trade] == [c["label"] for c in cards]
    for row, c in zip(trade, cards, strict=True):
        assert printed(row[3]) == pytest.approx(c["early"], rel=0.01, abs=0.0005)
        assert printed(row[4]) == pytest.approx(c["prefill_complete"], rel=0.01, abs=0.0005)
        # its words: the cards' change (exact), within a percent of the one its rounded cells give
        exact = fmt_change(c["prefill_complete"] / c["early"] - 1)
        assert f"{row[0]} {exact}" in upstream["summary"]
        assert abs(percent(exact) - percent(change(row[3], row[4]))) <= 1
    card = cards[0]  # output throughput: its change as the cards state it
    exact = fmt_change(card["prefill_complete"] / card["early"] - 1)
    assert f"Output throughput, tokens/s {exact}" in upstream["summary"]


def test_the_pd_figure_takes_the_sections_layout():
    options = pd_options(("model=llama-3.1-70b", "tp=8", "pworkers=2", "dworkers=2", "wtp=4", "base=one",
                          "cap=262144", "preset=rush"))
    assert options["layout"] == {"pworkers": 2, "dworkers": 2, "wtp": 4, "base": "one", "cap": 262144,
                                 "preset": "rush"}
    early = section_scenarios(options["values"], options["layout"])["early"]
    assert (early.pd.prefill.num_workers, early.pd.decode.num_workers, early.pd.prefill.tp_size) == (2, 2, 4)
    assert early.pd.decode_kv_cap_per_rank == 262144 and early.model.name == "llama-3.1-70b"
    for bad, where in (("pworkers=9", "--set pworkers"), ("base=never", "--set base"),
                       ("engine.dp_size=2", "--set engine.dp_size")):
        with pytest.raises(InputError) as err:
            pd_options((bad,))
        assert f"{err.value.where}".startswith(where)


def test_the_figures_layout_names_and_values_are_the_sections():
    from app import state
    from app.pd import params
    from app.pd.presets import BASELINES

    assert set(LAYOUT) == set(state.PD_PARAMS) - {state.PD_ON}
    assert {k: v for k, v in LAYOUT.items() if k != "base"} == {
        k: params.DEFAULTS[k] for k in LAYOUT if k != "base"}
    samples = {"preset": ["rush", "upstream"], "cap": ["0", "none", *map(str, params.CAPS)],
               "pworkers": [str(n) for n in range(1, 9)], "dworkers": ["1", "8"],
               "wtp": ["0", *map(str, params.WORKER_TPS[1:])], "base": list(BASELINES)}
    for key, texts in samples.items():
        for text in texts:
            assert PARSERS[key](text) == params.PARSERS[key](text), (key, text)


# -- images and files ----------------------------------------------------------------------------------
def test_an_exported_chart_names_the_model_the_gpus_and_tp(rush_arms):
    one = rush_arms[0]
    values = {**RUSH.defaults, **BUYER}
    lines = story_note(RUSH, values, one.run, one.run)
    assert lines[1].endswith(f"{MODEL}, bf16 weights, bf16 KV, on {GPUS}, TP 8 · Random seed: 0")
    for line in lines:
        assert not NOT_THE_PAGE.search(line), line


def test_a_pd_charts_export_and_the_sections_image_name_the_pd_layout(rush_arms):
    section = {a.name: (a.scenario, a.run) for a in rush_arms if a.run is not None}
    runs = {a.name.split(", ")[1]: a.run for a in rush_arms if a.name.startswith("PD") and a.run is not None}
    lines = pd_note(section, runs)
    assert lines[0] == f"PD: {MODEL} (bf16 weights, bf16 KV), {SPLIT} on {GPUS}"
    assert lines[1] == (f"Beside it, on the same requests: one engine × TP 8 on {GPUS}; 2 engines × TP 4 on "
                        f"{GPUS}")
    assert lines[2].startswith("one engine → PD, early: ") and "→" in lines[2]  # what moved, named
    assert lines[2].endswith("(prefill_complete cannot run on this deployment)")
    chart = views.story_view(runs["early"], "passes").build().to_dict(validate=False)
    shown = svg_words(vlc.vegalite_to_svg(export_spec(chart, "Pass timeline", lines)))
    for words in (GPUS, MODEL, "1 prefill × TP 4", "one engine → PD, early"):
        assert words in shown, words
    assert not NOT_THE_PAGE.search(shown)
    shown = svg_words(render(section_spec(section, runs), "svg").decode())
    assert f"Split prefill from decode: {MODEL} on {GPUS}" in shown and "PD, early" in shown
    assert "Per prompt length, over every request" in shown


def test_the_pd_scenarios_export_as_toml_the_engine_runs(tmp_path, capsys):
    from engine_model.cli import main as engine_main

    found = section_scenarios(BUYER, {})
    assert isinstance(found["prefill_complete"], InputError)  # attention TP 4: SGLang refuses; no file
    text = pd_toml(found["early"])
    head = text.split("\n\n", 1)[0]
    assert head.startswith(f"# The ten o'clock rush on PD (early): {MODEL} (bf16 weights, bf16 KV), {SPLIT} "
                           f"on {GPUS}, decode allocation early.")
    assert not NOT_THE_PAGE.search(head)
    path = tmp_path / "pd.toml"
    path.write_text(text, encoding="utf-8")
    loaded = load_scenario(path)  # the CLI's loader
    assert loaded.model_dump(exclude={"title", "about", "description"}) == found["early"].model_dump(
        exclude={"title", "about", "description"})
    assert engine_main(["run", str(path)]) == 0
    assert "Llama-3.1-70B" in capsys.readouterr().out
    story = RUSH.scenario({**RUSH.defaults, **BUYER})
    assert scenario_toml(story, "one line\nanother").startswith("# one line\n# another\n\n")


def test_page_values_take_a_control_or_the_key_it_writes():
    assert page_values("ten_oclock_rush", SETS) == page_values("ten_oclock_rush", ("model=llama-3.1-70b",
                                                                                  "tp=8"))
    assert {k: v for k, v in page_values("ten_oclock_rush", SETS).items() if v != RUSH.defaults[k]} == BUYER


def test_the_apps_buttons_are_cached_by_the_pages_values():
    """The slides ZIP and the PD figure are cached per server (st.cache_data): by the page's values and PD
    layout, as JSON, so two deployments never share a file."""
    import inspect

    from app.ui import exports

    assert list(inspect.signature(exports.tour_slides).parameters) == ["story_key", "values_json"]
    assert list(inspect.signature(exports.standalone_pd_page).parameters) == ["values_json", "layout_json"]


# -- the page itself -----------------------------------------------------------------------------------------
@pytest.mark.slow
def test_the_buyers_page_offers_its_pd_files_and_its_pd_charts_carry_the_pd_layout():
    """/ten_oclock_rush?model=llama-3.1-70b&tp=8&pd=1 with every fold open: the PD section's cards and table
    as an image, the PD scenario as TOML (prefill_complete cannot start at TP 4: said, no file), and the
    lines the PD charts' exports carry."""
    from streamlit.testing.v1 import AppTest
    from unfold import unfold

    from app import state

    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app" / "main.py"), default_timeout=300)
    for key, value in {"model": "llama-3.1-70b", "tp": "8", "pd": "1"}.items():
        at.query_params[key] = value
    at.run()
    at.switch_page("app_pages/ten_oclock_rush.py")
    at.run()
    unfold(at)
    labels = [b.label for b in at.download_button]
    for label in ("Cards and table (PNG)", "Cards and table (SVG)", "PD scenario, early (TOML)",
                  "Scenario (TOML)", "Export → PD figure (HTML)", "Export → tour as slides (ZIP)",
                  "Export → tour as PowerPoint (PPTX)"):
        assert label in labels, labels
    assert "PD scenario, prefill_complete (TOML)" not in labels
    assert any("PD under prefill_complete cannot run here" in c.value for c in at.caption)
    note = at.session_state[state.keys(state.PD_PAGE).export_note]
    assert note[0] == f"PD: {MODEL} (bf16 weights, bf16 KV), {SPLIT} on {GPUS}"
    assert_the_buyers(" ".join(note[:2]))
