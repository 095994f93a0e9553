"""The rule registry and the release capabilities: what "show the rule" and the version switch rely on."""

from dataclasses import fields

from engine_model import CHANGES, load_scenario, rules_of, simulate
from engine_model.rules import RULES, chain, rule
from engine_model.versions import Capabilities, capabilities


def test_every_chain_a_story_records_names_a_rule_the_model_has():
    names = set()
    for story in ("forty_replies", "other_stall", "real_traffic", "ten_oclock_rush_pd"):
        for it in simulate(load_scenario(story)).iterations:
            names.update(chain(it.mirrors))
    missing = sorted(name for name in names if rule(name) is None)
    assert missing == []
    assert {"Scheduler.get_next_batch_to_run", "ScheduleBatch.retract_decode", "Scheduler.on_idle"} <= names


def test_a_rule_is_the_functions_own_code_found_by_object():
    found = rules_of("Scheduler.get_next_batch_to_run -> update_running_batch -> "
                     "ScheduleBatch.retract_decode")
    assert [r.qualname for r in found] == ["engine_model.scheduler.Scheduler.schedule",
                                           "engine_model.scheduler.Scheduler._decode_plan",
                                           "engine_model.scheduler.Scheduler._retract"]
    assert "def _retract(self)" in found[2].code and "retraction_order" in found[2].code
    assert rules_of("SomethingTheModelDoesNotMirror") == []


def test_every_registered_rule_is_a_function():
    assert all(callable(fn) and fn.__doc__ for fn in RULES.values())


def test_one_capability_flag_per_change_each_with_its_line():
    assert [f.name for f in fields(Capabilities)] == [c.name for c in CHANGES]
    assert all(len(c.what) > 30 for c in CHANGES)


def test_capabilities_grow_release_by_release():
    """Checked in the wheels: 0.5.21 schedules as 0.5.20 but has shortest-prefill-first; the stop on a
    spent pass budget came with 0.5.23, not 0.5.22."""
    old, first, mid, new = (capabilities(v) for v in ("0.5.20", "0.5.21", "0.5.22", "0.5.23"))
    assert not any(vars(old).values()) and all(vars(new).values())
    assert {k for k, v in vars(first).items() if v} == {"has_shortest_prefill_first"}
    assert {k for k, v in vars(mid).items() if not v} == {"chunk_holds_row", "defer_has_min_bs",
                                                          "stops_on_spent_budget", "prebuilt_copies_async",
                                                          "mla_prefill_graph_follows_chunk"}
