"""'Your server', second half: a server's /metrics scrapes and /server_info beside its log, and a live mode
that is refused unless the app was started to allow it, and then polls only allowed hosts; deploy/ never
allows it."""

from __future__ import annotations

import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml
from markup import cards_of
from streamlit.testing.v1 import AppTest
from unfold import unfold

from app.server.live import ENABLE, HOSTS, live_config

from conftest import sample_scrapes

REPO = Path(__file__).resolve().parents[1]
MAIN = str(REPO / "app" / "main.py")
METRICS = REPO / "tests" / "data" / "sglang_metrics"
SCRAPES = (METRICS / "chat_long_prompt.prom").read_text().split("# scraped_at ")[1:]
SCRAPED = sample_scrapes()  # the same scrapes as prometheus_client's parser reads them
ITL = "sglang:inter_token_latency_seconds"
SILENT = 2  # the interval 14:00:10-14:00:15: no gap recorded while the paste's chunks ran (SOURCE.md there)


def long_gaps(k: int) -> float:
    """ITL gaps over 0.4 s in the sample's scrape k (everything since the server started)."""
    return SCRAPED[k].get((f"{ITL}_count", None), 0) - SCRAPED[k].get((f"{ITL}_bucket", "0.4"), 0)


def gauge(k: int, name: str) -> float:
    return SCRAPED[k][(f"sglang:{name}", None)]


def open_page(**params) -> AppTest:
    at = AppTest.from_file(MAIN, default_timeout=300)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    at.switch_page("app_pages/your_server.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def texts(elements) -> str:
    return "\n".join(str(e.value) for e in elements)


# ---- beside the log --------------------------------------------------------------------------------


def test_the_examples_metrics_stand_beside_its_log_and_confirm_its_verdict():
    at = unfold(open_page(log="example", metrics="example"))  # each interval's row is in a fold
    running, queued = gauge(SILENT + 1, "num_running_reqs"), gauge(SILENT + 1, "num_queue_reqs")
    assert texts(at.success).startswith("The metrics agree: from 14:00:10 to 14:00:15 no inter-token gap was "
                                        f"recorded while {running:g} replies were running")
    cards = {m.label: m.value for m in cards_of(at)}
    total = f"Gaps over 0.4 s (of {SCRAPED[-1][(f'{ITL}_count', None)]:,.0f})"
    assert (cards["ITL p99"], cards[total]) == ("0.073 s", f"{long_gaps(-1):g}")
    table = next(d.value for d in at.dataframe if "interval" in d.value.columns)
    assert list(table["interval"])[SILENT:SILENT + 2] == ["14:00:10–14:00:15", "14:00:15–14:00:20"]
    stalled = long_gaps(SILENT + 2) - long_gaps(SILENT + 1)
    assert stalled > 0 and list(table["gaps > 0.4 s"])[SILENT:SILENT + 2] == ["none", f"{stalled:g}"]
    assert list(table["running / queued"])[SILENT] == f"{running:g} / {queued:g}"
    assert "(the example's /server_info, SGLang 0.5.23)" in texts(at.markdown) and not at.warning


def test_scrapes_from_another_day_than_the_log_are_read_but_not_aligned():
    at = open_page(log="chunk", metrics="paste")
    at.text_area(key="your_server.metrics_paste").input("# scraped_at " + SCRAPES[5] + "# scraped_at "
                                                         + SCRAPES[6])
    at.run()
    assert not at.exception
    assert "do not overlap" in texts(at.info) and "Not set beside the log" in texts(at.caption)
    assert {m.label: m.value for m in cards_of(at)}["ITL p99"] == "0.032 s"


def test_a_pasted_server_info_that_disagrees_with_the_log_is_flagged():
    info = (METRICS / "server_info.json").read_text().replace('"chunked_prefill_size": 8192',
                                                              '"chunked_prefill_size": 4096')
    at = open_page(log="example", metrics="paste")
    at.text_area(key="your_server.info_paste").input(info)
    at.run()
    assert "disagree on `chunked_prefill_size`: 8192 in the log, 4096 in /server_info" in texts(at.warning)


def test_a_scrape_that_is_a_log_gets_one_message_naming_the_line():
    at = open_page(log="example", metrics="paste")
    at.text_area(key="your_server.metrics_paste").input((METRICS / "chat_long_prompt.log").read_text())
    at.run()
    assert not at.exception
    error = texts(at.error)
    assert "pasted scrapes line 1" in error and "is a server log, not /metrics text" in error


# ---- live ------------------------------------------------------------------------------------------


def test_live_mode_is_off_unless_the_app_is_started_with_it(monkeypatch):
    monkeypatch.delenv(ENABLE, raising=False)
    at = open_page(view="live")
    assert "Live mode is off on this app" in texts(at.info)
    assert [t.key for t in at.text_input] == ["room.join"]  # no address box: only the sidebar's room code
    assert live_config({ENABLE: "yes"}).enabled is False and live_config({ENABLE: "1"}).enabled is True
    assert live_config({ENABLE: "1", HOSTS: " A.internal, b "}).hosts == ("a.internal", "b")


class Stand(BaseHTTPRequestHandler):
    """SGLang on loopback, as far as the poller sees it: each GET /metrics is the next test scrape."""

    served = 0

    def do_GET(self):  # noqa: N802 (http.server's name)
        if self.path == "/metrics":
            body = SCRAPES[min(Stand.served, len(SCRAPES) - 1)].split("\n", 1)[1]
            Stand.served += 1
        elif self.path == "/server_info":
            body = (METRICS / "server_info.json").read_text()
        else:
            self.send_error(404)
            return
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def stand():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Stand)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    Stand.served = SILENT - 1  # from 14:00:05: the stall's silent interval is the third poll's
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def start(at: AppTest, url: str) -> AppTest:
    at.text_input(key="your_server.live_url").input(url)
    at.button(key="your_server.live_start").click()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_live_mode_polls_a_loopback_server_and_draws_what_arrives(monkeypatch, stand):
    monkeypatch.setenv(ENABLE, "1")
    at = start(open_page(view="live"), stand)
    for _ in range(2):  # each run of the page is one poll, as each tick of the panel is
        at.run()
    cards = {m.label: m.value for m in cards_of(at)}
    last = SILENT + 1  # the third scrape served, 14:00:15
    assert (Stand.served, cards["Running"], cards["Queued"]) == (
        last + 1, f"{gauge(last, 'num_running_reqs'):g}", f"{gauge(last, 'num_queue_reqs'):g}")
    assert cards["ITL p99, last interval"] == "—"  # no token between 14:00:10 and 14:00:15: the stall
    assert "3 scrapes since Start" in texts(at.caption)
    at.button(key="your_server.live_stop").click()
    at.run()
    assert Stand.served == last + 1  # stopped: no more polls


def test_live_mode_refuses_a_host_the_operator_did_not_list(monkeypatch):
    monkeypatch.setenv(ENABLE, "1")
    at = start(open_page(view="live"), "http://169.254.169.254:80")
    assert "169.254.169.254 is not allowed" in texts(at.error)


# ---- deploy/ keeps it off ---------------------------------------------------------------------------


def test_the_room_deployment_never_turns_live_mode_on():
    for name in ("Dockerfile", "k8s.yaml", "serve_replicas.py", "nginx.conf"):
        text = (REPO / "deploy" / name).read_text()
        assert not re.search(rf"{ENABLE}\S*\s*[=:]\s*['\"]?1", text), name
    for doc in yaml.safe_load_all((REPO / "deploy" / "k8s.yaml").read_text()):
        pod = (doc or {}).get("spec", {}).get("template", {}).get("spec", {})
        for container in pod.get("containers", []):
            assert not any(e.get("name", "").startswith(ENABLE) for e in container.get("env", []))


def test_replicas_do_not_inherit_live_mode_from_the_shell_that_starts_them(monkeypatch):
    from deploy.serve_replicas import replica_env

    monkeypatch.setenv(ENABLE, "1")
    monkeypatch.setenv(HOSTS, "anything")
    assert not any(k.startswith(ENABLE) for k in replica_env())
