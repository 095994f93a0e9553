"""PD as a figure and slides: one engine vs prefill-decode disaggregation, and `early` vs
`prefill_complete` decode allocation, on the ten o'clock workload and on the upstream test replica — the
app's charts and tables over six precomputed runs, with the GPU count of every deployment stated.
"""

from __future__ import annotations

import copy
import hashlib

from app.charts import views
from app.charts.frames import RunFrames
from app.pd import tables
from app.pd.presets import pd_scenario
from app.present.fmt import fmt_seconds
from app.present.grid import _run
from app.present.numbers import fmt_rate
from app.present.page import Figure, Shown, build_figure
from engine_model import STORIES, Scenario, read_toml, validate

WORKLOADS = {"rush": "the ten o'clock rush", "upstream": "the upstream test replica"}
ARMS = ("one engine", "PD, early", "PD, prefill_complete")
KEYS = {"ten_oclock_rush_pd": "rush", "upstream_pd_replica": "upstream"}  # figure names -> workload


def scenarios(workload: str) -> list[Scenario]:
    """One engine (the same requests, SGLang's defaults, no PD) and PD under each allocation policy."""
    values = STORIES["ten_oclock_rush"].defaults
    if workload == "rush":
        single = STORIES["ten_oclock_rush"].scenario(values)
    else:
        data = copy.deepcopy(read_toml("upstream_pd_replica"))
        data.pop("pd")
        single = validate(data)
    return [single] + [pd_scenario(workload, values, policy, 0, 1, 1)
                       for policy in ("early", "prefill_complete")]


def gpus(scenario: Scenario) -> int:
    """GPUs a deployment uses: one engine's TP, or every PD worker's."""
    tp = scenario.hardware.tp_size
    if scenario.pd is None:
        return tp
    return sum(role.num_workers * (role.tp_size or tp) for role in (scenario.pd.prefill, scenario.pd.decode))


def deployment(scenario: Scenario) -> str:
    n = gpus(scenario)
    if scenario.pd is None:
        return f"one engine, {n} GPU{'s' if n > 1 else ''}"
    p, d = scenario.pd.prefill.num_workers, scenario.pd.decode.num_workers
    return f"{p} prefill + {d} decode worker{'s' if d > 1 else ''}, {n} GPUs"


ROWS = (("GPUs", None, None), ("Output, tokens/s", "output_throughput_tok_s", None),
        ("p95 first token", "ttft_s", "p95"), ("p99 gap between tokens", "itl_s", "p99"),
        ("longest gap between tokens", "max_itl_s", "max"))


def numbers_table(arms: list[tuple[Scenario, RunFrames]], bold: int) -> dict:
    """The three deployments side by side on the numbers upstream measured (every request)."""
    rows = []
    for label, metric, stat in ROWS:
        cells = [label]
        for scenario, run in arms:
            if metric is None:
                cells.append(f"{gpus(scenario)}")
                continue
            value = run.summary.metrics.value(None, metric, stat)
            cells.append(fmt_rate(value) if metric.endswith("tok_s") else fmt_seconds(value))
        rows.append(cells)
    return {"head": ["every request", *ARMS], "rows": rows, "bold": bold}


def phase_table(run: RunFrames, arm: str) -> dict:
    if run.summary.pd is None:
        return {"head": ["group", "phases"], "rows": [["—", "one engine: no PD phases"]], "bold": -1}
    frame = tables.phase_table({arm: run}).drop(columns=["policy"])
    return {"head": list(frame.columns), "rows": frame.astype(str).values.tolist(), "bold": -1}


def pd_figure(start: str = "rush", arm: int = 1) -> Figure:
    """The six runs (two workloads x three deployments) as one figure, opening on `start` and `arm`."""
    shown = []
    for w, workload in enumerate(WORKLOADS):
        cases = scenarios(workload)
        arms = [(s, _run(s)) for s in cases]
        for a, (scenario, run) in enumerate(arms):
            summary = (f"{WORKLOADS[workload].capitalize()}: {ARMS[a]} ({deployment(scenario)}). "
                       + tradeoff_words(arms))
            shown.append(Shown(f"{w}|{a}", run, [numbers_table(arms, a + 1), phase_table(run, ARMS[a])],
                               summary))
    axes = [{"name": "workload", "label": "Workload", "labels": [w.capitalize() for w in WORKLOADS.values()],
             "start": list(WORKLOADS).index(start)},
            {"name": "deployment", "label": "Deployment", "labels": list(ARMS), "start": arm}]
    uid = "ww-pd-" + hashlib.sha1(f"{start}|{arm}".encode()).hexdigest()[:6]
    note = ("Every combination was simulated in advance by Who Waits' model of SGLang 0.5.23 (one engine: "
            "the same requests on one server at SGLang's defaults). GPU counts differ between deployments, "
            "as each row says. Upstream measured on the real test +27 % output throughput, −49 % p95 first "
            "token and +93 % p99 gap between tokens under prefill_complete (seed 000); the numbers here are "
            "the model's.")
    return build_figure(uid, "Split prefill from decode", "One engine or prefill-decode disaggregation — and "
                        "when decode reserves its KV: early (the default) or once prefill completes.",
                        note, axes, shown,
                        lambda run: [views.story_view(run, "passes"), views.decode_kv_view(run, run.end_at),
                                     views.phases_view(run, run.end_at)])


def tradeoff_words(arms: list[tuple[Scenario, RunFrames]]) -> str:
    """early -> prefill_complete on the numbers upstream measured, as the model gives them."""
    rows = tables.tradeoff(arms[1][1], arms[2][1])
    parts = []
    for row in rows:
        a, b = row["early"], row["prefill_complete"]
        change = "—" if not a or b is None else (
            "unchanged" if abs(b - a) < 0.005 * abs(a) else f"{(b - a) / a:+.0%}")
        parts.append(f"{row['label']} {change}")
    return "early → prefill_complete in the model: " + ", ".join(parts) + "."
