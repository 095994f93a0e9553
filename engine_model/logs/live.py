"""Poll a running SGLang server's `/metrics` and `/server_info`: only hosts that are allowed, no redirects,
no proxies, a deadline and a size limit on every answer, and a clear message when it is not SGLang.

Which hosts are allowed is the caller's decision (the app's operator: loopback by default, others listed);
this module only enforces it, so a hosted app can never be made to fetch an arbitrary URL.
"""

from __future__ import annotations

import http.client
import ipaddress
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from engine_model.errors import InputError
from engine_model.files import decode
from engine_model.logs.scrape import Scrape, read_scrapes
from engine_model.logs.server_info import ServerInfo, read_server_info

TIMEOUT_S = 3.0  # for a whole answer, not per read
MAX_METRICS_BYTES = 5_000_000  # a real scrape is ~130 KB
MAX_INFO_BYTES = 1_000_000
LOOPBACK_NAMES = ("localhost",)
WHERE = "server URL"


@dataclass(frozen=True)
class Poll:
    """One poll: the scrape (stamped with the time it was fetched), /server_info if it answered, and notes."""

    scrape: Scrape
    info: ServerInfo | None
    notes: list[str]


class NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect could lead anywhere: it is refused, never followed."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        raise InputError(req.full_url, f"answered with a redirect ({code}) to {newurl[:80]}; redirects are "
                                       "not followed")


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def base_url(url: str, hosts: tuple[str, ...]) -> str:
    """scheme://host:port/prefix of an allowed URL (query dropped, and a trailing /metrics or /server_info);
    InputError for anything else (user info, a host not allowed, a name that resolves off loopback when
    only loopback is allowed)."""
    try:
        parts = urllib.parse.urlsplit(url.strip())
        port = parts.port
    except ValueError as err:
        raise InputError(WHERE, f"'{url[:80]}' is not a URL ({err})") from None
    host = (parts.hostname or "").lower()
    if parts.scheme not in ("http", "https") or not host:
        raise InputError(WHERE, f"'{url[:80]}' is not an http:// or https:// URL with a host")
    if parts.username or parts.password:
        raise InputError(WHERE, "a URL with a user name or password is not accepted")
    listed = host in {h.lower() for h in hosts}
    if not listed and not is_loopback(host):
        allowed = ", ".join(("loopback (127.0.0.1, ::1, localhost)", *hosts))
        raise InputError(WHERE, f"{host} is not allowed; this app may fetch only from {allowed} (the "
                                "operator lists more in WHO_WAITS_LIVE_HOSTS)")
    if not listed and host in LOOPBACK_NAMES and not resolves_to_loopback(host, port):
        raise InputError(WHERE, f"{host} does not resolve to a loopback address here; use 127.0.0.1")
    netloc = f"[{host}]" if ":" in host else host
    prefix = parts.path.rstrip("/").removesuffix("/metrics").removesuffix("/server_info").rstrip("/")
    return f"{parts.scheme}://{netloc}{f':{port}' if port else ''}{prefix}"


def resolves_to_loopback(host: str, port: int | None) -> bool:
    try:
        found = socket.getaddrinfo(host, port or 80, proto=socket.IPPROTO_TCP)
    except OSError:
        return False
    return all(ipaddress.ip_address(address[4][0]).is_loopback for address in found)


def fetch(url: str, max_bytes: int, timeout_s: float = TIMEOUT_S) -> bytes:
    """The body of a GET, within the deadline and the size limit; InputError naming the URL otherwise."""
    opener = urllib.request.build_opener(NoRedirect, urllib.request.ProxyHandler({}))
    request = urllib.request.Request(url, headers={"User-Agent": "who-waits", "Accept": "*/*"})
    deadline = time.monotonic() + timeout_s
    try:
        with opener.open(request, timeout=timeout_s) as answer:
            data = bytearray()
            while chunk := answer.read(65536):
                data += chunk
                if len(data) > max_bytes:
                    raise InputError(url, f"sent more than {max_bytes:,} bytes; that is the limit")
                if time.monotonic() > deadline:
                    raise InputError(url, f"did not finish answering within {timeout_s:g} s")
    except InputError:
        raise  # a redirect, too much, too slow: already said
    except urllib.error.HTTPError as err:
        raise InputError(url, f"answered HTTP {err.code} {err.reason}") from None
    except urllib.error.URLError as err:
        why = str(err.reason)[:80]
        raise InputError(url, f"does not answer ({why}): is the server running there?") from None
    except TimeoutError:
        raise InputError(url, f"did not answer within {timeout_s:g} s") from None
    except (OSError, ValueError, http.client.HTTPException) as err:
        raise InputError(url, f"the connection failed ({type(err).__name__}: {str(err)[:60]})") from None
    return bytes(data)


def poll(url: str, hosts: tuple[str, ...], *, timeout_s: float = TIMEOUT_S, now: float | None = None) -> Poll:
    """Fetch /metrics (needed) and /server_info (if it answers) from an allowed server."""
    base = base_url(url, hosts)
    at = time.time() if now is None else now
    try:
        raw = fetch(f"{base}/metrics", MAX_METRICS_BYTES, timeout_s)
    except InputError as err:
        if "HTTP 404" in err.problem:
            raise InputError(err.where, "answered 404: is it SGLang, started with --enable-metrics?") \
                from None
        raise
    text, _ = decode(raw)
    stamp = datetime.fromtimestamp(at, UTC).isoformat()
    found = read_scrapes([(f"{base}/metrics", f"# scraped_at {stamp}\n{text}")], max_bytes=MAX_METRICS_BYTES)
    notes = [*found.warnings, *found.left_out]
    info = None
    try:
        info_text, _ = decode(fetch(f"{base}/server_info", MAX_INFO_BYTES, timeout_s))
        info = read_server_info(info_text, source=f"{base}/server_info")
    except InputError as err:
        notes.append(f"/server_info: {err.problem}")
    return Poll(replace(found.scrapes[-1], at_source="fetched"), info, notes)
