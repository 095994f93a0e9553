"""PD as a figure: one engine, the same requests on PD's GPUs without PD, and prefill-decode disaggregation
under `early` and `prefill_complete` decode allocation, on the ten o'clock workload and on the upstream test
replica — the app's charts and tables over eight precomputed runs, with every deployment stated (model, GPUs,
TP, the PD layout) and the checklist to read before enabling prefill_complete.

The ten o'clock workload runs on the page's deployment (`values`: the ten o'clock page's control values — GPU,
model, TP, precision, seed, any edited figure) split as its PD section splits it (`layout`: the section's URL
parameters, LAYOUT); the upstream replica runs its own deployment (scenarios/upstream_pd_replica.toml).
Every scenario is built by app.pd.presets, as the page builds it. A deployment SGLang would refuse is shown
as refused, with SGLang's reason, and hides nothing that can run.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass

from app.charts import views
from app.charts.frames import RunFrames
from app.pd import names, params, tables
from app.pd.presets import BASELINES, baseline, checked, preset_data, shape
from app.present import checklist
from app.present import verdict as verdict_words
from app.present.caption import source_line
from app.present.export import Block, scenario_toml, tables_spec
from app.present.fmt import fmt_change, fmt_seconds, pair
from app.present.grid import _run
from app.present.numbers import FINER, fmt_rate
from app.present.page import Figure, Shown, build_figure
from app.present.settings import model_words, pd_note
from app.present.stills import Pair
from engine_model import STORIES, InputError, Scenario, check_deployment, num_gpus, policy_trade, validate

WORKLOADS = {"rush": "the ten o'clock rush", "upstream": "the upstream test replica"}
POLICIES = ("early", "prefill_complete")
ONE, PDS = "one engine", tuple(f"PD, {p}" for p in POLICIES)
KEYS = {"ten_oclock_rush_pd": ("rush", 2), "ten_oclock_rush_engines": ("rush", 1),  # figure names ->
        "upstream_pd_replica": ("upstream", 2)}  # (workload, deployment) the PD figure opens on
RUSH = STORIES["ten_oclock_rush"]


# -- the PD section's layout, as its URL writes it -----------------------------------------------------
# The section's URL names, defaults and parsers (app.pd.params, no Streamlit), without its on/off switch.
# `base` keeps the figure's own comparison, one engine per PD worker, beside its "one engine" column.
LAYOUT = {key: value for key, value in params.DEFAULTS.items() if key != names.PD_ON}
LAYOUT[names.PD_BASE] = "engines"
PARSERS = {key: params.PARSERS[key] for key in LAYOUT}


def layout_setting(item: str) -> tuple[str, object] | None:
    """`--set` as the PD section's URL writes it (pworkers=2, wtp=4, cap=163840, base=one, preset=upstream);
    None for any other key."""
    key, sep, text = item.partition("=")
    if not sep or key.strip() not in PARSERS:
        return None
    try:
        return key.strip(), PARSERS[key.strip()](text.strip())
    except ValueError as err:
        raise InputError(f"--set {key.strip()}", str(err)) from None


# -- the deployments of one workload -------------------------------------------------------------------
@dataclass
class Arm:
    """One deployment of a workload: its scenario (None where it could not be built), its run (None where it
    cannot run) and SGLang's reason (or the model's) why not."""

    name: str
    scenario: Scenario | None
    run: RunFrames | None = None
    refused: InputError | None = None


def _arm(name: str, make, runs, check: bool = False) -> Arm:
    try:
        scenario = make()
    except InputError as err:
        return Arm(name, None, refused=err)
    try:
        if check:
            check_deployment(scenario)
        return Arm(name, scenario, runs(scenario))
    except InputError as err:
        return Arm(name, scenario, refused=err)


def arms(workload: str, values: dict | None = None, layout: dict | None = None, runs=None) -> list[Arm]:
    """One engine (the workload as the page runs it, no PD), the same requests on PD's GPUs without PD (the
    layout's `base`; none: left out), and PD under each allocation policy, split as the layout says (on the
    upstream replica: as its TOML says; the decode KV cap applies to the workload the layout's `preset`
    names)."""
    runs, layout = runs or _run, {**LAYOUT, **(layout or {})}
    data = preset_data(workload, {**RUSH.defaults, **(values or {})})
    cap, *split = layout_of(workload, layout)
    one = _arm(ONE, lambda: checked({k: v for k, v in data.items() if k != "pd"}), runs)
    pds = [_arm(name, lambda p=p: shape(data, p, cap, *split), runs, check=True)
           for name, p in zip(PDS, POLICIES, strict=True)]
    if layout["base"] == "none":
        return [one, *pds]
    shaped = next((a.scenario for a in pds if a.scenario is not None), None)
    if shaped is None:
        return [one, Arm(BASELINES[layout["base"]], None, refused=pds[0].refused), *pds]
    without = _arm(BASELINES[layout["base"]], lambda: baseline(data, layout["base"], shaped), runs)
    if without.scenario is not None:
        without.name = tables.baseline_label(layout["base"], without.scenario, workload == "rush")
    return [one, without, *pds]


def layout_of(workload: str, layout: dict) -> tuple[int, int, int, int]:
    """(decode KV cap, prefill workers, decode workers, worker TP) of `workload` under the section's
    layout, as the page passes them to app.pd.presets.shape: the cap where the layout's preset is this
    workload (0: the preset's own), the counts and TP on the ten o'clock workload (the upstream replica has
    its own)."""
    cap = layout["cap"] if layout["preset"] == workload else 0
    if workload != "rush":
        return cap, 1, 1, 0
    return cap, layout["pworkers"], layout["dworkers"], layout["wtp"]


def today_arm(workload: str, values: dict | None = None, layout: dict | None = None, runs=None):
    """Today's engine on PD's GPUs (app.pd.presets.baseline "today": the workload as it runs, as many copies
    as PD's GPUs hold), as the verdict and the checklist compare with it: (label, scenario, run); None where
    it cannot run."""
    runs, layout = runs or _run, {**LAYOUT, **(layout or {})}
    data = preset_data(workload, {**RUSH.defaults, **(values or {})})
    cap, *split = layout_of(workload, layout)
    try:
        scenario = baseline(data, "today", shape(data, "early", cap, *split))
        return tables.baseline_label("today", scenario, workload == "rush"), scenario, runs(scenario)
    except InputError:
        return None


def today_run(workload: str, values: dict | None = None, layout: dict | None = None, runs=None):
    """Today's run on PD's GPUs (`today_arm`), for the checklist's comparison with today; None where it
    cannot run."""
    found = today_arm(workload, values, layout, runs)
    return found and found[2]


def verdict_text(found: list[Arm], today) -> str:
    """The PD section's verdict (app.pd.tables.verdicts, worded by app.present.verdict) as plain sentences:
    each policy against today on the same GPUs, both waits per prompt length."""
    pds = [a for a in found if a.name in PDS]
    shaped = next((a.scenario for a in pds if a.scenario is not None), None)
    if today is None or shaped is None:
        return ""
    runs = {a.name.removeprefix("PD, "): a.run for a in pds if a.run is not None}
    refused = {a.name.removeprefix("PD, "): a.refused.problem for a in pds if a.run is None and a.refused}
    against, found_verdicts = tables.verdicts(shaped, runs, refused, today)
    return " ".join(verdict_words.lines(against, found_verdicts)).replace("**", "")


def scenarios(workload: str, values: dict | None = None, layout: dict | None = None, runs=None) -> list:
    """Each deployment's scenario (None where it could not be built), in `arms`' order."""
    return [a.scenario for a in arms(workload, values, layout, runs)]


def arm_labels(found: list[Arm]) -> list[str]:
    """Each deployment's column head: 'one engine', '2 engines, round robin', 'PD, early', ..."""
    return [a.name for a in found]


def gpus_words(scenario: Scenario) -> str:
    """'8 × H100 SXM 80GB, TP 8': one engine's GPUs."""
    return (f"{num_gpus(scenario)} × {tables.gpu_name(scenario.hardware.gpu)}, "
            f"TP {scenario.hardware.tp_size}")


# -- the numbers ---------------------------------------------------------------------------------------
LONGEST = "longest gap between tokens"
CANNOT = "cannot run"
TRADE_ROWS = slice(1, -1)  # the numbers table's rows of the four figures upstream measured


def population(found: list[Arm]) -> str:
    """Whose numbers the table holds, as the page's cards count them (Summary.population): 'the 256 benchmark
    requests (without the 64 warm-up)' or 'every request'."""
    said = dict.fromkeys(a.run.summary.population for a in found if a.run is not None)
    return " / ".join(said) or "every request"


def numbers_table(found: list[Arm], bold: int) -> dict:
    """The deployments side by side: GPUs, then the four numbers upstream measured over the requests the
    page's cards count (app.pd.tables.tradeoff, one deployment at a time) and the longest gap, each as the
    page prints it; the head names those requests."""
    rows = [["GPUs", *(str(num_gpus(a.scenario)) if a.scenario else "—" for a in found)]]
    columns = [None if a.run is None else tables.tradeoff(a.run, a.run) for a in found]
    labels = next((c for c in columns if c is not None), [])
    for i, row in enumerate(labels):
        fmt = fmt_rate if row["unit"] == "tok/s" else fmt_seconds
        values = [None if c is None else c[i]["early"] for c in columns]
        fmt = finest(values, fmt)
        rows.append([row["label"], *(CANNOT if v is None else fmt(v) for v in values)])
    rows.append([LONGEST, *(CANNOT if a.run is None else fmt_seconds(a.run.summary.measured.value(
        None, "max_itl_s", "max")) for a in found)])
    return {"head": [population(found), *arm_labels(found)], "rows": rows, "bold": bold}


def finest(values: list, fmt):
    """The format a row prints with: one more digit (as the cards do, app.present.numbers.card) when two of
    its different numbers would print alike."""
    known = [v for v in values if v is not None]
    alike = len({fmt(v) for v in known}) < len(set(known))
    return FINER.get(fmt, fmt) if alike else fmt


def printed(text: str) -> float | None:
    """A number as a table prints it, read back: '1,234' -> 1234.0, '850 ms' -> 0.85, '81.8 s' -> 81.8."""
    found = re.fullmatch(r"([\d,]+(?:\.\d+)?)(?:\s*(ms|s))?", text.replace("\u00a0", " ").strip())
    if found is None:
        return None
    value = float(found[1].replace(",", ""))
    return value / 1000 if found[2] == "ms" else value


def change(before: str, now: str) -> str:
    """The change between two printed numbers, from the numbers as printed: '+79 %', '−54 %', '±0 %'."""
    a, b = printed(before), printed(now)
    return "—" if not a or b is None else fmt_change((b - a) / a)


def tradeoff_words(table: dict, found: list[Arm]) -> str:
    """early -> prefill_complete on the numbers upstream measured, each change the one the section's cards
    and sentences state (`policy_trade` on the two runs' exact figures; the table's rounded numbers can
    give a change one percent apart at a rounding edge)."""
    early, late = (next(a for a in found if a.name == name) for name in PDS)
    if early.run is None or late.run is None:
        who = " and ".join(a.name for a in (early, late) if a.run is None)
        return f"{who} cannot run on this deployment (choose it above for SGLang's reason and the fix)."
    trades = policy_trade(early.run.summary, late.run.summary)
    parts = [f"{row[0]} {t.words[0]}" for row, t in zip(table["rows"][TRADE_ROWS], trades, strict=True)]
    return f"early → prefill_complete in the model, over {table['head'][0]}: " + ", ".join(parts) + "."


def phase_table(run: RunFrames | None, arm: str) -> dict:
    if run is None:
        return {"head": ["group", "phases"], "rows": [["—", f"{arm} cannot run here (below)"]], "bold": -1}
    if run.summary.pd is None:
        return {"head": ["group", "phases"], "rows": [["—", f"{arm}: no PD phases"]], "bold": -1}
    frame = tables.phase_table({arm: run}).drop(columns=["policy"])
    return {"head": list(frame.columns), "rows": frame.astype(str).values.tolist(), "bold": -1}


def what_runs_table(found: list[Arm]) -> dict:
    """What each deployment runs: the model (the head), its GPUs and how they are split (engines or PD
    workers, their TP)."""
    model = next(model_words(a.scenario) for a in found if a.scenario is not None)
    rows = []
    for a in found:
        split, gpus = tables.deployment(a.scenario).rsplit(" on ", 1) if a.scenario else ("—", "—")
        rows.append([a.name, gpus, split])
    return {"head": [f"what runs: {model}", "GPUs", "split as"], "rows": rows, "bold": -1}


def shown_run(found: list[Arm], a: int) -> tuple[RunFrames, str]:
    """The run a deployment's setting shows, and what the summary says of it: its own, or where it cannot
    run, PD early's (for prefill_complete) or one engine's, named."""
    if found[a].run is not None:
        return found[a].run, ""
    early = next(x for x in found if x.name == PDS[0])
    other = early if found[a].name in PDS and early.run is not None else found[0]
    return other.run, f" The charts show {other.name} ({tables.deployment(other.scenario)})."


def cell_summary(workload: str, arm: Arm, words: str) -> str:
    """'The ten o'clock rush: PD, early: Llama-3.1-70B (bf16 weights, bf16 KV), 1 prefill × TP 4 + ...'; a
    deployment that cannot run: SGLang's reason in full, with the fix."""
    head = f"{_upper(WORKLOADS[workload])}: {arm.name}"
    if arm.run is None:
        what = f" ({tables.deployment(arm.scenario)})" if arm.scenario is not None else ""
        return f"{head}{what} cannot run. {arm.refused.where}: {arm.refused.problem}"
    return f"{head}: {model_words(arm.scenario)}, {tables.deployment(arm.scenario)}. {words}"


def _upper(text: str) -> str:
    return text[:1].upper() + text[1:]


# -- the figure ----------------------------------------------------------------------------------------
def pd_figure(start: str = "rush", arm: int = 2, runs=None, values: dict | None = None,
              layout: dict | None = None) -> Figure:
    """Both workloads x every deployment as one figure, opening on `start` and `arm` (an index of one engine,
    without PD, PD early, PD prefill_complete). `runs`: scenario -> RunFrames (the app passes its
    server-wide cache, which its PD sections and warm-up fill). `values`, `layout`: the page's deployment and
    its PD section's layout (None: the story's defaults and LAYOUT)."""
    runs, layout = runs or _run, {**LAYOUT, **(layout or {})}
    shown, deployments = [], {}
    for w, workload in enumerate(WORKLOADS):
        found = arms(workload, values, layout, runs)
        if found[0].run is None:  # the page's own deployment cannot run: refused as the page refuses it
            raise found[0].refused
        deployments[workload] = found
        table = numbers_table(found, 0)
        words = tradeoff_words(table, found)
        early, late = (next(a for a in found if a.name == name) for name in PDS)
        pd_case = late.scenario or early.scenario
        today = today_arm(workload, values, layout, runs)
        checks = checklist.table(checklist.of_runs(pd_case, early.run, late.run, found[0].run,
                                                   today and today[2]))
        verdict = verdict_text(found, today)
        runs_as = what_runs_table(found)
        for a, this in enumerate(found):
            run, said = shown_run(found, a)
            parts = [{**table, "bold": a + 1}, runs_as, phase_table(this.run, this.name), checks]
            summary = cell_summary(workload, this, words) + said
            shown.append(Shown(f"{w}|{a}", run, parts, f"{summary} {verdict}".strip()))
    names = [ONE, *([] if layout["base"] == "none" else [BASELINES[layout["base"]]]), *PDS]
    if layout["base"] == "none" and arm >= 1:
        if arm == 1:
            raise InputError("--set base", "none leaves out the engines without PD this figure opens on; use "
                                           "ten_oclock_rush_pd")
        arm -= 1
    axes = [{"name": "workload", "label": "Workload", "labels": [_upper(w) for w in WORKLOADS.values()],
             "start": list(WORKLOADS).index(start)},
            {"name": "deployment", "label": "Deployment", "labels": names, "start": arm}]
    said = json.dumps([start, arm, values, layout], sort_keys=True, default=str)
    uid = "ww-pd-" + hashlib.sha1(said.encode()).hexdigest()[:6]
    return build_figure(uid, "Split prefill from decode", teaser(deployments), note(deployments, layout),
                        axes, shown, lambda run: [views.story_view(run, "passes"),
                                                  views.decode_kv_view(run, run.end_at),
                                                  views.phases_view(run, run.end_at)],
                        pair=still_pair(axes, shown), source=source_line(deployments[start][0].scenario))


def still_pair(axes: list[dict], shown: list[Shown]) -> Pair:
    """The key switch for a reader without scripts: one engine beside the deployment the figure opens on
    (PD early, unless it opens elsewhere), on its workload; its tables already set every deployment side by
    side."""
    w, a = (axis["start"] for axis in axes)
    labels = axes[1]["labels"]
    after = a if a else labels.index(PDS[0])
    keys = (f"{w}|0", f"{w}|{after}")
    tables = next(s.tables for s in shown if s.key == keys[1])
    return Pair("Deployment", (labels[0], labels[after]), keys, tables)


def teaser(deployments: dict[str, list[Arm]]) -> str:
    """The question, and what runs: the page's model on its GPUs and how PD splits them; the upstream
    replica's own."""
    one, early = deployments["rush"][0], next(a for a in deployments["rush"] if a.name == PDS[0])
    upstream = next(a for a in deployments["upstream"] if a.name == PDS[0])
    split = f"; PD splits them as {tables.deployment(early.scenario)}" if early.scenario is not None else ""
    return ("One engine, the same GPUs without PD, or prefill-decode disaggregation — and when decode "
            "reserves its KV: early (the default) or once prefill completes. The ten o'clock rush runs "
            f"{model_words(one.scenario)} on {gpus_words(one.scenario)}{split}. The upstream test replica "
            f"runs its own deployment: {model_words(upstream.scenario)}, "
            f"{tables.deployment(upstream.scenario)}.")


def note(deployments: dict[str, list[Arm]], layout: dict) -> str:
    """How the runs were made, whose numbers the tables count, and what upstream measured."""
    base = ("" if layout["base"] == "none" else
            f" {_upper(BASELINES[layout['base']])}: the same requests on as many GPUs as PD, without PD"
            + (", dealt round robin as SGLang's --dp-size does." if layout["base"] != "one" else "."))
    counted = "; ".join(f"{WORKLOADS[w]}: {population(found)}" for w, found in deployments.items())
    return ("Every combination was simulated in advance by Who Waits' model of SGLang 0.5.23 (one engine: "
            f"the same requests on one server at SGLang's defaults).{base} The GPUs and deployment rows say "
            f"what each uses; the numbers count the requests the app's cards count ({counted}). Upstream "
            "measured on the real test +27 % output throughput, −49 % p95 first token and +93 % p99 gap "
            "between tokens under prefill_complete (seed 000); the numbers here are the model's. The "
            "checklist is the one to read before enabling prefill_complete, evaluated on each workload.")


# -- the page's PD section, taken away: its scenarios as TOML, its cards and table as one image -----------
def section_scenarios(values: dict | None = None,
                      layout: dict | None = None) -> dict[str, Scenario | InputError]:
    """The PD section's scenario under each policy, built as the section builds it (app.pd.presets.shape, then
    the feasibility check): the layout's preset, split as the layout says; SGLang's refusal where it cannot
    run."""
    layout = {**LAYOUT, **(layout or {})}
    workload = layout["preset"]
    data = preset_data(workload, {**RUSH.defaults, **(values or {})})
    out = {}
    for policy in POLICIES:
        try:
            out[policy] = shape(data, policy, *layout_of(workload, layout))
            check_deployment(out[policy])
        except InputError as err:
            out[policy] = err
    return out


def pd_toml(scenario: Scenario) -> str:
    """A PD scenario as a TOML file `python -m engine_model run FILE` runs, its title and description saying
    what runs, and the same words on top as comments."""
    policy = scenario.pd.decode_allocation_policy
    workload = "upstream" if scenario.name == "upstream_pd_replica" else "rush"
    what = f"{model_words(scenario)}, {tables.deployment(scenario)}, decode allocation {policy}"
    cap = scenario.pd.decode_kv_cap_per_rank
    what += f", decode KV capped at {cap:,} tokens per rank" if cap else ""
    title = f"{_upper(WORKLOADS[workload])} on PD ({policy})"
    on = f"{tables.model_name(scenario)} on {num_gpus(scenario)} × {tables.gpu_name(scenario.hardware.gpu)}"
    named = validate({**scenario.model_dump(mode="json", exclude_none=True), "title": title,
                      "about": f"{title}: {on}"[:120], "description": f"{_upper(WORKLOADS[workload])} on "
                                                                     f"{what}. Exported from the ten o'clock "
                                                                     "page's PD section."})
    return scenario_toml(named, f"{title}: {what}.\nRun it: python -m engine_model run THIS_FILE.toml")


def section_spec(arms: dict[str, tuple[Scenario, RunFrames | None]], runs: dict[str, RunFrames]) -> dict:
    """The PD section's cards and table as one image (render it with app.present.export.render): titled with
    the PD deployment, the lines a PD chart carries (settings.pd_note) under it; early -> prefill_complete on
    the cards' numbers (tables.tradeoff), then every deployment per prompt length (tables.policy_table)."""
    blocks: list[Block] = []
    if set(runs) == {"early", "prefill_complete"}:
        rows = []
        for row in tables.tradeoff(runs["early"], runs["prefill_complete"]):
            fmt = fmt_rate if row["unit"] == "tok/s" else fmt_seconds
            a, b, _ = pair(row["early"], row["prefill_complete"], fmt, FINER[fmt])  # as the cards print them
            exact = (fmt_change(row["prefill_complete"] / row["early"] - 1)
                     if row["early"] and row["prefill_complete"] is not None else "—")
            rows.append([row["label"], a, b, exact])  # the cards' change (policy_trade), not the rounded one
        counted = runs["early"].summary.population
        blocks.append((f"early → prefill_complete, over {counted} (the cards)",
                       ["figure", "early", "prefill_complete", "change"], rows))
    ran = {label: pair for label, pair in arms.items() if pair[1] is not None}
    if ran:
        frame = tables.policy_table(ran)
        counted = next(run.summary.population for _, run in ran.values())
        blocks.append((f"Per prompt length, over {counted}", list(frame.columns),
                       frame.astype(str).values.tolist()))
    pd = next((s for label, (s, _) in arms.items() if label.startswith("PD")), None)
    on = "" if pd is None else f": {tables.model_name(pd)} on {tables.gpus(pd)}"
    return tables_spec(f"Split prefill from decode{on}", pd_note(arms, runs), blocks)
