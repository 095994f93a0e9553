"""How fast does the forty-replies page redraw when mixed chunk is flipped? Measured in a real browser.

    .venv/bin/python bench/bench_app.py [--flips 8]

Starts `streamlit run app/main.py` on a free port, opens /forty_replies in headless Chromium
(/usr/bin/chromium), then flips the mixed-chunk toggle repeatedly. For each flip it records:
  headline_s  click -> the headline card shows the new numbers
  redraw_s    click -> the script run has finished and every chart on the page has drawn again
The first flip to each setting is uncached (simulate + frames); later flips hit st.cache_data.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parent))
from browser import CHROMIUM, CHROMIUM_ARGS, streamlit_server, wait_idle  # noqa: E402

STATE = """() => {
  const charts = [...document.querySelectorAll('[data-testid="stVegaLiteChart"]')];
  const drawn = charts.filter(c => c.querySelector('canvas, svg')).length;
  const running = !!document.querySelector('[data-testid="stStatusWidget"]');
  const stale = document.querySelectorAll('[data-stale="true"]').length;
  const value = document.querySelector('[data-testid="stMetricValue"]');
  return [charts.length, drawn, running, stale, value ? value.innerText : ''];
}"""


def flip_once(page, toggle) -> tuple[float, float, str]:
    before = page.evaluate(STATE)[4]
    start = time.perf_counter()
    toggle.click()
    headline = None
    seen_running = False
    while True:
        num, drawn, running, stale, value = page.evaluate(STATE)
        now = time.perf_counter() - start
        seen_running = seen_running or running or stale > 0
        if headline is None and value != before:
            headline = now
        if headline is not None and not running and stale == 0 and num == drawn and num > 0:
            return headline, now, value
        if now > 60:
            raise TimeoutError("no redraw within 60 s")
        page.wait_for_timeout(15)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--flips", type=int, default=8)
    args = parser.parse_args()
    with streamlit_server() as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        t0 = time.perf_counter()
        page.goto(url + "/forty_replies")
        wait_idle(page, settle_polls=2)
        print(f"first load (cold server, includes imports and two runs): {time.perf_counter() - t0:.2f} s")
        toggle = page.locator('[data-testid="stCheckbox"]').filter(has_text="Mixed chunk").first.locator("label")
        rows = []
        for i in range(args.flips):
            page.wait_for_timeout(800)
            headline, redraw, value = flip_once(page, toggle)
            kind = "uncached" if i < 2 else "cached"
            rows.append((kind, headline, redraw))
            print(f"flip {i + 1} ({kind:8s}, mixed {'on ' if i % 2 == 0 else 'off'}): headline {headline:.2f} s, "
                  f"full redraw {redraw:.2f} s  [{value}]")
        for kind in ("uncached", "cached"):
            picked = [r for r in rows if r[0] == kind]
            if picked:
                print(f"{kind}: median headline {statistics.median(r[1] for r in picked):.2f} s, "
                      f"median full redraw {statistics.median(r[2] for r in picked):.2f} s (n={len(picked)})")
        browser.close()


if __name__ == "__main__":
    main()
