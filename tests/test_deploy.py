"""The deployment for a training room: nginx in front of replicas, the container, the Kubernetes shape.

The manifest and the Dockerfile cannot run here (no cluster, no docker engine): their shape is checked.
nginx's configuration is checked by nginx itself, and a browser test drives two replicas behind a real
nginx. nginx and /usr/bin/chromium missing: skipped with the reason, except under CI=true (a failure).
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from bench.bench_load import STATE, is_quiet, local_url, percentile
from bench.browser import free_port
from deploy.serve_replicas import check_free, find_nginx, render, requests_by_agent, serve

REPO = Path(__file__).resolve().parents[1]


def _need(found: bool, what: str) -> None:
    if found:
        return
    if os.environ.get("CI", "").lower() in ("1", "true"):
        pytest.fail(f"{what} is missing and CI is set: .ci/run installs it")
    pytest.skip(f"{what} not found (Debian: apt-get install nginx chromium)")


# -- Kubernetes and the container ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def manifest() -> dict[str, dict]:
    docs = list(yaml.safe_load_all((REPO / "deploy/k8s.yaml").read_text()))
    return {doc["kind"]: doc for doc in docs}


def test_the_manifest_is_a_deployment_a_service_and_an_ingress(manifest):
    assert sorted(manifest) == ["Deployment", "Ingress", "Service"]
    assert {doc["metadata"]["name"] for doc in manifest.values()} == {"who-waits"}


def test_the_deployment_probes_streamlit_health_on_the_port_it_serves(manifest):
    pod = manifest["Deployment"]["spec"]["template"]
    (container,) = pod["spec"]["containers"]
    assert container["ports"] == [{"name": "http", "containerPort": 8501}]
    for probe in ("readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"] == {"path": "/_stcore/health", "port": "http"}
    assert manifest["Deployment"]["spec"]["replicas"] >= 2
    selector = manifest["Deployment"]["spec"]["selector"]["matchLabels"]
    assert selector.items() <= pod["metadata"]["labels"].items()


def test_the_service_and_the_ingress_keep_a_browser_on_one_pod(manifest):
    service, ingress = manifest["Service"]["spec"], manifest["Ingress"]
    pod_labels = manifest["Deployment"]["spec"]["template"]["metadata"]["labels"]
    assert service["selector"].items() <= pod_labels.items()
    assert service["ports"] == [{"name": "http", "port": 80, "targetPort": "http"}]
    assert service["sessionAffinity"] == "ClientIP"
    assert service["sessionAffinityConfig"]["clientIP"]["timeoutSeconds"] >= 3600
    notes = ingress["metadata"]["annotations"]
    assert notes["nginx.ingress.kubernetes.io/affinity"] == "cookie"
    assert notes["nginx.ingress.kubernetes.io/affinity-mode"] == "persistent"
    assert int(notes["nginx.ingress.kubernetes.io/proxy-read-timeout"]) >= 3600
    (path,) = ingress["spec"]["rules"][0]["http"]["paths"]
    assert path["backend"]["service"] == {"name": "who-waits", "port": {"name": "http"}}


def test_the_dockerfile_serves_the_port_the_manifest_probes():
    text = (REPO / "deploy/Dockerfile").read_text()
    assert text.startswith("#") and "\nFROM python:3.11-slim\n" in text
    assert "EXPOSE 8501" in text and "--server.port=8501" in text and "--server.address=0.0.0.0" in text
    assert "RUN pip install ." in text and "/_stcore/health" in text
    for folder in ("engine_model", "app", "scenarios", "docs", ".streamlit"):
        assert f"COPY {folder} {folder}" in text and (REPO / folder).is_dir()


# -- nginx -------------------------------------------------------------------------------------------------
def test_the_template_fills_every_field_with_one_upstream_per_replica(tmp_path):
    text = render([9001, 9002, 9003], "127.0.0.1:9000", tmp_path)
    settings = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    assert not re.search(r"@[A-Z_]+@", settings)  # every @FIELD@ filled
    assert text.count("upstream who_waits_") == 4  # who_waits_any + one per replica
    assert "        r2 who_waits_2;" in text
    assert '127[.]0[.]0[.]1:9003$" "who_waits_replica=r2; Path=/; HttpOnly; SameSite=Lax";' in text
    assert "ip_hash" not in text.split("http {")[1]  # a room behind one NAT address must still spread


def test_nginx_accepts_the_rendered_configuration(tmp_path):
    nginx = find_nginx()
    _need(nginx is not None, "nginx")
    tmp_path.chmod(0o755)
    conf = tmp_path / "nginx.conf"
    conf.write_text(render([free_port(), free_port()], f"127.0.0.1:{free_port()}", tmp_path))
    command = [nginx, "-t", "-p", str(tmp_path), "-c", str(conf), "-e", str(tmp_path / "error.log")]
    check = subprocess.run(command, capture_output=True, text=True, timeout=30)
    assert check.returncode == 0, check.stderr


def test_a_taken_port_is_refused_before_anything_starts():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(RuntimeError, match=f"port {port} on 127.0.0.1 is not free"):
            check_free([free_port(), port], "127.0.0.1")
        with pytest.raises(RuntimeError, match=f"port {port} on 127.0.0.1 is not free"):
            check_free([port, free_port()], "127.0.0.1")
    check_free([free_port(), free_port()], "127.0.0.1")


# -- the load benchmark's own rules ------------------------------------------------------------------------
def test_the_load_benchmark_only_loads_localhost():
    assert local_url("http://127.0.0.1:8500/") == "http://127.0.0.1:8500"
    assert local_url("http://localhost:8501") == "http://localhost:8501"
    for bad in ("http://example.org:8500", "ftp://127.0.0.1", "http://10.0.0.1:8500"):
        with pytest.raises(Exception, match="allowed is"):
            local_url(bad)


def test_percentiles_are_nearest_rank():
    values = [5.0, 1.0, 4.0, 2.0, 3.0]
    assert [percentile(values, q) for q in (50, 95, 100)] == [3.0, 5.0, 5.0]
    assert percentile([7.0], 95) == 7.0


# -- two replicas behind nginx, in a browser ---------------------------------------------------------------
def settle(page, timeout_s: float = 60) -> dict:
    """Poll STATE until the page is quiet for three polls; returns the last state."""
    deadline, last, same = time.time() + timeout_s, None, 0
    while time.time() < deadline:
        state = page.evaluate(STATE)
        same = same + 1 if is_quiet(state) and state == last else 0
        if same >= 2:
            return state
        last = state
        page.wait_for_timeout(150)
    raise AssertionError(f"page did not settle: {last}")


def served_by(access_log: Path, agents: set[str], timeout_s: float = 10) -> dict[str, list[tuple[str, str]]]:
    """requests_by_agent for `agents`, once every agent's websocket line is written (when it closes)."""
    deadline = time.time() + timeout_s
    while True:
        seen = {ua: rows for ua, rows in requests_by_agent(access_log).items() if ua in agents}
        sockets = {ua for ua, rows in seen.items() if any(path == "/_stcore/stream" for path, _ in rows)}
        if sockets == agents or time.time() > deadline:
            return seen
        time.sleep(0.3)


@pytest.mark.browser
def test_two_replicas_behind_nginx_each_keep_their_own_browsers(browser):
    _need(find_nginx() is not None, "nginx")
    agents = {"who-waits-test/a", "who-waits-test/b"}
    with serve([free_port(), free_port()], free_port(), bind="127.0.0.1") as room:
        pages = [browser.new_context(user_agent=ua, viewport={"width": 1400, "height": 1000}).new_page()
                 for ua in sorted(agents)]
        for page in pages:  # both first requests go out before either page settles: round robin splits them
            page.goto(room.url + "/forty_replies")
        before = [settle(page)["headline"] for page in pages]
        for page in pages:  # flip both, then wait for both
            toggle = page.locator('[data-testid="stCheckbox"]').filter(has_text="Mixed chunk").first
            toggle.locator("label").click()
        for page, headline in zip(pages, before, strict=True):
            page.wait_for_function("() => location.search.includes('mixed=1')", timeout=30_000)
            after = settle(page)
            assert after["headline"] != headline and "→" in after["headline"]
            assert after["errors"] == 0 and after["connection"] == "CONNECTED"
        for page in pages:
            page.context.close()
        seen = served_by(room.access_log, agents)
    replicas = {ua: {upstream for _, upstream in rows} for ua, rows in seen.items()}
    assert all(len(r) == 1 for r in replicas.values()), seen  # page, files and websocket: one replica
    assert set().union(*replicas.values()) == {u.removeprefix("http://") for u in room.replica_urls}
    for ua, rows in seen.items():
        assert [path for path, _ in rows].count("/_stcore/stream") == 1, (ua, rows)  # one websocket, kept
