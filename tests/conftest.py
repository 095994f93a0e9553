"""Where the tests' real data lives: vendored in tests/data, so a bare clone runs every test.

The SGLang logs and reference traces are vendored whole. The four public request traces are vendored as
their first 1,000 requests (heads); the whole files are read too when a copy of shared/ is found, beside
the checkout (../shared) or where WHO_WAITS_SHARED points. Provenance and licences: tests/data/*/SOURCE.md.
The property tests run small in CI; WHO_WAITS_SOAK=1 runs them as a soak (10,000 examples each).
The browser tests share one app server for the whole run (`server`, below).
"""

import contextlib
import fcntl
import json
import os
import signal
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from bench.browser import CHROMIUM, CHROMIUM_ARGS, start_streamlit, streamlit_server

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"
LOGS = DATA / "sglang_logs"
REFERENCE = DATA / "sglang_reference"
HEAD_ROWS = 1000  # requests in each vendored trace head


def find_shared() -> Path | None:
    """An optional copy of shared/: beside the checkout (../shared), or where WHO_WAITS_SHARED points."""
    for candidate in (os.environ.get("WHO_WAITS_SHARED"), REPO.parent / "shared"):
        if candidate and (Path(candidate) / "data").is_dir():
            return Path(candidate)
    return None


@dataclass(frozen=True)
class RealTrace:
    """One copy of public request trace `name`: the vendored head, or the whole file from shared/."""

    name: str  # the file name in shared/data/traces
    path: Path
    is_full: bool

    @property
    def id(self) -> str:
        return f"{self.name.rsplit('.', 1)[0]}-{'full' if self.is_full else 'head'}"


def trace_head(name: str) -> RealTrace:
    """The vendored head of trace `name` (its file name in shared/data/traces)."""
    stem, suffix = name.rsplit(".", 1)
    return RealTrace(name, DATA / "traces" / f"{stem}_head{HEAD_ROWS}.{suffix}", is_full=False)


def trace_copies(name: str) -> list[RealTrace]:
    """The head always, and the whole trace too when a copy of shared/ holds it."""
    shared = find_shared()
    full = shared / "data" / "traces" / name if shared else None
    return [trace_head(name)] + ([RealTrace(name, full, is_full=True)] if full and full.is_file() else [])


# The soak: WHO_WAITS_SOAK=1 runs the model's invariant properties (tests/test_properties.py,
# tests/test_pd_properties.py) with 10,000 examples each (WHO_WAITS_SOAK_EXAMPLES=N for another count).
# CI leaves it unset and keeps each test's own small count.
settings.register_profile(
    "soak", max_examples=int(os.environ.get("WHO_WAITS_SOAK_EXAMPLES", "10000")), deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large], print_blob=True)


def examples(ci: int) -> int:
    """How many examples a property test runs: its CI count, or the soak profile's under WHO_WAITS_SOAK=1."""
    return settings.get_profile("soak").max_examples if os.environ.get("WHO_WAITS_SOAK") == "1" else ci


def need_chromium() -> None:
    """Skip a browser test, saying why, when /usr/bin/chromium is missing; under CI (CI=true) fail instead."""
    if Path(CHROMIUM).exists():
        return
    if os.environ.get("CI", "").lower() in ("1", "true"):
        pytest.fail(f"{CHROMIUM} is missing and CI is set: the browser tests must run in CI")
    pytest.skip(f"{CHROMIUM} not found (install Debian's chromium; "
                "`playwright install` cannot download here)")


@pytest.fixture(scope="session")
def browser():
    """One headless Chromium for every browser test of a worker (a launch is 1-2 s)."""
    need_chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="session")
def context(browser):
    """One browsing context a worker, as one person's browser across visits: its HTTP and code cache stay
    warm (a fresh context per view cost about 0.5 Chromium CPU-s more a first view, docs/performance.md).
    Each test opens its own tab (`tab`), and closing it ends its Streamlit session."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    ctx.grant_permissions(["clipboard-read", "clipboard-write"])
    yield ctx
    ctx.close()


def tab(context, width: int = 1400, height: int = 1000):
    """A new tab of the worker's browsing context, `width` x `height` px."""
    page = context.new_page()
    page.set_viewport_size({"width": width, "height": height})
    return page


# One app server for the whole run, shared by every browser test on every xdist worker: the first worker
# that needs it starts it (under a file lock, in the run's shared temporary folder) and records its address
# and pid; the others read the record; the controller stops it when the run is over. Its start-up warm-up
# (every first view, tour step and PD preset: ~20 CPU-s) and its server-wide caches then serve every test.
SERVER_RECORD = "who-waits-app-server.json"


@pytest.fixture(scope="session")
def server(tmp_path_factory, request):
    """The app as served (`streamlit run app/serve.py`); its URL."""
    need_chromium()
    if not hasattr(request.config, "workerinput"):  # no xdist: this process's own server, for its session
        with streamlit_server() as url:
            yield url
        return
    root = tmp_path_factory.getbasetemp().parent  # the controller's folder, shared by the workers
    with open(root / (SERVER_RECORD + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        record = root / SERVER_RECORD
        if not record.exists():
            proc, url = start_streamlit()
            record.write_text(json.dumps({"url": url, "pid": proc.pid}))
        url = json.loads(record.read_text())["url"]
    yield url


def pytest_sessionfinish(session):
    """The controller (or a run without xdist) stops the shared server once every worker is done."""
    if hasattr(session.config, "workerinput"):
        return
    record = session.config._tmp_path_factory.getbasetemp() / SERVER_RECORD
    if record.exists():
        with contextlib.suppress(ProcessLookupError):
            os.kill(json.loads(record.read_text())["pid"], signal.SIGTERM)
        record.unlink()


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """Under `--dist loadgroup`, every test marked `xdist_group` must carry its group in its node id (xdist
    adds it; pytest 9.2 keeps ids where xdist 3.8 cannot): otherwise a group's tests spread over the workers
    and its session fixtures (the decks, the figure runs) are built once a worker, silently."""
    if not getattr(config.option, "loadgroup", False):
        return
    lost = [item.nodeid for item in items
            if item.get_closest_marker("xdist_group") and "@" not in item.nodeid]
    if lost:
        raise pytest.UsageError(f"xdist_group ignored for {len(lost)} tests (e.g. {lost[0]}): "
                                "pytest-xdist cannot group them under this pytest")


def sample_scrapes() -> list[dict[tuple[str, str | None], float]]:
    """The written SGLang sample's /metrics scrapes (tests/data/sglang_metrics), in order, each as
    {(sample name, le or None): value}, read by prometheus_client's own parser rather than ours: what the
    tests compare our reader with. The sample has one series a family, so other labels are left out."""
    from prometheus_client.parser import text_string_to_metric_families

    text = (DATA / "sglang_metrics" / "chat_long_prompt.prom").read_text()
    return [{(s.name, s.labels.get("le")): s.value
             for family in text_string_to_metric_families(part.split("\n", 1)[1]) for s in family.samples}
            for part in text.split("# scraped_at ")[1:]]
