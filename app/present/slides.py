"""The guided tour as slides: one 16:9 slide per step — its title, the story's first two headline numbers
(SGLang's defaults → this step), the chart the step points at, its narration filled from the runs, and the
settings — plus speaker notes in Markdown.

A slide is one Vega-Lite spec (a column of views: text, the app's chart, text), so the chart is the app's and
text never overlaps it; it is rendered by vl-convert as SVG (text stays text), PNG and PDF. A PD step shows
the two deployments the step compares, side by side.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import vl_convert as vlc
from pypdf import PdfReader, PdfWriter

from app.charts import views
from app.charts.frames import RunFrames
from app.pd import tables
from app.pd.presets import pd_scenario
from app.present.export import export_spec, joined, small_png
from app.present.fmt import fmt_seconds
from app.present.layout import (
    SCREEN,
    SIZE,
    Preset,
    chart_config,
    fit,
    fit_chart,
    opaque,
    sized_text,
    text_view,
    with_lanes,
)
from app.present.numbers import card, fmt_rate, headline_rows, narrate
from app.present.settings import settings_words
from engine_model import STORIES, Story, TourStep, num_gpus

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
        parts = [text_view(self.title, "title", width, preset, bold=True),
                 text_view(self.numbers, "numbers", width, preset), None,
                 text_view(self.caption, "caption", width, preset) if preset.caption else None,
                 text_view(self.settings, "settings", width, preset)]
        parts = [p for i, p in enumerate(parts) if p or i == 2]
        used = sum(p["height"] for p in parts if p) + (len(parts) - 1) * preset.spacing
        own = opaque(sized_text({k: v for k, v in self.chart.items()
                                   if k not in ("$schema", "config", "datasets")}, preset))
        room = preset.size[1] - 2 * preset.pad - used - preset.chrome + slack[1]
        parts[2] = fit_chart(own, width, room, preset)
        return {"$schema": self.chart.get("$schema"), "datasets": self.chart.get("datasets", {}),
                "config": chart_config(self.chart.get("config", {}), preset), "vconcat": parts,
                "spacing": preset.spacing, "padding": preset.pad, "background": "white",
                "resolve": {"scale": {"color": "independent"}}}

    def notes(self) -> str:
        """Speaker notes: what to say, the numbers, what the chart shows, the settings."""
        return (f"# {self.title}\n\n{self.caption}\n\n**Numbers** (SGLang's defaults → this step): "
                f"{self.numbers}\n\n**On screen:** {self.chart_title}.\n\n{self.settings}\n")



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
    chart = with_lanes(export_spec(view.build().to_dict(validate=False), view.title, (), SIZE[0]),
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
    parts = [(with_lanes(_pd_chart(run, name, end, chart_id), len(run.lanes)), name)
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
    """The slide's spec at exactly the preset's size, and its SVG (app.present.layout.fit)."""
    return fit(lambda slack: slide.spec(preset, slack), preset, slide.name)


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
