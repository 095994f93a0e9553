"""Read SGLang's `/server_info` JSON as a source of resolved settings, beside the log's server_args line.

In 0.5.23 `/server_info` is `ServerArgs.resolved_dict()` (every field, resolved), the scheduler's init info
(`max_total_num_tokens`, `max_req_input_len`), `internal_states` (one per DP rank, with
`effective_max_running_requests_per_dp`) and `version` (`entrypoints/http_server.py` `server_info`,
`utils/common.py` `build_server_info`). Older releases serve the same under `/get_server_info`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from engine_model.errors import InputError
from engine_model.files import decode, name_of, read_capped
from engine_model.logs.startup import MAX_NUMBER, SETTING_KEYS

MAX_BYTES = 5_000_000  # a real /server_info is a few tens of KB
KEYS = (*SETTING_KEYS, "enable_metrics")
RESOLVED = {"max_total_num_tokens": "max_total_tokens"}  # the pool the scheduler resolved, not the flag


@dataclass(frozen=True)
class ServerInfo:
    source: str
    settings: dict  # the keys the log's settings use, as /server_info resolved them
    version: str | None
    num_dp_states: int  # entries of internal_states
    warnings: list[str]


@dataclass(frozen=True)
class Mismatch:
    key: str
    log: object
    server_info: object


def usable(value) -> bool:
    """A setting a real server holds: a bool, a short string, None, or a finite number within ±10¹²."""
    if isinstance(value, bool) or value is None:
        return True
    if isinstance(value, int):
        return abs(value) <= MAX_NUMBER
    if isinstance(value, float):
        return math.isfinite(value) and abs(value) <= MAX_NUMBER
    return isinstance(value, str) and len(value) <= 1000


def read_server_info(text: str, *, source: str = "server_info", max_bytes: int = MAX_BYTES) -> ServerInfo:
    """Resolved settings from a /server_info document. Raises InputError (naming the source and, for bad
    JSON, the line) when it is not JSON, not an object, or holds none of SGLang's settings."""
    if not isinstance(text, str):
        raise InputError(source, f"expected text, got {type(text).__name__}")
    if len(text.encode("utf-8", "surrogatepass")) > max_bytes:
        raise InputError(source, f"is more than {max_bytes:,} bytes; a /server_info is a few tens of KB")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise InputError(f"{source} line {err.lineno}", f"is not JSON ({err.msg}); paste the whole output "
                         "of curl http://HOST:PORT/server_info") from None
    except RecursionError:
        raise InputError(source, "is nested too deep to be a /server_info") from None
    except ValueError as err:  # a number of more than 4,300 digits
        raise InputError(source, f"holds a value no /server_info holds ({str(err)[:60]})") from None
    if not isinstance(doc, dict):
        raise InputError(source, f"is a JSON {type(doc).__name__}, not the object /server_info returns")
    return info_of(doc, source)


def info_of(doc: dict, source: str) -> ServerInfo:
    found, warnings = {}, []
    states = doc.get("internal_states")
    states = states if isinstance(states, list) else []
    first = states[0] if states and isinstance(states[0], dict) else {}
    for key in KEYS:
        if key in doc:
            found[key] = doc[key]
    for key, name in RESOLVED.items():
        if key in doc:
            found[name] = doc[key]
    if "effective_max_running_requests_per_dp" in first:
        found["max_running_requests"] = first["effective_max_running_requests_per_dp"]
    for key in [k for k, v in found.items() if not usable(v)]:
        warnings.append(f"{source}: {key} = {str(found.pop(key))[:40]!r} is not a setting a server holds; "
                        "not used")
    if not found:
        keys = ", ".join(list(doc)[:6]) or "none"
        raise InputError(source, f"holds none of SGLang's settings (keys: {keys}); is it the output of "
                                 "/server_info?")
    version = doc.get("version")
    return ServerInfo(source, found, version if isinstance(version, str) and len(version) < 40 else None,
                      len(states), warnings)


def read_server_info_file(path: str | Path) -> ServerInfo:
    text, _ = decode(read_capped(path, MAX_BYTES))
    return read_server_info(text, source=name_of(path))


def mismatches(log_settings: dict, info: ServerInfo) -> list[Mismatch]:
    """Settings both sources state with different values (a float within 1e-9 is the same)."""
    found = []
    for key, value in log_settings.items():
        if key not in info.settings:
            continue
        other = info.settings[key]
        same = (math.isclose(value, other, rel_tol=1e-9)
                if isinstance(value, int | float) and isinstance(other, int | float)
                and not isinstance(value, bool) and not isinstance(other, bool) else value == other)
        if not same:
            found.append(Mismatch(key, value, other))
    return found
