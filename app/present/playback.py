"""What a reader sees: a few replies played back as text appearing in small chat panes, each token at the
model's own token time — play, pause, speed 0.25×–4×, scrub — so a freeze and a trickle are felt, not read.

One widget (HTML and a small script, no network) for the app (inside a component frame) and the standalone
page (beside its charts, switching runs with the page's settings). The words are a stand-in text of ours,
one word per token; the times are the run's. A pane that has waited for its next token longer than the
run's stall threshold turns the colour of "no token" and counts the wait.
"""

from __future__ import annotations

import json

from app.charts.frames import RunFrames
from app.charts.scales import GAP_SHADES

NUM_PANES = 6  # replies shown: the stream group's first ones, and the long request
SPEEDS = (0.25, 0.5, 1.0, 2.0, 4.0)
TEXT = ("Here is what the scheduler does with your request. It waits in the queue until there is room in "
        "the batch, then its prompt is prefilled in chunks, and every pass after that gives it one more "
        "token. While a long prompt is being prefilled the running replies may get nothing at all, unless "
        "mixed chunk lets each chunk pass carry one decode step for them. That is why some replies stop "
        "for seconds and others only slow down. The numbers beside this text say how long each one "
        "waited, and the charts show which pass it was waiting for.").split()


def panes(run: RunFrames, stream_group: str, long_group: str) -> list[dict]:
    """The replies a playback shows, each with every one of its token times (`RunFrames.replies`) as steps
    in whole milliseconds (`z`, as the page packs times)."""
    order = list(run.request_order)
    groups = dict(zip(run.requests["rid"], run.requests["group"], strict=True))
    streams = [rid for rid in order if groups.get(rid) == stream_group][:NUM_PANES - 1]
    long = [rid for rid in order if groups.get(rid) == long_group and rid not in streams][:1]
    out = []
    for rid in streams + long:
        ms = [round(float(t) * 1000) for t in run.replies.get(rid, ())]
        out.append({"rid": rid, "group": groups[rid],
                    "z": [ms[0]] + [b - a for a, b in zip(ms, ms[1:], strict=False)] if ms else []})
    return out


CSS = """
.ww-play { border: 1px solid #ccc; border-radius: 6px; padding: .5rem .6rem; margin: .8rem 0;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; break-inside: avoid; }
.ww-play-bar { display: flex; flex-wrap: wrap; gap: .4rem .8rem; align-items: center; margin-bottom: .4rem; }
.ww-play-bar button { font: inherit; padding: .2rem .8rem; border-radius: 4px; border: 1px solid #888;
  background: #fff; cursor: pointer; }
.ww-play-bar input[type=range] { flex: 1 1 12rem; min-width: 8rem; }
.ww-play-panes { display: grid; grid-template-columns: repeat(auto-fill, minmax(14rem, 1fr)); gap: .5rem; }
.ww-pane { border: 2px solid #e6e6e6; border-radius: 8px; padding: .3rem .5rem; min-height: 6.5rem; }
.ww-pane-head { font-size: .78rem; color: #555; display: flex; justify-content: space-between; gap: .5rem; }
.ww-pane-text { font-size: .86rem; line-height: 1.35; height: 5.2rem; overflow: hidden;
  display: flex; flex-direction: column; justify-content: flex-end;
  -webkit-mask-image: linear-gradient(transparent, #000 35%);
  mask-image: linear-gradient(transparent, #000 35%); }
.ww-pane.frozen { border-color: FROZEN; }
@media (max-width: 40rem) {  /* a phone: a reply with no token yet is one line, not an empty box */
  .ww-pane.empty { min-height: 0; }
  .ww-pane.empty .ww-pane-text { display: none; }
}
.ww-pane.frozen .ww-pane-wait { color: FROZEN_TEXT; font-weight: 600; }
""".replace("FROZEN_TEXT", GAP_SHADES[3]).replace("FROZEN", GAP_SHADES[2])

SCRIPT = """function wwPlayback(root, data) {
  var runs = data.runs.map(function (panes) {
    return panes.map(function (p) {
      var t = 0;
      return {rid: p.rid, group: p.group, times: p.z.map(function (d) { t += d; return t / 1000; })};
    });
  });
  var state = {run: data.run, t: data.start, speed: 1, playing: false, last: null};
  var grid = root.querySelector('.ww-play-panes'), clock = root.querySelector('.ww-play-clock');
  var slider = root.querySelector('input[type=range]'), button = root.querySelector('.ww-play-toggle');
  function build() {
    grid.innerHTML = '';
    runs[state.run].forEach(function (p) {
      var pane = document.createElement('div');
      pane.className = 'ww-pane';
      pane.setAttribute('data-rid', p.rid);
      pane.innerHTML = '<div class="ww-pane-head"><span class="ww-pane-name"></span>' +
        '<span class="ww-pane-wait"></span></div><div class="ww-pane-text" aria-live="off"></div>';
      pane.querySelector('.ww-pane-name').textContent = p.rid;
      grid.appendChild(pane);
    });
    var ends = runs[state.run].map(function (p) { return p.times[p.times.length - 1] || 0; });
    var end = Math.max.apply(null, ends.concat([0]));
    slider.max = String(Math.ceil(end * 10) / 10);
    draw();
  }
  function count(times, t) {
    var lo = 0, hi = times.length;
    while (lo < hi) { var mid = (lo + hi) >> 1; if (times[mid] <= t) lo = mid + 1; else hi = mid; }
    return lo;
  }
  function draw() {
    var t = state.t;
    clock.textContent = 't = ' + t.toFixed(1) + ' s';
    slider.value = String(t);
    runs[state.run].forEach(function (p, i) {
      var pane = grid.children[i], n = count(p.times, t), text = [];
      for (var k = Math.max(0, n - 40); k < n; k++) text.push(data.words[(k + 17 * i) % data.words.length]);
      pane.querySelector('.ww-pane-text').textContent = (n > 40 ? '… ' : '') + text.join(' ');
      var since = n > 0 ? t - p.times[n - 1] : null, done = n >= p.times.length && n > 0;
      var frozen = !done && since !== null && since >= data.threshold;
      pane.classList.toggle('frozen', frozen);
      pane.classList.toggle('empty', n === 0);
      pane.querySelector('.ww-pane-wait').textContent = done ? 'done, ' + n + ' tokens' :
        n === 0 ? 'no token yet' : frozen ? 'no token for ' + since.toFixed(1) + ' s' : n + ' tokens';
    });
  }
  function tick(now) {
    if (!state.playing) return;
    if (state.last !== null) {
      state.t = Math.min(+slider.max, state.t + (now - state.last) / 1000 * state.speed);
    }
    state.last = now;
    draw();
    if (state.t >= +slider.max) { setPlaying(false); return; }
    window.requestAnimationFrame(tick);
  }
  function setPlaying(on) {
    state.playing = on; state.last = null;
    button.textContent = on ? 'Pause' : 'Play';
    if (on) window.requestAnimationFrame(tick);
  }
  button.addEventListener('click', function () {
    if (!state.playing && state.t >= +slider.max) state.t = 0;
    setPlaying(!state.playing);
  });
  root.querySelector('select').addEventListener('change', function (e) { state.speed = +e.target.value; });
  slider.addEventListener('input', function () { state.t = +slider.value; draw(); });
  build();
  return {setRun: function (r) { state.run = r; state.t = Math.min(state.t, 1e9); build(); },
          seek: function (t) { state.t = t; draw(); }, state: state};
}"""


SELECTED = ' selected="selected"'


def playback_html(uid: str, runs: list[list[dict]], run: int, start_at: float, threshold: float) -> str:
    """The widget's HTML (ids scoped by `uid`) and the call that mounts it; the script itself is `SCRIPT`."""
    options = "".join(f'<option value="{s:g}"{SELECTED if s == 1.0 else ""}>{s:g}×</option>' for s in SPEEDS)
    data = {"runs": runs, "run": run, "start": round(start_at, 3), "threshold": threshold, "words": TEXT}
    return (f'<div class="ww-play" id="{uid}-play" role="group" aria-label="What a reader sees: playback">'
            '<div class="ww-play-bar"><button type="button" class="ww-play-toggle">Play</button>'
            f'<label>speed <select aria-label="playback speed">{options}</select></label>'
            f'<input type="range" min="0" max="1" step="0.1" value="{start_at:.1f}" '
            'aria-label="time in the run (s)"/><span class="ww-play-clock"></span></div>'
            '<div class="ww-play-panes"></div></div>', json.dumps(data, separators=(",", ":")))


def app_frame(runs: list[list[dict]], start_at: float, threshold: float) -> str:
    """A whole HTML document of one run's playback, for the app's component frame."""
    body, data = playback_html("ww-app", runs, 0, start_at, threshold)
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'/><style>{CSS} body{{margin:0}}</style></head>"
            f"<body>{body}<script>{SCRIPT}\nwwPlayback(document.getElementById('ww-app-play'), {data});"
            f"</script></body></html>")
