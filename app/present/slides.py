"""The guided tour as slides: one 16:9 slide per step — its title, the story's first two headline numbers
(SGLang's defaults → this step), the chart the step points at, its narration filled from the runs, and the
settings — plus speaker notes in Markdown.

A slide is one Vega-Lite spec (a column of views: text, the app's chart, text), so the chart is the app's and
text never overlaps it; it is rendered by vl-convert as SVG (text stays text), PNG and PDF. A PD step shows
the two deployments the step compares, side by side.

The slides keep the page's deployment as the app's tour does (app.story.tour.apply_step): a step sets its
own settings and puts SGLang's flags and the story's workload back to their defaults, and keeps the GPU,
model, TP, precision, seed and any edited figure the page has. Every settings line names the model on its
GPUs; a step on the upstream replica names the replica's own deployment, and only that.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import altair as alt
import vl_convert as vlc
from pypdf import PdfReader, PdfWriter

from app.charts import timelines, views
from app.charts.frames import RunFrames
from app.pd import tables
from app.pd.presets import pd_scenario
from app.present.export import export_spec, joined, small_png
from app.present.fmt import fmt_seconds
from app.present.layout import (
    GREY_SAFE,
    MIN_PLOT,
    SCREEN,
    SIZE,
    Panel,
    Preset,
    Text,
    chart_config,
    compose,
    fit_chart,
    opaque,
    recoloured,
    sized_text,
    text_block,
    with_lanes,
)
from app.present.numbers import card, fmt_rate, headline_rows, narrate
from app.present.settings import model_words, run_settings
from app.story import cursor
from engine_model import STORIES, InputError, Story, TourStep, num_gpus, ranged

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
    compared: str = "SGLang's defaults → this step"  # what the numbers set side by side

    def layout(self, preset: Preset = SCREEN) -> tuple[list[tuple[float, float, Text]], list[Panel]]:
        """The slide laid out on its page by design, from the page box down: the texts wrapped to the width
        at the preset's sizes (each block's height is its lines'), and the chart's panels filling exactly the
        room they leave (app.present.layout.fit_chart). (text blocks at (x, y), chart panels at (x, y))."""
        pad, gap = preset.pad, preset.spacing
        width = preset.size[0] - 2 * pad
        above = [text_block(self.title, "title", width, preset, bold=True),
                 text_block(self.numbers, "numbers", width, preset)]
        below = [text_block(self.caption, "caption", width, preset)] if preset.caption else []
        below.append(text_block(self.settings, "settings", width, preset))
        texts, y = [], pad
        for block in above:
            texts.append((pad, y, block))
            y += block.height + gap
        tail = sum(b.height + gap for b in below)
        room = preset.size[1] - pad - y - tail
        if room < preset.chrome + MIN_PLOT[preset.name]:
            raise ValueError(f"{self.name}: the text leaves the chart {room:.0f} of {preset.size[1]} units; "
                             "shorten the slide's text")
        chart = opaque(sized_text(self.chart, preset))
        chart = recoloured(chart, GREY_SAFE) if preset.name == "print" else chart
        chart = {**chart, "config": chart_config(chart.get("config", {}), preset)}
        panels = [(pad + x, y + py, w, h, spec)
                  for x, py, w, h, spec in fit_chart(chart, width, room, preset)]
        y += room + gap
        for block in below:
            texts.append((pad, y, block))
            y += block.height + gap
        return texts, panels

    def chart_spec(self, preset: Preset = SCREEN) -> list[Panel]:
        """The chart alone, as the slide draws it (its panels at their places on the slide)."""
        return self.layout(preset)[1]

    def notes(self) -> str:
        """Speaker notes: what to say, the numbers, what the chart shows, the settings."""
        return (f"# {self.title}\n\n{self.caption}\n\n**Numbers** ({self.compared}): "
                f"{self.numbers}\n\n**On screen:** {self.chart_title}.\n\n{self.settings}\n")



# -- a story's tour ----------------------------------------------------------------------------------
Runs = Callable[[object], RunFrames]  # a scenario -> its run (a cache in the app, a dict in the CLI)


def step_values(story: Story, step: TourStep, values: dict | None = None) -> dict:
    """The controls as the app's tour sets them for a step (app.story.tour.apply_step): the step's settings,
    every flag and every control of the story's own row at its default, and the rest — GPU, model, TP,
    precision, seed, the GPU's and model's figures, the cost figures — as on the page (`values`; None: the
    story's defaults)."""
    page = {**story.defaults, **(values or {})}
    return {c.key: step.settings.get(c.key, c.default)
            if c.is_flag or c.key in step.settings or c.where == "main" else page[c.key]
            for c in story.controls}


def tour_slides(story: Story, runs: Runs, values: dict | None = None) -> list[Slide]:
    return [step_slide(story, i, step, runs, values) for i, step in enumerate(story.tour, 1)]


def step_slide(story: Story, i: int, step: TourStep, runs: Runs, page: dict | None = None,
               deck: str | None = None) -> Slide:
    """Step `step`, the `i`th slide of deck `deck` (None: the story's own deck)."""
    values = step_values(story, step, page)
    scenario = story.scenario(values)
    now = runs(scenario)
    base = runs(story.scenario(story.baseline_values(values, step.versus)))
    caption = narrate(step.say, story, base, now, step.cursor)
    settings = "Settings: " + " · ".join(run_settings(story, values, now.summary.config)) + "."
    name = f"{deck or story.key}-{i:02d}"
    if step.focus == "pd":
        preset = step.section.get("preset", "rush")
        from app.pd.narration import step_words  # here: app.pd.narration imports app.present's package

        caption = f"{caption} {step_words(preset, values, runs)}".strip()  # as the app's tour says it
        chart, chart_title, numbers, where = pd_pair(values, preset, runs)
        if preset != "rush":  # another deployment: its own words, not the page's
            settings = ""
        return Slide(name, f"{i}. {step.title}", numbers, caption, f"{settings} {where}".strip(), chart,
                     chart_title, "left → right")
    ranges = ranged(scenario)
    rows = headline_rows(story, now, base, ranges)[:2]
    numbers = "   ·   ".join(f"{h.label}: {h.card}" + (f" (range {h.band})" if h.band else "") for h in rows)
    if ranges is not None and any(h.band for h in rows):
        settings = f"{settings} {ranges.band.words()}"
    view = _view(story, step, now)
    spec = export_spec(view.build().to_dict(validate=False), view.title, (), SIZE[0], cursor=True)
    chart = with_lanes(spec, len(now.request_order) if view.chart_id == "tokens" else len(now.lanes))
    return Slide(name, f"{i}. {step.title}", numbers, caption, settings, chart, view.title)


def _view(story: Story, step: TourStep, run: RunFrames) -> views.View:
    """The chart a step points at as the app's tour draws it (app.story.timeline): the cursor at the step's
    pass (`step.cursor`), the lanes that pass touched marked on the token streams, and for a step that
    keeps what comes next for later (`veiled`) everything past the cursor veiled — on whatever time chart
    the step shows. The gaps histogram has no time axis: no cursor."""
    if step.focus == "itl":
        return views.story_view(run, f"itl-{story.stream_group}")
    chart_id = FOCUS.get(step.focus, "tokens")
    if not len(run.iterations):
        return views.story_view(run, chart_id)
    row = run.iterations.iloc[cursor.resolve(run.iterations, step.cursor)]
    at = float(row["start_at"])
    index = int(row["index"]) if len(run.lanes) == 1 else None
    veil = at if step.veiled else None
    view = next(v for v in views.story_views(run, at, index, cursor.marked_lanes(run, row), veil)
                if v.chart_id == chart_id)
    if veil is None or chart_id == "tokens" or veil >= run.end_at:
        return view
    return view._replace(build=lambda: alt.layer(view.build(), timelines.veil_layer(veil, run.end_at)))


# The PD section as a tour step sets it (the tour puts it back to app.pd.params.DEFAULTS): the preset's decode
# KV cap, one prefill and one decode worker, the workers splitting the story's GPUs.
PD_LAYOUT = (0, 1, 1)


def pd_pair(values: dict, preset: str, runs: Runs) -> tuple[dict, str, str, str]:
    """The two deployments a PD step compares: on the ten o'clock workload (the page's deployment), one
    engine vs PD (`early`, as SGLang defaults); on the upstream replica (its own deployment), `early` vs
    `prefill_complete`. (chart, its title, the numbers left -> right, the deployments in words)."""
    if preset == "rush":
        one = STORIES["ten_oclock_rush"].scenario(values)
        try:
            pd = pd_scenario(preset, values, "early", *PD_LAYOUT)
        except InputError as err:  # PD cannot run on this deployment: the one engine, and why
            return _refused_pd(one, runs(one), err)
        left, right = runs(one), runs(pd)
        names = (f"one engine ({_gpus(one)})", f"PD, early ({_gpus(pd)})")
        where = (f"Left: {tables.deployment(one)}; right: PD, early, {tables.deployment(pd)} (the ten "
                 f"o'clock workload on {model_words(one)}, same requests and seed).")
    else:
        pd = pd_scenario(preset, values, "early", *PD_LAYOUT)
        left, right = runs(pd), runs(pd_scenario(preset, values, "prefill_complete", *PD_LAYOUT))
        names = (f"PD, early ({_gpus(pd)})", f"PD, prefill_complete ({_gpus(pd)})")
        cap = pd.pd.decode_kv_cap_per_rank
        where = (f"The upstream test replica's own deployment: {model_words(pd)}, {tables.deployment(pd)}"
                 + (f"; decode KV capped at {cap:,} tokens per rank" if cap else "")
                 + ". Left: PD, early; right: PD, prefill_complete (same requests and seed).")
    end = max(left.end_at, right.end_at)
    chart_id = "passes" if preset == "rush" else "kv-decode"
    parts = [(with_lanes(_pd_chart(run, name, end, chart_id), len(run.lanes)), name)
             for run, name in zip((left, right), names, strict=True)]
    chart = joined(parts, SIZE[0] // 2)
    rows = tables.tradeoff(left, right)
    numbers = "   ·   ".join(f"{r['label']}: {_pair(r['early'], r['prefill_complete'], r['unit'])}"
                               for r in rows)
    title = "Pass timeline per worker" if chart_id == "passes" else "Decode KV: in use and reserved"
    return chart, title, f"{names[0]} → {names[1]}: {numbers}", where


def _gpus(scenario) -> str:
    n = num_gpus(scenario)
    return f"{n} GPU{'s' if n > 1 else ''}"


def _refused_pd(one, run: RunFrames, err: InputError) -> tuple[dict, str, str, str]:
    """A PD step where PD cannot run on the page's deployment: the one engine's passes, and why not."""
    chart = joined([(with_lanes(_pd_chart(run, "one engine", run.end_at, "passes"), len(run.lanes)),
                     "one engine")], SIZE[0])
    numbers = f"one engine ({_gpus(one)}); PD cannot run on this deployment: {err.problem}"
    where = f"{tables.deployment(one).capitalize()}, {model_words(one)}."
    return chart, "Pass timeline: one engine", numbers, where


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
def fitted(slide: Slide, preset: Preset = SCREEN) -> str:
    """The slide as one SVG exactly its preset's size, laid out by design (`Slide.layout`): each chart panel
    drawn once by vl-convert at its box's size, nested in the page beside the text."""
    texts, panels = slide.layout(preset)
    return compose(preset.size, texts, [(x, y, vlc.vegalite_to_svg(spec)) for x, y, _, _, spec in panels])


def slide_svg(slide: Slide, preset: Preset = SCREEN) -> str:
    """The slide as SVG (text stays text), exactly the preset's size."""
    return fitted(slide, preset)


def slide_bytes(slide: Slide, fmt: str, preset: Preset = SCREEN) -> bytes:
    return encoded(fitted(slide, preset), fmt, preset)


def encoded(svg: str, fmt: str, preset: Preset = SCREEN) -> bytes:
    """A fitted slide as SVG, PDF (one page, text selectable) or PNG (2× a screen slide; at 300 dpi a print
    one, with the DPI written in the file's pHYs chunk so a layout program places it at its size), each
    from the same SVG."""
    if fmt == "svg":
        return svg.encode()
    if fmt == "png":
        if preset.dpi:
            # resvg floors the pixel size, and 432 pt × 300 / 72 in floating point lands a hair under 1,800
            return small_png(vlc.svg_to_png(svg, ppi=preset.dpi + 1e-3), preset.dpi)
        return small_png(vlc.svg_to_png(svg, scale=preset.png_scale))
    if fmt == "pdf":
        return vlc.svg_to_pdf(svg)
    raise ValueError(f"unknown slide format {fmt!r}; expected png, svg or pdf")


def chart_svg(slide: Slide, preset: Preset = SCREEN) -> str:
    """The slide's chart alone, as SVG the size of the box the slide gives it (its title, legend, axes and
    plot; no slide title, numbers or settings): for a format that sets the slide's words itself."""
    _, panels = slide.layout(preset)
    x0, y0 = min(p[0] for p in panels), min(p[1] for p in panels)
    size = (round(max(p[0] + p[2] for p in panels) - x0), round(max(p[1] + p[3] for p in panels) - y0))
    return compose(size, [], [(x - x0, y - y0, vlc.vegalite_to_svg(spec)) for x, y, _, _, spec in panels])


def still(slide: Slide, fmt: str = "svg", preset: Preset = SCREEN, part: str = "slide") -> bytes:
    """One tour step's still as `fmt` (svg, png, pdf) bytes: the whole slide (`part="slide"`), as the deck
    carries it, or its chart alone (`part="chart"`), for another deck format (a PowerPoint slide's picture,
    its title and notes set as text). The slides of a story: `app.present.story_slides`."""
    if part not in ("slide", "chart"):
        raise ValueError(f"unknown still part {part!r}; expected slide or chart")
    return encoded(fitted(slide, preset) if part == "slide" else chart_svg(slide, preset), fmt, preset)


FORMATS = ("png", "svg", "pdf")


def slide_files(slides: list[Slide], formats: tuple[str, ...] = ("png", "svg"),
                preset: Preset = SCREEN) -> list[tuple[str, bytes]]:
    """(file name, bytes) per slide and format, each slide's speaker notes (.md) and, with PDF, the whole
    deck as one PDF of a page per step (STORY.pdf)."""
    out, pages = [], []
    for slide in slides:
        svg = fitted(slide, preset)
        files = {fmt: encoded(svg, fmt, preset) for fmt in formats}
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
