"""Screenshots of the main pages into assets/, with the same headless Chromium the browser tests use.

    .venv/bin/python bench/screenshots.py            # starts its own server on a free port
    .venv/bin/python bench/screenshots.py --url http://localhost:8501
"""

from __future__ import annotations

from pathlib import Path

from browser import CHROMIUM, CHROMIUM_ARGS, REPO, cli, wait_idle
from playwright.sync_api import sync_playwright

ASSETS = REPO / "assets"
SHOTS = [
    ("home", "/"),
    ("forty_replies", "/forty_replies"),
    ("forty_replies_mixed", "/forty_replies?mixed=1"),
    ("other_stall", "/other_stall"),
    ("ten_oclock_rush", "/ten_oclock_rush"),
    ("real_traffic", "/real_traffic?mixed=1"),
    ("compare", "/compare"),
    ("forty_replies_presenter", "/forty_replies?present=1&mixed=1"),
]


def shoot(url: str, only: list[str] | None = None) -> list[Path]:
    ASSETS.mkdir(exist_ok=True)
    out = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1500, "height": 4600})
        for name, path in SHOTS:
            if only and name not in only:
                continue
            page.goto(url + path)
            # a cold first run can pause without a status
            wait_idle(page, timeout_ms=120_000, settle_polls=10)
            target = ASSETS / f"{name}.png"
            page.screenshot(path=str(target), full_page=True)
            out.append(target)
            print(target)
        browser.close()
    return out


if __name__ == "__main__":
    cli(shoot)
