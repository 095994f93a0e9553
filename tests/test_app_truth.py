"""What a reader sees cannot mislead: before -> after for every change the tour narrates, the price of a
change, the percentile trap, tables in words, the PD step on a visible trade-off, no internal paths."""

import json
import re

import pytest
from story_runs import channels
from test_app import metric, open_page

from app.pd import params
from app.present.fmt import fmt_seconds
from engine_model import load_scenario, simulate, stories, summary

RAW_NAME = re.compile(r"^[a-z0-9]+(_[a-z0-9]+)+$")  # streams_p99_itl_s, num_retracted ...


def tables_read_as_words(at) -> None:
    """Every table: headers in words (no code names), and no empty or None cell."""
    for df in at.dataframe:
        frame = df.value
        assert not [c for c in frame.columns if RAW_NAME.match(str(c))], list(frame.columns)
        assert not frame.isna().any().any(), frame
        assert not frame.astype(str).isin(["None", "nan", "—"]).any().any(), frame


def retracted(story: str, pool: int) -> int:
    return (summary(simulate(load_scenario(story, [f"engine.max_total_tokens={pool}"])))
            .metrics.overall.num_retracted)


def test_the_more_kv_step_shows_before_to_after_and_says_what_changed():
    at = open_page("app_pages/other_stall.py")
    at.button(key="other_stall.tour.5").click().run()
    was, got = (retracted("other_stall", pool) for pool in (60_000, 120_000))
    assert got < was and metric(at, "Requests pushed back").value == f"{was} → {got}"
    assert any("Changed: KV pool (tokens) 60,000 → 120,000." in c.value for c in at.caption)
    assert any(f"drop from {was} to {got}" in i.value for i in at.info)


def test_flipping_mixed_chunk_says_the_percentile_trap_and_shows_the_price():
    at = open_page("app_pages/forty_replies.py", {"mixed": "1"})
    trap = [i.value for i in at.info if i.value.startswith("Read p99 with care")]
    off, on = (summary(simulate(load_scenario("forty_replies", sets))).metrics
               for sets in ([], ["engine.enable_mixed_chunk=true"]))
    p99 = (f"{fmt_seconds(off.value('streams', 'itl_s', 'p99'))} → "
           f"{fmt_seconds(on.value('streams', 'itl_s', 'p99'))}")
    longest = " → ".join(fmt_seconds(m.value("streams", "max_itl_s", "max")) for m in (off, on))
    assert len(trap) == 1 and p99 in trap[0] and longest in trap[0]
    for label in ("Output at this load, tokens/s", "Run length", "Reply time, streams (median)",
                  "Reply time, log (median)"):
        assert "→" in metric(at, label).value
    tables_read_as_words(at)


def test_the_compare_tables_read_as_words():
    at = open_page("app_pages/compare.py")
    assert metric(at, "Run length").value.count("→") == 1  # what B costs against A
    tables_read_as_words(at)


def test_a_decode_cap_that_cannot_hold_the_longest_prompt_is_refused_before_it_runs():
    """A 32,768-token decode cap against 120,000-token contracts: SGLang's decode could never preallocate them
    (they would wait for the bootstrap timeout), so the check refuses the PD layout with the pool's numbers
    and a fix, and what can run (today's engines on the same GPUs) still shows."""
    at = open_page("app_pages/ten_oclock_rush.py", {"cap": "32768"})
    tables_read_as_words(at)
    warnings = [w.value for w in at.warning if "cannot run here" in w.value]
    assert warnings and all("decode" in w and "32,768" in w and "Fix:" in w for w in warnings), warnings
    table = next(df.value for df in at.dataframe if "deployment" in df.value.columns)
    assert "PD, early" not in set(table["deployment"])


@pytest.mark.xdist_group("upstream")  # the upstream replica's PD runs, the slowest, made once a run
@pytest.mark.slow
def test_the_pd_step_lands_on_the_upstream_preset_with_its_own_worker_counts():
    at = open_page("app_pages/ten_oclock_rush.py")
    at.button(key="ten_oclock_rush.tour.5").click().run()
    assert at.selectbox(key=params.widget_key("preset")).value == "upstream"
    workers = [s for s in at.slider if s.label == "Prefill workers"]
    assert [(s.value, s.disabled) for s in workers] == [(params.upstream_workers()[0], True)]
    assert metric(at, "p99 gap between tokens").value  # the replica's own card (its value: test_app.py)
    # the step before goes back to the ten o'clock split
    at.button(key="ten_oclock_rush.tour.4").click().run()
    assert at.selectbox(key=params.widget_key("preset")).value == "rush"
    assert any(i.value.startswith("Here the two policies barely differ") for i in at.info)


def test_no_internal_path_where_a_reader_expects_words():
    at = open_page("app_pages/forty_replies.py")
    shown = " ".join([m.value for m in at.markdown] + [c.value for c in at.caption])
    assert not re.search(r"engine_model[./]\w|docs/\w+\.md|\w+\.py\b", shown), \
        re.findall(r".{40}(?:engine_model[./]\w|docs/\w+\.md|\w+\.py\b).{20}", shown)
    assert stories.FORTY.title in " ".join(t.value for t in at.title)


def time_domains(spec: dict) -> list[tuple]:
    """The x domains of every time axis in a chart spec (x titled 'time (s)')."""
    return [tuple(x["scale"]["domain"]) for x in channels(spec, "x")
            if x.get("title") == "time (s)" and "domain" in x.get("scale", {})]


def test_the_pd_pairs_share_one_clock():
    at = open_page("app_pages/ten_oclock_rush.py", opened=True)
    specs = [json.loads(chart.proto.spec) for chart in at.get("vega_lite_chart")]
    domains = {d for spec in specs for d in time_domains(spec)}
    assert len(specs) >= 12 and len(domains) == 2  # the single engine's clock, and one for both PD policies
