"""The PD section's runs as scenarios: the upstream replica as written, or the ten o'clock run split into
prefill and decode workers. No Streamlit: the page, the PD figure and the slides all build them here."""

from __future__ import annotations

import copy

from engine_model import STORIES, read_toml, validate


def pd_scenario(preset: str, rush_values: dict, policy: str, cap, num_prefill: int, num_decode: int):
    """The upstream replica as written, or the page's own ten o'clock run (same requests, GPU, model and seed)
    with the `[pd]` block of scenarios/ten_oclock_rush_pd.toml."""
    if preset == "upstream":
        data = copy.deepcopy(read_toml("upstream_pd_replica"))
    else:
        data = STORIES["ten_oclock_rush"].scenario(rush_values).model_dump(mode="json", exclude_none=True)
        data["name"] = "ten_oclock_rush_pd"
        data["pd"] = copy.deepcopy(read_toml("ten_oclock_rush_pd")["pd"])
        data["pd"].setdefault("prefill", {})["num_workers"] = num_prefill
        data["pd"].setdefault("decode", {})["num_workers"] = num_decode
    data["pd"]["decode_allocation_policy"] = policy
    if cap:
        data["pd"]["decode_kv_cap_per_rank"] = cap
    return validate(data)
