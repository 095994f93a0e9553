"""Screenshots of the "Your server" page into assets/, reusing bench/screenshots.py's server and wait.

    .venv/bin/python bench/screenshots_server.py            # starts its own server on a free port
    .venv/bin/python bench/screenshots_server.py --url http://localhost:8501
"""

from __future__ import annotations

from browser import CHROMIUM, CHROMIUM_ARGS, cli, wait_idle
from playwright.sync_api import sync_playwright
from screenshots import ASSETS

SHOTS = [
    ("your_server", "/your_server"),  # the retraction sample (the default)
    ("your_server_chunk", "/your_server?log=chunk"),
    ("your_server_trace", "/your_server?view=trace&trace=mooncake"),
]


def shoot(url: str, only: list[str] | None = None) -> None:
    ASSETS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        # the main block scrolls itself: size the window to the page
        page = browser.new_page(viewport={"width": 1500, "height": 7200})
        for name, path in SHOTS:
            if only and name not in only:
                continue
            page.goto(url + path)
            wait_idle(page, timeout_ms=90_000)
            target = ASSETS / f"{name}.png"
            page.screenshot(path=str(target), full_page=True)
            print(target)
        browser.close()


if __name__ == "__main__":
    cli(shoot)
