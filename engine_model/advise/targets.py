"""A person's targets for both waits, per group: `questions.ttft_p95=2s`, `contracts.itl_p99=0.2s`,
`questions.longest_pause=1s`. A wait is one of WAITS, read from a run as docs/metrics.md defines it."""

from __future__ import annotations

import re
from dataclasses import dataclass

from engine_model.errors import InputError

# wait -> (GroupMetrics field, statistic, words)
WAITS = {
    "ttft_p95": ("ttft_s", "p95", "p95 first token"),
    "longest_pause": ("max_itl_s", "max", "longest pause"),
    "itl_p99": ("itl_s", "p99", "p99 gap between tokens"),
}
ALIASES = {"max_itl": "longest_pause", "pause": "longest_pause", "ttft": "ttft_p95", "itl": "itl_p99"}
UNITS = {"ms": 0.001, "s": 1.0, "": 1.0}


@dataclass(frozen=True)
class Target:
    group: str
    wait: str  # a key of WAITS
    limit_s: float

    @property
    def text(self) -> str:
        return f"{self.group}.{self.wait}={self.limit_s:g}s"

    @property
    def words(self) -> str:
        return f"{self.group}: {WAITS[self.wait][2]} ≤ {seconds(self.limit_s)}"


def parse_target(text: str, groups: tuple[str, ...] = ()) -> Target:
    """'questions.ttft_p95=2s' -> Target; InputError naming what is allowed."""
    where = f"--target {text[:60]}"
    name, sep, value = text.partition("=")
    group, dot, wait = name.strip().rpartition(".")
    wait = ALIASES.get(wait, wait)
    if not sep or not dot or not group or wait not in WAITS:
        raise InputError(
            where, f"expected GROUP.WAIT=SECONDS, WAIT one of {', '.join(WAITS)} (e.g. questions.ttft_p95=2s)"
        )
    if groups and group not in groups:
        raise InputError(where, f"no group {group!r} in this workload; its groups: {', '.join(groups)}")
    found = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:e-?[0-9]+)?)\s*(ms|s|)\s*", value)
    if not found or not 0 < float(found.group(1)) * UNITS[found.group(2)] <= 1e6:
        raise InputError(where, "expected a time above 0, such as 2s, 0.2s or 200ms")
    return Target(group, wait, float(found.group(1)) * UNITS[found.group(2)])


def seconds(value: float | None) -> str:
    """Seconds as every surface prints them (app.present.fmt.fmt_seconds is this): ms under a second."""
    if value is None:
        return "—"
    if value < 1:
        return f"{value * 1000:.0f} ms" if value >= 0.01 else f"{value * 1000:.1f} ms"
    return f"{value:.1f} s" if value < 100 else f"{value:.0f} s"
