"""PD as a figure and slides: one engine, the same requests on PD's GPUs without PD, and prefill-decode
disaggregation under `early` and `prefill_complete` decode allocation, on the ten o'clock workload and on the
upstream test replica — the app's charts and tables over eight precomputed runs, with the GPU count of every
deployment stated and the checklist to read before enabling prefill_complete.
"""

from __future__ import annotations

import hashlib

from app.charts import views
from app.charts.frames import RunFrames
from app.pd import tables
from app.pd.presets import baseline, checked, preset_data, split
from app.present import checklist
from app.present.fmt import fmt_seconds
from app.present.grid import _run
from app.present.numbers import fmt_rate
from app.present.page import Figure, Shown, build_figure
from engine_model import STORIES, Scenario, num_gpus

WORKLOADS = {"rush": "the ten o'clock rush", "upstream": "the upstream test replica"}
ARMS = ("one engine", "one engine per PD worker", "PD, early", "PD, prefill_complete")
KEYS = {"ten_oclock_rush_pd": ("rush", 2), "ten_oclock_rush_engines": ("rush", 1),  # figure names ->
        "upstream_pd_replica": ("upstream", 2)}  # (workload, deployment) the PD figure opens on


def scenarios(workload: str) -> list[Scenario]:
    """One engine (the same requests, SGLang's defaults, no PD), as many engines as PD has workers on PD's
    GPUs (round robin), and PD under each allocation policy."""
    data = preset_data(workload, STORIES["ten_oclock_rush"].defaults)
    one = {k: v for k, v in data.items() if k != "pd"}
    pds = [split(data, policy, 0, 1, 1) for policy in ("early", "prefill_complete")]
    return [checked(one), baseline(data, "engines", pds[0]), *pds]


ROWS = (("GPUs", None, None), ("Output, tokens/s", "output_throughput_tok_s", None),
        ("p95 first token", "ttft_s", "p95"), ("p99 gap between tokens", "itl_s", "p99"),
        ("longest gap between tokens", "max_itl_s", "max"))


def arm_labels(cases: list[Scenario]) -> list[str]:
    """Each deployment's column head, with its engine count: 'one engine', '2 engines, round robin', ..."""
    k = cases[1].engine.dp_size
    return [ARMS[0], f"{k} engines, round robin", *ARMS[2:]]


def numbers_table(arms: list[tuple[Scenario, RunFrames]], bold: int) -> dict:
    """The deployments side by side on the numbers upstream measured (every request)."""
    rows = []
    for label, metric, stat in ROWS:
        cells = [label]
        for scenario, run in arms:
            if metric is None:
                cells.append(f"{num_gpus(scenario)}")
                continue
            value = run.summary.metrics.value(None, metric, stat)
            cells.append(fmt_rate(value) if metric.endswith("tok_s") else fmt_seconds(value))
        rows.append(cells)
    return {"head": ["every request", *arm_labels([s for s, _ in arms])], "rows": rows, "bold": bold}


def phase_table(run: RunFrames, arm: str) -> dict:
    if run.summary.pd is None:
        return {"head": ["group", "phases"], "rows": [["—", f"{arm}: no PD phases"]], "bold": -1}
    frame = tables.phase_table({arm: run}).drop(columns=["policy"])
    return {"head": list(frame.columns), "rows": frame.astype(str).values.tolist(), "bold": -1}


def pd_figure(start: str = "rush", arm: int = 2, runs=None) -> Figure:
    """The eight runs (two workloads x four deployments) as one figure, opening on `start` and `arm`. `runs`:
    scenario -> RunFrames (the app passes its server-wide cache, which its PD sections and warm-up fill)."""
    runs = runs or _run
    shown = []
    for w, workload in enumerate(WORKLOADS):
        cases = scenarios(workload)
        arms = [(s, runs(s)) for s in cases]
        labels = arm_labels(cases)
        checks = checklist.table(checklist.of_runs(cases[3], arms[2][1], arms[3][1]))
        for a, (scenario, run) in enumerate(arms):
            summary = (f"{WORKLOADS[workload].capitalize()}: {labels[a]} ({tables.deployment(scenario)}). "
                       + tradeoff_words(arms))
            shown.append(Shown(f"{w}|{a}", run, [numbers_table(arms, a + 1), phase_table(run, labels[a]),
                                                 checks], summary))
    axes = [{"name": "workload", "label": "Workload", "labels": [w.capitalize() for w in WORKLOADS.values()],
             "start": list(WORKLOADS).index(start)},
            {"name": "deployment", "label": "Deployment", "labels": list(ARMS), "start": arm}]
    uid = "ww-pd-" + hashlib.sha1(f"{start}|{arm}".encode()).hexdigest()[:6]
    note = ("Every combination was simulated in advance by Who Waits' model of SGLang 0.5.23 (one engine: "
            "the same requests on one server at SGLang's defaults; one engine per PD worker: the same "
            "requests on as many GPUs as PD, dealt round robin as SGLang's --dp-size does). The GPUs row "
            "says what each deployment uses. Upstream measured on the real test +27 % output throughput, "
            "−49 % p95 first token and +93 % p99 gap between tokens under prefill_complete (seed 000); the "
            "numbers here are the model's. The last table is the checklist to read before enabling "
            "prefill_complete, evaluated on each workload.")
    teaser = ("One engine, the same GPUs without PD, or prefill-decode disaggregation — and when decode "
              "reserves its KV: early (the default) or once prefill completes.")
    return build_figure(uid, "Split prefill from decode", teaser, note, axes, shown,
                        lambda run: [views.story_view(run, "passes"), views.decode_kv_view(run, run.end_at),
                                     views.phases_view(run, run.end_at)])


def tradeoff_words(arms: list[tuple[Scenario, RunFrames]]) -> str:
    """early -> prefill_complete on the numbers upstream measured, as the model gives them."""
    rows = tables.tradeoff(arms[2][1], arms[3][1])
    parts = []
    for row in rows:
        a, b = row["early"], row["prefill_complete"]
        change = "—" if not a or b is None else (
            "unchanged" if abs(b - a) < 0.005 * abs(a) else f"{(b - a) / a:+.0%}")
        parts.append(f"{row['label']} {change}")
    return "early → prefill_complete in the model: " + ", ".join(parts) + "."
