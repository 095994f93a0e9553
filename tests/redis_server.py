"""A real Debian redis-server for a test module: started on a free port by the fixture, stopped after.
Without /usr/bin/redis-server the tests that use it skip, and fail under CI=true (.ci/run installs it)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time

import pytest

from bench.browser import free_port

REDIS = shutil.which("redis-server")


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory):
    """redis://127.0.0.1:PORT/0 of a redis-server of this module's own (no saving to disk)."""
    if REDIS is None:
        if os.environ.get("CI", "").lower() in ("1", "true"):
            pytest.fail("redis-server is missing and CI is set (apt-get install redis-server)")
        pytest.skip("no redis-server (apt-get install redis-server)")
    import redis

    port = free_port()
    proc = subprocess.Popen([REDIS, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--dir", str(tmp_path_factory.mktemp("redis"))],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    try:
        for _ in range(200):
            try:
                redis.Redis.from_url(url).ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        else:
            pytest.fail("redis-server did not answer within 10 s")
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)
