"""A page's datasets, packed for the trip: columns instead of rows, only the columns a chart reads, repeated
strings as a dictionary, runs of one value as (value, count), numbers rounded to 1 ms. The page's script
unpacks them into rows before Vega sees them, so the charts get the app's rows. (The app packs the same
datasets as Arrow for Streamlit: app.ui.chart.)"""

from __future__ import annotations

import json
import math
import re

DIGITS = 3  # 1 ms: what every tooltip prints, and far under a pixel of any time axis


def used(columns, spec: dict) -> set[str]:
    """The columns a spec could read: named as a string anywhere in it (a field, a sort, a tooltip) or as
    `datum.x` in an expression. A column named nowhere is not sent."""
    text = json.dumps(spec)
    return {c for c in columns if f'"{c}"' in text or re.search(rf"datum\.{re.escape(c)}\b", text)}


def pack(rows: list[dict], spec=None) -> dict:
    """{'n': rows, 'c': {column: packed values}} (see `_column`); with `spec`, only the columns it uses."""
    columns = list(dict.fromkeys(k for row in rows for k in row))
    columns = [c for c in columns if spec is None or c in used(columns, spec)]
    return {"n": len(rows), "c": {name: _column([row.get(name) for row in rows]) for name in columns}}


def _column(values: list):
    """The shortest of: a plain list; {'v': values, 'k': counts} for runs of one value; repeated strings as
    {'d': distinct strings} plus their indices ('i', or 'v' and 'k'); strings with numbers in them as
    {'t': templates, 'i': indices, 'n': each row's numbers}; times as {'z': steps in ms}."""
    if values and all(isinstance(v, str) for v in values):
        distinct = list(dict.fromkeys(values))
        at = {v: i for i, v in enumerate(distinct)}
        indices = _runs([at[v] for v in values])
        candidates = [values, _runs(values), {"d": distinct, **_indexed(indices)}, _templated(values)]
    else:
        numbers = [_number(v) for v in values]
        candidates = [numbers, _runs(numbers)] + ([_steps(numbers)] if _are_times(numbers) else [])
    return min(candidates, key=lambda c: len(json.dumps(c, separators=(",", ":"))))


def _runs(values: list) -> dict | list:
    counts, kept = [], []
    for v in values:
        if kept and kept[-1] == v:
            counts[-1] += 1
        else:
            kept.append(v)
            counts.append(1)
    return {"v": kept, "k": counts} if len(kept) * 2 < len(values) else values


def _indexed(indices) -> dict:
    return indices if isinstance(indices, dict) else {"i": indices}


NUMBER = re.compile(r"\d+")


def _templated(values: list[str]) -> dict:
    """Each string as a template (its whole numbers taken out) and the numbers."""
    templates = [NUMBER.sub("#", v) for v in values]
    distinct = list(dict.fromkeys(templates))
    at = {t: i for i, t in enumerate(distinct)}
    return {"t": distinct, "i": [at[t] for t in templates], "n": [[int(n) for n in NUMBER.findall(v)]
                                                                 for v in values]}


def _are_times(values: list) -> bool:
    return bool(values) and all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)


def _steps(values: list) -> dict:
    """Numbers in whole milliseconds, each as its step from the one before (a run's times climb slowly)."""
    ms = [round(v * 1000) for v in values]
    return {"z": [ms[0]] + [b - a for a, b in zip(ms, ms[1:], strict=False)]}


def _number(value):
    if isinstance(value, float):
        return None if not math.isfinite(value) else round(value, DIGITS)
    return value


UNPACK_JS = """function wwColumn(c) {
  if (Array.isArray(c)) return c;
  if (c.z) { var t = 0; return c.z.map(function (d) { t += d; return t / 1000; }); }
  if (c.t) {
    return c.i.map(function (i, k) {
      var j = 0;
      return c.t[i].replace(/#/g, function () { return c.n[k][j++]; });
    });
  }
  var out = c.i;
  if (c.k) { out = []; c.k.forEach(function (k, j) { for (var m = 0; m < k; m++) out.push(c.v[j]); }); }
  return c.d ? out.map(function (i) { return c.d[i]; }) : out;
}
function wwRows(p) {
  var names = Object.keys(p.c), cols = names.map(function (name) { return wwColumn(p.c[name]); });
  var rows = new Array(p.n);
  for (var k = 0; k < p.n; k++) {
    var row = {};
    for (var j = 0; j < names.length; j++) row[names[j]] = cols[j][k];
    rows[k] = row;
  }
  return rows;
}"""
