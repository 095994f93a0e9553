"""Axes that do not lie (every chart of every story and of PD, and Compare's): no 0 on a log axis, the
trade-off curve from 0 on both axes with both titled, and what a mark names says which axis it reads."""

from __future__ import annotations

import re

import pandas as pd
import vl_convert as vlc
from story_runs import channels
from test_palette import every_chart

from app.compare import charts as compare_charts
from app.compare.sweep import defaults_point
from app.present.fmt import fmt_seconds
from engine_model import STORIES, load_scenario, simulate, summary


def compare_specs() -> dict[str, dict]:
    sweep = pd.DataFrame({"setting": [512, 1024, 512, 1024], "metric": ["a", "a", "b", "b"],
                          "seconds": [0.11, 0.2, 3.0, 2.0]})
    curve = pd.DataFrame({"label": ["512", "1,024"], "x_s": [12.8, 13.9], "y_s": [3.0, 2.0], "order": [0, 1],
                          "is_current": [False, True]})
    story = STORIES["forty_replies"]
    defaults = defaults_point(story, story.defaults)  # the app's own point, from the story's run
    return {"sweep": compare_charts.sweep_lines(sweep, "chunk size (tokens)", 1024).to_dict(),
            "tradeoff": compare_charts.tradeoff_curve(curve, "longest pause (s)", "first token (s)",
                                                      defaults).to_dict()}


def test_no_log_axis_has_a_zero_tick():
    charts = {**every_chart(), **compare_specs()}
    bad = []
    for name, spec in charts.items():
        for channel in ("x", "y"):
            for enc in channels(spec, channel):
                scale, axis = enc.get("scale", {}), enc.get("axis") or {}
                if scale.get("type") in ("log", "symlog") and 0 in (axis.get("values") or []):
                    bad.append((name, channel, enc.get("field")))
    assert bad == []


def test_the_sweeps_log_axis_prints_small_waits_as_milliseconds_not_zero():
    svg = vlc.vegalite_to_svg({**compare_specs()["sweep"], "width": 500})
    labels = re.findall(r"<text[^>]*>([^<]+)</text>", svg)
    assert "0" not in labels and any(label.endswith(" ms") for label in labels)


def test_the_tradeoff_curve_starts_at_zero_titles_both_axes_and_names_both_numbers_of_the_defaults():
    spec = compare_specs()["tradeoff"]
    xs, ys = channels(spec, "x"), channels(spec, "y")
    titled = [e for e in xs + ys if e.get("title")]
    assert {e["title"] for e in titled} == {"longest pause (s)", "first token (s)"}
    assert all(e["scale"]["zero"] is True for e in titled)
    svg = vlc.vegalite_to_svg({**spec, "width": 500})
    s = summary(simulate(load_scenario("forty_replies"))).metrics
    pause, first = s.value("streams", "max_itl_s", "max"), s.value("log", "ttft_s", "p95")
    lines = re.findall(r"<tspan[^>]*>([^<]+)</tspan>", svg)  # the label's three lines, which axis each reads
    assert ["SGLang defaults:", f"pause {fmt_seconds(pause)}", f"first token {fmt_seconds(first)}"] in [
        lines[i:i + 3] for i in range(len(lines))]


def test_the_sweeps_seconds_axis_has_round_ticks_and_ends_on_them():
    """Never '70 s / 8 s / 900 ms': 1, 2 or 5 times a power of ten, the axis from one to another."""
    assert compare_charts.round_ticks(0.11, 3.0) == [0.1, 0.2, 0.5, 1.0, 2.0, 5.0]
    assert compare_charts.round_ticks(0.05, 7.5) == [0.05, 0.1, 1.0, 10.0]  # too many: the decades
    assert compare_charts.round_ticks(0.9, 70) == [0.5, 1.0, 10.0, 100.0]
    [y] = [e for e in channels(compare_specs()["sweep"], "y") if e.get("field") == "seconds"]
    ticks = y["axis"]["values"]
    assert ticks and y["scale"]["domain"] == [ticks[0], ticks[-1]]
    assert all(f"{t:.0e}"[0] in "125" for t in ticks), ticks


def test_the_sweeps_legend_is_one_entry_a_line():
    """Three long labels side by side were cut at 1280 px: one a line."""
    [colour] = channels(compare_specs()["sweep"], "color")
    assert colour["legend"]["columns"] == 1


def test_a_tradeoff_squeezed_high_above_zero_starts_where_it_can_be_read_and_says_so():
    """12.6–13.6 s on a 0–14 s axis is a flat line: the axis starts at a round number below, titled so."""
    curve = pd.DataFrame({"label": ["512", "1,024", "2,048"], "x_s": [0.5, 1.0, 2.0],
                          "y_s": [13.6, 13.1, 12.6], "order": [0, 1, 2], "is_current": [False, True, False]})
    spec = compare_charts.tradeoff_curve(curve, "longest pause (s)", "first token (s)").to_dict()
    y = next(e for e in channels(spec, "y") if e.get("title"))
    lo, hi = y["scale"]["domain"]
    assert 10 <= lo < 12.6 and hi > 13.6 and (13.6 - 12.6) / (hi - lo) > 0.5 and y["scale"]["zero"] is False
    assert y["title"] == ["first token (s)", f"(the axis starts at {lo:g} s, not 0)"]
    x = next(e for e in channels(spec, "x") if e.get("title"))
    assert x["scale"]["domain"][0] == 0 and x["title"] == "longest pause (s)"  # a wide spread: from 0
