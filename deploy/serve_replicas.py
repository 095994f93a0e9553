"""Serve Who Waits from several Streamlit replicas behind nginx, for a training room; stop them all on exit.

    .venv/bin/python deploy/serve_replicas.py --replicas 2 --port 8500     # open http://THIS-HOST:8500

Starts N replicas (`streamlit run app/serve.py`, each warming its caches) on consecutive ports after
--port, on 127.0.0.1 only, then Debian's nginx in the foreground with deploy/nginx.conf filled in: its pid,
logs and temp files live in a fresh temporary folder (printed; kept with --keep), so it needs no root and
touches no system path.
Ctrl-C or SIGTERM stops nginx and every replica. Why the cookie and not ip_hash: see deploy/nginx.conf.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TEMPLATE = Path(__file__).with_name("nginx.conf")
COOKIE = "who_waits_replica"
LOG_LINE = re.compile(  # a line of nginx.conf's who_waits log format
    r'"\S+ (?P<path>\S+) [^"]*" \d+ .*upstream=(?P<upstream>\S+) .*ua="(?P<ua>[^"]*)"')
NGINX_PATHS = ("/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/local/nginx/sbin/nginx")


@dataclass(frozen=True)
class Room:
    """A running room: the URL people open, each replica's own URL and process id, nginx's folder (logs)."""

    url: str
    replica_urls: tuple[str, ...]
    replica_pids: tuple[int, ...]
    prefix: Path

    @property
    def access_log(self) -> Path:
        return self.prefix / "access.log"


def requests_by_agent(access_log: Path) -> dict[str, list[tuple[str, str]]]:
    """Per user agent, (path without its query, replica address) of each request in nginx's log, in order."""
    found: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for match in map(LOG_LINE.search, access_log.read_text(errors="replace").splitlines()):
        if match:
            found[match["ua"]].append((match["path"].split("?")[0], match["upstream"]))
    return dict(found)


def find_nginx() -> str | None:
    """nginx on PATH, or where Debian puts it (/usr/sbin is not on an ordinary user's PATH)."""
    return shutil.which("nginx") or next((p for p in NGINX_PATHS if os.access(p, os.X_OK)), None)


def render(ports: list[int], listen: str, prefix: Path, template: str | None = None) -> str:
    """deploy/nginx.conf with its @FIELDS@ filled for replicas on 127.0.0.1:`ports`."""
    text = template if template is not None else TEMPLATE.read_text()
    fields = {"@PREFIX@": str(prefix), "@LISTEN@": listen, "@UPSTREAMS@": _upstreams(ports),
              "@POOL_MAP@": _pool_map(ports), "@COOKIE_MAP@": _cookie_map(ports)}
    for name, value in fields.items():
        text = text.replace(name, value)
    return text


def _upstreams(ports: list[int]) -> str:
    """who_waits_any: round robin over all (state shared by workers); who_waits_K: K first, others backup."""
    servers = "".join(f"        server 127.0.0.1:{p};\n" for p in ports)
    blocks = [f"    upstream who_waits_any {{\n        zone who_waits_any 64k;\n{servers}    }}"]
    for k, port in enumerate(ports):
        backups = "".join(f"        server 127.0.0.1:{p} backup;\n" for p in ports if p != port)
        blocks.append(f"    upstream who_waits_{k} {{\n        server 127.0.0.1:{port};\n{backups}    }}")
    return "\n".join(blocks)


def _pool_map(ports: list[int]) -> str:
    return "\n".join(f"        r{k} who_waits_{k};" for k in range(len(ports)))


def _cookie_map(ports: list[int]) -> str:
    cookie = f"{COOKIE}=r{{k}}; Path=/; HttpOnly; SameSite=Lax"
    return "\n".join(f'        "~(^|, )127[.]0[.]0[.]1:{port}$" "{cookie.format(k=k)}";'
                     for k, port in enumerate(ports))


def check_free(ports: list[int], bind: str) -> None:
    """Fail before starting anything if a port is taken (a health check could reach someone else's server)."""
    for port, host in [(p, "127.0.0.1") for p in ports[:-1]] + [(ports[-1], bind)]:
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as servers do: TIME_WAIT owns none
            try:
                probe.bind((host.strip("[]"), port))
            except OSError as err:
                raise RuntimeError(f"port {port} on {host} is not free ({err.strerror}); "
                                   "pick another --port") from None


def start_replica(port: int, log: Path) -> subprocess.Popen:
    """One `streamlit run app/serve.py` on 127.0.0.1:`port` (it warms its caches), its output in `log`."""
    command = [sys.executable, "-m", "streamlit", "run", "app/serve.py", "--server.headless", "true",
               "--server.address", "127.0.0.1", "--server.port", str(port),
               "--server.fileWatcherType", "none", "--browser.gatherUsageStats", "false"]
    with open(log, "wb") as out:
        return subprocess.Popen(command, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, env=replica_env())


def replica_env() -> dict[str, str]:
    """This process's environment without WHO_WAITS_LIVE*: a room's replicas never poll a server a
    visitor names, even when the shell that started them allowed it (app/server/live.py)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("WHO_WAITS_LIVE")}


def wait_healthy(url: str, proc: subprocess.Popen, timeout_s: float, what: str, log: Path) -> None:
    """Until `url`/_stcore/health answers 200; fails at once if `proc` exits (quoting its `log`), or after
    `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            lines = log.read_text(errors="replace").strip().splitlines() if log.exists() else ["no log"]
            reason = next((line for line in lines if "[emerg]" in line), lines[-1])  # nginx: its first fatal
            raise RuntimeError(f"{what} exited with status {proc.returncode} before it answered: {reason}")
        with contextlib.suppress(OSError):
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as reply:
                if reply.status == 200:
                    return
        time.sleep(0.3)
    raise RuntimeError(f"{what} did not answer {url}/_stcore/health within {timeout_s:g} s")


def stop(procs: list[subprocess.Popen]) -> None:
    """SIGTERM to each, then SIGKILL to any still running after 10 s."""
    for proc in procs:
        if proc.poll() is None:
            proc.terminate()
    for proc in procs:
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextlib.contextmanager
def serve(replica_ports: list[int], port: int, bind: str = "0.0.0.0", keep: bool = False,
          start_timeout_s: float = 90) -> Iterator[Room]:
    """Replicas on `replica_ports` and nginx on `bind`:`port`; yields the Room once all of them answer."""
    nginx = find_nginx()
    if nginx is None:
        raise RuntimeError("nginx not found: install Debian's nginx (apt-get install nginx)")
    check_free([*replica_ports, port], bind)
    prefix = Path(tempfile.mkdtemp(prefix="who-waits-nginx-"))
    prefix.chmod(0o755)  # run as root, nginx's workers are `nobody` and must reach their temp folders
    procs = [start_replica(p, prefix / f"replica-{k}.log") for k, p in enumerate(replica_ports)]
    try:
        (prefix / "nginx.conf").write_text(render(replica_ports, f"{bind}:{port}", prefix))
        procs.append(subprocess.Popen([nginx, "-p", str(prefix), "-c", str(prefix / "nginx.conf"),
                                       "-e", str(prefix / "error.log")], stderr=subprocess.DEVNULL))
        urls = tuple(f"http://127.0.0.1:{p}" for p in replica_ports)
        for k, (url, proc) in enumerate(zip(urls, procs[:-1], strict=True)):
            wait_healthy(url, proc, start_timeout_s, f"replica {k}", prefix / f"replica-{k}.log")
        host = "127.0.0.1" if bind in ("0.0.0.0", "::", "[::]") else bind
        room = Room(f"http://{host}:{port}", urls, tuple(p.pid for p in procs[:-1]), prefix)
        wait_healthy(room.url, procs[-1], 15, "nginx", prefix / "error.log")
        yield room
    finally:
        stop(procs)
        if not keep:
            shutil.rmtree(prefix, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--replicas", type=int, default=os.cpu_count() or 1,
                        help="Streamlit processes (default: one per core)")
    parser.add_argument("--port", type=int, default=8500, help="nginx's port; replicas use the next ones")
    parser.add_argument("--bind", default="0.0.0.0", help="nginx's address (default: every interface)")
    parser.add_argument("--keep", action="store_true", help="keep nginx's folder (logs) after exit")
    args = parser.parse_args()
    if not 1 <= args.replicas <= 64:
        parser.error(f"--replicas is {args.replicas}; allowed: 1 to 64")
    if not 1 <= args.port <= 65535 - args.replicas:
        parser.error(f"--port is {args.port}; allowed: 1 to {65535 - args.replicas}")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    ports = [args.port + 1 + k for k in range(args.replicas)]
    try:
        with serve(ports, args.port, args.bind, args.keep) as room:
            print(f"Who Waits: {room.url} ({args.bind}:{args.port}) -> {args.replicas} replicas on ports "
                  f"{ports[0]}-{ports[-1]}; logs in {room.prefix}. Ctrl-C stops them all.", flush=True)
            while True:
                time.sleep(3600)
    except KeyboardInterrupt:
        pass
    except RuntimeError as err:
        sys.exit(f"error: {err}")


if __name__ == "__main__":
    main()
