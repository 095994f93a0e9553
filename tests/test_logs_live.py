"""Specification of the live reader: a tiny SGLang stand-in on loopback serves a scrape and /server_info;
the reader polls it, and refuses hosts not allowed, redirects, answers too big or too slow, and servers
that are not SGLang, each with one line."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from engine_model import InputError
from engine_model.logs.live import base_url, fetch, poll

from conftest import DATA

METRICS = DATA / "sglang_metrics"
SCRAPE = (METRICS / "chat_long_prompt.prom").read_text().rsplit("# scraped_at ", 1)[1].split("\n", 1)[1]
INFO = (METRICS / "server_info.json").read_text()
ROUTES = {  # path -> (status, body, extra headers)
    "/metrics": (200, SCRAPE, {}),
    "/server_info": (200, INFO, {}),
    "/vllm/metrics": (200, "vllm:num_requests_running 3\n", {}),
    "/nometrics/metrics": (404, "Not Found", {}),
    "/redirect/metrics": (302, "", {"Location": "http://169.254.169.254/latest/meta-data/"}),
    "/big/metrics": (200, "# " + "x" * 6_000_000 + "\n", {}),
}


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server's name)
        if self.path == "/slow/metrics":
            time.sleep(2)
        status, body, headers = ROUTES.get(self.path.replace("/slow", ""), (404, "Not Found", {}))
        data = body.encode()
        self.send_response(status)
        for key, value in {"Content-Length": str(len(data)), **headers}.items():
            self.send_header(key, value)
        self.end_headers()
        try:
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the reader stopped at its size limit and hung up, as it should

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_a_loopback_sglang_server_is_polled_for_its_scrape_and_server_info(server):
    found = poll(server, (), now=1772460035.0)
    assert (found.scrape.at, found.scrape.at_source) == (1772460035.0, "fetched")
    [itl] = found.scrape.histograms["inter_token_latency_seconds"].values()
    assert itl.count == 26063 and found.info.version == "0.5.23" and found.notes == []
    assert found.info.settings["chunked_prefill_size"] == 8192


@pytest.mark.parametrize(("path", "says"), [
    ("/vllm", "none of SGLang's (first: vllm:num_requests_running)"),
    ("/nometrics", "answered 404: is it SGLang, started with --enable-metrics?"),
    ("/redirect", "answered with a redirect (302) to http://169.254.169.254/"),
    ("/big", "sent more than 5,000,000 bytes"),
])
def test_a_server_that_is_not_sglang_or_misbehaves_gets_one_line(server, path, says):
    with pytest.raises(InputError) as err:
        poll(server + path, ())
    assert says in str(err.value) and "\n" not in str(err.value)


def test_a_server_that_does_not_answer_in_time_is_named(server):
    with pytest.raises(InputError, match="did not answer within 0.5 s"):
        fetch(server + "/slow/metrics", 1000, timeout_s=0.5)


def test_a_port_with_no_server_says_so():
    with pytest.raises(InputError, match="does not answer .*is the server running there"):
        poll("http://127.0.0.1:9", ())


@pytest.mark.parametrize(("url", "says"), [
    ("http://10.0.0.5:30000", "10.0.0.5 is not allowed"),
    ("http://169.254.169.254/latest", "169.254.169.254 is not allowed"),
    ("http://sglang.example:30000", "sglang.example is not allowed"),
    ("file:///etc/passwd", "is not an http:// or https:// URL"),
    ("http://user:pw@127.0.0.1:30000", "user name or password"),
    ("http://127.0.0.1:99999", "is not a URL"),
])
def test_hosts_other_than_loopback_and_the_listed_ones_are_refused(url, says):
    with pytest.raises(InputError, match="^server URL: ") as err:
        base_url(url, ())
    assert says in str(err.value)


def test_loopback_and_listed_hosts_are_allowed_and_a_pasted_metrics_path_is_dropped():
    assert base_url("http://127.0.0.1:30000/metrics?x=1", ()) == "http://127.0.0.1:30000"
    assert base_url("http://127.0.0.1:8080/sglang/", ()) == "http://127.0.0.1:8080/sglang"  # behind a proxy
    assert base_url("http://[::1]:30000", ()) == "http://[::1]:30000"
    assert base_url("http://localhost:30000", ()) == "http://localhost:30000"
    assert base_url("https://SGLang.internal:8443", ("sglang.internal",)) == "https://sglang.internal:8443"
