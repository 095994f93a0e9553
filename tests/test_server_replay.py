"""'Your server', fixed: a log replayed in the model agrees with its own verdict and can be replayed under the
story switches; any log the size limit accepts draws (aggregated, no stall hidden); bad values in a log get
one line naming the field; the page shows no internal file paths. Logs here are generated, not stored.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import pytest
from markup import cards_of
from streamlit.testing.v1 import AppTest

from app.charts import timelines
from app.charts.frames import build
from app.charts.phases import MAX_CHART_ROWS
from app.server import charts as server_charts
from app.server import frames as sf
from app.server.controls import CONTROLS, base_data
from app.server.input import LOG_LIMIT_MB
from app.server.replay import replay_scenario, running_at_start, with_switches
from app.server.simulate_ui import SIMULATE
from app.story import diagnosis
from engine_model import build_timeline, diagnose, parse_log, simulate, validate

MAIN = str(Path(__file__).resolve().parents[1] / "app" / "main.py")
T0 = dt.datetime(2025, 10, 22, 20, 0, 0)
DECODE = ("{} Decode batch. #running-req: {}, #token: 40000, token usage: {:.2f}, gen throughput (token/s): "
          "1900.00, #queue-req: 0, ")
PREFILL = ("{} Prefill batch. #new-seq: {}, #new-token: {}, #cached-token: {}, token usage: {:.2f}, "
           "#running-req: {}, #queue-req: {}, ")


def stamp(seconds: float) -> str:
    return (T0 + dt.timedelta(seconds=seconds)).strftime("[%Y-%m-%d %H:%M:%S]")


def buyer_log() -> str:
    """A buyer's server: forty replies streaming, a 100,000-token prompt chunked at 8,192 arrives at 5 s,
    Decode lines every second to 22 s."""
    lines = [DECODE.format(stamp(s), 40, 0.05) for s in range(5)]
    left, at = 100_000, 5.0
    while left > 0:
        lines.append(PREFILL.format(stamp(at), 1, min(8192, left), 0, 0.05, 40, 0))
        left, at = left - 8192, at + 0.9
    lines += [DECODE.format(stamp(s), 41, 0.3) for s in range(int(at) + 1, 23)]
    return "\n".join(lines) + "\n"


def large_log(target_bytes: int = 4_900_000) -> str:
    """A valid production-sized log: thousands of short Prefill lines and Decode lines, with one run of twelve
    full 8,192-token chunks back to back (the chunked-prefill stall) in the middle."""
    lines, at, i = [], 0.0, 0
    size = 0
    while size < target_bytes:
        if i == 4000:
            for _ in range(12):
                lines.append(PREFILL.format(stamp(at), 1, 8192, 0, 0.6, 40, 0))
                at += 0.8
        line = PREFILL.format(stamp(at), 2, 900, 100, 0.3, 40, 1)
        decode = DECODE.format(stamp(at + 0.1), 40, 0.3 + 0.5 * (i == 6000))
        lines += [line, decode]
        size += len(line) + len(decode) + 2
        at, i = at + 0.05, i + 1
    return "\n".join(lines) + "\n"


def open_page(**params) -> AppTest:
    at = AppTest.from_file(MAIN, default_timeout=300)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    at.switch_page("app_pages/your_server.py")
    at.session_state[SIMULATE] = True  # the replay's fold, opened
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def paste(text: str, **params) -> AppTest:
    at = open_page(log="paste", **params)
    at.text_area(key="your_server.paste").input(text)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def replay(text: str, switches: dict | None = None):
    parsed = parse_log(text)
    timeline = build_timeline(parsed)
    base = validate(base_data({c.key: c.default for c in CONTROLS}))
    scenario, notes = replay_scenario(parsed, timeline, base, None, switches)
    run = build(simulate(scenario))
    return parsed, timeline, run, notes


# -- the replay agrees with the log --------------------------------------------------------------------
def test_a_buyer_log_replays_as_the_chunked_prefill_stall_it_shows_over_about_its_own_span():
    parsed, timeline, run, notes = replay(buyer_log())
    assert diagnose(parsed).verdict == "chunked_prefill_stall"
    assert running_at_start(timeline) == 40
    model = diagnosis.diagnose(run)
    assert diagnosis.verdict(model, run.stall_threshold_s) == "This run shows the chunked-prefill stall."
    span = timeline.samples[-1].at - timeline.samples[0].at
    assert 0.5 * span < run.end_at < 2 * span  # was 275 s for this 22 s log
    assert run.summary.metrics.overall.max_itl_s.max > 5  # 6.4 s since issue 37's Hopper attention
    assert any("40 requests already streaming" in note for note in notes)


def test_the_buyer_log_under_mixed_chunk_loses_its_long_pause():
    _, _, logged, _ = replay(buyer_log())
    _, _, mixed, _ = replay(buyer_log(), {"mixed": "on", "chunk": "log", "interval": "log"})
    assert mixed.summary.config != logged.summary.config
    assert mixed.summary.metrics.overall.max_itl_s.max < 2 < logged.summary.metrics.overall.max_itl_s.max


def test_switches_on_a_replayed_scenario_give_what_replaying_the_log_under_them_gives():
    parsed = parse_log(buyer_log())
    timeline = build_timeline(parsed)
    base = validate(base_data({c.key: c.default for c in CONTROLS}))
    logged, _ = replay_scenario(parsed, timeline, base, None)
    for switches in ({"mixed": "on", "chunk": "log", "interval": "log"}, {"mixed": "log", "chunk": 2048,
                                                                           "interval": 4}):
        direct, _ = replay_scenario(parsed, timeline, base, None, switches)
        assert with_switches(logged, switches) == direct != logged


def test_the_page_replays_a_pasted_log_under_the_switches():
    at = paste(buyer_log(), rmixed="on")
    markdown = "\n".join(m.value for m in at.markdown)
    assert "Verdict: it is the chunked-prefill stall" in markdown
    assert "Your traffic with mixed chunk on" in markdown
    table = at.table[0].value
    assert "chunked-prefill" in table.loc["which stall", "the model"]
    pause = [m.value.replace("\xa0", " ") for m in cards_of(at) if m.label == "Longest pause, any reply"]
    was, now = (float(text.split(" ")[0]) / (1000 if text.endswith(" ms") else 1)
                for text in pause[1].split(" → "))
    # mixed chunk: the stall shrinks
    assert len(pause) == 2 and pause[0] == pause[1].split(" → ")[0] and was > 5 * now
    assert at.query_params.get("rmixed") in ("on", ["on"])


# -- a log the size limit accepts always draws ---------------------------------------------------------
@pytest.fixture(scope="session")
def large():
    text = large_log()
    parsed = parse_log(text, max_bytes=LOG_LIMIT_MB * 1_000_000)
    return text, parsed, build_timeline(parsed)


def test_the_large_log_is_what_the_issue_describes(large):
    text, parsed, _ = large
    assert 4_500_000 < len(text.encode()) <= LOG_LIMIT_MB * 1_000_000
    assert len(parsed.decodes) > 2_500 and len(parsed.prefills) > 5_000 and parsed.num_lines_not_read == 0


def test_every_chart_of_a_large_log_builds_within_the_row_limit_and_keeps_the_stall(large):
    _, _, timeline = large
    _, end = sf.log_span(timeline)
    passes, prefills = sf.log_passes(timeline, False), sf.log_prefills(timeline, False)
    kv, queue = sf.log_kv(timeline, 100_000), sf.log_queue(timeline)
    retractions = sf.log_retractions(timeline)
    assert max(map(len, (passes, prefills, kv, queue))) <= MAX_CHART_ROWS
    for chart in (timelines.pass_timeline(passes, end_at=end),
                  timelines.kv_occupancy(kv, retractions, end_at=end),
                  timelines.queue_depth(queue, end_at=end),
                  server_charts.prefill_tokens(prefills, retractions, timeline.chunk_size, end),
                  server_charts.token_usage(sf.log_kv(timeline, None), retractions, end)):
        chart.to_dict()  # Altair's 5,000-row check and the schema
    streak = [p for p in timeline.prefills if p.num_new_tokens == 8192]
    bars = passes[(passes["lane"] == sf.PREFILL_LANE) & (passes["num_passes"] > 1)]
    assert len(bars) == 1
    assert bars.iloc[0]["start_at"] == streak[0].at and bars.iloc[0]["end_at"] >= streak[-1].at
    assert (prefills["num_new_tokens"] == 8192).sum() == len(streak)  # every full chunk stays
    peak = max(s.token_usage for s in timeline.samples)
    assert kv[kv["series"] == "used"]["slots"].max() == pytest.approx(peak * 100_000)


@pytest.mark.slow
def test_the_page_draws_a_log_at_the_size_limit(large):
    text, _, _ = large
    at = paste(text, out="64")
    assert not at.error, [e.value for e in at.error]
    assert "Verdict: it is the chunked-prefill stall" in "\n".join(m.value for m in at.markdown)


# -- bad values get one line naming the field ----------------------------------------------------------
SERVER_ARGS = "[2025-10-22 20:00:00] server_args=ServerArgs(model_path='qwen/x', {})\n"


@pytest.mark.parametrize(("head", "names"), [
    (SERVER_ARGS.format("page_size=0"),
     "engine.page_size`: Input should be greater than or equal to 1 (got 0)"),
    (SERVER_ARGS.format("chunked_prefill_size='banana'"), "engine.chunked_prefill_size`: Input should be"),
], ids=["page_size=0", "chunk=banana"])
def test_a_setting_the_model_cannot_run_is_one_line_naming_the_field(head, names):
    at = paste(head + buyer_log())
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and names in errors[0] and "\n" not in errors[0]


def test_a_number_no_real_log_holds_is_one_line_not_a_traceback():
    line = PREFILL.format(stamp(30), 1, "9" * 400, 0, 0.1, 3, 0)
    at = paste(buyer_log() + line + "\n")
    errors = [e.value for e in at.error] + [w.value for w in at.warning]
    assert errors and all("\n" not in e for e in errors)


# -- no internal file paths ----------------------------------------------------------------------------
PATH = re.compile(r"\b(app|docs|tests|engine_model|scenarios)/[\w./-]+|\w+\.(md|py|toml)\b")


@pytest.mark.parametrize("params", [{}, {"log": "chunk"}, {"view": "trace"},
                                    {"view": "trace", "trace": "mooncake"},
                                    {"log": "example", "metrics": "example"}, {"view": "live"}],
                         ids=["retraction", "chunk", "azure", "mooncake", "metrics", "live"])
def test_the_page_names_no_internal_file_paths(params):
    at = open_page(**params)
    shown = [e.value for kind in ("markdown", "caption", "info", "warning", "error", "success")
             for e in getattr(at, kind)]
    assert [s for s in shown if PATH.search(str(s))] == []




def test_the_design_notes_shown_on_pages_name_no_files():
    from app.ui.simplifications import in_words

    text = in_words("Counted once (`engine_model/prefix.py`); see docs/pd.md for the rest.")
    assert "prefix.py" not in text and "docs/" not in text and text.startswith("Counted once")
