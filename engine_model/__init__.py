"""Who Waits engine model: an iteration-level model of SGLang's scheduler.

    from engine_model import load_scenario, simulate, summary
    result = simulate(load_scenario("forty_replies", ["engine.enable_mixed_chunk=true"]))
    summary(result)["metrics"]["groups"]["streams"]["max_itl_s"]["max"]
"""

from engine_model.config import Scenario
from engine_model.errors import InputError
from engine_model.report import summary
from engine_model.scenario_io import apply_sets, load_scenario, read_toml, scenario_names, validate
from engine_model.simulation import Result, Run, simulate

__all__ = [
    "InputError", "Result", "Run", "Scenario", "apply_sets", "load_scenario", "read_toml", "scenario_names",
    "simulate", "summary", "validate",
]
