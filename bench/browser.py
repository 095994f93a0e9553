"""Headless Chromium against the app, shared by the screenshot scripts, bench_app.py and the browser tests.

Debian's /usr/bin/chromium (Playwright cannot download browsers here), started with the flags this
machine's closed network needs.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--headless=new", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
CHART_STATE = """() => {
  const charts = [...document.querySelectorAll('[data-testid="stVegaLiteChart"]')];
  const drawn = charts.filter(c => c.querySelector('canvas, svg')).length;
  const loading = document.querySelector('[data-testid="stSkeleton"], [data-testid="stSkeletonElement"]');
  const script = document.querySelector('[data-testid="stApp"]')?.getAttribute('data-test-script-state');
  const running = !!document.querySelector('[data-testid="stStatusWidget"]') || !!loading
    || script !== 'notRunning';
  return [charts.length, drawn, running];
}"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_streamlit(port: int | None = None, start_timeout_s: float = 60, script: str = "app/serve.py",
                    repo: Path = REPO) -> tuple[subprocess.Popen, str]:
    """`streamlit run app/serve.py` (the app, warming its caches at start-up) on a free port, once
    /_stcore/health answers: (the process, its URL). `repo`: another checkout to serve (bench_app.py)."""
    port = port or free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", script, "--server.headless", "true", "--server.port",
         str(port), "--browser.gatherUsageStats", "false"],
        cwd=repo, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + start_timeout_s
    while time.time() < deadline:
        try:
            urllib.request.urlopen(f"{url}/_stcore/health", timeout=1)
            return proc, url
        except OSError:
            time.sleep(0.3)
    proc.terminate()
    proc.wait(timeout=10)
    raise RuntimeError(f"streamlit did not start within {start_timeout_s:g} s")


@contextlib.contextmanager
def streamlit_server(port: int | None = None, start_timeout_s: float = 60, script: str = "app/serve.py",
                     repo: Path = REPO):
    """`start_streamlit` for the length of a `with`: yields the URL, stops the server after."""
    proc, url = start_streamlit(port, start_timeout_s, script, repo)
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def wait_idle(page, timeout_ms: int = 60_000, settle_polls: int = 4) -> None:
    """Until the app has finished running and every chart has drawn, unchanged for `settle_polls` polls."""
    page.wait_for_selector('[data-testid="stMain"] h1, .st-key-present_bar', timeout=timeout_ms)  # presenter
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


def pick(page, label: str, option: str) -> None:
    """Choose `option` in the selectbox labelled `label`."""
    open_list(page, label, option).click()


def open_list(page, label: str, option: str):
    """Open the selectbox labelled `label` (click its text field, as a person does) and return `option`'s
    entry in the list, not yet clicked. A click that lands while the page is still settling can miss the
    list: then click again (a helper that waited 3 s before its second try once had those 3 s counted in
    bench_app.py's preset time)."""
    field = page.locator('[data-testid="stSelectbox"]').filter(has_text=label).locator("input")
    choice = page.get_by_role("option", name=re.compile(option)).first
    for _ in range(5):
        field.click()
        try:
            choice.wait_for(timeout=1000)
            return choice
        except Exception:  # noqa: BLE001 - the list did not open: try again
            page.keyboard.press("Escape")
    raise TimeoutError(f"the list of {label!r} did not open")


def cli(shoot: Callable[[str, list[str] | None], object]) -> None:
    """`script.py [--url URL] [names...]`: shoot against a running app, or start one."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--url")
    parser.add_argument("only", nargs="*")
    args = parser.parse_args()
    if args.url:
        shoot(args.url, args.only)
    else:
        with streamlit_server() as url:
            shoot(url, args.only)
