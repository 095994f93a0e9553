"""The guided tour as slides: one 16:9 slide per step — its title, the story's first two headline numbers
(SGLang's defaults → this step), the chart the step points at, its narration filled from the runs, and the
settings — plus speaker notes in Markdown.

A slide is one Vega-Lite spec (a column of views: text, the app's chart, text), so the chart is the app's and
text never overlaps it; it is rendered by vl-convert as SVG (text stays text), PNG and PDF. A PD step shows
the two deployments the step compares, side by side.
"""

from __future__ import annotations

import io
import re
import textwrap
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import vl_convert as vlc

from app.charts import views
from app.charts.frames import RunFrames
from app.pd import tables
from app.pd.presets import pd_scenario
from app.present.export import export_spec, joined, small_png
from app.present.fmt import fmt_seconds
from app.present.numbers import card, fmt_rate, headline_rows, narrate
from app.present.settings import settings_words
from app.present.shown import room_spec
from engine_model import STORIES, Story, TourStep, num_gpus

SIZE = (1920, 1080)
PAD = 48
TEXT = {"title": 52, "numbers": 30, "caption": 30, "settings": 21}  # px on the 1920-wide slide
LINE = 1.3  # line height, in font sizes
CHART_FONTS = {"axis": {"labelFontSize": 17, "titleFontSize": 18, "labelOverlap": "greedy"},
               "axisY": {"labelOverlap": "greedy"}, "legend": {"labelFontSize": 17,
               "titleFontSize": 17}, "title": {"fontSize": 22}, "view": {"stroke": None}}
CHART_CHROME = 150  # px a chart needs around its plot: its title, legend and time axis
CHARS_PER_EM = 2.1  # a line of text holds about this many characters per font size of width (sans-serif)
FOCUS = {"passes": "passes", "kv": "kv", "queue": "queue"}  # a step's focus -> the chart it shows


@dataclass
class Slide:
    name: str  # file stem
    title: str
    numbers: str
    caption: str
    settings: str
    chart: dict  # the chart's Vega-Lite spec, datasets included
    chart_title: str

    def spec(self) -> dict:
        """The whole slide as one Vega-Lite spec, SIZE wide, every text wrapped to the slide."""
        width = SIZE[0] - 2 * PAD
        parts = [_text(self.title, "title", width, bold=True), _text(self.numbers, "numbers", width),
                 None, _text(self.caption, "caption", width), _text(self.settings, "settings", width)]
        used = sum(p["height"] for p in parts if p) + 4 * SPACING
        chart = _fitted(self.chart, width, SIZE[1] - 2 * PAD - used - CHART_CHROME)
        parts[2] = {k: v for k, v in chart.items() if k not in ("$schema", "config", "datasets")}
        config = room_spec({"config": self.chart.get("config", {})})["config"]
        return {"$schema": self.chart.get("$schema"), "datasets": self.chart.get("datasets", {}),
                "config": {**config, **CHART_FONTS, "legend": {**config["legend"], **CHART_FONTS["legend"]},
                           "axis": {**config["axis"], **CHART_FONTS["axis"]}}, "vconcat": parts,
                "spacing": SPACING, "padding": PAD, "background": "white",
                "resolve": {"scale": {"color": "independent"}}}

    def notes(self) -> str:
        """Speaker notes: what to say, the numbers, what the chart shows, the settings."""
        return (f"# {self.title}\n\n{self.caption}\n\n**Numbers** (SGLang's defaults → this step): "
                f"{self.numbers}\n\n**On screen:** {self.chart_title}.\n\n{self.settings}\n")


SPACING = 18


def _text(text: str, role: str, width: int, bold: bool = False) -> dict:
    size = TEXT[role]
    lines = textwrap.wrap(text, max(20, int(width / size * CHARS_PER_EM))) or [""]
    mark = {"type": "text", "align": "left", "baseline": "top", "fontSize": size, "lineHeight": size * LINE,
            "color": "#222222" if role != "settings" else "#555555"}
    if bold:
        mark["fontWeight"] = "bold"
    return {"data": {"values": [{}]}, "mark": mark, "width": width, "height": round(len(lines) * size * LINE),
            "encoding": {"text": {"value": lines}, "x": {"value": 0}, "y": {"value": 0}}}


def _fitted(chart: dict, width: int, height: int) -> dict:
    """The chart at the slide's width and the height left; a chart of lanes gives each lane its share."""
    out = dict(chart)
    if "hconcat" in out:
        part = (width - out.get("spacing", 36) * (len(out["hconcat"]) - 1)) // len(out["hconcat"])
        out["hconcat"] = [_fitted(v, part, height) for v in out["hconcat"]]
        return out
    if "vconcat" in out:
        out["vconcat"] = [_fitted(v, width, height // len(out["vconcat"])) for v in out["vconcat"]]
        return out
    out["width"] = width - 140  # the y axis, its labels and title sit to the left of the plot
    if isinstance(out.get("height"), dict) and "step" in out["height"]:
        lanes = max(1, int(out.get("lanes", 1)))
        step = max(2, min(out["height"]["step"] * 3, height // lanes))
        out["height"] = {"step": step}
        out = _lane_labels(out, step)
    else:
        out["height"] = max(60, height)
    out.pop("lanes", None)
    return out


def _lane_labels(node, step: int):
    """Lane labels that fit their lane: smaller type, or none when a lane is too thin to name."""
    if isinstance(node, list):
        return [_lane_labels(v, step) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _lane_labels(v, step) for k, v in node.items() if k not in ("datasets", "data")}
    out.update({k: node[k] for k in ("datasets", "data") if k in node})
    axis = out.get("encoding", {}).get("y", {}).get("axis")
    if isinstance(axis, dict) and axis.get("labels", True):
        size = axis.get("labelFontSize", CHART_FONTS["axis"]["labelFontSize"])
        fitted = ({**axis, "labelFontSize": min(size, step - 2)} if step - 2 >= 7
                  else {**axis, "labels": False, "ticks": False})
        out["encoding"] = {**out["encoding"], "y": {**out["encoding"]["y"], "axis": fitted}}
    return out


def _lanes(spec: dict, count: int) -> dict:
    """Remember how many lanes a chart of lanes has, so `_fitted` can share the height among them."""
    return {**spec, "lanes": count} if isinstance(spec.get("height"), dict) else spec


# -- a story's tour ----------------------------------------------------------------------------------
Runs = Callable[[object], RunFrames]  # a scenario -> its run (a cache in the app, a dict in the CLI)


def step_values(story: Story, step: TourStep) -> dict:
    """The controls as the app sets them for a step: its settings, every other control at its default."""
    return {**story.defaults, **step.settings}


def tour_slides(story: Story, runs: Runs) -> list[Slide]:
    return [step_slide(story, i, step, runs) for i, step in enumerate(story.tour, 1)]


def step_slide(story: Story, i: int, step: TourStep, runs: Runs) -> Slide:
    values = step_values(story, step)
    now = runs(story.scenario(values))
    base = runs(story.scenario(story.baseline_values(values)))
    caption = narrate(step.say, story, base, now)
    settings = "Settings: " + settings_words(list(story.controls), values,
                                             now.summary.config["resolved"]["chunked_prefill_size"]) + "."
    name = f"{story.key}-{i:02d}"
    if step.focus == "pd":
        chart, chart_title, numbers, where = pd_pair(values, step.section.get("preset", "rush"), runs)
        return Slide(name, f"{i}. {step.title}", numbers, caption, f"{settings} {where}", chart, chart_title)
    rows = headline_rows(story, now, base)[:2]
    numbers = "   ·   ".join(f"{h.label}: {h.card}" for h in rows)
    view = _view(story, step, now)
    chart = _lanes(export_spec(view.build().to_dict(validate=False), view.title, (), SIZE[0]),
                   len(now.request_order) if view.chart_id == "tokens" else len(now.lanes))
    return Slide(name, f"{i}. {step.title}", numbers, caption, settings, chart, view.title)


def _view(story: Story, step: TourStep, run: RunFrames) -> views.View:
    if step.focus == "itl":
        return views.story_view(run, f"itl-{story.stream_group}")
    return views.story_view(run, FOCUS.get(step.focus, "tokens"))


def pd_pair(values: dict, preset: str, runs: Runs) -> tuple[dict, str, str, str]:
    """The two deployments a PD step compares: on the ten o'clock workload, one engine vs PD (`early`, as
    SGLang defaults); on the upstream replica, `early` vs `prefill_complete`. (chart, its title, the numbers
    left -> right, the deployments in words)."""
    pd = pd_scenario(preset, values, "early", 0, 1, 1)
    early, on = runs(pd), f"{num_gpus(pd)} GPUs"
    if preset == "rush":
        one = STORIES["ten_oclock_rush"].scenario(values)
        left, right = runs(one), early
        names = (f"one engine ({num_gpus(one)} GPU{'s' if num_gpus(one) > 1 else ''})", f"PD, early ({on})")
    else:
        left, right = early, runs(pd_scenario(preset, values, "prefill_complete", 0, 1, 1))
        names = (f"PD, early ({on})", f"PD, prefill_complete ({on})")
    end = max(left.end_at, right.end_at)
    chart_id = "passes" if preset == "rush" else "kv-decode"
    parts = [(_pd_chart(run, name, end, chart_id), name)
             for run, name in zip((left, right), names, strict=True)]
    chart = _lanes(joined(parts, SIZE[0] // 2), max(len(left.lanes), len(right.lanes)))
    rows = tables.tradeoff(left, right)
    numbers = "   ·   ".join(f"{r['label']}: {_pair(r['early'], r['prefill_complete'], r['unit'])}"
                               for r in rows)
    workload = "the ten o'clock workload" if preset == "rush" else "the upstream test replica"
    where = f"Left: {names[0]}; right: {names[1]} ({workload}, same requests and seed)."
    title = "Pass timeline per worker" if chart_id == "passes" else "Decode KV: in use and reserved"
    return chart, title, f"{names[0]} → {names[1]}: {numbers}", where


def _pd_chart(run: RunFrames, name: str, end: float, chart_id: str) -> dict:
    if chart_id == "passes":
        return views.timelines.pass_timeline(run.passes, None, end).to_dict(validate=False)
    for view in views.pd_views(run, name, end):
        if "-kv-decode" in view.chart_id or "-kv-engine" in view.chart_id:
            return view.build().to_dict(validate=False)
    return views.timelines.kv_occupancy(run.kv, run.retractions, None, end).to_dict(validate=False)


def _pair(before, now, unit: str) -> str:
    """Two numbers as a card shows them (app.present.numbers.card): one when they print alike."""
    value = card(before, now, fmt_seconds if unit == "s" else fmt_rate)[0]
    return value if unit == "s" else f"{value} tok/s"


# -- files -------------------------------------------------------------------------------------------
def slide_svg(slide: Slide) -> str:
    """The slide as an SVG page of exactly SIZE: the rendered spec scaled into it, text kept as text."""
    inner = vlc.vegalite_to_svg(slide.spec())
    w, h = (float(v) for v in re.search(r'width="([\d.]+)" height="([\d.]+)"', inner).groups())
    inner = re.sub(r'width="[\d.]+" height="[\d.]+"',
                   f'x="0" y="0" width="{SIZE[0]}" height="{SIZE[1]}" preserveAspectRatio="xMidYMin meet"',
                   inner, count=1)
    if "viewBox" not in inner[:400]:
        inner = inner.replace("<svg ", f'<svg viewBox="0 0 {w:g} {h:g}" ', 1)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{SIZE[0]}" height="{SIZE[1]}" '
            f'viewBox="0 0 {SIZE[0]} {SIZE[1]}"><rect width="{SIZE[0]}" height="{SIZE[1]}" fill="white"/>'
            f"{re.sub(r'<[?]xml[^>]*>', '', inner)}</svg>")


def slide_bytes(svg: str, fmt: str, scale: float = 1) -> bytes:
    if fmt == "svg":
        return svg.encode()
    if fmt == "png":
        return small_png(vlc.svg_to_png(svg, scale=scale))
    if fmt == "pdf":
        return vlc.svg_to_pdf(svg)
    raise ValueError(f"unknown slide format {fmt!r}; expected png, svg or pdf")


FORMATS = ("png", "svg", "pdf")


def slide_files(slides: list[Slide], formats: tuple[str, ...] = ("png", "svg")) -> list[tuple[str, bytes]]:
    """(file name, bytes) per slide and format, plus each slide's speaker notes (.md)."""
    out = []
    for slide in slides:
        svg = slide_svg(slide)
        out += [(f"{slide.name}.{fmt}", slide_bytes(svg, fmt)) for fmt in formats]
        out.append((f"{slide.name}.md", slide.notes().encode()))
    return out


def slides_zip(slides: list[Slide], formats: tuple[str, ...] = ("png", "svg")) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in slide_files(slides, formats):
            zf.writestr(name, data)
    return buf.getvalue()


def write_slides(slides: list[Slide], folder: Path, formats: tuple[str, ...] = ("png", "svg")) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, data in slide_files(slides, formats):
        (folder / name).write_bytes(data)
        paths.append(folder / name)
    return paths
