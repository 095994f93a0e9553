"""The PD section's runs as scenarios: any single-engine case (the ten o'clock run, a trace) split into
prefill and decode workers, the upstream replica as written, and the same requests on the same GPUs without
PD. No Streamlit: the page, Your server, the PD figure and the slides all build them here."""

from __future__ import annotations

import copy

from engine_model import (
    MODELS,
    STORIES,
    InputError,
    Scenario,
    check_deployment,
    num_gpus,
    read_toml,
    tp_sizes,
    validate,
)

POLICIES = ("early", "prefill_complete")
BASELINES = {"today": "your engine, as today", "engines": "one engine per PD worker",
             "one": "one engine, TP = every GPU", "none": "none"}


def preset_data(preset: str, rush_values: dict) -> dict:
    """A preset's case as a scenario dict: the upstream replica's TOML (with its own [pd]), or the page's own
    ten o'clock run (same requests, GPU, model and seed)."""
    if preset == "upstream":
        return copy.deepcopy(read_toml("upstream_pd_replica"))
    data = STORIES["ten_oclock_rush"].scenario(rush_values).model_dump(mode="json", exclude_none=True)
    data["name"] = "ten_oclock_rush_pd"
    return data


def split_tp(data: dict, num_workers: int) -> int:
    """Each worker's TP when `num_workers` PD workers split the case's GPUs: the largest TP that SGLang can
    split the model over and that is at most the case's TP / num_workers (8 GPUs at TP 8, 1 + 1 workers:
    TP 4 each). With fewer GPUs than workers it is 1, and PD takes more GPUs than the case."""
    tp = int(data.get("hardware", {}).get("tp_size", 1))
    name = data.get("model", {}).get("name", "llama-3.1-8b")
    share = max(1, tp // num_workers)
    return max(tp_sizes(MODELS[name], share)) if name in MODELS else share


def shape(data: dict, policy: str, cap, num_prefill: int, num_decode: int, worker_tp: int = 0) -> Scenario:
    """The case on prefill and decode workers, validated but not checked: a [pd] block of its own (the
    upstream replica), or that of scenarios/ten_oclock_rush_pd.toml with these worker counts, each worker on
    the case's GPU at `worker_tp` (0: the case's GPUs split between the workers, `split_tp`)."""
    data = copy.deepcopy(data)
    if "pd" not in data:
        data["pd"] = copy.deepcopy(read_toml("ten_oclock_rush_pd")["pd"])
        tp = worker_tp or split_tp(data, num_prefill + num_decode)
        for role, count in (("prefill", num_prefill), ("decode", num_decode)):
            data["pd"].setdefault(role, {})["num_workers"] = count
            data["pd"][role]["tp_size"] = tp
    data["pd"]["decode_allocation_policy"] = policy
    if cap:
        data["pd"]["decode_kv_cap_per_rank"] = cap
    return validate(data)


def policy_runs(data: dict, cap, num_prefill: int, num_decode: int, worker_tp: int, run
                ) -> tuple[dict[str, Scenario], dict, dict[str, InputError]]:
    """The case under each decode allocation policy: every scenario `shape` built (refused or not), `run`'s
    result for each that passes the check, and the refusal of each that does not."""
    scenarios, runs, refused = {}, {}, {}
    for policy in POLICIES:
        try:
            scenarios[policy] = shape(data, policy, cap, num_prefill, num_decode, worker_tp)
            check_deployment(scenarios[policy])
            runs[policy] = run(scenarios[policy])
        except InputError as err:
            refused[policy] = err
    return scenarios, runs, refused


def split(data: dict, policy: str, cap, num_prefill: int, num_decode: int, worker_tp: int = 0) -> Scenario:
    """`shape`, refused like every entry point when the deployment cannot run (engine_model.deployment)."""
    scenario = shape(data, policy, cap, num_prefill, num_decode, worker_tp)
    check_deployment(scenario)
    return scenario


def checked(data: dict) -> Scenario:
    """A single-engine case, validated and refused when its deployment cannot run."""
    scenario = validate(data)
    check_deployment(scenario)
    return scenario


def baseline(data: dict, kind: str, pd: Scenario) -> Scenario | None:
    """The same requests without PD: today's engine (the case as it is; on more GPUs when PD uses more, as
    many copies of it as PD's GPUs hold, dealt round robin: SGLang's --dp-size), one engine per PD worker
    (each at the workers' TP), or one engine whose TP is every GPU; None for `none`. Checked."""
    if kind == "none":
        return None
    data = copy.deepcopy(data)
    data.pop("pd", None)
    gpus, workers = num_gpus(pd), pd.pd.prefill.num_workers + pd.pd.decode.num_workers
    hardware, engine = data.setdefault("hardware", {}), data.setdefault("engine", {})
    if kind == "today":
        tp = int(hardware.get("tp_size", 1))
        engine["dp_size"] = max(1, gpus // tp) if gpus % tp == 0 else 1
    else:
        hardware["tp_size"] = gpus // workers if kind == "engines" else gpus
        engine["dp_size"] = workers if kind == "engines" else 1
    return checked(data)


def pd_scenario(preset: str, rush_values: dict, policy: str, cap, num_prefill: int, num_decode: int,
                worker_tp: int = 0) -> Scenario:
    """A preset split into prefill and decode workers (checked)."""
    return split(preset_data(preset, rush_values), policy, cap, num_prefill, num_decode, worker_tp)
