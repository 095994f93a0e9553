"""The demo room without a browser (AppTest): URL parameters that are refused get a note and leave the URL,
the tour step travels in the link, chart specs, the pass breakdown and a run's frames are built once for the
whole server, the warm-up fills the caches a page reads, and what the browser is sent (SVG, whole legends,
larger text in presenter mode)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pyarrow as pa
import pytest
import vl_convert as vlc
from markup import cards_of
from story_runs import run
from streamlit.testing.v1 import AppTest
from unfold import unfold

from app import compute, warm
from app.charts import views
from app.present import shown
from app.story import pass_cost
from app.ui import chart
from engine_model import STORIES

MAIN = str(Path(__file__).resolve().parents[1] / "app" / "main.py")


def open_page(page: str, params: dict, opened: bool = False) -> AppTest:
    """`page` as a link with `params` opens it; `opened`: every fold open (tests/unfold.py), after the notes
    the first view shows once."""
    at = AppTest.from_file(MAIN, default_timeout=180)
    at.run()
    at.switch_page(page)  # switch_page clears the URL: set the link's parameters after it
    at.query_params.update(params)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return unfold(at) if opened else at


def warnings(at: AppTest) -> list[str]:
    return [w.value for w in at.warning]


@pytest.mark.parametrize(("params", "note", "gone"), [
    ({"pworkers": "99999999999"}, "`pworkers=99999999999`: expected a whole number from 1 to 8", "pworkers"),
    ({"dworkers": "0"}, "`dworkers=0`: expected a whole number from 1 to 8", "dworkers"),
    ({"pd": "banana"}, "`pd=banana`: expected 1 (shown) or 0 (hidden)", "pd"),
    ({"t": "nan"}, "`t=nan`: expected seconds from 0 to the run's end", None),
    ({"t": "99999"}, "`t=99999`: expected seconds from 0 to the run's end", None),
    ({"step": "99"}, f"`step=99`: expected a tour step from 1 to {len(STORIES['ten_oclock_rush'].tour)}",
     "step"),
    ({"mixed": ["0", "1"]}, "`mixed` is given 2 times; using the last, `mixed=1`", None),
])
def test_a_refused_url_parameter_gets_a_note_and_the_url_is_corrected(params, note, gone):
    at = open_page("app_pages/ten_oclock_rush.py", params)
    assert any(note in w for w in warnings(at)), warnings(at)
    if gone is not None:
        assert gone not in at.query_params
    if "t" in params:  # the cursor is back on the story's default, and the URL says where
        assert float(at.query_params["t"]) == pytest.approx(10.0, abs=5.0)
    if "mixed" in params:  # the duplicate is written back once
        assert at.query_params["mixed"] == "1" and at.toggle(key="ten_oclock_rush.mixed").value


def test_a_link_with_a_tour_step_opens_on_that_step():
    at = open_page("app_pages/forty_replies.py", {"step": "4", "mixed": "1"})
    assert any("Step 4 of 8" in i.value for i in at.info)
    assert at.query_params["step"] == "4" and at.query_params["mixed"] == "1"
    at.button(key="forty_replies.tour.1").click().run()  # another step: the URL follows
    assert at.query_params["step"] == "2" and "mixed" not in at.query_params


def test_chart_specs_are_built_once_for_the_whole_server(monkeypatch):
    builds = []
    real = chart._build
    monkeypatch.setattr(chart, "_build", lambda c: builds.append(1) or real(c))
    chart._shared_spec.clear()
    open_page("app_pages/other_stall.py", {}, opened=True)
    first = len(builds)
    open_page("app_pages/other_stall.py", {}, opened=True)  # a second person: a new session, the same view
    assert first >= 5 and len(builds) == first


def test_the_pass_breakdown_is_built_once_for_the_whole_server(monkeypatch):
    builds = []
    real = pass_cost.cost_bar
    monkeypatch.setattr(pass_cost, "cost_bar", lambda *a: builds.append(1) or real(*a))
    pass_cost.breakdown.clear()
    first = open_page("app_pages/forty_replies.py", {}, opened=True)
    second = open_page("app_pages/forty_replies.py", {}, opened=True)  # a second person
    assert len(builds) == 1
    said = [m.value for m in second.markdown if "The pass took" in m.value]
    assert said and said == [m.value for m in first.markdown if "The pass took" in m.value]


def test_a_run_is_one_object_shared_by_every_session():
    """Frames are not copied out of a cache for each page view (a sixth of a view's server time was)."""
    scenario = STORIES["other_stall"].scenario(STORIES["other_stall"].defaults)
    assert compute.run_scenario(scenario) is compute.run_scenario(scenario)


def test_no_full_garbage_collection_after_every_script_run():
    """Streamlit's default collects every generation after each script run: with the caches in memory that
    was half of a warm page view's server CPU (docs/performance.md)."""
    config = tomllib.loads((Path(MAIN).parents[1] / ".streamlit" / "config.toml").read_text())
    assert config["runner"]["postScriptGC"] is False


def test_the_warm_up_fills_the_caches_a_first_view_reads(monkeypatch):
    story = STORIES["forty_replies"]
    chart._shared_spec.clear()
    compute.run.clear()
    pass_cost.breakdown.clear()
    name, job = next(j for j in warm.jobs() if j[0] == "forty_replies first view")
    job()
    builds, runs = [], []
    monkeypatch.setattr(chart, "_build", lambda c: builds.append(1))
    monkeypatch.setattr(pass_cost, "cost_bar", lambda *a: builds.append(1))
    monkeypatch.setattr("app.charts.frames.build", lambda result: runs.append(1))
    at = open_page("app_pages/forty_replies.py", {})
    assert builds == [] and runs == []  # every chart, the pass breakdown and both runs came from the warm-up
    assert cards_of(at)[0].value and story.title in at.title[0].value


def test_warm_up_jobs_start_with_every_first_view_and_end_with_the_upstream_preset():
    names = [name for name, _ in warm.jobs()]
    assert names[:len(STORIES)] == [f"{key} first view" for key in STORIES]
    assert names[-1] == "upstream PD preset"
    assert len(names) == len(set(names)) == len(STORIES) + 3 + sum(len(s.tour) for s in STORIES.values())


def test_the_warm_up_goes_on_after_a_failed_job_and_names_it():
    progress = warm.Progress()
    todo = [("fine", lambda: None), ("broken", lambda: 1 / 0), ("after", lambda: None)]
    real, warm.PROGRESS = warm.PROGRESS, progress
    try:
        warm.run_jobs(todo)
    finally:
        warm.PROGRESS = real
    assert progress.as_dict()["done"] == 3
    assert progress.failed == ["broken: ZeroDivisionError: division by zero"]
    assert progress.as_dict()["finished"] is True and progress.as_dict()["seconds"] is None  # not via start()


SPEC = {"layer": [{"mark": {"type": "text", "fontSize": 11},
                   "encoding": {"y": {"axis": {"labelFontSize": 9}}}}],
        "height": {"step": 12}, "datasets": {"d": [{"fontSize": 3}]}, "config": {"legend": {"orient": "top"}}}


def test_the_browser_gets_legends_that_keep_every_entry():
    sent = shown.room_spec(SPEC)
    assert sent["config"]["legend"]["orient"] == "top" and sent["config"]["legend"]["labelLimit"] == 0
    assert "containerSize()" in sent["config"]["legend"]["columns"]["expr"]
    assert sent["layer"] == SPEC["layer"] and sent["height"] == {"step": 12}
    assert "labelLimit" not in SPEC["config"]["legend"]  # the shared spec is untouched


def test_presenter_mode_grows_every_text_but_not_the_data_and_packs_the_lanes():
    sent = shown.room_spec(SPEC, presenting=True)
    assert sent["layer"][0]["mark"]["fontSize"] == pytest.approx(11 * shown.PRESENTER_FONT, abs=0.1)
    axis = sent["layer"][0]["encoding"]["y"]["axis"]
    assert axis["labelFontSize"] == pytest.approx(9 * shown.PRESENTER_FONT, abs=0.1)
    assert sent["config"]["axis"]["labelFontSize"] > 12 and sent["config"]["legend"]["labelFontSize"] > 12
    assert sent["datasets"] == SPEC["datasets"]  # rows are never touched
    assert sent["height"] == {"step": 8}
    assert SPEC["layer"][0]["mark"]["fontSize"] == 11


def test_the_browser_gets_each_dataset_as_arrow_with_repeated_strings_dictionary_encoded():
    passes = run("forty_replies").passes
    spec = {"mark": "bar", "datasets": {"d": passes.to_dict("records"), "empty": []}, "data": {"name": "d"}}
    sent = chart.packed(spec)
    table = pa.ipc.open_stream(sent["datasets"]["d"]).read_all()
    assert table.num_rows == len(passes) and sent["datasets"]["empty"] == []
    assert pa.types.is_dictionary(table.schema.field("kind").type)  # a few pass kinds, sent once each
    assert pa.types.is_floating(table.schema.field("start_at").type)
    back = table.to_pandas()
    assert back["kind"].astype(str).tolist() == passes["kind"].tolist()
    assert back["start_at"].tolist() == passes["start_at"].tolist()
    assert len(sent["datasets"]["d"]) < len(str(spec["datasets"]["d"]))  # smaller than the rows as text
    assert isinstance(spec["datasets"]["d"], list)  # the shared spec (exports read it) is untouched


def test_the_browser_gets_no_aria_description_per_mark_but_keeps_the_guides():
    """Vega-Lite's per-mark description is an expression the browser evaluates for every tick and bar; every
    chart of a story page goes without it, while its axes and legends keep theirs."""
    at = open_page("app_pages/forty_replies.py", {}, opened=True)
    specs = [json.loads(c.proto.spec) for c in at.get("vega_lite_chart") if c.proto.spec]
    assert len(specs) >= 7
    assert all(s["config"]["mark"]["aria"] is False for s in specs)
    assert all("aria" not in s["config"].get("axis", {}) and "aria" not in s["config"] for s in specs)
    tokens = next(v for v in views.story_views(run("forty_replies"), 1.0) if v.chart_id == "tokens")
    vega = vlc.vegalite_to_vega(chart.unlabelled_marks(tokens.build().to_dict(validate=False)))
    assert all(m.get("aria") is False for m in vega["marks"])
    assert not any("description" in json.dumps(m.get("encode", {})) for m in vega["marks"])
