"""Screenshots of the main pages into assets/, with the same headless Chromium the browser tests use.

    .venv/bin/python bench/screenshots.py            # starts its own server on a free port
    .venv/bin/python bench/screenshots.py --url http://localhost:8501
"""

from __future__ import annotations

import argparse
import contextlib
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from playwright.sync_api import sync_playwright

REPO = Path(__file__).resolve().parents[1]
ASSETS = REPO / "assets"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--headless=new", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
SHOTS = [
    ("home", "/"),
    ("forty_replies", "/forty_replies"),
    ("forty_replies_mixed", "/forty_replies?mixed=1"),
    ("other_stall", "/other_stall"),
    ("ten_oclock_rush", "/ten_oclock_rush"),
    ("compare", "/compare"),
    ("forty_replies_presenter", "/forty_replies?present=1&mixed=1"),
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def streamlit_server(port: int | None = None):
    port = port or free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app/main.py", "--server.headless", "true", "--server.port", str(port),
         "--browser.gatherUsageStats", "false"], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                urllib.request.urlopen(f"{url}/_stcore/health", timeout=1)
                break
            except OSError:
                time.sleep(0.3)
        else:
            raise RuntimeError("streamlit did not start")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


CHART_STATE = """() => {
  const charts = [...document.querySelectorAll('[data-testid="stVegaLiteChart"]')];
  const drawn = charts.filter(c => c.querySelector('canvas, svg')).length;
  const running = !!document.querySelector('[data-testid="stStatusWidget"]');
  return [charts.length, drawn, running];
}"""


def wait_idle(page, timeout_ms: int = 60_000, settle_polls: int = 4) -> None:
    """Until the app has finished running and every chart has drawn, unchanged for `settle_polls` polls."""
    page.wait_for_selector('[data-testid="stMain"] h1', timeout=timeout_ms)
    deadline, last, same = time.time() + timeout_ms / 1000, None, 0
    while time.time() < deadline:
        page.wait_for_timeout(400)
        num, drawn, running = page.evaluate(CHART_STATE)
        now = (num, drawn, running)
        same = same + 1 if now == last and num == drawn and not running else 0
        last = now
        if same >= settle_polls:
            return
    raise TimeoutError(f"page did not settle: {last}")


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
            wait_idle(page)
            target = ASSETS / f"{name}.png"
            page.screenshot(path=str(target), full_page=True)
            out.append(target)
            print(target)
        browser.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url")
    parser.add_argument("only", nargs="*")
    args = parser.parse_args()
    if args.url:
        shoot(args.url, args.only)
    else:
        with streamlit_server() as url:
            shoot(url, args.only)


if __name__ == "__main__":
    main()
