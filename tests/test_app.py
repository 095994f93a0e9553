"""Every page runs in Streamlit's AppTest without an exception, and the headline numbers move the right
way."""

import re
from pathlib import Path

import pytest
from markup import cards_of
from streamlit.testing.v1 import AppTest
from tables import markdown_table
from unfold import unfold

from app import state
from app.ui.simplifications import simplifications_text
from engine_model import stories

MAIN = str(Path(__file__).resolve().parents[1] / "app" / "main.py")
PAGES = {"app_pages/forty_replies.py": stories.FORTY, "app_pages/other_stall.py": stories.OTHER_STALL,
         "app_pages/ten_oclock_rush.py": stories.RUSH, "app_pages/real_traffic.py": stories.REAL,
         "app_pages/compare.py": stories.FORTY}  # compare opens on the forty replies


def open_page(page: str | None = None, params: dict | None = None, opened: bool = False) -> AppTest:
    """`page` as a link with `params` opens it; `opened`: every fold open (tests/unfold.py)."""
    at = AppTest.from_file(MAIN, default_timeout=120)
    for key, value in (params or {}).items():
        at.query_params[key] = value
    at.run()
    if page:
        at.switch_page(page)
        at.run()
    assert not at.exception, [e.value for e in at.exception]
    return unfold(at) if opened else at


def seconds(text: str) -> float:
    value, unit = re.match(r"([\d.,]+)\s*(ms|s)", text.strip()).groups()
    return float(value.replace(",", "")) / (1000 if unit == "ms" else 1)


def before_after(metric) -> tuple[float, float]:
    """'11.4 s → 1.6 s' -> (11.4, 1.6); '11.4 s' -> (11.4, 11.4)."""
    parts = metric.value.split("→")
    return seconds(parts[0]), seconds(parts[-1])


def card_numbers(value: str, unit: str) -> list[float]:
    """A card's value as numbers: '11.4 s → 1.6 s' -> [11.4, 1.6]; '7' -> [7.0]. Raises on anything else."""
    parts = [p.strip() for p in value.split("→")]
    if unit == "s":
        return [seconds(p) for p in parts]
    return [float(int(p.replace(",", ""))) for p in parts]


def metric(at: AppTest, label_start: str):
    return next(m for m in cards_of(at) if m.label.startswith(label_start))


def test_home_runs_and_links_every_story():
    at = open_page()
    assert at.title[0].value.endswith("Who Waits")
    text = " ".join(m.value for m in at.markdown)
    for story in stories.STORIES.values():
        assert story.title in text


@pytest.mark.parametrize("page", PAGES)
def test_every_page_shows_its_story_headline_cards_with_numbers(page):
    at = open_page(page)
    assert not at.error, [e.value for e in at.error]
    story = PAGES[page]
    for card, headline in zip(cards_of(at)[:len(story.headlines)], story.headlines, strict=True):
        label = re.escape(headline.label).replace(re.escape("{group_count}"), r"\d+")
        assert re.fullmatch(label, card.label), (card.label, headline.label)
        numbers = card_numbers(card.value, headline.unit)
        assert numbers and all(n >= 0 for n in numbers), (card.label, card.value)


def test_flipping_mixed_chunk_shrinks_the_streams_gap_and_delays_the_log():
    at = open_page("app_pages/forty_replies.py")
    gap_default, _ = before_after(metric(at, "Longest pause, the 40 streams"))
    ttft_default, _ = before_after(metric(at, "The log's first token"))
    at.toggle(key="forty_replies.mixed").set_value(True).run()
    assert not at.exception
    gap_before, gap_after = before_after(metric(at, "Longest pause, the 40 streams"))
    ttft_before, ttft_after = before_after(metric(at, "The log's first token"))
    assert gap_before == gap_default  # the baseline is SGLang's defaults ...
    assert abs(ttft_before - ttft_default) <= 0.05  # ... its first token printed one digit finer (12.88 s)
    assert gap_after < gap_before / 3  # the stall shrinks to about one chunk pass
    # the log's own first token comes later, by ~15 ms on the calibrated H100: the card shows both one digit
    # finer, so "12.88 s → 12.90 s" reads as the small change it is
    assert ttft_after > ttft_before
    assert at.query_params["mixed"] in ("1", ["1"])


def test_a_tour_step_sets_the_controls_and_the_cursor():
    at = open_page("app_pages/forty_replies.py", opened=True)
    at.button(key="forty_replies.tour.3").click().run()  # "Flip mixed chunk"
    assert at.toggle(key="forty_replies.mixed").value is True
    at.button(key="forty_replies.tour.0").click().run()
    assert at.toggle(key="forty_replies.mixed").value is False
    assert at.slider(key="forty_replies.it").value < 30  # before the log arrives at 0.5 s


def test_step_through_moves_the_cursor_to_the_next_event():
    at = open_page("app_pages/forty_replies.py", opened=True)
    start = at.slider(key="forty_replies.it").value
    at.button(key="forty_replies.move.next_event").click().run()
    assert at.slider(key="forty_replies.it").value == start + 1  # chunk after chunk: every pass is an event
    at.button(key="forty_replies.move.start").click().run()
    assert at.slider(key="forty_replies.it").value == 0


FOLDED = ("steps.open", "rule.open", "groups.open", "stalls.open", "exports.open", "simplifications.open")


def test_folded_sections_send_nothing_until_opened_and_then_their_content():
    at = open_page("app_pages/forty_replies.py", opened=False)
    def csv_buttons():
        return [b for b in at.download_button if "(CSV)" in b.label]

    assert (len(at.code), len(apart(at)), len(at.dataframe), len(csv_buttons())) == (0, 0, 0, 0)
    assert not any("leaves out" in m.value for m in at.markdown)
    for key in FOLDED:
        at.session_state[key] = True
    at.run()
    assert not at.exception
    assert at.code and "def " in at.code[0].value  # the rule, as the model writes it
    assert len(at.dataframe) == 1 and apart(at)  # p50 / p95 / p99 per group; the stalls apart
    assert len(csv_buttons()) == 3  # the run's requests, passes and retractions
    assert any("leaves out" in m.value for m in at.markdown)
    at.session_state["rule.open"] = False
    at.run()
    assert not at.code  # closed again: its content is gone from the page


def apart(at) -> list[str]:
    """The stalls-apart table's rows, as the page draws them."""
    return list(markdown_table(at, "look at").index)


def test_the_other_stall_opens_with_its_two_stalls_apart():
    at = open_page("app_pages/other_stall.py")
    assert apart(at) == ["Pass timeline", "KV chart", "Token streams", "Server log",
                         "Front end (the server's event loop)", "The fix"]


def test_a_link_restores_the_settings_and_notes_bad_or_unknown_parameters():
    at = open_page("app_pages/forty_replies.py",
                   {"mixed": "1", "chunk": "2048", "streams": "abc", "zzz": "1"}, opened=True)
    assert at.toggle(key="forty_replies.mixed").value is True
    assert at.selectbox(key="forty_replies.chunk").value == 2048
    assert at.slider(key="forty_replies.streams").value == 40
    notes = " ".join(w.value for w in at.warning)
    assert "streams=abc" in notes and "zzz" in notes


def test_a_first_view_draws_the_switch_and_says_the_other_settings_in_a_closed_fold():
    """The story's switch (mixed chunk) is a widget; the rest of the main row is built only when its fold is
    open, whose title says each value, a link's included. Closing it again keeps every value."""
    at = open_page("app_pages/forty_replies.py", {"chunk": "2048"})
    assert [t.key for t in at.toggle if t.key.startswith("forty_replies.")] == ["forty_replies.mixed"]
    assert not [w for w in (*at.selectbox, *at.slider) if w.key.startswith("forty_replies.")]
    title = next(e.label for e in at.expander if e.label.startswith("More settings"))
    assert "⚑ Chunk size: 2,048" in title and "Streams: 40" in title, title
    fold = state.keys("forty_replies").widget("settings")
    at.session_state[fold] = True
    at.run()
    at.slider(key="forty_replies.streams").set_value(20).run()
    at.session_state[fold] = False
    at.run()
    assert not at.exception
    title = next(e.label for e in at.expander if e.label.startswith("More settings"))
    assert "⚑ Chunk size: 2,048" in title and "Streams: 20" in title, title
    assert at.query_params["streams"] == "20" and at.query_params["chunk"] == "2048"


def test_a_tour_step_that_sets_a_folded_setting_opens_its_fold():
    at = open_page("app_pages/forty_replies.py")
    at.button(key=state.keys("forty_replies").tour_button(3)).click().run()  # mixed chunk: the switch itself
    assert not [s for s in at.selectbox if s.key == "forty_replies.chunk"]
    at.button(key=state.keys("forty_replies").tour_button(4)).click().run()  # chunk size is now the knob
    assert at.selectbox(key="forty_replies.chunk").value == 2048


def test_the_logprob_steps_cards_compare_with_mixed_chunk_on():
    """Forty step 6 (logprobs) compares with step 4 (mixed chunk on), as its words do: the longest pause's
    card reads 'mixed-on → logprob', and the caption names the step."""
    from story_runs import longest_pause

    at = open_page("app_pages/forty_replies.py")
    i = next(i for i, s in enumerate(stories.FORTY.tour) if s.settings.get("logprob"))
    at.button(key=state.keys("forty_replies").tour_button(i)).click().run()
    assert not at.exception
    card = next(c for c in cards_of(at) if c.label.startswith("Longest pause"))
    was = longest_pause("forty_replies", "streams", (("mixed", True),)).replace(" ", "\u00a0")
    assert card.value.startswith(f"{was} → "), card.value
    assert any("Before: step 4" in c.value for c in at.caption), [c.value for c in at.caption]


def test_an_impossible_combination_is_a_message_not_a_traceback():
    at = open_page("app_pages/forty_replies.py", opened=True)
    at.selectbox(key="forty_replies.model").set_value("llama-3.1-70b")
    at.selectbox(key="forty_replies.gpu").set_value("l40s").run()
    assert not at.exception
    [message] = [e.value for e in at.error]  # 70B weights do not fit one L40S: one message, naming the field
    assert message.startswith("**This combination cannot run.** `deployment`:")
    assert "L40S" in message and "Fix: TP 8" in message
    assert not cards_of(at)  # the page stopped there: no numbers from a run that could not happen


def test_compare_draws_each_sides_switch_and_says_its_other_flags_in_a_closed_fold():
    at = open_page("app_pages/compare.py", {"b_chunk": "2048"})
    assert sorted(t.key for t in at.toggle if t.key.startswith("compare.")) == [
        "compare.forty_replies.a_mixed", "compare.forty_replies.b_mixed"]
    assert not [w for w in (*at.selectbox, *at.slider) if w.key.startswith("compare.")]
    titles = [e.label for e in at.expander if e.label.startswith("More flags")]
    assert len(titles) == 2, titles
    assert "⚑ Chunk size: auto" in titles[0] and "⚑ Chunk size: 2,048" in titles[1], titles
    unfold(at)
    assert at.selectbox(key="compare.forty_replies.b_chunk").value == 2048


def test_compare_shows_a_to_b_and_the_sweep():
    at = open_page("app_pages/compare.py", opened=True)
    gap_a, gap_b = before_after(metric(at, "Longest pause"))
    assert gap_b < gap_a  # B starts with mixed chunk on
    # on the H100 the evidence for prefill attention is thin: B's numbers carry their range, as a story's do
    assert any(c.band.startswith("range ") for c in cards_of(at))
    assert any(c.value.startswith("Where the evidence is thin") for c in at.caption)
    [runs] = [c.value for c in at.caption if c.value.startswith("A and B run: ")]  # one caption for both
    assert runs.endswith(" — **A:** mixed chunk **off**; **B:** mixed chunk **on**")  # named once, at its end
    assert runs.count("SGLang 0.5.23 emulated") == 1 and runs.count("mixed chunk") == 2
    delta = next(df.value for df in at.dataframe if "B − A" in df.value.columns)
    assert list(dict.fromkeys(delta["group"])) == ["streams", "log"]
    streams = delta[delta["group"] == "streams"]
    longest = streams[(streams["measure"] == "longest pause") & (streams["statistic"] == "max")]
    assert longest["B − A"].iloc[0].startswith("−")
    assert seconds(longest["B − A"].iloc[0][1:]) == pytest.approx(gap_a - gap_b, abs=0.1)
    sweep = next(df.value for df in at.dataframe if "chunk size" in df.value.columns)
    assert list(sweep["chunk size"]) == ["512", "1,024", "2,048", "4,096", "8,192", "16,384"]
    assert list(sweep.columns) == ["chunk size", "streams: p99 gap between tokens", "streams: longest pause",
                                   "log: p95 first token"]
    # with mixing on, a smaller chunk is a shorter pause
    pauses = [seconds(v) for v in sweep["streams: longest pause"]]
    assert pauses == sorted(pauses)


def test_controls_parse_their_own_url_values():
    for story in stories.STORIES.values():
        for control in story.controls:
            assert control.parse(control.to_url(control.default)) == control.default
            with pytest.raises(ValueError):
                control.parse("not-a-value")


def test_the_baseline_is_the_story_as_it_opened_on_the_same_gpu_model_and_seed():
    values = {**stories.FORTY.defaults, "mixed": True, "streams": 20, "gpu": "a100-80gb", "seed": 7}
    base = stories.FORTY.baseline_values(values)
    assert base["mixed"] is False and base["streams"] == 40  # every main-row setting at its default
    assert (base["gpu"], base["seed"]) == ("a100-80gb", 7)
    assert [(c.key, was, now) for c, was, now in stories.FORTY.changes(values)] == [("mixed", False, True),
                                                                                  ("streams", 40, 20)]


def test_simplifications_are_read_from_the_design_doc():
    text = simplifications_text()
    assert text.startswith("What the model leaves out or simplifies")
    assert "**The overlap schedule on one server only.**" in text


def test_simplifications_end_at_the_next_heading_of_their_level_and_are_none_when_missing(tmp_path):
    doc = tmp_path / "design.md"
    doc.write_text("# Design\n## Simplifications\n- one\n### Detail\n- two\n## Next\n- three\n")
    assert simplifications_text(doc) == "- one\n### Detail\n- two"
    doc.write_text("# Design\n## Decisions\n- one\n")
    assert simplifications_text(doc) is None
    assert simplifications_text(tmp_path / "missing.md") is None


def test_url_for_lists_only_non_default_settings():
    story = stories.FORTY
    url = state.url_for(story.key, story.controls, {**story.defaults, "mixed": True})
    assert url == "/forty_replies?mixed=1"


def test_the_rush_page_compares_the_single_engine_with_pd_under_both_policies():
    at = open_page("app_pages/ten_oclock_rush.py", opened=True)
    table = next(df.value for df in at.dataframe if "deployment" in df.value.columns)
    today = "2 copies of your engine, round robin"  # one GPU cannot be split: PD takes two, today doubles
    assert list(dict.fromkeys(table["deployment"])) == ["the story's engine", today, "PD, early",
                                                        "PD, prefill_complete"]
    gpus = dict(zip(table["deployment"], table["GPUs"], strict=True))  # every row says its GPUs
    assert gpus == {"the story's engine": 1, today: 2, "PD, early": 2, "PD, prefill_complete": 2}
    longest = dict(zip(table["deployment"] + " " + table["prompt length (tokens)"], table["longest gap"],
                       strict=True))
    # the questions' longest pause: a stall of seconds on one engine; with PD only the decode server's front
    # end tokenizing the six contracts back to back (about half a second each), far shorter
    story, pd_early = longest["the story's engine under 8,192"], longest["PD, early under 8,192"]
    assert seconds(story) > 10 > 4 > seconds(pd_early)
    assert seconds(longest[f"{today} under 8,192"]) > 10  # two engines: each still stalls
    verdict = [m.value for m in at.markdown if m.value.startswith("**On 2 × H100 SXM 80GB: PD (")]
    assert len(verdict) == 1 and "**PD, early: " in verdict[0] and "**PD, prefill_complete: " in verdict[0]
    assert "so today is shown as 2 copies of it" in verdict[0]
    heading = next(m.value for m in at.markdown if m.value.startswith("#### early → prefill_complete ("))
    assert "1 prefill × TP 1 + 1 decode × TP 1 on 2 × H100" in heading  # the cards' deployment and GPUs


@pytest.mark.xdist_group("upstream")  # the upstream replica's PD runs, the slowest, made once a run
@pytest.mark.parametrize("params, rows", [
    ({"base": "one"}, ["the story's engine", "one engine, TP 2", "PD, early", "PD, prefill_complete"]),
    ({"base": "none", "dworkers": "3"}, ["the story's engine", "PD, early", "PD, prefill_complete"]),
    ({"preset": "upstream"}, ["3 engines, round robin", "PD, early", "PD, prefill_complete"]),
    ({"base": "engines", "dworkers": "3"}, ["the story's engine", "4 engines, round robin", "PD, early",
                                            "PD, prefill_complete"]),
])
def test_the_pd_sections_comparison_without_pd_is_a_page_option_on_the_same_gpus(params, rows):
    at = open_page("app_pages/ten_oclock_rush.py", params)
    table = next(df.value for df in at.dataframe if "deployment" in df.value.columns)
    assert list(dict.fromkeys(table["deployment"])) == rows
    gpus = dict(zip(table["deployment"], table["GPUs"], strict=True))
    assert len({gpus[row] for row in rows if row != "the story's engine"}) == 1  # PD and without: the same
    runs = next(m.value for m in at.markdown if m.value.startswith("**What runs here**"))
    lines = [line for line in runs.splitlines() if line.startswith("- **") and " × " in line]
    assert len(lines) == len(rows) - 1 and f" on {gpus[rows[-1]]} × " in runs  # each deployment's GPUs


def checklist_table(at):
    return next(t.value for t in at.table if t.value.index.name == "check")


@pytest.mark.parametrize("params", [{}, {"preset": "upstream"}])
def test_the_checklist_renders_every_check_with_its_number(params):
    from app.present.checklist import MARKS, QUESTIONS

    at = open_page("app_pages/ten_oclock_rush.py", params, opened=True)
    table = checklist_table(at)
    assert list(table.index) == list(QUESTIONS.values())
    assert set(table["reads"]) <= set(MARKS.values())
    assert all(any(ch.isdigit() for ch in cell) for cell in table["behind it"][:3])  # (a)-(c): numbers
    assert all(cell.strip() for cell in table["behind it"])  # (d): the setting behind each


def test_the_real_traffic_page_runs_a_trace_under_the_story_toggles():
    at = open_page("app_pages/real_traffic.py")
    assert not at.error, [e.value for e in at.error]
    off = before_after(metric(at, "Longest pause, any reply"))[1]
    at = open_page("app_pages/real_traffic.py", {"mixed": "1"})
    on = before_after(metric(at, "Longest pause, any reply"))[1]
    assert on < off / 5  # a burst of long prompts stalls every reply; mixed chunk cuts it to about one pass


def test_the_real_traffic_page_says_how_many_trace_rows_it_keeps_and_the_count_can_be_raised_to_all():
    at = open_page("app_pages/real_traffic.py")
    said = "\n".join(c.value for c in at.caption)
    assert ("Kept 120 of the trace's 300 rows: 180 past the cap of 120 requests (counted, not read). Raise "
            "**Requests** (up to 300: every row of the trace) to keep them.") in said
    at = open_page("app_pages/real_traffic.py", {"requests": "300", "step": "1"})
    said = "\n".join(c.value for c in at.caption)
    assert "Kept 300 of the trace's 300 rows: every row." in said and "past the cap" not in said
    narration = "\n".join(m.value for m in at.markdown) + "\n".join(i.value for i in at.info)
    assert "300 requests from Mooncake's public conversation trace" in narration  # read from the run


def test_the_rush_tour_points_at_the_pd_section():
    at = open_page("app_pages/ten_oclock_rush.py")
    step = stories.RUSH.tour[4]
    assert step.focus == "pd"
    at.button(key="ten_oclock_rush.tour.4").click().run()
    texts = [m.value for m in at.markdown]
    pointers = [i for i, text in enumerate(texts) if "Look here" in text]
    assert len(pointers) == 1 and step.title in texts[pointers[0]]  # one pointer, naming the step
    assert "(PD disaggregation)" in texts[pointers[0] - 1]  # right under the PD section's heading


@pytest.mark.xdist_group("upstream")  # the upstream replica's PD runs, the slowest, made once a run
def test_the_upstream_pd_step_shows_the_replicas_cards_not_the_single_engines():
    from story_runs import scenario_run

    from app.pd import tables
    from app.pd.presets import pd_scenario
    from app.present.fmt import fmt_seconds
    from app.present.numbers import card, fmt_rate

    at = open_page("app_pages/ten_oclock_rush.py")
    step = stories.RUSH.tour[5]
    assert step.focus == "pd" and step.section == {"preset": "upstream"}
    at.button(key="ten_oclock_rush.tour.5").click().run()
    assert not at.error, [e.value for e in at.error]
    early, late = (scenario_run(pd_scenario("upstream", stories.RUSH.defaults, p, 0, 1, 1))
                   for p in ("early", "prefill_complete"))
    for row in tables.tradeoff(early, late):  # the replica's own early -> prefill_complete, card by card
        fmt = fmt_seconds if row["unit"] == "s" else fmt_rate
        assert metric(at, row["label"]).value == card(row["early"], row["prefill_complete"], fmt)[0]
    labels = [m.label for m in cards_of(at)]
    assert not any(label.startswith("Questions' p95 first token") for label in labels)  # not the one engine


@pytest.mark.slow
@pytest.mark.parametrize("key", ["forty_replies", "other_stall", "ten_oclock_rush", "real_traffic"])
def test_every_tour_step_points_at_one_place_and_says_its_words_there(key):
    """Each step has exactly one "Look here" on the page (so every step scrolls the same way, to it), and
    a pointer away from the narration repeats the step's words beside its chart."""
    story = stories.STORIES[key]
    at = open_page(f"app_pages/{key}.py")
    for i, step in enumerate(story.tour):
        at.button(key=f"{key}.tour.{i}").click().run()
        assert not at.exception, (key, i)
        texts = [m.value for m in at.markdown]
        pointers = [t for t in texts if "Look here" in t]
        assert len(pointers) == 1 and step.title in pointers[0], (key, step.title, pointers)
        words = at.session_state[state.TOUR_WORDS]
        if step.focus != "headline":
            assert words in [c.value for c in at.caption], (key, step.title)


@pytest.mark.parametrize(("page", "paragraph", "fold"), [
    ("app_pages/compare.py", "A and B run:", "What A and B run"),
    ("app_pages/your_server.py", "SGLang prints every setting once", "What did your server actually"),
])
def test_presenter_mode_keeps_the_dense_paragraphs_in_a_closed_fold(page, paragraph, fold):
    """Compare and Your server in presenter mode: the grey paragraph of resolved settings waits behind one
    click (a closed fold, not built), as a story page keeps it behind "What runs"; out of it, it is shown."""
    presenting = open_page(page, {"present": "1"})
    assert not [c.value for c in presenting.caption if c.value.startswith(paragraph)]
    assert any(e.label.startswith(fold) for e in presenting.expander)
    normal = open_page(page)
    assert [c.value for c in normal.caption if c.value.startswith(paragraph)]
