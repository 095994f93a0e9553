"""Charts cannot show an impossible state: a stacked KV point is one pass's state and never tops its pool;
the gap histograms cover their data and fit their column; stalls are shaded by length."""

import hypothesis.strategies as hs
import pandas as pd
import pytest
from hypothesis import given, settings

from app.charts import frames, latency, request_frames, timelines
from engine_model import load_scenario, simulate

from conftest import examples

STACKING = ["forty_replies", "other_stall", "ten_oclock_rush", "ten_oclock_rush_pd"]


def stack_heights(kv: pd.DataFrame) -> pd.DataFrame:
    """What Vega draws: at each (lane, time) the series stacked from zero, beside the pool."""
    return kv.groupby(["lane", "at"]).agg(stack=("slots", "sum"), capacity=("capacity", "max")).reset_index()


@hs.composite
def iterations(draw):
    """An iterations frame as a run records it: per pass, used + reserved never above the pool."""
    rows = []
    for _ in range(draw(hs.integers(1, 120))):
        capacity = draw(hs.integers(1, 10_000))
        used = draw(hs.integers(0, capacity))
        rows.append({"lane": draw(hs.sampled_from(["prefill-0", "decode-0"])),
                     "start_at": draw(hs.floats(0, 100, allow_nan=False)), "kv_used": used,
                     "kv_reserved": draw(hs.integers(0, capacity - used)), "kv_capacity": capacity})
    return pd.DataFrame(rows).sort_values("start_at", kind="stable").reset_index(drop=True)


@settings(max_examples=examples(60), deadline=None)  # WHO_WAITS_SOAK=1: 10,000
@given(its=iterations(), max_points=hs.integers(2, 40))
def test_every_stacked_kv_point_is_one_real_pass_and_never_tops_its_pool(its, max_points):
    kv = frames.kv_frame(its, max_points=max_points)
    heights = stack_heights(kv)
    assert (heights["stack"] <= heights["capacity"]).all()
    wide = kv.pivot_table(index=["lane", "at"], columns="series", values="slots").reset_index()
    drawn = zip(wide["lane"], wide["at"], wide["used"], wide["reserved, not yet used"], strict=True)
    real = set(zip(its["lane"], its["start_at"], its["kv_used"], its["kv_reserved"], strict=True))
    assert set(drawn) <= real


@pytest.mark.parametrize("name", STACKING)
def test_no_kv_chart_of_a_story_stacks_above_its_pool(name):
    kv = frames.build(simulate(load_scenario(name))).kv
    heights = stack_heights(kv)
    assert len(heights) and (heights["stack"] <= heights["capacity"]).all()


def test_the_gap_histograms_cover_the_longest_gap_and_are_single_views():
    f = frames.build(simulate(load_scenario("forty_replies")))
    domain = latency.gap_domain(f.itl_hist)
    assert domain[0] <= f.itl_hist["bin_start"].min() and domain[1] > f.itl_stats["gap_s"].max() * 1.5
    for group in dict.fromkeys(f.itl_hist["group"]):
        spec = latency.itl_distribution(f.itl_hist, f.itl_stats, group, domain=domain).to_dict()
        # a single view takes its column's width
        assert "vconcat" not in spec and spec["width"] == "container"
        assert spec["layer"][0]["encoding"]["x"]["scale"]["domain"] == domain


def test_a_barely_used_pool_gets_an_axis_that_shows_its_use_and_says_the_pool_size():
    its = pd.DataFrame({"lane": ["prefill-0"] * 3 + ["decode-0"] * 3, "start_at": [0.0, 1.0, 2.0] * 2,
                        "kv_used": [0, 90_000, 0, 0, 300_000, 100_000],
                        "kv_reserved": [0, 0, 0, 0, 50_000, 0],
                        "kv_capacity": [4_500_000] * 3 + [443_473] * 3})
    panels = {lane: (chart.to_dict(), words)
              for lane, chart, words in timelines.kv_panels(frames.kv_frame(its))}
    (prefill, prefill_words), (decode, decode_words) = panels["prefill-0"], panels["decode-0"]
    assert prefill_words == ("pool 4,500,000 tokens; at most 90,000 in use (2%); "
                             "the axis shows the part in use")
    assert ({row["series"] for row in prefill["datasets"][prefill["data"]["name"]]}
            == {"used", "reserved, not yet used"})
    assert decode_words == "pool 443,473 tokens; at most 350,000 in use (79%)"
    assert "free" in {row["series"] for row in decode["datasets"][decode["data"]["name"]]}


def test_stalls_are_shaded_by_length_on_fixed_bands():
    bands = request_frames.gap_bands(0.25)
    assert [label for *_, label in bands] == ["0.25–1 s", "1–5 s", "5–20 s", "20 s or more"]
    assert request_frames.gap_band(11.4, 0.25) == "5–20 s" and request_frames.gap_band(1.2, 0.25) == "1–5 s"
    off = frames.build(simulate(load_scenario("forty_replies")))
    on = frames.build(simulate(load_scenario("forty_replies", ["engine.enable_mixed_chunk=true"])))
    # per stream one long stall (the chunks) and one short one (the front end tokenizing the log first)
    assert set(off.stalls["band"]) == {"5–20 s", "0.25–1 s"}
    assert (off.stalls.groupby("rid")["band"].apply(sorted) == pd.Series(
        [["0.25–1 s", "5–20 s"]] * 40, index=sorted(off.stalls["rid"].unique()))).all()
    assert set(on.stalls["band"]) <= {"0.25–1 s", "1–5 s"}  # one chunk pass at a time
    spec = timelines.token_streams(on.tokens, on.stalls, on.chunks, on.waits, on.request_order,
                                   stall_threshold_s=on.stall_threshold_s,
                                   chunk_pass_s=on.chunk_pass_s).to_dict()
    legend_titles = [layer["encoding"]["color"]["title"] for layer in spec["layer"]
                     if "color" in layer.get("encoding", {})]
    lo, hi = on.chunk_pass_s  # the shortest and longest full-chunk pass of the run
    chunk_passes = on.iterations[on.iterations["kind"].isin(["prefill", "mixed"])]["duration_s"]
    assert lo <= hi and lo >= chunk_passes.min() - 1e-9 and hi <= chunk_passes.max() + 1e-9
    assert ["no token for", f"(one chunk pass: {lo:.2g}–{hi:.2g} s)"] in legend_titles
    # the tour's words: with mixed chunk on the purple band breaks into pink gaps, a tick between each (after
    # the front end's hold-up while the log is tokenized, whose queued tokens arrive as one chunk)
    tokenized = max(b.end_at for b in on.front_end)
    chunked = on.stalls[(on.stalls["group"] == "streams") & (on.stalls["start_at"] > tokenized)]
    for rid, gaps in chunked.groupby("rid"):
        marks = on.tokens[on.tokens["rid"] == rid]
        assert len(gaps) > 5, rid
        for end, start in zip(gaps["end_at"].iloc[:-1], gaps["start_at"].iloc[1:], strict=True):
            between = marks[(marks["at"] >= end - 1e-9) & (marks["until"] <= start + 1e-9)]
            assert len(between) and (between["count"] == 1).all(), (rid, end)
