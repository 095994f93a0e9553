"""Every chart builder returns a chart whose spec validates against Vega-Lite, within Altair's row limit."""

import json
import re

import altair as alt
import numpy as np
import pandas as pd
import pytest
import story_runs
import vl_convert as vlc

from app.charts import frames, latency, request_frames, scales, timelines
from app.compare import charts as compare_charts
from app.pd import charts as pd_charts
from app.pd import frames as pd_frames
from app.story import cursor
from engine_model import STORIES, load_scenario, simulate

ALTAIR_MAX_ROWS = 5_000
CASES = [("forty_replies", []), ("forty_replies", ["engine.enable_mixed_chunk=true"]), ("other_stall", []),
         ("ten_oclock_rush", []), ("ten_oclock_rush_pd", [])]


@pytest.fixture(scope="session", params=CASES, ids=lambda c: f"{c[0]}{'+mixed' if c[1] else ''}")
def run(request):
    name, sets = request.param
    result = simulate(load_scenario(name, sets))
    return result, frames.build(result)


def builders(f: frames.RunFrames):
    t = float(f.iterations["start_at"].iloc[len(f.iterations) // 2])
    return {
        "pass_timeline": timelines.pass_timeline(f.passes, t, f.end_at, len(f.iterations) // 2),
        "token_streams": timelines.token_streams(f.tokens, f.stalls, f.chunks, f.waits, f.request_order, t,
                                                 f.end_at, f.stall_threshold_s, f.chunk_pass_s),
        "kv_occupancy": timelines.kv_occupancy(f.kv, f.retractions, t, f.end_at),
        "queue_depth": timelines.queue_depth(f.queue, t, f.end_at),
        "next_token_wait": timelines.next_token_wait(f.pauses, t, f.end_at),
        "request_phases": pd_charts.request_phases(f.spans, f.end_at),
        **{f"kv_panel {lane}": chart
           for lane, chart, _ in timelines.kv_panels(f.kv, f.retractions, t, f.end_at)},
        **{f"itl_distribution {group}": latency.itl_distribution(f.itl_hist, f.itl_stats, group)
           for group in dict.fromkeys(f.itl_hist["group"])},
    }


def test_compares_charts_hold_both_runs_and_stay_under_twice_the_row_limit(run):
    _, f = run
    for view in compare_charts.pair_views(f, f, ("SGLang defaults", "the same")):
        with alt.data_transformers.enable("default", max_rows=None):  # a chart of two runs: twice one's rows
            spec = view.build().to_dict()  # validates against the Vega-Lite schema
        assert max(dataset_sizes(spec)) <= 2 * ALTAIR_MAX_ROWS, view.chart_id
        single = (timelines.pass_timeline(f.passes, None, f.end_at) if view.chart_id == "passes" else
                  timelines.token_streams(f.tokens, f.stalls, f.chunks, f.waits, f.request_order, None,
                                          f.end_at, f.stall_threshold_s, f.chunk_pass_s))
        assert sum(dataset_sizes(spec)) >= 2 * sum(dataset_sizes(single.to_dict())), view.chart_id


def dataset_sizes(spec: dict) -> list[int]:
    return [len(rows) for rows in spec.get("datasets", {}).values()]


def test_every_builder_validates_and_stays_under_the_row_limit(run):
    _, f = run
    for name, chart in builders(f).items():
        spec = chart.to_dict()  # validates against the Vega-Lite schema
        assert spec["$schema"].startswith("https://vega.github.io/schema/vega-lite/"), name
        assert max(dataset_sizes(spec), default=0) <= ALTAIR_MAX_ROWS, name


def cursor_times(spec: dict) -> list[float]:
    """Where the dashed cursor rule stands in a chart's spec: the `at` of every rule with its dash."""
    found = []

    def walk(node: dict, data: str | None) -> None:
        data = node["data"].get("name", data) if isinstance(node.get("data"), dict) else data
        mark = node.get("mark")
        if isinstance(mark, dict) and mark.get("type") == "rule" and mark.get("strokeDash") == [6, 3]:
            found.extend(row["at"] for row in spec["datasets"][data])
        for key in ("layer", "vconcat", "hconcat"):
            for child in node.get(key, []):
                walk(child, data)

    walk(spec, None)
    return found


def test_the_cursor_rule_stands_where_the_cursor_is_and_nowhere_without_one(run):
    _, f = run
    t = float(f.iterations["start_at"].iloc[len(f.iterations) // 2])
    for build in (lambda at: timelines.pass_timeline(f.passes, at),
                  lambda at: timelines.kv_occupancy(f.kv, None, at),
                  lambda at: timelines.queue_depth(f.queue, at)):
        assert cursor_times(build(None).to_dict()) == []
        times = cursor_times(build(t).to_dict())
        assert times and set(times) == {t}  # one rule per panel (a PD run draws one KV panel per worker)


def test_the_sweep_marks_the_current_setting_and_the_tradeoff_curve_joins_settings_in_order():
    sweep = pd.DataFrame({"setting": [512, 1024, 512, 1024], "metric": ["a", "a", "b", "b"],
                          "seconds": [0.1, 0.2, 3.0, 2.0]})
    spec = compare_charts.sweep_lines(sweep, "chunk size (tokens)", current=1024).to_dict()
    marks = [rows for rows in spec["datasets"].values() if rows and "label" in rows[0]]
    assert marks == [[{"setting": 1024, "label": "current setting"}]]
    assert spec["layer"][0]["encoding"]["x"]["axis"]["values"] == [512, 1024]  # one tick per setting swept
    assert spec["layer"][0]["encoding"]["x"]["scale"] == {"type": "log", "base": 2}
    spec = compare_charts.sweep_lines(sweep, "chunk size (tokens)").to_dict()
    assert not [rows for rows in spec["datasets"].values() if rows and "label" in rows[0]]
    curve = pd.DataFrame({"label": ["512", "1,024"], "x_s": [0.1, 0.2], "y_s": [3.0, 2.0], "order": [0, 1],
                          "is_current": [False, True]})
    spec = compare_charts.tradeoff_curve(curve, "longest pause (s)", "first token (s)").to_dict()
    line, points, current, *labels = spec["layer"]
    assert line["encoding"]["order"] == {"field": "order", "type": "quantitative"}
    assert current["transform"] == [{"filter": "datum.is_current"}]
    assert labels and all(layer["mark"]["type"] == "text" for layer in labels)
    texts = re.findall(r"<text[^>]*>([^<]+)</text>", vlc.vegalite_to_svg({**spec, "width": 400}))
    assert "512" in texts and "1,024 · current" in texts  # each point named; the current one says so
    assert [row["label"] for row in spec["datasets"][line["data"]["name"]]] == ["512", "1,024"]


def test_request_phases_show_where_pd_time_went():
    """Under early, short questions wait for decode KV behind the contracts; under prefill_complete they
    don't."""
    waits = {}
    for policy in ("early", "prefill_complete"):
        result = simulate(load_scenario("ten_oclock_rush_pd", [f"pd.decode_allocation_policy={policy}"]))
        spans = pd_frames.spans_frame(result)
        assert spans["rid"].nunique() <= pd_frames.MAX_SPAN_REQUESTS + 4  # sampled, every group kept
        assert set(spans["group"]) == {"questions", "contracts"}
        waits[policy] = spans[spans["phase"] == "waiting_for_decode_kv"]["duration_s"].sum()
    assert waits["early"] > 100 * max(waits["prefill_complete"], 0.01)


def test_one_colour_per_phase_everywhere(run):
    _, f = run
    spec = json.dumps(timelines.pass_timeline(f.passes).to_dict())
    for phase, colour in zip(scales.PHASES, scales.PHASE_COLOURS, strict=True):
        assert phase in spec and colour in spec


def test_aggregation_never_hides_a_stall(run):
    result, f = run
    # every prefill and mixed pass keeps its own bar
    kinds = f.iterations[(f.iterations["duration_s"] > 0)
                         & f.iterations["kind"].isin(["prefill chunk", "mixed"])]
    bars = f.passes[f.passes["kind"].isin(["prefill chunk", "mixed"])]
    assert len(bars) == len(kinds)
    assert (bars["num_passes"] == 1).all()
    # merged decode bars never span a gap: their passes are back to back
    merged = f.passes[f.passes["num_passes"] > 1]
    for bar in merged.itertuples():
        lane = f.iterations[f.iterations["lane"] == bar.lane]
        inside = lane[(lane["index"] >= bar.first_index) & (lane["index"] <= bar.last_index)]
        assert abs(inside["duration_s"].sum() - (bar.end_at - bar.start_at)) < 1e-6
    # every gap at or over the threshold is drawn, and both tokens around it are marked
    from engine_model.metrics import pauses  # the pauses a reader sees, a coalesced chunk's whole gap

    num_long = sum(int((pauses(r) >= f.stall_threshold_s).sum()) for r in result.requests)
    assert len(f.stalls) == num_long
    marks = set(zip(f.tokens["rid"], f.tokens["at"].round(9), strict=True))
    for stall in f.stalls.itertuples():
        assert (stall.rid, round(stall.end_at, 9)) in marks


def test_a_trickle_of_gaps_in_one_shade_is_one_bar_covering_exactly_its_gaps(run):
    """The chart joins a lane's back-to-back gaps of one shade into one bar (the token tick between each
    stays drawn): each bar holds exactly the gaps of its lane and shade within it, end to end, and no two
    bars that could have joined are left apart."""
    _, f = run
    bars = timelines.stall_stretches(f.stalls)
    assert bars["gaps"].sum() == len(f.stalls)
    for bar in bars.to_dict("records"):
        lane = f.stalls[(f.stalls["rid"] == bar["rid"]) & (f.stalls["band"] == bar["band"])]
        inside = lane[(lane["start_at"] >= bar["start_at"] - 1e-9) & (lane["end_at"] <= bar["end_at"] + 1e-9)]
        assert len(inside) == bar["gaps"] and inside["gap_s"].max() == bar["gap_s"]
        covered = (inside["end_at"] - inside["start_at"]).sum()
        assert covered == pytest.approx(bar["end_at"] - bar["start_at"])
    for _, lane in bars.sort_values(["rid", "start_at"]).groupby("rid", observed=True):
        same = lane["band"].to_numpy()[1:] == lane["band"].to_numpy()[:-1]
        touch = abs(lane["start_at"].to_numpy()[1:] - lane["end_at"].to_numpy()[:-1]) < 1e-9
        assert not (same & touch).any()
    if f.stalls["rid"].value_counts().max() > 5:  # a trickle: far fewer bars than gaps
        assert len(bars) < len(f.stalls) / 2


def test_cursor_specs_land_on_the_right_iteration():
    result = simulate(load_scenario("forty_replies"))
    its = frames.iterations_frame(result)
    first = cursor.resolve(its, ("first", "prefill chunk"))
    assert its["kind"].iloc[first] == "prefill chunk"
    assert (its["kind"].iloc[:first] != "prefill chunk").all()
    assert cursor.resolve(its, ("at", 0.25)) == cursor.at_time(its, 0.25)
    assert cursor.next_event(its, 0) == first
    assert cursor.play_step(its, len(its) - 1) == len(its) - 1


def test_every_token_is_in_one_mark_and_close_tokens_share_a_bar(run):
    """Each token lies in exactly one mark (a run's bar from its first to its last token, or its own tick),
    the counts add up to the request's tokens, a bar never spans a gap the chart could draw (JOIN_PX on the
    run's width) nor a stall, and two marks of a lane are always a drawable gap apart."""
    result, f = run
    join = request_frames.join_gap(result.end_at, f.stall_threshold_s)
    assert 0 < join <= f.stall_threshold_s
    from engine_model.metrics import seen

    for req in result.requests:
        times = np.asarray(seen(req))  # as the client receives them
        lane = f.tokens[f.tokens["rid"] == req.rid].sort_values("at")
        assert int(lane["count"].sum()) == times.size, req.rid
        for mark in lane.itertuples():
            inside = times[(times >= mark.at) & (times <= mark.until)]
            assert inside.size == mark.count and inside[0] == mark.at and inside[-1] == mark.until
            assert (np.diff(inside) < join).all(), req.rid
        assert (lane["at"].to_numpy()[1:] - lane["until"].to_numpy()[:-1] >= join).all(), req.rid


def test_a_thinned_lane_never_looks_empty_where_tokens_kept_coming():
    """Past the cap, single ticks are thinned by time bins: every run, the marks beside a stall and each
    lane's first and last mark stay, and no stretch of a lane that had tokens loses all its marks."""
    lanes, ticks = 6, 900
    marks = pd.DataFrame({"rid": np.repeat([f"r{i}" for i in range(lanes)], ticks),
                          "at": np.tile(np.arange(ticks) * 0.1, lanes), "count": 1})
    marks["until"] = marks["at"]
    marks.loc[5, "count"] = 3  # a run
    near = np.zeros(len(marks), dtype=bool)
    near[700] = True  # beside a stall
    keep = request_frames._thinned(marks, near, width_s=0.5, max_rows=400)
    assert keep.sum() <= 400 and keep[5] and keep[700]
    for _, lane in marks[keep].groupby("rid"):
        at = lane["at"].to_numpy()
        assert at[0] == 0 and at[-1] == pytest.approx(89.9)
        assert np.diff(at).max() <= 0.05 * 90  # never a gap of more than 5 % of the run


def test_the_wait_for_the_next_token_is_a_ramp_for_a_freeze_and_teeth_for_a_trickle():
    """Mixed chunk off: each stream waits once, as long as its longest pause. On: many short teeth. (The
    scheduler's waits: the front end, which adds the wait while the long prompt is tokenized, is off.)"""
    for mixed, teeth in ((False, 1), (True, 10)):
        sets = [f"engine.enable_mixed_chunk={str(mixed).lower()}", "cost.front_end=false"]
        f = frames.build(simulate(load_scenario("forty_replies", sets)))
        stream = f.pauses[f.pauses["rid"] == "streams-00"]
        peaks = stream[stream["wait_s"] > 0]
        pause = f.summary.metrics.groups["streams"].max_itl_s.max
        assert peaks["wait_s"].max() == pytest.approx(float(f.requests.set_index("rid").loc["streams-00",
                                                                                          "max_itl_s"]))
        assert (len(peaks) == 1) if teeth == 1 else (len(peaks) >= teeth)
        assert f.pauses["wait_s"].max() == pytest.approx(pause)
        assert (stream["at"].diff().dropna() >= 0).all()  # one line, left to right


def test_a_pd_workers_kv_caption_says_its_pool_per_dp_rank_and_per_worker():
    from app.charts import frames, views
    from engine_model import load_scenario, simulate

    sets = ["workload.groups.0.count=4", "workload.groups.1.count=2", "workload.groups.2.count=4"]
    run = frames.build(simulate(load_scenario("upstream_pd_replica", sets)))
    captions = {v.chart_id: v.caption for v in views.pd_views(run, "early", run.end_at)}
    assert captions["early-kv-decode-0"].startswith(
        "Pool 655,360 tokens (the worker's 4 DP ranks × 163,840 tokens each); at most")


def step_value(points: pd.DataFrame, at: float, value: str) -> float:
    """A step-after line's value at `at`: the last point at or before it."""
    return points.loc[points["at"] <= at, value].iloc[-1]


def test_a_step_line_keeps_only_the_points_that_draw_it(run):
    """The queue chart drops points that repeat the value before them: every line starts, steps and ends
    where the full frame's does, with far fewer marks."""
    _, f = run
    kept = timelines.step_changes(f.queue, "requests")
    assert len(kept) < len(f.queue) / 2
    for (lane, series), line in f.queue.groupby(["lane", "series"]):
        thin = kept[(kept["lane"] == lane) & (kept["series"] == series)]
        assert thin["at"].iloc[[0, -1]].tolist() == line["at"].iloc[[0, -1]].tolist()
        assert [step_value(thin, at, "requests") for at in line["at"]] == line["requests"].tolist()
    drawn = timelines.queue_depth(f.queue).to_dict()
    assert sum(map(len, drawn["datasets"].values())) <= len(kept) + 1  # (+ the cursor's row, if any)


def test_the_cursor_label_reads_leftwards_late_in_the_run_so_it_stays_inside_the_plot():
    early, late = (scales.cursor_layer(at, end_at=100.0).to_dict()["layer"][1]["mark"] for at in (10.0, 90.0))
    assert (early["align"], early["dx"]) == ("left", 4) and (late["align"], late["dx"]) == ("right", -4)



def test_lone_tokens_at_one_instant_in_adjacent_lanes_are_one_tick_and_every_lone_token_is_in_one(run):
    """`token_columns`: each column's lanes are next to one another in the chart's order and each of them got
    a lone token at that instant; every lone token is in exactly one column; a standalone page's runs (`r`)
    never share a column."""
    _, f = run
    lone = f.tokens[f.tokens["count"] == 1]
    place = {rid: i for i, rid in enumerate(f.request_order)}
    for merged in (False, True):
        tokens = pd.concat([f.tokens.assign(r=0), f.tokens.assign(r=1)]) if merged else f.tokens
        columns = timelines.token_columns(tokens, f.request_order)
        assert int(columns["lanes"].sum()) == len(lone) * (2 if merged else 1)
        covered = set()
        for col in columns.itertuples():
            first, last = place[col.rid], place[col.last]
            assert last - first + 1 == col.lanes
            for rid in f.request_order[first:last + 1]:
                hit = lone[(lone["rid"] == rid) & (lone["at"] == col.at)]
                assert len(hit) == 1 and not hit["gap_before_s"].iloc[0] > col.gap_before_s  # (a first: NaN)
                key = (rid, col.at, col.r if merged else 0)
                assert key not in covered
                covered.add(key)


def test_a_trickle_of_forty_streams_draws_a_column_per_pass_not_a_tick_per_token():
    story = STORIES["forty_replies"]
    result = simulate(story.scenario({**story.defaults, "mixed": True}))
    f = frames.build(result)
    lone = int((f.tokens["count"] == 1).sum())
    columns = timelines.token_columns(f.tokens, f.request_order)
    assert lone >= 400 and len(columns) <= lone // 20  # one mixed pass: a token for each of the 40 streams


def test_a_stall_adjacent_lanes_share_exactly_is_one_block_and_every_stretch_is_in_one(run):
    """`stall_blocks`: each block's lanes are next to one another, of one group and shade, and each lane's
    stretch there has the block's start and end; every stretch is in exactly one block."""
    _, f = run
    stretches = timelines.stall_stretches(f.stalls)
    blocks = timelines.stall_blocks(f.stalls, f.request_order)
    assert int(blocks["lanes"].sum()) == len(stretches)
    place = {rid: i for i, rid in enumerate(f.request_order)}
    for block in blocks.itertuples():
        lanes = f.request_order[place[block.rid]:place[block.last] + 1]
        assert len(lanes) == block.lanes
        for rid in lanes:
            mine = stretches[(stretches["rid"] == rid) & (stretches["start_at"] == block.start_at)
                             & (stretches["end_at"] == block.end_at)]
            assert len(mine) == 1
            assert (mine.iloc[0]["band"], mine.iloc[0]["group"]) == (block.band, block.group)


def test_forty_streams_frozen_together_are_one_block():
    """Scheduler only: one freeze, the prefill's. With the front end the client sees two, each one block of
    forty lanes: the server's event loop tokenizing the 100,000-token prompt (engine_model/frontend.py),
    then the prefill."""
    story = STORIES["forty_replies"]
    for front, freezes in ((False, 1), (True, 2)):
        result = simulate(story.scenario(story.defaults).model_copy(
            update={"cost": story.scenario(story.defaults).cost.model_copy(update={"front_end": front})}))
        f = frames.build(result)
        blocks = timelines.stall_blocks(f.stalls, f.request_order)
        streams = blocks[blocks["group"] == "streams"]
        assert len(f.stalls[f.stalls["group"] == "streams"]) == 40 * freezes
        assert streams["lanes"].tolist() == [40] * freezes
        if front:
            (tokenizing,) = [b for b in result.front_end if b.prompt_len == 100_000]
            first_end = f.stalls[f.stalls["group"] == "streams"]["end_at"].min()
            # then the loop hands over the outputs that queued (output_row_s per stream per pass)
            assert tokenizing.end_at < first_end < tokenizing.end_at + 0.05


def test_chunks_of_one_pass_in_adjacent_lanes_are_one_block_and_every_chunk_is_in_one(run):
    """`chunk_blocks`: each block's lanes are next to one another, and each of them has a chunk of that pass,
    kind and group with the block's start and end; the block's prompt tokens and KV are its lanes' sums;
    every chunk is in exactly one block."""
    _, f = run
    blocks = timelines.chunk_blocks(f.chunks, f.request_order)
    assert int(blocks["lanes"].sum()) == len(f.chunks)
    place = {rid: i for i, rid in enumerate(f.request_order)}
    for block in blocks.itertuples():
        lanes = f.request_order[place[block.rid]:place[block.last] + 1]
        assert len(lanes) == block.lanes
        mine = f.chunks[f.chunks["rid"].isin(lanes) & (f.chunks["start_at"] == block.start_at)
                        & (f.chunks["end_at"] == block.end_at) & (f.chunks["lane"] == block.lane)]
        assert sorted(mine["rid"]) == sorted(lanes)
        assert set(mine["kind"]) == {block.kind} and set(mine["group"]) == {block.group}
        assert (mine["extend"].sum(), mine["past_kv"].sum()) == (block.extend, block.past_kv)


def test_questions_prefilled_in_one_pass_are_one_block():
    f = story_runs.run("ten_oclock_rush")
    blocks = timelines.chunk_blocks(f.chunks, f.request_order)
    assert len(blocks) < len(f.chunks) / 2 and blocks["lanes"].max() >= 8


def test_a_trickle_reads_as_lines_between_gaps_at_projector_scale():
    """Mixed chunk on: each chunk pass gives every stream one token. On a 1,920-px screen (a chart about
    1,400 px wide) those tokens are ticks at least TICK_PX wide with pink gaps wider than them between, not
    1-px lines that read as one band beside the frozen run's dark one."""
    run = story_runs.run("forty_replies", (("mixed", True),))
    spec = timelines.token_streams(run.tokens, run.stalls, run.chunks, run.waits, run.request_order,
                                   end_at=run.end_at).to_dict()
    rules = [m for m in re.findall(r'"mark": (\{[^{}]*"type": "rule"[^{}]*\})', json.dumps(spec))]
    ticks = [json.loads(m) for m in rules if '"strokeWidth"' in m]
    assert ticks and all(t["strokeWidth"] >= 2.5 and t.get("opacity", 1) >= 0.9 for t in ticks), ticks
    cols = timelines.token_columns(run.tokens, run.request_order)
    stream = cols[cols["rid"].str.startswith("streams")]["at"].drop_duplicates().sort_values()
    during = stream[(stream > 0.5) & (stream < run.summary.metrics.value("log", "ttft_s", "max"))]
    apart_px = during.diff().dropna() / run.end_at * 1400
    assert len(during) > 5 and apart_px.min() > 2 * timelines.TICK_PX, apart_px.min()


def test_the_first_steps_keep_the_stall_for_the_step_that_shows_it():
    """Forty steps 1 and 2 veil the lanes past their cursor, so the stall step 3 points at is not on screen
    before it: each stream's longest stall (the chunk's freeze) starts under the veil, which runs to the
    run's end. (The front end's shorter hold-up while the log is tokenized is what step 2 is about.)"""
    story = STORIES["forty_replies"]
    run = story_runs.run("forty_replies")
    reveal = next(i for i, s in enumerate(story.tour) if "{now:streams.max_itl_s.max}" in s.say)
    assert all(s.veiled for s in story.tour[:reveal]) and not story.tour[reveal].veiled
    its = run.iterations
    for step in story.tour[:reveal]:
        start = float(its.iloc[cursor.resolve(its, step.cursor)]["start_at"])
        freezes = run.stalls.loc[run.stalls.groupby("rid")["gap_s"].idxmax()]
        assert (freezes["start_at"] >= start - 1e-9).all()
        spec = timelines.token_streams(run.tokens, run.stalls, run.chunks, run.waits, run.request_order,
                                       start, run.end_at, veil_from=start).to_dict()
        veils = [rows[0] for rows in spec["datasets"].values()
                 if rows and str(rows[0].get("label", "")).startswith("still to come")]
        assert veils and veils[0]["start_at"] == start and veils[0]["end_at"] == run.end_at


def test_every_story_chart_of_lanes_fits_a_1080p_screen_in_presenter_mode():
    """Ten o'clock's 246 lanes were 6 px each in presenter mode (1,476 px, the time axis off screen): a
    chart of many lanes keeps its thin lanes, so its lanes and axis fit 1080 px."""
    from app.present import shown

    for key in STORIES:
        run = story_runs.run(key)
        spec = timelines.token_streams(run.tokens, run.stalls, run.chunks, run.waits, run.request_order,
                                       end_at=run.end_at).to_dict()
        sent = shown.room_spec(spec, presenting=True)
        lanes_px = sent["height"]["step"] * len(run.request_order)
        assert lanes_px <= 720, (key, len(run.request_order), sent["height"])
