"""A story as one self-contained page: the app's charts over a grid of precomputed runs, the headline table,
radio buttons that switch the runs, no server and no network.

The file is polyglot: well-formed XHTML (so an EPUB 3 book can carry it as a content document) that a
browser also reads as HTML (a blog links it or embeds it in an <iframe>). Scripts sit in CDATA sections behind
`//` comments, which both parsers accept. Each chart's container holds a PNG of the page's first setting, so
a reader with scripting off (many e-readers) still sees the figure; the script replaces it with the live
chart. Everything is scoped by the figure's id, so several figures can share one page.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import html
import json
import re
from collections.abc import Callable
from dataclasses import dataclass

import altair as alt

from app.charts import views
from app.charts.frames import RunFrames
from app.present import described, notices, playback
from app.present import spec as scope
from app.present.export import export_spec, render
from app.present.fmt import fmt_seconds
from app.present.grid import Grid
from app.present.numbers import headline_rows, percentile_trap, prices, shown_pair
from app.present.pack import UNPACK_JS, pack
from app.present.shown import room_spec
from app.present.stills import Pair, in_text, story_pair

CHARTS = {  # story -> the charts its page shows, in order
    "forty_replies": ("tokens", "wait", "passes"),
    "other_stall": ("tokens", "wait", "kv", "passes"),
    "ten_oclock_rush": ("tokens", "wait", "passes"),
    "real_traffic": ("tokens", "wait", "passes"),
}
ZOOM = {"real_traffic": "tokens"}  # story -> the chart its page also shows zoomed on the longest stall
FALLBACK_WIDTH = 720  # px of the image a reader without scripts sees


@dataclass
class Chart:
    chart_id: str
    title: str
    caption: str
    spec: dict  # Vega-Lite, datasets by name (the page holds them once)
    image: bytes  # PNG of the first setting
    alt: str
    words: list[str]  # the chart in words, per distinct run (app.present.described)


@dataclass
class Shown:
    """What one setting shows beside its charts: its run, its tables of numbers, a sentence of them."""

    key: str  # the setting as the page spells it: axis indices joined by '|'
    run: RunFrames
    tables: list[dict]  # {"head": [...], "rows": [[...]], "bold": column index, "title": its name}
    summary: str
    trap: str = ""  # the app's "Read p99 with care" note, where p99 hides the stall (numbers.percentile_trap)


@dataclass
class Figure:
    """Everything one page shows, before it becomes HTML (tests read it)."""

    uid: str
    title: str
    teaser: str
    note: str
    axes: list[dict]  # {"name", "label", "labels", "start"}
    cells: dict[str, dict]  # setting key -> {"run", "tables", "summary"}
    ends: list[float]
    charts: list[Chart]
    datasets: dict[str, list[dict]]
    playback: dict | None = None  # {"runs": panes per distinct run, "threshold": s}: app.present.playback
    pair: Pair | None = None  # the key switch both ways, for a reader without scripts (app.present.stills)
    source: str = ""  # what ran, for a credit line: the model, SGLang's version, the deployment, the seed
    # setting key -> each chart's own view of that setting and what the page does to its spec (the stills)
    own: Callable[[str], list[tuple[views.View, Callable]]] | None = None
    sources: tuple[str, ...] = ()  # the data files its runs read (their notices travel with the page)

    @property
    def first(self) -> dict:
        return self.cells["|".join(str(a["start"]) for a in self.axes)]


def build_figure(uid: str, title: str, teaser: str, note: str, axes: list[dict], shown: list[Shown],
                 views_of: Callable[[RunFrames], list[views.View]],
                 panes_of: Callable[[RunFrames], list[dict]] | None = None,
                 zoom: str | None = None, contrast: str = "", pair: Pair | None = None,
                 source: str = "") -> Figure:
    """Each distinct run once, each chart of `views_of` built once over all of them (every row tagged with
    its run), and a PNG of the first setting's charts for readers without scripts, its alt text the first
    setting's numbers and `contrast` (what another setting gives). `zoom`: a chart id of `views_of` drawn
    once more on the window of the longest stall (app.present.spec.window)."""
    runs, run_of = scope.distinct([s.run for s in shown])
    first_key = "|".join(str(a["start"]) for a in axes)
    first = next(i for i, s in enumerate(shown) if s.key == first_key)
    start = run_of[first]
    ends = [round(float(r.end_at), 4) for r in runs]
    cells = {s.key: {"run": r, "tables": s.tables, "summary": s.summary, "trap": s.trap}
             for s, r in zip(shown, run_of, strict=True)}
    span = scope.window(runs) if zoom else None
    datasets: dict[str, list[dict]] = {}
    charts = []
    for (view, fit, cut), (own, *_) in zip(_charts(views_of, scope.merged(runs), span, zoom),
                                           _charts(views_of, shown[first].run, span, zoom), strict=True):
        with alt.data_transformers.enable("default", max_rows=None):  # every run's rows, by design
            built = contained(fit(room_spec(view.build().to_dict(validate=False))))
        datasets.update(built.pop("datasets", {}))
        alt_text = f"{view.title}. {shown[first].summary} {contrast}".rstrip()
        charts.append(Chart(view.chart_id, view.title, own.caption, scope.scoped(built, start, ends[start]),
                            fallback_png(own, fit), alt_text,
                            [described.chart_words(view.chart_id, cut(r)) for r in runs]))
    replies = None if panes_of is None else {"runs": [panes_of(r) for r in runs], "words": playback.TEXT,
                                             "threshold": min(r.stall_threshold_s for r in runs)}
    run_at = {s.key: s.run for s in shown}

    def own_views(key: str) -> list[tuple[views.View, Callable]]:
        return [(view, fit) for view, fit, _ in _charts(views_of, run_at[key], span, zoom)]

    return Figure(uid, title, teaser, note, axes, cells, ends, charts, datasets, replies, pair, source,
                  own_views)


def _charts(views_of, run: RunFrames, span: tuple[float, float] | None, zoom: str | None):
    """Per chart of `views_of` on `run` (one run, or every run merged): the view, what its spec needs to fit
    and what of a run it shows; with `span`, the `zoom` chart once more, on that window."""
    out = [(v, _same, _same) for v in views_of(run)]
    if span is None:
        return out
    t0, t1 = span
    title = f"Zoomed in: {fmt_seconds(t0)} to {fmt_seconds(t1)}, the longest stall on this page"
    caption = (f"The chart above, from {fmt_seconds(t0)} to {fmt_seconds(t1)}: only the requests that "
               "were running or waiting then, one lane each. The same window for every setting, so a "
               "flip shows the same moment.")
    zoomed = next(v for v in views_of(scope.within(run, span)) if v.chart_id == zoom)
    at = next(i for i, (v, *_) in enumerate(out) if v.chart_id == zoom) + 1
    out.insert(at, (zoomed._replace(chart_id=f"zoom-{zoom}", title=title, caption=caption),
                    lambda spec: scope.zoomed(spec, span), lambda r: scope.within(r, span)))
    return out


def contained(spec: dict) -> dict:
    """A chart as wide as its box, said so that Vega-Lite compiles it without a warning: Vega-Lite turns a
    "container" width into fit-x autosizing and then warns that it drops fit-y on a chart whose height is a
    step per lane (every lane chart), though it never asked for fit-y. The page's spec has a fixed width and
    pad autosizing instead, flagged in `usermeta`, and the page's script puts back exactly what "container"
    compiles to (fit-x over the container's width; MOUNT_JS `contain`)."""
    if spec.get("width") != "container":
        return spec
    return {**spec, "width": FALLBACK_WIDTH, "autosize": {"type": "pad"},
            "usermeta": {**spec.get("usermeta", {}), "width": "container"}}


def _same(value):
    return value


def story_figure(grid: Grid, setup: str, source: str = "") -> Figure:
    """A story's grid of runs as one figure (`source`: what ran, for its credit line)."""
    story = grid.story
    shown = []
    for cell in grid.cells:
        rows = headline_rows(story, cell.run, cell.base, cell.ranges)
        table = {"head": ["Headline", "SGLang defaults", "this setting"], "bold": 2,
                 "title": "The headline numbers: SGLang's defaults and this setting",
                 "rows": [[h.label, h.before, h.now_banded] for h in rows]}
        same = same_setting(cell.run, cell.base)
        costs = {"head": ["What it costs", "SGLang defaults", "this setting"], "bold": 2,  # the app's cards
                 "title": "What the setting costs: SGLang's defaults and this setting",
                 "rows": [[p.label, *shown_pair(p.fmt, p.before, p.after, same)]
                          for p in prices(story, cell.base, cell.run)]}
        trap = percentile_trap(story.stream_group, cell.run if same else cell.base, cell.run) or ""
        shown.append(Shown(cell.key, cell.run, [table, costs], summary_text(rows, cell.run), trap))
    uid = "ww-" + hashlib.sha1(f"{story.key}|{grid.first.key}|{grid.sets}".encode()).hexdigest()[:8]
    axes = [{"name": a.control.key, "label": a.control.label, "labels": [a.label(v) for v in a.values],
             "start": i} for a, i in zip(grid.axes, grid.start, strict=True)]
    note = (f"Every setting above was simulated in advance ({setup}); the buttons switch between the runs. "
            "Numbers beside SGLang's defaults use the same requests and seed. The charts are the Who Waits "
            "app's.")
    banded = next((c.ranges for c in grid.cells if c.ranges is not None), None)
    if banded is not None:
        note = f"{note} {banded.band.words()}"
    charts = CHARTS.get(story.key, ("tokens", "wait", "passes"))
    figure = build_figure(uid, story.title, story.teaser, note, axes, shown,
                          lambda run: [views.story_view(run, c) for c in charts],
                          lambda run: playback.panes(run, story.stream_group, story.long_group),
                          ZOOM.get(story.key), contrast(grid), story_pair(grid), source)
    trace = story.scenario(grid.first.values, grid.sets).workload.trace
    figure.sources = (str(trace.path),) if trace is not None else ()
    return figure


def same_setting(run: RunFrames, base: RunFrames) -> bool:
    """Two runs of one setting: their configs differ at most in where a value came from ("auto" or set), as
    the defaults' chunk size and the grid's 8,192 do; the app's cards then read one number."""
    def plain(config: dict) -> dict:
        return {k: {n: v for n, v in part.items() if not n.endswith("_source")} if k == "resolved" else part
                for k, part in config.items()}
    return plain(run.summary.config) == plain(base.summary.config)


def contrast(grid: Grid) -> str:
    """The first headline at the other values of the first axis, the others where the page opens: "With
    mixed chunk on: longest pause, the 40 streams: 1.8 s." (the headline an image's alt text states)."""
    axis, story = grid.axes[0], grid.story
    parts = []
    for cell in grid.cells:
        if cell.index[1:] == grid.start[1:] and cell.index[0] != grid.start[0]:
            row = headline_rows(story, cell.run, cell.base, cell.ranges)[0]
            parts.append(f"with {axis.control.label.lower()} {axis.label(cell.values[axis.control.key])}: "
                         f"{row.label[:1].lower()}{row.label[1:]}: {row.now_banded}")
    said = "; ".join(parts)
    return f"{said[:1].upper()}{said[1:]}." if said else ""


def summary_text(rows, run) -> str:
    """The headline in a sentence, for the alt text and the text under the chart."""
    parts = [f"{h.label}: {h.now_banded}" + ("" if h.now == h.before else f" (SGLang's defaults: {h.before})")
             for h in rows]
    yardstick = views.timelines.chunk_pass_words(run.chunk_pass_s)
    return "; ".join(parts) + "." + (f" For scale, {yardstick}." if yardstick else "")


def fallback_png(view: views.View, fit=_same) -> bytes:
    spec = export_spec(fit(view.build().to_dict(validate=False)), view.title, (), FALLBACK_WIDTH)
    return render(spec, "png", scale=1)


# -- HTML --------------------------------------------------------------------------------------------
CSS = """
.ww-figure { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #222;
  max-width: 1100px; margin: 0 auto; box-sizing: border-box; }
.ww-figure * { box-sizing: border-box; }
.ww-figure h1 { font-size: 1.4rem; margin: 0 0 .3rem; }
.ww-figure p { margin: .3rem 0 .6rem; line-height: 1.4; }
.ww-controls { display: flex; flex-wrap: wrap; gap: .4rem 1.2rem; margin: .6rem 0; break-inside: avoid;
  break-after: avoid; }
.ww-controls fieldset { border: 1px solid #ccc; border-radius: 6px; padding: .2rem .6rem .4rem; margin: 0;
  min-width: 0; max-width: 100%; box-sizing: border-box; }
.ww-controls legend { font-weight: 600; padding: 0 .3rem; }
.ww-controls label { display: inline-block; margin: .15rem .7rem .15rem 0; max-width: 100%; }
.ww-numbers { border-collapse: collapse; margin: .4rem 0 .8rem; width: 100%; max-width: 40rem; }
.ww-numbers th, .ww-numbers td { text-align: left; padding: .2rem .6rem .2rem 0;
  border-bottom: 1px solid #eee; vertical-align: top; }
.ww-numbers td.now { font-weight: 700; }
.ww-numbers td { white-space: nowrap; }
.ww-numbers .ww-prose { white-space: normal; min-width: 12rem; }
.ww-trap { font-size: .9rem; border-left: 3px solid #0072B2; padding: .2rem .6rem; background: #f3f8fc; }
.ww-credits { font-size: .8rem; color: #444; margin: .8rem 0; }
.ww-credits summary { cursor: pointer; }
.ww-credits pre { white-space: pre-wrap; font-size: .75rem; }
@media print {  /* the figure on paper: the charts, images and numbers; no buttons, no playback */
  .ww-controls, .ww-live, .ww-play, .ww-still, .ww-words { display: none !important; }
  .ww-table { overflow: visible; }
  .ww-figure .ww-printed { display: block; }
  .ww-numbers td { white-space: normal; }
  .ww-chart svg, .ww-chart img { max-width: 100%; height: auto; }
  .ww-figure { max-width: none; color: #000; }
}
.ww-table { max-width: 100%; overflow-x: auto; }
.ww-chart { width: 100%; min-width: 0; margin: .8rem 0 .2rem; break-inside: avoid; }
.ww-chart img { max-width: 100%; height: auto; }
.ww-chart .ww-live-chart { display: block; width: 100%; }  /* vega-embed makes its box inline-block */
.ww-chart-title { font-weight: 600; margin: .9rem 0 0; break-after: avoid; }
.ww-words { font-size: .85rem; margin: 0 0 .6rem; }
.ww-words summary { cursor: pointer; color: #333; }
.ww-words summary:focus-visible, .ww-controls input:focus-visible { outline: 2px solid #0072B2;
  outline-offset: 2px; }
.ww-caption, .ww-note { color: #555; font-size: .85rem; }
.ww-summary { font-size: .95rem; }
.ww-static .ww-controls, .ww-static .ww-live { display: none; }
.ww-still { display: none; font-style: italic; }
.ww-printed { display: none; font-weight: 600; }
.ww-undrawn { font-size: .85rem; font-style: italic; color: #555; margin: .2rem 0 0; }
.ww-static .ww-still { display: block; }
.ww-still-only { display: none; }
.ww-static .ww-still-only { display: block; }
.ww-numbers.ww-pair td { white-space: normal; }
.ww-shot { margin: .2rem 0 .6rem; break-inside: avoid; }
.ww-shot figcaption { font-weight: 600; font-size: .9rem; margin: 0 0 .2rem; }
.ww-shot img { width: 100%; height: auto; }
"""

TEMPLATE = """<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE html>
<html xmlns="http://www.w3.org/1999/xhtml" lang="en" xml:lang="en">
<head>
<meta charset="utf-8"/>
<meta name="viewport" content="width=device-width, initial-scale=1"/>
<title>{title}</title>
<style>/*<![CDATA[*/{css}{play_css}/*]]>*/</style>
</head>
<body>
<main>
{body}
</main>
{scripts}
<script>//<![CDATA[
wwMount({data});
//]]></script>
</body>
</html>
"""

PROSE = 40  # characters: a longer table cell is prose and wraps; a shorter one (a number) never breaks
MOUNT_JS = """var PROSE = PROSE_CHARS;
function wwMount(fig) {
  var root = document.getElementById(fig.uid), shown = [], play = null;
  root.classList.remove('ww-static');  // scripting: the controls and the playback show
  var box = root.querySelector('.ww-play');
  if (box && fig.playback) {
    play = wwPlayback(box, {runs: fig.playback.runs, run: fig.cells[fig.axes.map(function (a) {
      return String(a.start); }).join('|')].run, start: 0, threshold: fig.playback.threshold,
      words: fig.playback.words});
  }
  function choice(axis) {
    var on = root.querySelector('input[name="' + fig.uid + '-' + axis.name + '"]:checked');
    return on ? on.value : String(axis.start);
  }
  function cell() { return fig.cells[fig.axes.map(choice).join('|')]; }
  function fit() {  // inside a frame: tell the parent page how tall the figure is (docs/figure.md)
    if (window.parent !== window) {
      var height = Math.ceil(document.documentElement.getBoundingClientRect().height);
      window.parent.postMessage({whoWaits: fig.uid, height: height}, '*');
    }
  }
  function show() {
    var c = cell();
    root.querySelectorAll('.ww-numbers:not(.ww-pair)').forEach(function (table, t) {
      var spec = c.tables[t], body = table.querySelector('tbody'), head = table.querySelector('thead tr');
      head.innerHTML = '';
      spec.head.forEach(function (text) {
        var th = document.createElement('th');
        th.setAttribute('scope', 'col');
        th.textContent = text;
        head.appendChild(th);
      });
      body.innerHTML = '';
      spec.rows.forEach(function (r) {
        var tr = document.createElement('tr');
        r.forEach(function (text, i) {
          var el = document.createElement(i === 0 ? 'th' : 'td');
          el.textContent = text;
          if (i === 0) el.setAttribute('scope', 'row');
          if (i === spec.bold) el.className = 'now';
          if (text.length > PROSE) el.classList.add('ww-prose');
          tr.appendChild(el);
        });
        body.appendChild(tr);
      });
    });
    root.querySelector('.ww-summary').textContent = c.summary;
    var printed = root.querySelector('.ww-printed');  // on paper, where the radio buttons are not
    if (printed) printed.textContent = 'Setting shown: ' + fig.axes.map(function (a) {
      return a.label.toLowerCase() + ' ' + a.labels[+choice(a)]; }).join('; ') + '.';
    var trap = root.querySelector('.ww-trap');
    if (trap) { trap.textContent = c.trap || ''; trap.hidden = !c.trap; }
    fig.charts.forEach(function (chart) {
      var words = document.getElementById(fig.uid + '-' + chart.id + '-words');
      if (words) words.textContent = chart.words[c.run];
    });
    if (play) play.setRun(c.run);
    Promise.all(shown.map(function (view) {
      return view.signal('run', c.run).signal('end', fig.ends[c.run]).runAsync();
    })).then(fit, fit);
  }
  function contain(vg) {  // what Vega-Lite compiles width "container" to (page.contained)
    var size = 'isFinite(containerSize()[0]) ? containerSize()[0] : 300';
    delete vg.width;
    vg.autosize = {type: 'fit-x', contains: 'padding'};
    vg.signals = [{name: 'width', init: size, on: [{update: size, events: 'window:resize'}]}]
      .concat(vg.signals || []);
    return vg;
  }
  function undrawn(box, error) {  // keep the still image, and say why it does not follow the buttons
    var live = box.querySelector('.ww-live-chart');
    if (live) box.removeChild(live);
    if (!box.querySelector('.ww-undrawn')) {
      var note = document.createElement('p');
      note.className = 'ww-undrawn';
      note.textContent = 'The interactive chart could not be drawn here' + (error && error.message ? ' (' +
        error.message.slice(0, 120) + ')' : '') + ': this is its image for the setting the page opens on.';
      box.appendChild(note);
    }
  }
  fig.charts.forEach(function (chart) {
    var spec = chart.spec, data = {}, id = fig.uid + '-' + chart.id;
    chart.datasets.forEach(function (name) { data[name] = wwRows(fig.datasets[name]); });
    spec.datasets = data;
    var box = document.getElementById(id), live = document.createElement('div');
    live.className = 'ww-live-chart';
    box.insertBefore(live, box.firstChild);  // the still image stays until the chart is drawn
    // ast + vega-embed's expression interpreter: no eval, so a Content-Security-Policy without
    // 'unsafe-eval' still draws the chart
    var options = {actions: false, renderer: 'svg', ast: true,
      patch: (spec.usermeta || {}).width === 'container' ? contain : undefined};
    var drawn = typeof vegaEmbed === 'function' ? vegaEmbed(live, spec, options) :
      Promise.reject(new Error('the chart library did not load'));
    drawn.then(function (result) {
      shown.push(result.view);
      var still = box.querySelector('.ww-shot') || box.querySelector('img');  // a book's still is a figure
      if (still) still.parentNode.removeChild(still);
      var svg = box.querySelector('svg');
      if (svg) {
        svg.setAttribute('role', 'img');
        svg.removeAttribute('aria-label');
        svg.setAttribute('aria-labelledby', id + '-title');
        svg.setAttribute('aria-describedby', id + '-caption' + (chart.words[0] ? ' ' + id + '-words' : ''));
        for (var g = svg.firstElementChild; g; g = g.nextElementSibling) {
          g.setAttribute('aria-hidden', 'true');  // the svg is one image, named and described above
        }
      }
      show();
    }).catch(function (error) { undrawn(box, error); fit(); });
  });
  root.querySelectorAll('.ww-controls input').forEach(function (input) {
    input.addEventListener('change', show);
  });
  window.addEventListener('resize', fit);
  if (window.ResizeObserver) new ResizeObserver(fit).observe(root);
  window.whoWaits = window.whoWaits || {};
  window.whoWaits[fig.uid] = {views: shown, show: show, playback: play};
}""".replace("PROSE_CHARS", str(PROSE))


def figure_html(figure: Figure, bare: bool = False, bundle: str | None = None,
                stills: dict[str, dict[str, str]] | None = None, script: str | None = None,
                credit: str = "") -> str:
    """The page. `bare`: without its own heading, teaser and note, to sit inside a post. `stills`: setting key
    -> chart id -> where that setting's still is (an EPUB carries them as files): the page then shows, without
    scripting, the key switch both ways (Figure.pair); by default each chart's image of the first setting is
    inside the page. `script`: where the shared script is (`shared_script`; a book's figures share one
    file); by default it is inside the page. `credit`: the caption with its credit line, under the figure."""
    body = _body(figure, bare, stills or {}, credit)
    data = {"uid": figure.uid, "axes": figure.axes, "cells": figure.cells, "ends": figure.ends,
            "charts": [{"id": c.chart_id, "title": c.title, "spec": c.spec, "datasets": _names(c.spec),
                        "words": c.words} for c in figure.charts],
            "datasets": {name: pack(rows, [c.spec for c in figure.charts]) for name, rows in
                         figure.datasets.items()}}
    if figure.playback is not None:
        data["playback"] = figure.playback
    if script is not None:
        scripts = f'<script src="{html.escape(script)}"></script>'
    else:
        inline = shared_script(vega_bundle() if bundle is None else bundle)
        scripts = f"<script>//<![CDATA[\n{inline}\n//]]></script>"
    return TEMPLATE.format(title=html.escape(figure.title), css=CSS, play_css=playback.CSS, body=body,
                           scripts=scripts, data=json_for_script(data))


def shared_script(bundle: str | None = None) -> str:
    """The script every figure runs: the notices' banner, Vega, Vega-Lite and vega-embed (`bundle`), the
    rows' unpacker, the playback and `wwMount`. A page holds it inline; a book's figures share it as one
    file."""
    return "\n".join((notices.bundle_banner(), vega_bundle() if bundle is None else bundle, UNPACK_JS,
                      playback.SCRIPT, MOUNT_JS))


def _names(spec) -> list[str]:
    found = re.findall(r'"data":\s*\{"name":\s*"([^"]+)"', json.dumps(spec))
    return list(dict.fromkeys(found))


def _body(figure: Figure, bare: bool, stills: dict[str, dict[str, str]], credit: str = "") -> str:
    e = html.escape
    first, pair = figure.first, figure.pair if stills else None
    head = "" if bare else f"<h1>{e(figure.title)}</h1>\n<p>{e(figure.teaser)}</p>\n"
    groups = []
    for axis in figure.axes:
        name = f"{figure.uid}-{axis['name']}"
        options = "".join(f'<label><input type="radio" name="{name}" value="{i}"'
                          f'{_checked(i == axis["start"])}/> {e(label)}</label>'
                          for i, label in enumerate(axis["labels"]))
        groups.append(f"<fieldset><legend>{e(axis['label'])}</legend>{options}</fieldset>")
    live = " ww-live" if pair else ""  # with the key switch both ways, one setting's numbers are live only
    tables = "".join(_table(t, live) for t in first["tables"])
    first_key = "|".join(str(a["start"]) for a in figure.axes)
    charts = "".join(_chart(figure, c, first_key, stills, pair) for c in figure.charts)
    note = "" if bare else f'<p class="ww-note">{e(figure.note)}</p>'
    credits = notices.fold_html(notices.data_for(figure.sources))  # bare too: the licences ask for it
    still = "; ".join(f"{a['label'].lower()} {a['labels'][a['start']]}" for a in figure.axes)
    said = f"Without scripting this shows one setting: {e(still)}."
    if pair:
        said = (f"Without scripting this shows the switch this story turns on both ways: {e(pair.names[0])} "
                f"and {e(pair.names[1])}{e(_held(figure, pair))}.")
        tables = "".join(_table(t, " ww-still-only", " ww-pair") for t in pair.tables) + tables
    credit = f'<p class="ww-caption ww-credit">{e(credit)}</p>' if credit else ""
    hidden = "" if first.get("trap") else ' hidden="hidden"'
    return (f'<section class="ww-figure ww-static" id="{figure.uid}" aria-label="{e(figure.title)}">\n{head}'
            f'<form class="ww-controls" aria-label="Settings">{"".join(groups)}</form>\n'
            f'<p class="ww-still">{said} With scripting, '
            f"buttons switch between {len(figure.cells)} settings.</p>\n"
            f'<p class="ww-printed">Setting shown: {e(still)}.</p>\n{tables}'
            f'<p class="ww-summary{live}" aria-live="polite">{e(first["summary"])}</p>\n'
            f'<p class="ww-trap" role="note"{hidden}>{e(first.get("trap", ""))}</p>\n{_playback(figure)}'
            f"{charts}\n{note}{credit}\n{credits}</section>")


def _held(figure: Figure, pair: Pair) -> str:
    """Where the page's other switches stand in both of a pair's settings: ", each with chunk size 8,192;
    logprobs off" ("" when there are none)."""
    one, two = ([int(i) for i in key.split("|")] for key in pair.keys)
    held = [f"{in_text(a['label'])} {a['labels'][i]}" for a, i, j in zip(figure.axes, one, two, strict=True)
            if i == j and len(a["labels"]) > 1]
    return f", each with {'; '.join(held)}" if held else ""


def _chart(figure: Figure, chart: Chart, key: str, stills: dict[str, dict[str, str]],
           pair: Pair | None) -> str:
    """A chart's title, its box (the image of the first setting until the script draws it: inside the page,
    or the setting's still, `stills`), its caption and the chart in words, which a keyboard opens and a
    screen reader reads. With `pair`, the other setting's still follows (without scripting only), named."""
    e, at = html.escape, f"{figure.uid}-{chart.chart_id}"
    run = figure.cells[key]["run"]
    src = (stills.get(key, {}).get(chart.chart_id)
           or f"data:image/png;base64,{base64.b64encode(chart.image).decode()}")
    image = f'<img src="{e(src)}" alt="{e(chart.alt)}"/>'
    other = ""
    if pair and key in pair.keys:
        name = dict(zip(pair.keys, pair.names, strict=True))
        image = f'<figure class="ww-shot"><figcaption>{e(_upper(name[key]))}</figcaption>{image}</figure>'
        back = next(k for k in pair.keys if k != key) if pair.keys[0] != pair.keys[1] else None
        if back is not None and chart.chart_id in stills.get(back, {}):
            cell = figure.cells[back]
            alt = f"{chart.title}, {name[back]}. {cell['summary']}"
            words = chart.words[cell["run"]]
            other = (f'<figure class="ww-shot ww-still-only"><figcaption>{e(_upper(name[back]))}</figcaption>'
                     f'<img src="{e(stills[back][chart.chart_id])}" alt="{e(alt)}"/></figure>'
                     + (f'<details class="ww-words ww-still-only"><summary>This chart in words, '
                        f"{e(name[back])}</summary><p>{e(words)}</p></details>" if words else ""))
    return (f'<p class="ww-chart-title" id="{at}-title">{e(chart.title)}</p>'
            f'<div class="ww-chart" id="{at}" role="figure" aria-labelledby="{at}-title" '
            f'aria-describedby="{at}-caption">{image}</div>{other}'
            f'<p class="ww-caption" id="{at}-caption">{e(chart.caption)}</p>'
            + (f'<details class="ww-words"><summary>This chart in words</summary>'
               f'<p id="{at}-words">{e(chart.words[run])}</p></details>' if any(chart.words) else "")
            + "\n")


def _upper(text: str) -> str:
    return text[:1].upper() + text[1:]


def _playback(figure: Figure) -> str:
    """The reader's view: the widget's shell (its script fills it; hidden without scripting); none without a
    playback."""
    if figure.playback is None:
        return ""
    body, _ = playback.playback_html(figure.uid, [], 0, 0.0, figure.playback["threshold"])
    return ('<div class="ww-live">'
            '<p class="ww-chart-title">What a reader sees: the replies as they stream</p>'
            f"{body}<p class=\"ww-caption\">Each pane is one reply, a word per token at the model's token "
            "times (the words are a stand-in). Play it, or drag the time: a pane that turns pink has had no "
            "token for a while.</p></div>\n")


def _table(table: dict, box: str = "", cls: str = "") -> str:
    """A table of numbers in its box (a wide table scrolls inside it, never the page); `box`, `cls`: more
    classes for the box and the table."""
    e = html.escape
    head = "".join(f'<th scope="col">{e(h)}</th>' for h in table["head"])
    rows = "".join("<tr>" + "".join(
        f'<th scope="row"{_prose(v)}>{e(v)}</th>' if i == 0 else
        f'<td{_classes(i == table["bold"], v)}>{e(v)}</td>' for i, v in enumerate(row)) + "</tr>"
        for row in table["rows"])
    label = e(table.get("title") or (f"Table: {table['head'][0]}" if not cls
                                     else f"Numbers: {', '.join(table['head'][1:])}"))
    live = "" if cls else ' aria-live="polite"'
    return (f'<div class="ww-table{box}" role="region" tabindex="0" aria-label="{label}">'
            f'<table class="ww-numbers{cls}"><thead><tr>{head}</tr></thead>'
            f"<tbody{live}>{rows}</tbody></table></div>\n")


def _classes(bold: bool, text: str) -> str:
    names = " ".join(n for n, on in (("now", bold), ("ww-prose", len(text) > PROSE)) if on)
    return f' class="{names}"' if names else ""


def _prose(text: str) -> str:
    return ' class="ww-prose"' if len(text) > PROSE else ""


def _checked(on: bool) -> str:
    return ' checked="checked"' if on else ""


@functools.cache
def vega_bundle() -> str:
    """Vega, Vega-Lite and vega-embed as one script, from vl-convert (what Altair's `save(inline=True)`
    inlines); the same for every page, so read once a process (1.5 s a call)."""
    import vl_convert

    return cdata_safe(vl_convert.javascript_bundle())


def cdata_safe(script: str) -> str:
    """A script that may sit in a CDATA section: "]]>" only as code (`x[y[z]]>w`), where a space is free."""
    safe = re.sub(r"\]\]>(?=[\w$(])", "]] >", script)
    if "]]>" in safe or "</script" in safe.lower():
        raise ValueError("the Vega bundle has ']]>' or '</script' where a space cannot go; "
                         "update page.cdata_safe")
    return safe


def json_for_script(value) -> str:
    """JSON that cannot close a script or a CDATA section: <, > and & (only in strings) as \\u escapes."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
