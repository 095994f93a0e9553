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
from dataclasses import dataclass, field
from pathlib import Path

import vl_convert as vlc
from pypdf import PdfReader, PdfWriter

from app.charts import views
from app.charts.frames import RunFrames
from app.pd import tables
from app.pd.presets import pd_scenario
from app.present.export import export_spec, joined, small_png
from app.present.fmt import fmt_seconds
from app.present.numbers import card, fmt_rate, headline_rows, narrate
from app.present.settings import settings_words
from app.present.shown import room_spec
from engine_model import STORIES, Story, TourStep


@dataclass(frozen=True)
class Preset:
    """A slide's size and type. The screen: 1920×1080 px. Print: 6 in wide at 16:9, in points (a PDF's and an
    SVG's unit), every text at least MIN_PT."""

    name: str
    size: tuple[int, int]
    pad: int
    text: dict[str, float]  # title, numbers, caption, settings
    chart: float  # the chart's axis and legend text
    chart_title: float
    y_axis: int  # room left of the plot for the y axis's labels and title
    chrome: int  # room a chart needs around its plot: its title, legend and time axis
    spacing: int
    png_scale: float  # a PNG's pixels per unit: 2× for a deck; 300 dpi in print
    caption: bool = True  # the narration on the slide (print: in the notes, for the book to set as caption)
    guides: dict = field(default_factory=dict)  # axis, legend, title spacing where Vega's (px) are too big


SCREEN = Preset("screen", (1920, 1080), pad=48,
                text={"title": 52, "numbers": 30, "caption": 30, "settings": 21}, chart=17, chart_title=22,
                y_axis=140, chrome=150, spacing=18, png_scale=2)
PRINT = Preset("print", (432, 243), pad=12, text={"title": 11, "numbers": 8, "caption": 8, "settings": 7},
               chart=7, chart_title=8, y_axis=34, chrome=46, spacing=4, png_scale=300 / 72, caption=False,
               guides={"axis": {"tickSize": 3, "labelPadding": 2, "titlePadding": 3},
                       "legend": {"symbolSize": 30, "columnPadding": 6, "rowPadding": 1, "titlePadding": 2,
                                  "labelOffset": 2, "offset": 6, "columns": 8},
                       "title": {"offset": 4, "subtitlePadding": 2}})
PRESETS = {p.name: p for p in (SCREEN, PRINT)}
SIZE = SCREEN.size
MIN_PT = 7  # the smallest text a print slide (or a lane label on screen) may carry
LINE = 1.3  # line height, in font sizes
CHARS_PER_EM = 1.95  # a line of text holds about this many characters per font size of width (sans-serif)
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

    def spec(self, preset: Preset = SCREEN, slack: tuple[int, int] = (0, 0)) -> dict:
        """The whole slide as one Vega-Lite spec, every text wrapped to the slide, the chart in the room the
        text leaves (less `slack`, what a render measured beyond the estimate): see `fitted`."""
        width = preset.size[0] - 2 * preset.pad + slack[0]
        parts = [_text(self.title, "title", width, preset, bold=True),
                 _text(self.numbers, "numbers", width, preset), None,
                 _text(self.caption, "caption", width, preset) if preset.caption else None,
                 _text(self.settings, "settings", width, preset)]
        parts = [p for i, p in enumerate(parts) if p or i == 2]
        used = sum(p["height"] for p in parts if p) + (len(parts) - 1) * preset.spacing
        own = _opaque(_sized_text({k: v for k, v in self.chart.items()
                                   if k not in ("$schema", "config", "datasets")}, preset))
        room = preset.size[1] - 2 * preset.pad - used - preset.chrome + slack[1]
        parts[2] = _fitted(own, width, room, preset)
        return {"$schema": self.chart.get("$schema"), "datasets": self.chart.get("datasets", {}),
                "config": _config(self.chart.get("config", {}), preset), "vconcat": parts,
                "spacing": preset.spacing, "padding": preset.pad, "background": "white",
                "resolve": {"scale": {"color": "independent"}}}

    def notes(self) -> str:
        """Speaker notes: what to say, the numbers, what the chart shows, the settings."""
        return (f"# {self.title}\n\n{self.caption}\n\n**Numbers** (SGLang's defaults → this step): "
                f"{self.numbers}\n\n**On screen:** {self.chart_title}.\n\n{self.settings}\n")


def _config(config: dict, preset: Preset) -> dict:
    """The chart's config as a browser draws it (legends never cut an entry), its text at the preset's
    sizes and its guides' spacing the preset's."""
    config = room_spec({"config": config})["config"]
    fonts = {"labelFontSize": preset.chart, "titleFontSize": preset.chart}
    guides = preset.guides
    return {**config, "axis": {**config["axis"], **fonts, "labelOverlap": "greedy", **guides.get("axis", {})},
            "axisY": {"labelOverlap": "greedy"},
            "legend": {**config["legend"], **fonts, **guides.get("legend", {})},
            "title": {"fontSize": preset.chart_title, **guides.get("title", {})},
            "text": {"fontSize": preset.chart}, "view": {"stroke": None},
            "aria": False}  # an image: no ARIA text per mark


def _text(text: str, role: str, width: int, preset: Preset, bold: bool = False) -> dict:
    size = preset.text[role]
    text = re.sub(r" (?=\(unchanged\))", "\u00a0", text)  # "7 → 7 (unchanged)" never parts,
    text = re.sub(r"(\d) (?=(?:ms|s|tok/s|MB)\b)", "\\1\u00a0", text)  # nor "7.0 s"
    lines = textwrap.wrap(text, max(20, int(width / size * CHARS_PER_EM))) or [""]
    mark = {"type": "text", "align": "left", "baseline": "top", "fontSize": size, "lineHeight": size * LINE,
            "color": "#222222" if role != "settings" else "#555555"}
    if bold:
        mark["fontWeight"] = "bold"
    return {"data": {"values": [{}]}, "mark": mark, "width": width, "height": round(len(lines) * size * LINE),
            "encoding": {"text": {"value": lines}, "x": {"value": 0}, "y": {"value": 0}}}


def _fitted(chart: dict, width: int, height: int, preset: Preset) -> dict:
    """The chart at the slide's width and the height left; a chart of lanes gives each lane its share."""
    out = dict(chart)
    if "hconcat" in out:
        spacing = out.get("spacing", 36) * preset.size[0] / SCREEN.size[0]
        out["spacing"] = round(spacing)
        part = (width - out["spacing"] * (len(out["hconcat"]) - 1)) // len(out["hconcat"])
        out["hconcat"] = [_fitted(v, part, height, preset) for v in out["hconcat"]]
        return out
    if "vconcat" in out:
        out["vconcat"] = [_fitted(v, width, height // len(out["vconcat"]), preset) for v in out["vconcat"]]
        return out
    out["width"] = width - preset.y_axis  # the y axis, its labels and title sit to the left of the plot
    if isinstance(out.get("height"), dict) and "step" in out["height"]:
        lanes = max(1, int(out.get("lanes", 1)))
        step = round(max(0.2, min(out["height"]["step"] * 3, height / lanes)), 2)
        out["height"] = {"step": step}
        out = _thin_strokes(_lane_labels(out, step, preset), step)
    else:
        out["height"] = max(20, height)
    out.pop("lanes", None)
    return out


def _lane_labels(node, step: int, preset: Preset):
    """Lane labels that fit their lane: smaller type, down to MIN_PT, or none when a lane is too thin."""
    if isinstance(node, list):
        return [_lane_labels(v, step, preset) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _lane_labels(v, step, preset) for k, v in node.items() if k not in ("datasets", "data")}
    out.update({k: node[k] for k in ("datasets", "data") if k in node})
    axis = out.get("encoding", {}).get("y", {}).get("axis")
    if isinstance(axis, dict) and axis.get("labels", True):
        size = min(preset.chart, step - 2)
        fitted = ({**axis, "labelFontSize": size} if size >= MIN_PT
                  else {**axis, "labels": False, "ticks": False})
        out["encoding"] = {**out["encoding"], "y": {**out["encoding"]["y"], "axis": fitted}}
    return out


FONT_KEYS = ("fontSize", "labelFontSize", "titleFontSize", "subtitleFontSize")


def _sized_text(node, preset: Preset):
    """Every text size the chart sets for itself (an axis's labels, a mark's text) at the preset's chart size,
    its title at the preset's chart title size; data is not walked."""
    if isinstance(node, list):
        return [_sized_text(v, preset) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: (v if k in ("data", "datasets") else
               preset.chart if k in FONT_KEYS and isinstance(v, int | float) else _sized_text(v, preset))
           for k, v in node.items()}
    if isinstance(out.get("title"), dict):
        title = {k: v for k, v in out["title"].items() if v != []}  # an empty subtitle takes a line
        out["title"] = {**title, "fontSize": preset.chart_title, **preset.guides.get("title", {})}
    return out


def _opaque(node):
    """A mark of one colour drawn see-through (the token ticks: near-black at 0.8) as the opaque colour it
    makes on white: a PDF gives every see-through mark a graphics state of its own (a megabyte a slide)."""
    if isinstance(node, list):
        return [_opaque(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: (v if k in ("data", "datasets") else _opaque(v)) for k, v in node.items()}
    mark = out.get("mark")
    colour = str(mark.get("color")) if isinstance(mark, dict) else ""
    if re.fullmatch(r"#[0-9a-fA-F]{6}", colour) and mark.get("opacity", 1) < 1:
        alpha = mark["opacity"]
        rgb = [round(int(colour[i:i + 2], 16) * alpha + 255 * (1 - alpha)) for i in (1, 3, 5)]
        out["mark"] = {**mark, "opacity": 1, "color": "#" + "".join(f"{c:02x}" for c in rgb)}
    return out


def _thin_strokes(node, step: float):
    """Outlines no wider than a fifth of a lane, so a thin lane keeps its colour (a stall's shade)."""
    if isinstance(node, list):
        return [_thin_strokes(v, step) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: (v if k in ("data", "datasets") else _thin_strokes(v, step)) for k, v in node.items()}
    mark = out.get("mark")
    if isinstance(mark, dict) and mark.get("strokeWidth", 0) > step / 5:
        out["mark"] = {**mark, "strokeWidth": round(step / 5, 2)}
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
    early = runs(pd_scenario(preset, values, "early", 0, 1, 1))
    if preset == "rush":
        left, right = runs(STORIES["ten_oclock_rush"].scenario(values)), early
        names = ("one engine", "PD, early")
    else:
        left, right = early, runs(pd_scenario(preset, values, "prefill_complete", 0, 1, 1))
        names = ("PD, early", "PD, prefill_complete")
    end = max(left.end_at, right.end_at)
    chart_id = "passes" if preset == "rush" else "kv-decode"
    parts = [(_lanes(_pd_chart(run, name, end, chart_id), len(run.lanes)), name)
             for run, name in zip((left, right), names, strict=True)]
    chart = joined(parts, SIZE[0] // 2)
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
def fitted(slide: Slide, preset: Preset = SCREEN) -> tuple[dict, str]:
    """The slide's spec at exactly the preset's size, and its SVG. Vega sizes a chart's axes and legends
    only when it draws them, so: draw, give the chart what the estimate missed (or what it left over), draw
    again; a chart of lanes gets whole steps, and padding takes what is left."""
    slack = (0, 0)
    for _ in range(4):
        spec = slide.spec(preset, slack)
        svg = vlc.vegalite_to_svg(spec)
        miss = _miss(svg, preset)
        if miss == (0, 0):
            return spec, svg
        if min(miss) < 0 or slack == (0, 0):
            slack = (slack[0] + miss[0], slack[1] + miss[1])
            continue
        pad = preset.pad
        spec["padding"] = {"left": pad, "top": pad, "right": pad + miss[0], "bottom": pad + miss[1]}
        svg = vlc.vegalite_to_svg(spec)
        if _miss(svg, preset) == (0, 0):
            return spec, svg
    raise ValueError(f"{slide.name}: the slide does not fit {preset.size[0]}x{preset.size[1]} "
                     f"({_miss(svg, preset)} off); update app.present.slides.PRINT / SCREEN")


def _miss(svg: str, preset: Preset) -> tuple[int, int]:
    """(width, height) the preset has beyond what `svg` takes: negative where the slide is too large."""
    w, h = (float(v) for v in re.search(r'width="([\d.]+)" height="([\d.]+)"', svg).groups())
    return preset.size[0] - round(w), preset.size[1] - round(h)


def slide_svg(slide: Slide, preset: Preset = SCREEN) -> str:
    """The slide as SVG (text stays text), exactly the preset's size."""
    return fitted(slide, preset)[1]


def slide_bytes(slide: Slide, fmt: str, preset: Preset = SCREEN) -> bytes:
    return encoded(*fitted(slide, preset), fmt, preset)


def encoded(spec: dict, svg: str, fmt: str, preset: Preset = SCREEN) -> bytes:
    """A fitted slide as SVG, PDF (one page, text selectable) or PNG (the preset's scale: 2× a screen slide,
    300 dpi a print one), each rendered by vl-convert from the same spec."""
    if fmt == "svg":
        return svg.encode()
    if fmt == "png":
        return small_png(vlc.vegalite_to_png(spec, scale=preset.png_scale))
    if fmt == "pdf":
        return vlc.vegalite_to_pdf(spec)
    raise ValueError(f"unknown slide format {fmt!r}; expected png, svg or pdf")


FORMATS = ("png", "svg", "pdf")


def slide_files(slides: list[Slide], formats: tuple[str, ...] = ("png", "svg"),
                preset: Preset = SCREEN) -> list[tuple[str, bytes]]:
    """(file name, bytes) per slide and format, each slide's speaker notes (.md) and, with PDF, the whole
    deck as one PDF of a page per step (STORY.pdf)."""
    out, pages = [], []
    for slide in slides:
        spec, svg = fitted(slide, preset)
        files = {fmt: encoded(spec, svg, fmt, preset) for fmt in formats}
        out += [(f"{slide.name}.{fmt}", data) for fmt, data in files.items()]
        out.append((f"{slide.name}.md", slide.notes().encode()))
        pages += [files["pdf"]] if "pdf" in files else []
    if pages:
        out.append((f"{slides[0].name.rsplit('-', 1)[0]}.pdf", deck_pdf(pages)))
    return out


def deck_pdf(pages: list[bytes]) -> bytes:
    """One-page PDFs as one PDF, a page each, in order (pypdf joins them; vl-convert drew them)."""
    writer = PdfWriter()
    for page in pages:
        writer.append(PdfReader(io.BytesIO(page)))
    buf = io.BytesIO()
    writer.write(buf)
    return buf.getvalue()


def slides_zip(slides: list[Slide], formats: tuple[str, ...] = ("png", "svg"),
               preset: Preset = SCREEN) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in slide_files(slides, formats, preset):
            zf.writestr(name, data)
    return buf.getvalue()


def write_slides(slides: list[Slide], folder: Path, formats: tuple[str, ...] = ("png", "svg"),
                 preset: Preset = SCREEN) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, data in slide_files(slides, formats, preset):
        (folder / name).write_bytes(data)
        paths.append(folder / name)
    return paths
