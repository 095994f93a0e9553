"""Screenshots into assets/ with the headless Chromium the browser tests use: every page, whole, at 1440 px
wide; every guided-tour step as a person sees it (1440 x 1000, scrolled to the chart the step points at);
presenter mode at 1920 x 1080. PNGs are stored with a 256-colour palette (they look the same, 3-5x smaller).

    .venv/bin/python bench/screenshots.py                 # starts its own server on a free port
    .venv/bin/python bench/screenshots.py --url http://localhost:8501 tour_forty_replies_4
Tour steps are taken as a person takes them: the story opens, then the step's button is clicked.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

from browser import CHROMIUM, CHROMIUM_ARGS, REPO, cli, wait_idle
from PIL import Image
from playwright.sync_api import sync_playwright

from engine_model import STORIES

ASSETS = REPO / "assets"
WIDTH = 1440
PAGES = [  # (name, path, viewport height): the main block scrolls itself, so the window holds the page
    ("home", "/", 2400),
    ("forty_replies", "/forty_replies", 6400),
    ("forty_replies_mixed", "/forty_replies?mixed=1", 6400),
    ("other_stall", "/other_stall", 6400),
    ("ten_oclock_rush", "/ten_oclock_rush", 9000),
    ("real_traffic", "/real_traffic?mixed=1", 6400),
    ("compare", "/compare", 7200),
    ("your_server", "/your_server", 7200),  # the retraction sample (the default)
    ("your_server_chunk", "/your_server?log=chunk", 7200),
    ("your_server_trace", "/your_server?view=trace&trace=mooncake", 7200),
]
TOUR = [(f"tour_{key}_{i}", f"/{key}", i) for key, story in STORIES.items()  # opened, then step i clicked
        for i in range(1, len(story.tour) + 1)]
PRESENTER = [("forty_replies_presenter", "/forty_replies?present=1&mixed=1")]


def save(png: bytes, target: Path) -> None:
    image = Image.open(io.BytesIO(png)).convert("RGB")
    image.quantize(256, method=Image.Quantize.FASTOCTREE).save(target, optimize=True)


def shoot(url: str, only: list[str] | None = None) -> list[Path]:
    ASSETS.mkdir(exist_ok=True)
    jobs = [(n, p, (WIDTH, h), True, None) for n, p, h in PAGES]
    jobs += [(n, p, (WIDTH, 1000), False, i) for n, p, i in TOUR]
    jobs += [(n, p, (1920, 1080), False, None) for n, p in PRESENTER]
    out = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        for name, path, (width, height), whole, step in jobs:
            if only and name not in only:
                continue
            page = browser.new_page(viewport={"width": width, "height": height})
            page.goto(url + path)
            wait_idle(page, timeout_ms=180_000, settle_polls=8)  # a cold first run can pause without a status
            if step is not None:  # as a person takes the tour: the step's button sets its controls
                page.get_by_role("button", name=re.compile(rf"^{step}\. ")).click()
                wait_idle(page, timeout_ms=180_000, settle_polls=8)
                page.wait_for_timeout(2500)  # the page scrolls again once the charts above have drawn
            page.wait_for_timeout(800)
            target = ASSETS / f"{name}.png"
            save(page.screenshot(full_page=whole), target)
            page.close()
            out.append(target)
            print(target)
        browser.close()
    return out


if __name__ == "__main__":
    cli(shoot)
