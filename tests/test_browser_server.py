"""End to end in headless Chromium: open "Your server", pick the retraction sample, see the KV verdict.

Reuses tests/test_browser.py's server / browser / page fixtures and its settle(). Run:
pytest -m browser tests/test_browser_server.py
"""

from __future__ import annotations

import pytest
from test_browser import page, settle, unfold  # noqa: F401  (fixtures)

from conftest import tab as new_tab

pytestmark = pytest.mark.browser


def test_picking_the_retraction_sample_shows_the_kv_verdict(server, page):  # noqa: F811
    page.goto(server + "/your_server?log=chunk")
    settle(page)
    main = page.locator('[data-testid="stMain"]').inner_text()
    assert "it is a queue ramp under prefill-first admission" in main
    page.get_by_text("Docs CI, Qwen2.5-0.5B: KV pool capped (retraction)").click()
    page.wait_for_function("() => document.querySelector('[data-testid=\"stMain\"]').innerText"
                           ".includes('Verdict: it is the KV stall')", timeout=60_000)
    settle(page)
    text = page.locator('[data-testid="stMain"]').inner_text()
    assert "Verdict: it is the KV stall" in text
    assert "Decode out of memory happened. #retracted_reqs: 23" in text
    assert "log=" not in page.url  # the default sample is implied
    assert page.locator('[data-testid="stException"]').count() == 0


def test_the_examples_metrics_stand_beside_its_log_with_the_itl_chart(server, page):  # noqa: F811
    page.goto(server + "/your_server?log=example&metrics=example")
    settle(page)
    main = page.locator('[data-testid="stMain"]').inner_text()
    assert "The metrics agree: from 14:00:10 to 14:00:15 no inter-token gap was recorded" in main
    assert "The replies' inter-token gaps, beside the Prefill lines" in main
    assert page.locator('[data-testid="stException"]').count() == 0


REPLAY = ("GPU", "Model", "Tensor parallel", "Weights", "KV cache", "Reply length (tokens)",
          "Replay at most (requests)")


@pytest.mark.parametrize("width", [1280, 1440])
def test_the_tp8_70b_log_replays_with_its_controls_in_one_row_that_wraps_cleanly(server, context, width):  # noqa: F811
    """deploy's model / TP / precision picks and pdbuyer's 'Replay at most' side by side: at 1280 and 1440 px
    one row that wraps into two without overlap or a clipped value, and the log replays as 70B on 8 GPUs
    with the line that says how many of its requests it kept."""
    from pathlib import Path

    log = Path(__file__).resolve().parent / "data" / "sglang_logs_written" / "llama70b_tp8.log"
    tab = new_tab(context, width)
    try:
        tab.goto(server + "/your_server?log=upload")
        settle(tab)
        tab.locator('input[type="file"]').first.set_input_files(str(log))
        tab.wait_for_function("() => document.querySelector('[data-testid=\"stMain\"]').innerText"
                               ".includes('Replay the log in the model')", timeout=120_000)
        settle(tab, timeout_s=120)
        unfold(tab, ("Replay the log in the model",))
        tab.wait_for_function("() => document.querySelector('[data-testid=\"stMain\"]').innerText"
                               ".includes('The replay keeps')", timeout=120_000)
        settle(tab, timeout_s=120)
        main = tab.locator('[data-testid="stMain"]').inner_text()
        assert "The replay keeps all 25 requests the log's Prefill lines introduce." in main
        assert "8 × H100 SXM 80GB, TP 8 · Llama-3.1-70B" in main
        selects = [tab.locator('[data-testid="stSelectbox"]').filter(has=tab.get_by_text(label, exact=True))
                   .first for label in REPLAY]
        boxes = [s.bounding_box() for s in selects]
        right = tab.locator('[data-testid="stCaptionContainer"]').filter(has_text="As in the log:").first \
            .bounding_box()
        assert all(b["x"] >= right["x"] - 1 and b["x"] + b["width"] <= right["x"] + right["width"] + 1
                   for b in boxes)  # inside the column
        rows = sorted({round(b["y"]) for b in boxes})
        assert len(rows) == 2, rows  # one row, wrapped once
        for a, b in zip(boxes, boxes[1:], strict=False):  # left to right, then the next line
            assert b["x"] >= a["x"] + a["width"] or b["y"] > a["y"]
        whole = "el => { const i = el.querySelector('input'); return i.scrollWidth <= i.clientWidth; }"
        clipped = [label for label, s in zip(REPLAY, selects, strict=True) if not s.evaluate(whole)]
        assert not clipped, clipped  # every value whole
        assert tab.locator('[data-testid="stException"]').count() == 0
    finally:
        tab.close()
