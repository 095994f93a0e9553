"""The "What should I set?" page in Streamlit's AppTest: a small search runs from the page and shows the
recommendation, its trade in words, the chart, the table and the exports; the links it builds open the
story's own URL parameters."""

from pathlib import Path

from streamlit.testing.v1 import AppTest

from app import state
from app.present.advise import COMPARE_STORY, links
from engine_model import STORIES, Budget, Candidate, Layout

MAIN = str(Path(__file__).resolve().parents[1] / "app" / "main.py")
KEYS = state.keys(state.ADVISE_PAGE)


def test_a_small_search_runs_from_the_page_and_recommends():
    at = AppTest.from_file(MAIN, default_timeout=120)
    at.run()
    at.switch_page("app_pages/advise.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    at.selectbox(key=KEYS.widget("story")).set_value("forty_replies")
    at.selectbox(key=KEYS.widget("gpus")).set_value(1)
    at.selectbox(key=KEYS.widget("model")).set_value("llama-3.1-8b")
    at.multiselect(key=KEYS.widget("s.chunk")).set_value(["auto"])
    at.run()
    at.button(key=KEYS.widget("run")).click()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    said = [s.value for s in at.success] + [w.value for w in at.warning]
    assert any(text.startswith(("Set ", "No setting")) for text in said), said
    assert any("candidates (grid" in c.value for c in at.caption)
    assert at.get("vega_lite_chart") and at.dataframe
    assert [b for b in at.get("download_button")]


def test_a_candidates_links_carry_the_story_parameters_and_say_what_they_cannot():
    budget = Budget(8, "h100-sxm", "llama-3.1-70b")
    rush = STORIES["ten_oclock_rush"]
    assert COMPARE_STORY == state.STORY
    found = links("ten_oclock_rush", budget, Candidate(Layout(8), True, 4096, "shortest-prefill-first"))
    assert found["story"].startswith(f"/{rush.key}?") and "mixed=1" in found["story"]
    for part in ("chunk=4096", "tp=8", "model=llama-3.1-70b"):
        assert part in found["story"]
    assert "b_policy=shortest-prefill-first" in found["compare"] and "missing" not in found
    keys = {c.key for c in rush.controls} | set(state.EXTRA_PARAMS[rush.key])
    for param in found["story"].split("?")[1].split("&"):
        assert param.split("=")[0] in keys
    pd = links("ten_oclock_rush", budget, Candidate(Layout(4, prefill=1, decode=1, policy="early")))
    assert "pd=1" in pd["story"] and "wtp=4" in pd["story"] and "tp=8" in pd["story"]
    two = links("ten_oclock_rush", budget, Candidate(Layout(4, engines=2), conservativeness=1.5))
    assert "2 engines" in two["missing"] and "conservativeness 1.5" in two["missing"]
    assert links("custom", budget, Candidate(Layout(8))) == {}


def test_who_waits_advise_prints_the_recommendations_app_links(capsys):
    from app.present.cli import main

    small = ["workload.groups.0.count=20", "workload.groups.1.count=1", "workload.groups.1.prompt_len=30000"]
    code = main(
        [
            "advise",
            "ten_oclock_rush",
            *[a for s in small for a in ("--set", s)],
            "--gpus",
            "1",
            "--model",
            "llama-3.1-8b",
            "--space",
            "chunk=auto",
            "--space",
            "mixed=true",
            "--space",
            "conservativeness=1",
            "--space",
            "max_running=auto",
            "--workers",
            "1",
            "--quiet",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0 and out.startswith("Set ")
    assert "story: http://localhost:8501/ten_oclock_rush?" in out and "run: python -m engine_model run" in out


def test_the_exports_are_a_png_and_the_benchmark_of_today_and_the_recommendation():
    import io
    import zipfile

    from app.present.advise import chart_png
    from engine_model import Budget, advise, bench_export, load_scenario, zip_export
    from engine_model.advise import Space, layouts

    scenario = load_scenario(
        "ten_oclock_rush",
        ["workload.groups.0.count=20", "workload.groups.1.count=1", "workload.groups.1.prompt_len=30000"],
    )
    budget = Budget(1, "h100-sxm", "llama-3.1-8b")
    space = Space(
        layouts(budget),
        mixed=(True,),
        chunk=("auto",),
        policy=("shortest-prefill-first",),
        conservativeness=(1.0,),
        max_running=(None,),
    )
    advice = advise(scenario, budget, (), space, workers=1)
    assert chart_png(advice).startswith(b"\x89PNG")
    pick = advice.best.candidate.scenario(scenario, budget)
    today = advice.today.candidate.scenario(scenario, budget)
    files = zipfile.ZipFile(io.BytesIO(zip_export(bench_export(pick, {"today": today, "recommended": pick}))))
    launch = next(n for n in files.namelist() if n.endswith("launch.sh"))
    text = files.read(launch).decode()
    assert "# setting today" in text and "# setting recommended" in text and "--enable-mixed-chunk" in text


def test_a_mix_sent_from_a_story_page_is_the_pages_mix_and_its_biggest_group_gets_the_targets():
    at = AppTest.from_file(MAIN, default_timeout=120)
    at.run()
    at.switch_page("app_pages/advise.py")
    at.query_params["mix"] = "support"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.selectbox(key=KEYS.widget("story")).value == "mix:support"
    assert any(c.value.startswith("Support assistant: 3%") and ".. " not in c.value for c in at.caption)
    # the chats, most of the requests, start with the chat targets; the documents with none
    assert at.number_input(key=KEYS.widget("t.chats.ttft_p95")).value == 2.0
    assert at.number_input(key=KEYS.widget("t.documents.ttft_p95")).value == 0.0
