"""Numbers as the pages print them: seconds in ms or s, counts with thousands separators, a setting's value in
words."""

from __future__ import annotations

import re

from app.charts.words import NO_TOKEN
from engine_model import seconds_text


def markdown_table(frame, literal: tuple[str, ...] = ()) -> str:
    """A DataFrame as one Markdown table, its index the first column: one element to draw, where
    `st.table` draws a Markdown element per cell and `st.dataframe` a grid (a page's first view pays for
    each). Columns in `literal` are text read from a person's file: shown as written, never as markup."""
    head = [frame.index.name or "", *frame.columns]
    rows = [[key, *(escaped(v) if c in literal else v for c, v in zip(frame.columns, values, strict=True))]
            for key, values in zip(frame.index, frame.itertuples(index=False), strict=True)]
    return "\n".join("| " + " | ".join(str(v).replace("|", "\\|").replace("\n", " ") for v in row) + " |"
                      for row in [head, ["---"] * len(head), *rows])


def escaped(value) -> str:
    """`value` with every Markdown punctuation mark escaped (a table's `|` is `markdown_table`'s): a link,
    an image or emphasis in it reads as the characters it is."""
    return re.sub(r"([\\`*_{}\[\]()#+\-.!<>~])", r"\\\1", str(value).replace("\n", " "))


fmt_seconds = seconds_text  # ms under a second: one rule, which the engine's words (the advisor's) use too


def seconds_finer(value: float | None) -> str:
    """Seconds with one more digit than `fmt_seconds`, for two numbers that print alike but differ."""
    if value is None:
        return "—"
    if value < 1:
        return f"{value * 1000:.1f} ms" if value >= 0.01 else f"{value * 1000:.2f} ms"
    return f"{value:.2f} s" if value < 100 else f"{value:.1f} s"


def pair(before: float | None, now: float | None, fmt, finer=None) -> tuple[str, str, bool]:
    """Two numbers as they read side by side: (before, now, unchanged). Numbers that differ but print alike
    get one more digit (`finer`); numbers that print alike even then read as unchanged."""
    a, b = fmt(before), fmt(now)
    if a == b and finer is not None and before is not None and now is not None and before != now:
        a, b = finer(before), finer(now)
    return a, b, a == b


def seconds_cell(value: float | None, missing: str = NO_TOKEN) -> str:
    """A table's seconds cell; `missing` where the run has no value (by default: its requests got no token,
    and a sentence under the table says why)."""
    return fmt_seconds(value) if value is not None else missing


def fmt_count(value: int | None) -> str:
    return "—" if value is None else f"{value:,}"


def shown_value(control, value, resolved_chunk=None) -> str:
    """A story control's value in words: on / off, "8,192 (auto, from GPU memory)", "100,000"."""
    if control.widget == "toggle":
        return "on" if value else "off"
    if control.key == "chunk" and value == "auto" and isinstance(resolved_chunk, int):
        return f"{resolved_chunk:,} (auto, from GPU memory)"
    return control.fmt(value)


def signed_seconds(diff: float) -> str:
    return ("+" if diff > 0 else "−" if diff < 0 else "±") + fmt_seconds(abs(diff))


def fmt_share(fraction: float | None) -> str:
    """0.02 -> '2 %'; a small non-zero share keeps a decimal so it does not read as zero."""
    if fraction is None:
        return "—"
    if fraction == 0 or fraction >= 0.01:
        return f"{fraction * 100:.0f} %"
    return f"{fraction * 100:.1f} %" if fraction >= 0.001 else "< 0.1 %"


def fmt_change(fraction: float | None) -> str:
    """A relative change in whole percent, signed: '+85 %', '−41 %', '±0 %'."""
    if fraction is None:
        return "—"
    whole = round(100 * fraction)
    return "±0 %" if whole == 0 else f"{'+' if whole > 0 else '−'}{abs(whole)} %"


def fmt_token_s(value: float | None) -> str:
    """Token-seconds as the PD notes write them: '4.9 × 10⁷'; small values whole."""
    if value is None:
        return "—"
    if value < 10_000:
        return f"{value:,.0f}"
    mantissa, exponent = f"{value:.1e}".split("e")
    return f"{mantissa} × 10{str(int(exponent)).translate(str.maketrans('0123456789', '⁰¹²³⁴⁵⁶⁷⁸⁹'))}"
