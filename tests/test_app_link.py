"""A link is the view (issue 40): `?step=N` opens the page as a click on step N would — the step's settings
(where the link gives none of its own), its folds open, its pointer scrolled to — presenter mode stays in
the address, and the copy-link button sits at the top of the page."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest
from test_app_room import MAIN, open_page

from app import state
from app.story import tour
from engine_model import STORIES

PAGES = {key: f"app_pages/{key}.py" for key in STORIES}


def widget_values(at: AppTest, story) -> dict:
    keys = state.keys(story.key)
    return {c.key: at.session_state[keys.widget(c.key)] for c in story.controls
            if keys.widget(c.key) in at.session_state}


def test_step_4_alone_turns_mixed_chunk_on_and_its_words_describe_a_change():
    at = open_page(PAGES["forty_replies"], {"step": "4"})
    assert at.toggle(key="forty_replies.mixed").value is True
    said = next(i.value for i in at.info if "Step 4 of 8" in i.value)
    assert "(unchanged)" not in said
    assert at.query_params["step"] == "4" and at.query_params["mixed"] == "1"  # the link says it in full


def test_the_links_own_setting_wins_over_the_steps_and_stays_in_the_link():
    at = open_page(PAGES["forty_replies"], {"step": "4", "mixed": "0"})
    assert at.toggle(key="forty_replies.mixed").value is False
    assert at.query_params["mixed"] == "0"  # at its default, but not the step's: written


@pytest.mark.parametrize("key", ["forty_replies", "other_stall", "ten_oclock_rush"])
def test_every_step_by_link_is_the_step_by_click(key):
    """Settings, section, open folds, pointer and cursor: the same by `?step=N` as by clicking step N."""
    story = STORIES[key]
    for i, step in enumerate(story.tour):
        by_link = open_page(PAGES[key], {"step": str(i + 1)})
        clicked = open_page(PAGES[key], {})
        clicked.button(key=state.keys(key).tour_button(i)).click().run()
        assert widget_values(by_link, story) == widget_values(clicked, story), step.title
        for fold in tour.OPENS.get(step.focus, ()):
            assert by_link.session_state[fold] is True, (step.title, fold)
        keys = state.keys(key)
        for name in (keys.tour_step, keys.focus, keys.position):
            assert by_link.session_state[name] == clicked.session_state[name], (step.title, name)
        assert dict(by_link.query_params) == dict(clicked.query_params), step.title
        scroll = [h.proto.body for h in by_link.get("html") if "scrollIntoView" in h.proto.body]
        assert scroll and step.title in scroll[0], step.title  # its "Look here" is scrolled to


def test_a_step_that_sets_a_folded_setting_opens_that_fold_from_a_link():
    at = open_page(PAGES["forty_replies"], {"step": "5"})  # chunk 2048 sits under "More settings"
    assert at.session_state[tour.settings_fold("forty_replies")] is True
    assert at.session_state[tour.GAPS] is True
    assert at.query_params["chunk"] == "2048"


def test_presenter_mode_stays_in_the_address():
    at = AppTest.from_file(MAIN, default_timeout=180)
    at.query_params.update({"present": "1"})
    at.run()
    at.switch_page(PAGES["other_stall"])
    at.query_params.update({"present": "1", "step": "3"})
    at.run()
    assert not at.exception
    assert at.query_params["present"] == "1" and at.query_params["step"] == "3"


def test_the_copy_link_button_comes_before_the_tour():
    at = open_page(PAGES["forty_replies"], {})
    main = [e for e in at.main]
    copy = next(i for i, e in enumerate(main) if e.type == "html" and "wwCopyLink" in e.proto.body)
    tour_row = next(i for i, e in enumerate(main) if f"-{state.TOUR_ROW}" in str(getattr(e, "proto", "")))
    assert copy < tour_row


def test_presenter_mode_goes_on_without_a_room_when_its_store_cannot_be_reached(monkeypatch):
    from app.room import store as room_store
    from app.room import ui as room_ui

    monkeypatch.setenv(room_store.ENV, "redis://127.0.0.1:1/0")  # nothing listens there
    room_ui.store.clear()
    try:
        at = AppTest.from_file(MAIN, default_timeout=180)
        at.query_params.update({"present": "1"})
        at.run()
        at.switch_page(PAGES["forty_replies"])
        at.query_params.update({"present": "1", "step": "2"})
        at.run()
        assert not at.exception, [e.value for e in at.exception]
        assert any("Step 2 of 8" in i.value for i in at.info)
        assert any("wwCopyLink" in h.proto.body for h in at.get("html"))  # the link is still at hand
        assert state.ROOM_TOKEN not in at.session_state
    finally:
        room_ui.store.clear()
