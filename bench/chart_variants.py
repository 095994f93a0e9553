"""Which part of a chart costs the browser? Variants of one chart of a page, each alone on a bare page.

    .venv/bin/python bench/chart_variants.py [--page app_pages/ten_oclock_rush.py] [--chart 0] [--reps 8]

Takes the chart as the browser gets it (bench/chart_cost.py's `page_charts`) and makes variants: as it is,
drawn on a canvas instead of SVG, without tooltips, 900 px wide with autosize "pad" instead of "fit", and
without each of its layers in turn; beside them the floor page's chart (bench/floor_page.py) and no chart
at all. Opens each variant on a bare Streamlit page, in one headless Chromium with the frontend cached, the
variants interleaved (their order reversed every other round), and reads from /proc the CPU seconds of the
renderer process: its main thread (where Vega and React run) and all its threads (raster and compositing
too), which the browser's other processes do not blur.
Used for docs/performance.md, 2026-12-04.
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import sys
from pathlib import Path
from urllib.parse import quote

import altair as alt
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_app import open_view  # noqa: E402
from chart_cost import bare_page, page_charts  # noqa: E402


def variants(spec: dict) -> dict[str, dict | None]:
    """{name: spec} for every variant (None: the bare page without a chart)."""
    floor = alt.Chart(pd.DataFrame({"x": range(400), "y": [(i * 37) % 100 for i in range(400)]})
                      ).mark_bar().encode(x="x:Q", y="y:Q").to_dict()
    floor["datasets"] = {name: pd.DataFrame(rows) for name, rows in floor.get("datasets", {}).items()}
    out = {"no chart": None, "floor chart": floor, "as it is": spec}
    canvas = copy.deepcopy(spec)
    canvas.setdefault("usermeta", {}).setdefault("embedOptions", {})["renderer"] = "canvas"
    out["canvas"] = canvas
    out["no tooltips"] = _without_tooltips(copy.deepcopy(spec))
    fixed = copy.deepcopy(spec)  # one layout pass: no autosize "fit" (which lays the marks out twice)
    fixed["width"], fixed["autosize"] = 900, {"type": "pad"}
    out["fixed width and autosize pad"] = fixed  # (a name without a comma: ?c= lists names)
    for path in _layers(spec):
        trimmed = copy.deepcopy(spec)
        *outer, last = path
        holder = trimmed
        for i in outer:
            holder = holder["layer"][i]
        del holder["layer"][last]
        out[f"without layer {'.'.join(map(str, path))}"] = trimmed
    return out


def _layers(spec: dict, at: tuple = ()) -> list[tuple]:
    """The path of every leaf layer (a layer with a mark)."""
    found = []
    for i, layer in enumerate(spec.get("layer", [])):
        found += _layers(layer, (*at, i)) if "layer" in layer else [(*at, i)]
    return found


def _without_tooltips(node):
    if isinstance(node, dict):
        node.get("encoding", {}).pop("tooltip", None)
        for value in node.values():
            _without_tooltips(value)
    elif isinstance(node, list):
        for value in node:
            _without_tooltips(value)
    return node


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--page", default="app_pages/ten_oclock_rush.py")
    parser.add_argument("--chart", type=int, default=0, help="which of the page's charts (0: the first)")
    parser.add_argument("--reps", type=int, default=8)
    args = parser.parse_args()
    specs = variants(page_charts(args.page)[args.chart])
    with bare_page({name: spec for name, spec in specs.items() if spec is not None}) as (url, context):
        seen = {name: [] for name in specs}
        for rep in range(args.reps + 1):  # the first round loads the frontend and Vega: not counted
            for name in list(specs) if rep % 2 else list(specs)[::-1]:
                view = open_view(context, f"{url}/?c={quote(name)}")
                if rep:
                    seen[name].append((view["main_thread_s"], view["renderer_s"]))
    print(f"{args.page}, chart {args.chart}: renderer CPU seconds, median of {args.reps}, load average "
          f"{os.getloadavg()[0]:.1f}")
    for name, views in seen.items():
        main_s, all_s = (statistics.median(view[i] for view in views) for i in (0, 1))
        print(f"  {name:24s} main thread {main_s:5.2f}   all threads {all_s:5.2f}")


if __name__ == "__main__":
    main()
