"""One chart for many precomputed runs: the app's own chart, built once over every run's rows (each tagged
with its run `r`), with two parameters the page sets — `run` (which rows each view keeps) and `end` (the
shown run's last second, the time axis' end). The chart's marks, colours, axes and tooltips are the app's,
because the app's builder drew it; only the rows it keeps switch.
"""

from __future__ import annotations

import dataclasses

import pandas as pd

from app.charts.frames import RunFrames
from app.charts.request_frames import shaded_alike

FRAMES = ("passes", "tokens", "stalls", "pauses", "chunks", "waits", "kv", "queue", "spans", "retractions",
          "itl_hist", "itl_stats")
RUN, END = "run", "end"  # the page's parameters


def distinct(runs: list[RunFrames]) -> tuple[list[RunFrames], list[int]]:
    """The distinct runs (a setting that changes nothing, such as logprobs with mixing off, repeats a run)
    and, for each given run, its index among them."""
    seen: dict[int, int] = {}
    out, index = [], []
    for run in runs:
        key = fingerprint(run)
        if key not in seen:
            seen[key] = len(out)
            out.append(run)
        index.append(seen[key])
    return out, index


def fingerprint(run: RunFrames) -> int:
    parts = [pd.util.hash_pandas_object(getattr(run, name), index=False).sum() for name in FRAMES
             if len(getattr(run, name))]
    return hash((tuple(int(p) for p in parts), run.end_at))


def merged(runs: list[RunFrames]) -> RunFrames:
    """One RunFrames whose every frame holds all runs' rows, tagged `r`; its end is the parameter END, so a
    builder's time axis ends where the shown run ends. Stalls keep one set of shades (the lowest threshold
    of the runs), and the chunk-pass yardstick, which differs per run, is left to the page's text."""
    first = runs[0]
    frames = {name: pd.concat([getattr(r, name).assign(r=i) for i, r in enumerate(runs)], ignore_index=True)
              for name in FRAMES}
    frames["stalls"], threshold = shaded_alike(frames["stalls"], [r.stall_threshold_s for r in runs])
    return dataclasses.replace(first, **frames, end_at=END, chunk_pass_s=None, stall_threshold_s=threshold)


def scoped(spec: dict, start: int, start_end: float) -> dict:
    """The spec with the page's parameters, every view keeping the shown run's rows. Selections (the app's
    click-to-move-the-cursor) are dropped: a page has no cursor. Marks carry no ARIA descriptions of their
    own (Vega's are raw field lists, thousands of them): the page names and describes each chart in words."""
    out = _filtered(spec)
    out["config"] = {**out.get("config", {}), "aria": False}
    out["params"] = [*out.get("params", []), {"name": RUN, "value": start},
                     {"name": END, "value": round(start_end, 4)}]
    return out


def _filtered(node):
    if isinstance(node, list):
        return [_filtered(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: (_filtered(v) if k in ("layer", "vconcat", "hconcat", "concat", "spec") else v)
           for k, v in node.items()}
    if "name" in out.get("data", {}) and ("mark" in out or "layer" in out):
        out["transform"] = [{"filter": f"datum.r == {RUN}"}, *out.get("transform", [])]
    if "params" in out:
        out["params"] = [p for p in out["params"] if "select" not in p]
    return out


# -- a zoomed view: the app's chart on a window of time ----------------------------------------------
MARGIN = 0.15  # of the longest stall, shown on either side of it


def window(runs: list[RunFrames]) -> tuple[float, float] | None:
    """The longest stall of any run, with a margin either side: where a page's zoomed view looks (the same
    window for every run, so flipping a setting shows the same moment). None when no run stalls."""
    stalls = [r.stalls for r in runs if len(r.stalls)]
    if not stalls:
        return None
    every = pd.concat(stalls, ignore_index=True)
    worst = every.loc[every["gap_s"].idxmax()]
    margin = MARGIN * float(worst["gap_s"])
    return round(max(0.0, worst["start_at"] - margin), 3), round(float(worst["end_at"]) + margin, 3)


def within(run: RunFrames, span: tuple[float, float]) -> RunFrames:
    """The run's request frames cut to the window: the rows that touch it, and only the requests that do."""
    t0, t1 = span
    cut = {name: _touching(getattr(run, name), t0, t1) for name in ("stalls", "chunks", "waits")}
    cut["tokens"] = run.tokens[(run.tokens["until"] >= t0) & (run.tokens["at"] <= t1)]
    shown = set().union(*(set(frame["rid"]) for frame in cut.values()))
    return dataclasses.replace(run, **cut, request_order=[r for r in run.request_order if r in shown])


def _touching(frame: pd.DataFrame, t0: float, t1: float) -> pd.DataFrame:
    return frame[(frame["end_at"] >= t0) & (frame["start_at"] <= t1)] if len(frame) else frame


def zoomed(spec: dict, span: tuple[float, float]) -> dict:
    """A chart's spec on the window: every time axis from its start to its end, marks clipped to it, and
    the request lanes those of the shown run (each run's lanes, not every run's)."""
    domain = {"domain": list(span), "nice": False}

    def walk(node):
        if isinstance(node, list):
            return [walk(v) for v in node]
        if not isinstance(node, dict):
            return node
        out = {k: (v if k in ("data", "datasets") else walk(v)) for k, v in node.items()}
        encoding = out.get("encoding", {})
        if isinstance(encoding.get("x"), dict) and encoding["x"].get("type") == "quantitative":
            encoding["x"] = {**encoding["x"], "scale": {**encoding["x"].get("scale", {}), **domain}}
        if isinstance(encoding.get("y"), dict) and "domain" in encoding["y"].get("scale", {}):
            encoding["y"] = {**encoding["y"], "scale": {k: v for k, v in encoding["y"]["scale"].items()
                                                       if k != "domain"}}
        if "mark" in out:
            mark = out["mark"] if isinstance(out["mark"], dict) else {"type": out["mark"]}
            out["mark"] = {**mark, "clip": True}
        return out

    return walk(spec)
