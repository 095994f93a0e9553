"""Load scenarios from TOML, apply `--set dotted.key=value` overrides, and report bad input by key."""

from __future__ import annotations

import copy
import math
import re
import tomllib
from pathlib import Path

from pydantic import BaseModel, ValidationError

from engine_model.config import ARRIVAL_KINDS, Scenario
from engine_model.errors import InputError
from engine_model.files import decode, name_of, read_capped

SCENARIO_DIR = Path(__file__).resolve().parents[1] / "scenarios"
MAX_SCENARIO_BYTES = 1_000_000
MAX_DEPTH = 32
MAX_QUOTE = 80
# union tags
TYPE_TAG = re.compile(r"^((constrained-)?(int|float|str|bool|none)|[a-z-]+\[.*\]|[A-Z][A-Za-z]*)$")


def scenario_names() -> list[str]:
    return sorted(p.stem for p in SCENARIO_DIR.glob("*.toml"))


def read_toml(path: str | Path) -> dict:
    """A scenario file by path, or by name from scenarios/."""
    try:
        path = Path(path)
        if not path.exists() and (SCENARIO_DIR / f"{path.name}.toml").exists():
            path = SCENARIO_DIR / f"{path.name}.toml"
        is_file = path.is_file()
    except (OSError, ValueError):
        is_file = False
    if not is_file:
        raise InputError(name_of(path),
                         f"no such scenario file; built-in scenarios: {', '.join(scenario_names())}")
    text, bad_line = decode(read_capped(path, MAX_SCENARIO_BYTES))
    if bad_line is not None:
        raise InputError(f"{name_of(path)} line {bad_line}", "is not UTF-8 text; TOML files are UTF-8")
    return relative_to(parse_toml(text, name_of(path)), path.parent)


def relative_to(data: dict, folder: Path) -> dict:
    """Paths inside a scenario file (a trace) are relative to the file, not to where it is run from."""
    trace = data.get("workload", {}).get("trace") if isinstance(data.get("workload"), dict) else None
    if isinstance(trace, str):
        trace = data["workload"]["trace"] = {"path": trace}
    if (isinstance(trace, dict) and isinstance(trace.get("path"), str)
            and not Path(trace["path"]).is_absolute()):
        trace["path"] = str((folder / trace["path"]).resolve())
    return data


def parse_toml(text: str, where: str = "scenario") -> dict:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise InputError(where, f"not valid TOML ({err})") from None
    except RecursionError:
        data = None
    if data is None or too_deep(data):
        raise InputError(where, f"tables or lists nested more than {MAX_DEPTH} deep; a scenario needs a few")
    return data


def too_deep(value, depth: int = 0) -> bool:
    """Nesting beyond MAX_DEPTH (a scenario needs about five) would only exhaust recursion later."""
    if depth > MAX_DEPTH:
        return True
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return any(too_deep(child, depth + 1) for child in children)


def non_finite(value, key: str = "") -> str | None:
    """The dotted key of the first inf or nan anywhere in the data (every section, [pd] included)."""
    if isinstance(value, float) and not math.isfinite(value):
        return key or "scenario"
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for part, child in items:
        found = non_finite(child, f"{key}.{part}" if key else str(part))
        if found is not None:
            return found
    return None


def parse_value(text: str, key: str):
    """A --set value: a TOML value (number, true/false, "string", [list], {table}), else a bare string."""
    try:
        value = tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text
    except RecursionError:
        value = None
    if value is None or too_deep(value):
        raise InputError(key, f"is nested more than {MAX_DEPTH} deep; expected a number, true/false, a "
                              "string or a short [list] / {table}")
    return value


def apply_sets(data: dict, sets: list[str]) -> dict:
    data = copy.deepcopy(data)
    for item in sets:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InputError(f"--set {item[:MAX_QUOTE]}",
                             "expected dotted.key=value, e.g. engine.enable_mixed_chunk=true")
        parts = key.strip().split(".")
        key = key.strip()[:MAX_QUOTE]
        if len(parts) > MAX_DEPTH:
            raise InputError(key, f"has {len(parts):,} dotted parts; a key has at most {MAX_DEPTH}")
        node = data
        for part in parts[:-1]:
            node = child_of(node, part, key)
        if isinstance(node, list):
            node[list_index(node, parts[-1], key)] = parse_value(value.strip(), key)
        else:
            node[parts[-1]] = parse_value(value.strip(), key)
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


def key_of(loc: tuple) -> str:
    """The dotted key a user writes, from a validation error's location (less pydantic's union tags)."""
    parts = []
    for part in loc:
        is_kind = bool(parts) and parts[-1] == "arrival" and part in ARRIVAL_KINDS
        if isinstance(part, str) and (TYPE_TAG.match(part) or is_kind):
            continue
        parts.append(str(part))
    return ".".join(parts) or "scenario"


def validate(data: dict) -> Scenario:
    """A Scenario, or one InputError naming the first bad key and what it accepts."""
    if not isinstance(data, dict):
        raise InputError("scenario", f"expected a table of settings, got {type(data).__name__}")
    if too_deep(data):
        raise InputError("scenario", f"tables or lists nested more than {MAX_DEPTH} deep")
    key = non_finite(data)
    if key is not None:
        raise InputError(key, "expected a finite number, not inf or nan")
    try:
        return Scenario.model_validate(data)
    except ValidationError as err:
        raise first_problem(err.errors()) from None


def first_problem(errors: list[dict]) -> InputError:
    """The first error as one line. Of a union's alternatives, a wrong type ranks last (a table given for
    `prompt_len` is judged as a table); alternatives at the same key are joined with 'or' (an int or "auto").
    A scenario-wide check names its key at the start of its message ("workload: ...")."""
    errors = sorted(errors, key=lambda e: e["type"].endswith("_type"))
    first = errors[0]
    key, msg = key_of(tuple(first["loc"])), first["msg"].removeprefix("Value error, ")
    if first["type"] == "extra_forbidden":
        allowed = allowed_keys(tuple(first["loc"]))
        return InputError(key, "unknown key" + (f"; allowed: {', '.join(allowed)}" if allowed else ""))
    if first["type"] == "union_tag_not_found":
        msg = f"needs a kind, one of {', '.join(sorted(ARRIVAL_KINDS))}, e.g. {{kind = \"at\", start_at = 5}}"
    if not first["loc"] and ": " in msg:
        key, msg = msg.split(": ", 1)
        return InputError(key, msg)
    same = [e["msg"] for e in errors if key_of(tuple(e["loc"])) == key]
    got = repr(first.get("input"))[:MAX_QUOTE]
    return InputError(key, f"{'; or '.join(dict.fromkeys([msg, *same]))} (got {got})")


def load_scenario(path: str | Path, sets: list[str] = ()) -> Scenario:
    return validate(apply_sets(read_toml(path), list(sets)))
