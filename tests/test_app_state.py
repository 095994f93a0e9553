"""app/state.py owns every session-state key and URL parameter name; nothing else in app/ spells one."""

import ast
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from app import state
from engine_model.stories import STORIES

APP = Path(__file__).resolve().parents[1] / "app"
ACCESSORS = {"get", "pop", "setdefault"}


def spelled_keys(tree: ast.AST) -> list[tuple[int, str]]:
    """Session-state or URL keys written out as a string or f-string: `st.session_state["x"]`,
    `st.query_params.get(f"..")`, a widget's `key="..."`. Returns (line, what)."""
    found = []

    def is_literal(node) -> bool:
        return isinstance(node, ast.JoinedStr) or (
            isinstance(node, ast.Constant) and isinstance(node.value, str))

    def is_store(node) -> bool:
        return isinstance(node, ast.Attribute) and node.attr in ("session_state", "query_params")

    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and is_store(node.value) and is_literal(node.slice):
            found.append((node.lineno, "subscript"))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            method = node.func.attr
            if method in ACCESSORS and is_store(node.func.value) and node.args and is_literal(node.args[0]):
                found.append((node.lineno, f".{method}()"))
            keys = [kw.value for kw in node.keywords if kw.arg == "key"]
            found += [(node.lineno, "key=") for key in keys if is_literal(key)]
        elif isinstance(node, ast.Compare) and any(map(is_store, node.comparators)) and is_literal(node.left):
            found.append((node.lineno, "in"))
    return found


def test_no_module_but_state_spells_a_session_key_or_url_parameter():
    offenders = {}
    for path in APP.rglob("*.py"):
        if path.name == "state.py" and path.parent == APP:
            continue
        found = spelled_keys(ast.parse(path.read_text(), filename=str(path)))
        if found:
            offenders[str(path.relative_to(APP))] = found
    assert offenders == {}


def test_the_scan_catches_each_way_of_spelling_a_key():
    source = ('st.session_state["a"]\nst.query_params.get(f"{p}.b")\nst.button("x", key="c")\n'
              '"d" in st.session_state\nst.session_state[state.keys(p).scenario]\n')
    assert spelled_keys(ast.parse(source)) == [(1, "subscript"), (2, ".get()"), (3, "key="), (4, "in")]


def test_page_keys_are_the_page_then_the_name_and_never_collide():
    keys = state.keys("forty_replies")
    assert keys.widget("mixed") == "forty_replies.mixed"
    assert keys.tour_button(3) == "forty_replies.tour.3"
    assert keys.move_button("next_event") == "forty_replies.move.next_event"
    assert keys.position == "forty_replies.it"
    named = [keys.notes, keys.scenario, keys.tour_step, keys.pending_cursor, keys.focus, keys.playing,
             keys.play_button, keys.position, keys.cursor_t, keys.run_key, keys.picked_pos,
             keys.resolved_chunk]
    controls = {keys.widget(c.key) for story in STORIES.values() for c in story.controls}
    assert len(set(named)) == len(named) and not set(named) & controls


def test_the_rush_story_reads_the_pd_sections_url_parameters():
    assert set(state.PD_PARAMS) <= set(state.EXTRA_PARAMS["ten_oclock_rush"])
    assert state.side_param("b", "mixed") == "b_mixed"


def _seed_script():
    import streamlit as st

    from app import state

    def parse(text: str) -> int:
        if not text.isdigit():
            raise ValueError("expected a whole number")
        return int(text)

    note = state.seed_param("test.k", "k", 3, parse)
    st.markdown(f"note: {note}")
    st.markdown(f"value: {st.session_state['test.k']}")


@pytest.mark.parametrize(("url", "value", "note"), [
    (None, "3", "None"),
    ("12", "12", "None"),
    ("banana", "3", "URL parameter `k=banana`: expected a whole number; using 3."),
])
def test_seed_param_reads_the_url_once_and_notes_a_bad_value(url, value, note):
    at = AppTest.from_function(_seed_script)
    if url is not None:
        at.query_params["k"] = url
    at.run()
    assert [m.value for m in at.markdown] == [f"note: {note}", f"value: {value}"]
    at.query_params["k"] = "99"
    at.run()  # seeded once per session: a later URL change does not move the widget
    assert [m.value for m in at.markdown] == ["note: None", f"value: {value}"]
