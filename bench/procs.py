"""CPU seconds of processes, from Linux /proc: what a benchmark's server or browser did, which other work on a
shared machine barely moves (wall-clock times do)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def cpu_seconds(pids) -> float:
    """User + system CPU seconds used so far by `pids` (and children they reaped)."""
    return sum(cpu_by_pid(pids).values())


def cpu_by_pid(pids) -> dict[int, float]:
    """{pid: user + system CPU seconds so far} for those of `pids` still alive."""
    found = {}
    for pid in pids:
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            found[pid] = sum(map(int, fields[11:15])) / os.sysconf("SC_CLK_TCK")
    return found


def descendants(pid: int | str = "self") -> list[int]:
    """Process ids of every process below `pid` (children, their children, ...)."""
    found = []
    for f in Path(f"/proc/{pid}/task").glob("*/children"):
        with contextlib.suppress(OSError):
            for child in map(int, f.read_text().split()):
                found += [child, *descendants(child)]
    return found


def with_command(pids, word: bytes) -> list[int]:
    """Those of `pids` whose command line contains `word`."""
    def has(pid: int) -> bool:
        with contextlib.suppress(OSError):
            return word in Path(f"/proc/{pid}/cmdline").read_bytes()
        return False

    return [p for p in pids if has(p)]


class CpuMeter:
    """CPU seconds that processes matching `word` below this one used between `start()` and `read()`, new
    processes (a browser's renderer for a new page) included."""

    def __init__(self, word: bytes):
        self.word, self.before = word, {}

    def start(self) -> None:
        self.before = cpu_by_pid(with_command(descendants(), self.word))

    def read(self) -> float:
        now = cpu_by_pid(with_command(descendants(), self.word))
        return sum(seconds - self.before.get(pid, 0.0) for pid, seconds in now.items())


def renderer_cpu() -> dict[tuple[int, int], float]:
    """CPU seconds so far of every thread of every Chromium renderer process below this one."""
    tick, seen = os.sysconf("SC_CLK_TCK"), {}
    for pid in descendants():
        try:
            if b"--type=renderer" not in Path(f"/proc/{pid}/cmdline").read_bytes():
                continue
            for task in Path(f"/proc/{pid}/task").iterdir():
                fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
                seen[(pid, int(task.name))] = (int(fields[11]) + int(fields[12])) / tick
        except OSError:
            continue
    return seen


def main_thread_s(before: dict, after: dict) -> tuple[float, float]:
    """Between two `renderer_cpu()` readings: the CPU seconds of the renderers' main threads (where Vega and
    React run; a process's main thread has its pid as thread id) and of all their threads."""
    used = {key: value - before.get(key, 0.0) for key, value in after.items()}
    return sum(v for (pid, tid), v in used.items() if pid == tid), sum(used.values())
