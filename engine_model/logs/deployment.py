"""The deployment a server log states, for a replay: the model (`model_path` matched to a preset, or the
closest one, with a note), tensor parallel (`tp_size`), the weight and KV dtypes (`dtype`, `quantization`,
`kv_cache_dtype`), and everything else the model cannot honour, listed. `scenario_from_log` applies it; the
engine settings (chunk size, mixed chunk, the KV pool, mem_fraction_static) travel as hints
(engine_model/logs/observed.py). docs/logs-and-traces.md §6 lists every rule.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from engine_model.errors import InputError
from engine_model.hardware import MODELS

FAMILIES = ("llama", "qwen", "deepseek", "glm")
SIZE = re.compile(r"(\d+(?:\.\d+)?)b(?![a-z])")  # '70b' in 'llama-3.1-70b-instruct'; not 'a22b's 22
FP8_CHECKPOINTS = {"deepseek-v3": "DeepSeek-V3's checkpoint is FP8 (its config.json's quantization_config)"}
NOT_MATCHABLE = ("custom",)  # presets no log names
PICKABLE = ("model", "tp_size", "weight_dtype", "kv_dtype")


@dataclass
class LogDeployment:
    """What a log says about where it ran, as scenario keys, and what the replay could not match."""

    model: str | None = None  # a MODELS key
    tp_size: int | None = None
    weight_dtype: str | None = None
    kv_dtype: str | None = None
    matched: list[str] = field(default_factory=list)  # how each setting was read
    unmatched: list[str] = field(default_factory=list)  # what the replay could not honour, and what it did

    def pick(self, picked: dict) -> None:
        """A person's choice over the log's: {"model" | "tp_size" | "weight_dtype" | "kv_dtype": value}."""
        for key, value in picked.items():
            if key not in PICKABLE:
                raise InputError(f"deployment.{key}",
                                 f"not a deployment setting; allowed: {', '.join(PICKABLE)}")
            logged = getattr(self, key)
            if value != logged:
                self.matched.append(f"{key} {value} picked (the log's: {logged or 'not stated'})")
            setattr(self, key, value)

    def apply(self, data: dict) -> None:
        """Into a scenario dict (`Scenario.model_dump()`): the log's model, TP and dtypes over the base's."""
        model = data.setdefault("model", {})
        if self.model is not None and self.model != model.get("name"):
            model.update(name=self.model, overrides={})  # another model's edited shapes do not carry over
        for key, value in (("weight_dtype", self.weight_dtype), ("kv_dtype", self.kv_dtype)):
            if value is not None:
                model[key] = value
        if self.tp_size is not None:
            data.setdefault("hardware", {})["tp_size"] = self.tp_size


def deployment_from_log(args: dict) -> LogDeployment:
    """`args`: the log's settings (engine_model.logs.settings)."""
    found = LogDeployment()
    read_model(found, args.get("model_path"))
    read_tp(found, args)
    read_weight_dtype(found, args, str(args.get("model_path") or ""))
    read_kv_dtype(found, args.get("kv_cache_dtype"))
    read_unmodelled(found, args)
    return found


# -- the model ------------------------------------------------------------------------------------------
def normalized(path: str) -> str:
    """'meta-llama/Meta-Llama-3.1-70B-Instruct' -> 'llama-3.1-70b-instruct'."""
    name = path.strip().rstrip("/").rsplit("/", 1)[-1].lower()
    return name.removeprefix("meta-")


def match_model(path: str) -> tuple[str, str | None]:
    """(a preset key, None) when the name is a preset's (any suffix: -Instruct, -FP8, a date), else (the
    closest preset, a note saying why it was picked)."""
    name = normalized(path)
    keys = [k for k in MODELS if k not in NOT_MATCHABLE]
    for key in sorted(keys, key=len, reverse=True):
        if name == key or name.startswith((key + "-", key + "_")):
            return key, None
    family = next((f for f in FAMILIES if name.startswith(f)), None)
    pool = [k for k in keys if k.startswith(family)] if family else keys
    size = SIZE.search(name)
    if size:
        billions = float(size.group(1))
        key = min(pool, key=lambda k: abs(math.log(billions * 1e9 / MODELS[k].total_params)))
        size_b = MODELS[key].total_params / 1e9
        why = f"{'its family, ' if family else ''}nearest in size: {billions:g}B vs {size_b:.0f}B"
    else:
        key = max(pool, key=lambda k: len(common_prefix(k, name)))
        why = "its family" if family else "no family or size in the name: the first preset"
    return key, (f"model_path {path!r} is not a preset: replayed as {MODELS[key].name}, the closest ({why}); "
                 "its shapes are editable (model.overrides)")


def common_prefix(a: str, b: str) -> str:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]


def read_model(found: LogDeployment, path) -> None:
    if not isinstance(path, str) or not path.strip():
        found.unmatched.append("the model: the log names none (no model_path); the replay keeps the one "
                               "picked")
        return
    found.model, note = match_model(path)
    if note:
        found.unmatched.append(note)
    else:
        found.matched.append(f"model_path {path!r} → {MODELS[found.model].name}")


# -- parallelism ----------------------------------------------------------------------------------------
def read_tp(found: LogDeployment, args: dict) -> None:
    tp = args.get("tp_size")
    if isinstance(tp, int) and not isinstance(tp, bool) and 1 <= tp <= 64:
        found.tp_size = tp
        found.matched.append(f"tp_size={tp} → {tp} GPU{'s' if tp > 1 else ''}, tensor parallel {tp}")
    elif tp is not None:
        found.unmatched.append(f"tp_size={tp!r}: not a TP size from 1 to 64; the replay keeps the one picked")
    dp = args.get("dp_size")
    if isinstance(dp, int) and dp > 1:
        if args.get("enable_dp_attention"):
            found.unmatched.append(f"DP attention (dp_size={dp}, enable_dp_attention): one engine has no "
                                   "DP attention in the model; the replay runs attention at TP "
                                   f"{found.tp_size or 1}")
        else:
            found.unmatched.append(f"dp_size={dp}: {dp} copies of the server behind SGLang's "
                                   "data-parallel controller; the replay runs one of them, from the lines of "
                                   "the rank it reads")
    pp = args.get("pp_size")
    if isinstance(pp, int) and pp > 1:
        found.unmatched.append(f"pp_size={pp}: pipeline parallel is not modelled; the replay runs one "
                               "stage's worth of GPUs as tensor parallel only")


# -- precision ------------------------------------------------------------------------------------------
def read_weight_dtype(found: LogDeployment, args: dict, path: str) -> None:
    quant = args.get("quantization")
    name = path.lower()
    if isinstance(quant, str) and quant:
        dtype = "nvfp4" if "fp4" in quant else "fp8" if "fp8" in quant else None
        if dtype is None:
            found.unmatched.append(f"quantization={quant!r}: not modelled; weights priced as bf16")
            found.weight_dtype = "bf16"
            return
        found.weight_dtype = dtype
        found.matched.append(f"quantization={quant!r} → {dtype} weights")
        return
    for marker, dtype in (("fp4", "nvfp4"), ("fp8", "fp8")):
        if marker in name:
            found.weight_dtype = dtype
            found.matched.append(f"the checkpoint's name says {marker.upper()} → {dtype} weights")
            return
    if found.model in FP8_CHECKPOINTS:
        found.weight_dtype = "fp8"
        found.matched.append(f"{FP8_CHECKPOINTS[found.model]} → fp8 weights")
        return
    dtype = args.get("dtype")
    if dtype in (None, "auto", "bfloat16", "bf16", "float16", "half", "fp16"):
        found.weight_dtype = "bf16"
        if dtype is not None:
            said = "the checkpoint's own, bf16" if dtype == "auto" else "16-bit"
            found.matched.append(f"dtype={dtype!r} → bf16 weights ({said})")
    else:
        found.unmatched.append(f"dtype={dtype!r}: not modelled; weights priced as bf16")
        found.weight_dtype = "bf16"


def read_kv_dtype(found: LogDeployment, kv) -> None:
    if kv is None:
        return
    if kv == "auto":
        found.kv_dtype = "auto"
        found.matched.append("kv_cache_dtype='auto' → auto: bf16, or fp8 for a DSA model on SM100+ "
                             "(as SGLang resolves it)")
    elif kv in ("bfloat16", "bf16", "float16", "half"):
        found.kv_dtype = "bf16"
        found.matched.append(f"kv_cache_dtype={kv!r} → bf16 KV cache")
    elif isinstance(kv, str) and kv.startswith("fp8"):
        found.kv_dtype = "fp8"
        found.matched.append(f"kv_cache_dtype={kv!r} → fp8 KV cache")
    else:
        found.unmatched.append(f"kv_cache_dtype={kv!r}: not modelled; the KV cache priced as bf16")
        found.kv_dtype = "bf16"


def read_unmodelled(found: LogDeployment, args: dict) -> None:
    mode = args.get("disaggregation_mode")
    if mode not in (None, "null", "None"):
        found.unmatched.append(f"disaggregation_mode={mode!r}: one PD worker's log, replayed as one engine")
    spec = args.get("speculative_algorithm")
    if spec not in (None, "None"):
        found.unmatched.append(f"speculative_algorithm={spec!r}: speculative decoding is not modelled")
