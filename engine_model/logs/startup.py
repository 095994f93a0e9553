"""SGLang's startup lines: `server_args=ServerArgs(...)` / `server_args={...}` and the scheduler's limits
line.

Parsed with `ast.literal_eval` on pieces, never `eval`.
"""

import ast
import math


class Malformed(Exception):
    """A line that looks like a known kind but has a broken field; the message says which."""


SETTING_KEYS = (
    "model_path",
    "dtype",
    "quantization",
    "context_length",
    "pp_size",
    "chunked_prefill_size",
    "enable_mixed_chunk",
    "max_running_requests",
    "max_total_tokens",
    "max_prefill_tokens",
    "schedule_policy",
    "page_size",
    "disaggregation_mode",
    "prefill_decode_interval",
    "tp_size",
    "dp_size",
    "enable_dp_attention",
    "disable_overlap_schedule",
    "stream_interval",
    "speculative_algorithm",
    "mem_fraction_static",
    "kv_cache_dtype",
    "schedule_conservativeness",
    "decode_log_interval",
)
MAX_LITERAL = 100_000
MAX_SERVER_ARGS = 1_000_000
MAX_NUMBER = 10**12  # a setting beyond this (a KV pool of a trillion tokens) is no real server's
UNPARSED = "<unparsed>"


def split_top_level(text: str) -> list[str]:
    """Split on commas that sit outside quotes and brackets (a Python repr or dict body)."""
    pieces, depth, quote, start, i = [], 0, "", 0, 0
    while i < len(text):
        char = text[i]
        if quote:
            if char == "\\":
                i += 1
            elif char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth = max(depth - 1, 0)
        elif char == "," and depth == 0:
            pieces.append(text[start:i])
            start = i + 1
        i += 1
    pieces.append(text[start:])
    return [p.strip() for p in pieces if p.strip()]


def literal(text: str) -> object:
    """A Python literal, or the raw text when it is not one (never eval).

    A number outside what a real server holds (not finite, or beyond +-MAX_NUMBER) stays text too, so no
    setting read from a log can carry a 400-digit integer or inf into a timeline or a scenario.
    """
    if len(text) > MAX_LITERAL:
        return text[:200] + "..."
    try:
        value = ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return text
    if isinstance(value, bool) or not isinstance(value, int | float):
        return value
    if isinstance(value, float) and not math.isfinite(value):
        return text
    return value if abs(value) <= MAX_NUMBER else text


def parse_server_args(rest: str) -> tuple[dict, bool]:
    """`ServerArgs(k=v, ...)` or `{'k': v, ...}` -> (fields, is_complete)."""
    if rest.startswith("ServerArgs("):
        body, closed = rest[len("ServerArgs(") :], rest.endswith(")")
        body, separator = (body[:-1] if closed else body), "="
    elif rest.startswith("{"):
        whole = literal(rest)
        if isinstance(whole, dict):
            return {str(k): v for k, v in whole.items()}, True
        body, closed = rest[1:-1] if rest.endswith("}") else rest[1:], rest.endswith("}")
        separator = ":"
    else:
        raise Malformed("server_args= is followed by neither ServerArgs(...) nor {...}")
    args = {}
    for piece in split_top_level(body):
        key, sep, value = piece.partition(separator)
        key = key.strip()
        if separator == ":":
            key = literal(key) if key[:1] in "'\"" else key
        if sep and isinstance(key, str) and key.isidentifier():
            args[key] = literal(value.strip())
    return args, closed


def parse_startup(message: str) -> dict:
    """`max_total_num_tokens=..., ..., available_gpu_mem=59.01 GB` -> numbers by name."""
    values = {}
    for piece in message.split(", "):
        key, sep, raw = piece.partition("=")
        if not sep:
            continue
        raw = raw.strip()
        key = key.strip() + ("_gb" if raw.endswith(" GB") else "")
        number = literal(raw.removesuffix(" GB"))
        values[key] = number if isinstance(number, int | float) and not isinstance(number, bool) else raw
    if not isinstance(values.get("max_total_num_tokens"), int):
        raise Malformed("scheduler startup line lacks max_total_num_tokens=<integer>")
    return values
