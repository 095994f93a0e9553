"""A control: one setting a person changes. It knows its URL parameter, its widget, its default and how
it writes its value into the scenario (a dict read from the scenario's TOML).

Controls marked `is_flag` are SGLang server flags: a story's baseline resets them to SGLang's defaults.
The server flags every page offers (mixed chunk, chunk size, prefill-decode interval) and the GPU /
model / seed trio are built here once; `control_ui` draws any control under its page's widget key.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import streamlit as st

from app import state
from engine_model import GPUS, MODELS


@dataclass(frozen=True)
class Control:
    key: str  # URL parameter; the widget key is "<page>.<key>"
    label: str
    widget: str  # "toggle" | "select" | "slider"
    default: object
    apply: Callable[[dict, object], None]
    options: tuple = ()  # select: the values; slider: (min, max, step)
    is_flag: bool = True
    help: str = ""
    where: str = "main"  # "main": the settings row; "more": the hardware/model/seed expander
    fmt: Callable[[object], str] = str

    def parse(self, text: str):
        """A URL value -> a control value, or ValueError with what is allowed."""
        text = text.strip()
        if self.widget == "toggle":
            if text.lower() in ("1", "true", "on", "yes"):
                return True
            if text.lower() in ("0", "false", "off", "no"):
                return False
            raise ValueError("expected 1 or 0")
        if self.widget == "select":
            for option in self.options:
                if text == str(option):
                    return option
            raise ValueError(f"expected one of {', '.join(map(str, self.options))}")
        low, high, _ = self.options
        try:
            value = int(text)
        except ValueError:
            raise ValueError(f"expected a whole number from {low} to {high}") from None
        if not low <= value <= high:
            raise ValueError(f"expected a whole number from {low} to {high}")
        return value

    def to_url(self, value) -> str:
        if self.widget == "toggle":
            return "1" if value else "0"
        return str(value)


def group(data: dict, name: str) -> dict:
    for g in data.get("workload", {}).get("groups", []):
        if g["name"] == name:
            return g
    raise KeyError(name)


def setter(*path: str) -> Callable[[dict, object], None]:
    def apply(data: dict, value) -> None:
        node = data
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = value
    return apply


def group_setter(name: str, key: str, convert=lambda v: v) -> Callable[[dict, object], None]:
    def apply(data: dict, value) -> None:
        group(data, name)[key] = convert(value)
    return apply


def chunk_value(value):
    return -1 if value == "off" else value


CHUNK_OPTIONS = ("auto", 512, 1024, 2048, 4096, 8192, 16384, "off")


def chunk_label(value) -> str:
    if value == "auto":
        return "auto (GPU memory)"
    if value == "off":
        return "off (no chunking)"
    return f"{value:,}"


def mixed_control() -> Control:
    return Control("mixed", "Mixed chunk", "toggle", False, setter("engine", "enable_mixed_chunk"),
                   help="--enable-mixed-chunk: each prefill pass also carries one decode step for every running request. SGLang default: off.")


def chunk_control() -> Control:
    return Control("chunk", "Chunk size", "select", "auto",
                   lambda d, v: setter("engine", "chunked_prefill_size")(d, chunk_value(v)), CHUNK_OPTIONS,
                   help="--chunked-prefill-size: prompt tokens per pass. SGLang default: picked from GPU memory.", fmt=chunk_label)


def interval_control() -> Control:
    return Control("interval", "Decode rounds between prefills", "slider", 0,
                   setter("engine", "prefill_decode_interval"), (0, 40, 1),
                   help="--prefill-decode-interval: decode rounds forced after each prefill batch. SGLang default: 0 (off).")


def common_controls() -> tuple[Control, ...]:
    return (
        Control("gpu", "GPU", "select", "h100-sxm", setter("hardware", "gpu"), tuple(GPUS), is_flag=False,
                where="more", fmt=lambda k: GPUS[k].name, help="Sets the pass cost and the default chunk size."),
        Control("model", "Model", "select", "llama-3.1-8b", setter("model", "name"), tuple(MODELS), is_flag=False,
                where="more", fmt=lambda k: MODELS[k].name),
        Control("seed", "Random seed", "slider", 0, lambda d, v: d.__setitem__("seed", v), (0, 99, 1), is_flag=False,
                where="more", help="Lengths and arrivals are drawn from this seed; the baseline uses the same one."),
    )


def control_ui(page: str, control: Control, radio: bool = False) -> object:
    """One control's widget under the page's key for it (a radio row when `radio`). Returns its value."""
    key = state.keys(page).widget(control.key)
    label = ("⚑ " if control.is_flag else "") + control.label
    if radio:
        return st.radio(label, control.options, key=key, format_func=control.fmt, horizontal=True, help=control.help)
    if control.widget == "toggle":
        return st.toggle(label, key=key, help=control.help)
    if control.widget == "select":
        return st.selectbox(label, control.options, key=key, format_func=control.fmt, help=control.help)
    low, high, step = control.options
    return st.slider(label, low, high, step=step, key=key, help=control.help)
