"""The hostile corpus through the app's own door (tests/hostile/make_corpus.py): every log case either is
refused at upload with one line naming the file and line, or, pasted into the Your-server page, draws with
a clean message or a partial result; never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from app.server.input import decode_upload
from app.server.simulate_ui import SIMULATE
from engine_model import InputError, read_scrapes, read_server_info
from tests.hostile.make_corpus import INFOS, LOGS, METRICS, TRACES

MAIN = str(Path(__file__).resolve().parents[1] / "app" / "main.py")


@pytest.mark.parametrize("case", LOGS + TRACES + METRICS + INFOS, ids=lambda c: c.name)
def test_an_upload_is_text_or_one_line_naming_where(case):
    try:
        text, notes = decode_upload(case.data, case.kind, limit_mb=20)
    except InputError as err:
        assert err.where.startswith(case.kind) and "\n" not in err.problem
        return
    if case.kind in ("metrics", "server_info"):  # then the page's reader: a result or one line
        reader = (lambda: read_scrapes([("upload", text)])) if case.kind == "metrics" else (
            lambda: read_server_info(text))
        try:
            reader()
        except InputError as err:
            assert "\n" not in str(err)
    assert isinstance(text, str) and all("\n" not in note for note in notes)


@pytest.fixture(scope="module")
def page() -> AppTest:
    at = AppTest.from_file(MAIN, default_timeout=300)
    at.query_params["log"] = "paste"
    at.run()
    at.switch_page("app_pages/your_server.py")
    at.session_state[SIMULATE] = True  # the replay's fold, opened: hostile logs reach the replay too
    at.run()
    return at


@pytest.mark.slow
def test_every_log_that_uploads_as_text_pastes_into_the_page_without_a_traceback(page):
    pasted = 0
    for case in LOGS:
        try:
            text, _ = decode_upload(case.data, case.kind, limit_mb=20)
        except InputError:
            continue
        page.text_area(key="your_server.paste").input(text)
        page.run()
        assert not page.exception, (case.name, [e.value for e in page.exception])
        messages = [e.value for e in page.error] + [w.value for w in page.warning]
        assert all("Traceback" not in m for m in messages), case.name
        pasted += 1
    assert pasted >= len(LOGS) // 2  # most of the corpus reaches the page, not only the upload check
