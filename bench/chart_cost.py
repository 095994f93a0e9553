"""What does each chart of a page cost the browser? Its charts drawn alone, in a bare Streamlit page.

    .venv/bin/python bench/chart_cost.py [--page app_pages/forty_replies.py] [--reps 4]

Opens the page in Streamlit's AppTest and keeps each chart exactly as the browser gets it (spec and Arrow
datasets). Then serves a page with nothing but a title and the charts named in its address, and times, in
one headless Chromium with the frontend cached: the bare page, each chart alone on it, and all of them. A
chart's cost is its median time minus the bare page's (the first chart drawn also loads Vega, ~0.3 s), in
seconds and in the browser's CPU seconds (from /proc, which other work on a shared machine barely moves).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import pickle
import statistics
import sys
import tempfile
from pathlib import Path

import pyarrow as pa
from playwright.sync_api import sync_playwright
from streamlit.testing.v1 import AppTest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_app import open_view  # noqa: E402
from browser import CHROMIUM, CHROMIUM_ARGS, REPO, streamlit_server  # noqa: E402

BARE = """import pickle, streamlit as st
charts = pickle.load(open("charts.pkl", "rb"))
st.title("charts")
for key in st.query_params.get("c", "").split(","):
    if key in charts:
        st.vega_lite_chart(charts[key], width="stretch")
"""


@contextlib.contextmanager
def bare_page(charts: dict[str, dict]):
    """Serves a page with nothing but a title and those of `charts` ({key: spec}) its address names
    (`?c=key,key`; none: the bare page), and opens one headless Chromium context, 1440 x 900, to view it in.
    Yields (url, context)."""
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "charts.pkl").write_bytes(pickle.dumps(charts))
        (Path(tmp) / "bare.py").write_text(BARE)
        with streamlit_server(script="bare.py", repo=Path(tmp)) as url, sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                yield url, browser.new_context(viewport={"width": 1440, "height": 900})
            finally:
                browser.close()


def page_charts(page: str) -> list[dict]:
    """Each chart of `page` as sent, its datasets back as DataFrames (Streamlit sends them as Arrow again)."""
    at = AppTest.from_file(str(REPO / "app" / "main.py"), default_timeout=300)
    at.run()
    at.switch_page(page)
    at.run()
    found = []

    def walk(node) -> None:
        children = getattr(node, "children", None)
        if isinstance(children, dict):
            for child in children.values():
                walk(child)
        if getattr(node, "type", "") == "vega_lite_chart":
            spec = json.loads(node.proto.spec)
            spec["datasets"] = {d.name: pa.ipc.open_stream(d.data.data).read_all().to_pandas()
                                for d in node.proto.datasets}
            found.append(spec)

    walk(at._tree)
    return found


def rows(spec: dict) -> int:
    return sum(len(frame) for frame in spec["datasets"].values())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--page", default="app_pages/forty_replies.py")
    parser.add_argument("--reps", type=int, default=4)
    args = parser.parse_args()
    charts = page_charts(args.page)
    cases = {"bare page": "", **{f"chart {i} alone ({rows(c):,} rows)": str(i) for i, c in enumerate(charts)},
             f"all {len(charts)}": ",".join(str(i) for i in range(len(charts)))}
    with bare_page({str(i): chart for i, chart in enumerate(charts)}) as (url, context):
        views = {name: [] for name in cases}
        for rep in range(args.reps + 1):  # the first round loads the frontend and Vega: not counted
            for name, which in cases.items():
                view = open_view(context, f"{url}/?c={which}")
                if rep:
                    views[name].append(view)
    median = {name: {what: statistics.median(v[what] for v in seen) for what in ("s", "browser_cpu_s")}
              for name, seen in views.items()}
    bare = median["bare page"]
    print(f"{args.page}: median of {args.reps}, 1440 x 900, frontend cached, load average "
          f"{os.getloadavg()[0]:.1f}")
    for name, view in median.items():
        extra = "" if name == "bare page" else (f"   +{view['s'] - bare['s']:.2f} s, "
                                                f"+{view['browser_cpu_s'] - bare['browser_cpu_s']:.2f} CPU s")
        print(f"  {name:32s} {view['s']:5.2f} s  browser CPU {view['browser_cpu_s']:5.2f} s{extra}")


if __name__ == "__main__":
    main()
