"""The room's store in deploy/: Redis beside the app in the Kubernetes files and in the compose file, every
app replica pointed at it (WHO_WAITS_ROOM_URL), and the URL one that app/room/store.py opens as Redis."""

from __future__ import annotations

from pathlib import Path

import yaml

from app.room import store as room_store

DEPLOY = Path(__file__).resolve().parents[1] / "deploy"


def env_of(container: dict) -> dict:
    return {e["name"]: e["value"] for e in container.get("env", [])}


def test_every_app_pod_reads_the_redis_the_manifest_runs():
    app = {d["kind"]: d for d in yaml.safe_load_all((DEPLOY / "k8s.yaml").read_text())}
    redis = {d["kind"]: d for d in yaml.safe_load_all((DEPLOY / "k8s-redis.yaml").read_text())}
    (container,) = app["Deployment"]["spec"]["template"]["spec"]["containers"]
    url = env_of(container)[room_store.ENV]
    host_port = url.removeprefix("redis://").split("/")[0]
    host, port = host_port.split(":")
    service, pod = redis["Service"], redis["Deployment"]["spec"]["template"]
    assert host == service["metadata"]["name"] and int(port) == service["spec"]["ports"][0]["port"]
    assert service["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    assert pod["spec"]["containers"][0]["ports"][0]["containerPort"] == 6379


def test_compose_runs_two_replicas_on_one_redis():
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    services = compose["services"]
    apps = [s for name, s in services.items() if name.startswith("app")]
    assert "redis" in services and len(apps) == 2
    assert {s["environment"][room_store.ENV] for s in apps} == {"redis://redis:6379/0"}
    assert len({s["ports"][0] for s in apps}) == 2


def test_the_deployed_url_opens_a_redis_store():
    assert isinstance(room_store.open_store("redis://who-waits-redis:6379/0"), room_store.RedisStore)
