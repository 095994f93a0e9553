"""Load scenarios from TOML, apply `--set dotted.key=value` overrides, and report bad input by key."""

from __future__ import annotations

import copy
import tomllib
from pathlib import Path

from pydantic import BaseModel, ValidationError

from engine_model.config import Scenario
from engine_model.errors import InputError

SCENARIO_DIR = Path(__file__).resolve().parents[1] / "scenarios"
MAX_SCENARIO_BYTES = 1_000_000


def scenario_names() -> list[str]:
    return sorted(p.stem for p in SCENARIO_DIR.glob("*.toml"))


def read_toml(path: str | Path) -> dict:
    """A scenario file by path, or by name from scenarios/."""
    path = Path(path)
    if not path.exists() and (SCENARIO_DIR / f"{path.name}.toml").exists():
        path = SCENARIO_DIR / f"{path.name}.toml"
    if not path.is_file():
        raise InputError(str(path), f"no such scenario file; built-in scenarios: {', '.join(scenario_names())}")
    if path.stat().st_size > MAX_SCENARIO_BYTES:
        raise InputError(str(path), f"larger than {MAX_SCENARIO_BYTES} bytes")
    return relative_to(parse_toml(path.read_bytes().decode("utf-8", errors="replace"), str(path)), path.parent)


def relative_to(data: dict, folder: Path) -> dict:
    """Paths inside a scenario file (a trace) are relative to the file, not to where it is run from."""
    trace = data.get("workload", {}).get("trace") if isinstance(data.get("workload"), dict) else None
    if isinstance(trace, str):
        trace = data["workload"]["trace"] = {"path": trace}
    if isinstance(trace, dict) and isinstance(trace.get("path"), str) and not Path(trace["path"]).is_absolute():
        trace["path"] = str((folder / trace["path"]).resolve())
    return data


def parse_toml(text: str, where: str = "scenario") -> dict:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise InputError(where, f"not valid TOML ({err})") from None


def parse_value(text: str):
    """A --set value: a TOML value (number, true/false, "string", [list], {table}), else a bare string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def apply_sets(data: dict, sets: list[str]) -> dict:
    data = copy.deepcopy(data)
    for item in sets:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InputError(f"--set {item}", "expected dotted.key=value, e.g. engine.enable_mixed_chunk=true")
        node = data
        parts = key.strip().split(".")
        for part in parts[:-1]:
            node = child_of(node, part, key)
        if isinstance(node, list):
            node[list_index(node, parts[-1], key)] = parse_value(value.strip())
        else:
            node[parts[-1]] = parse_value(value.strip())
    return data


def list_index(node: list, part: str, key: str) -> int:
    if not part.isdigit() or int(part) >= len(node):
        raise InputError(key, f"{part!r} is not an index of a list of {len(node)}")
    return int(part)


def child_of(node, part: str, key: str):
    """Step into a table, creating it if missing, or into a list by index (workload.groups.0.count)."""
    if isinstance(node, list):
        return node[list_index(node, part, key)]
    child = node.setdefault(part, {})
    if not isinstance(child, dict | list):
        raise InputError(key, f"{part} is not a table")
    return child


def allowed_keys(loc: tuple) -> list[str]:
    """The field names accepted where a validation error points."""
    model: type[BaseModel] | None = Scenario
    for part in loc[:-1]:
        if model is None or not isinstance(part, str) or part not in model.model_fields:
            return []
        ann = model.model_fields[part].annotation
        model = ann if isinstance(ann, type) and issubclass(ann, BaseModel) else None
    return sorted(model.model_fields) if model is not None else []


def validate(data: dict) -> Scenario:
    try:
        return Scenario.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        loc = tuple(first["loc"])
        key = ".".join(str(p) for p in loc) or "scenario"
        if first["type"] == "extra_forbidden":
            allowed = allowed_keys(loc)
            raise InputError(key, "unknown key" + (f"; allowed: {', '.join(allowed)}" if allowed else "")) from None
        got = repr(first.get('input'))[:80]
        raise InputError(key, f"{first['msg']} (got {got})") from None


def load_scenario(path: str | Path, sets: list[str] = ()) -> Scenario:
    return validate(apply_sets(read_toml(path), list(sets)))
