"""Resolve a scenario's engine settings the way SGLang resolves its server arguments.

Each default names the SGLang function it mirrors (sglang-scheduler-facts.md section 4), and the
resolved values travel with every result so a figure always shows what produced it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from pydantic import ValidationError

from engine_model import hardware
from engine_model.config import Scenario
from engine_model.errors import InputError
from engine_model.versions import Capabilities, capabilities, first_release

# `handle_gpu_memory_settings` (arg_groups/memory_hook.py): GPU memory (GiB) below which each chunk size
# applies.
CHUNK_BY_GPU_MEMORY = ((20, 2048), (35, 4096), (60, 4096), (90, 8192), (160, 8192))
CHUNK_FOR_LARGEST_GPU = 16384

INIT_NEW_TOKEN_RATIO = 0.7  # SGLANG_INIT_NEW_TOKEN_RATIO
MIN_NEW_TOKEN_RATIO_FACTOR = 0.14  # SGLANG_MIN_NEW_TOKEN_RATIO_FACTOR
NEW_TOKEN_RATIO_DECAY_STEPS = 600  # SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS


@dataclass(frozen=True)
class Resolved:
    """The settings the engine runs with, after SGLang's defaults."""

    version: str
    caps: Capabilities  # what this release does differently (engine_model/versions.py)
    chunked_prefill_size: int | None  # None: chunking disabled
    chunked_prefill_size_source: str
    is_mixed_chunk: bool
    max_prefill_tokens: int
    page_size: int
    max_total_tokens: int  # KV pool, tokens
    max_total_tokens_source: str
    max_running_requests: int
    context_len: int
    max_req_len: int
    max_req_input_len: int
    schedule_policy: str
    ratio_init: float
    ratio_min: float
    ratio_decay: float
    prefill_decode_interval: int
    prefill_decode_interval_min_bs: int
    prefill_max_requests: int | None
    gpu_memory_gib: float
    tp_size: int
    overlap_schedule: bool = False  # event_loop_overlap: a pass's results land after the next is launched

    def to_dict(self) -> dict:
        return asdict(self)


def default_chunked_prefill_size(gpu_memory_gib: float) -> int:
    """SGLang's default `chunked_prefill_size` from GPU memory (`handle_gpu_memory_settings`)."""
    for below_gib, size in CHUNK_BY_GPU_MEMORY:
        if gpu_memory_gib < below_gib:
            return size
    return CHUNK_FOR_LARGEST_GPU


def default_max_running_requests(max_total_tokens: int, context_len: int) -> int:
    """`resolve_max_num_reqs` (mem_cache/kv_cache_configurator.py): 512 per context, clamped."""
    by_context = min(max(int(max_total_tokens / context_len * 512), 2048), 4096)
    return max(1, min(by_context, max_total_tokens // 2))


def with_overrides(preset, overrides: dict, where: str):
    """A preset with user overrides applied and validated; unknown fields are named."""
    if not overrides:
        return preset
    try:
        return type(preset).model_validate({**preset.model_dump(), **overrides})
    except ValidationError as err:
        first = err.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise InputError(f"{where}.{field}", first["msg"]) from None


def preset_of(lookup, name: str, where: str, overrides: dict, overrides_where: str):
    """A named preset with the scenario's overrides; errors name the scenario key."""
    try:
        preset = lookup(name)
    except InputError as err:
        raise InputError(where, err.problem) from None
    return with_overrides(preset, overrides, overrides_where)


def gpu_of(scenario: Scenario):
    hw = scenario.hardware
    return preset_of(hardware.gpu, hw.gpu, "hardware.gpu", hw.gpu_overrides, "hardware.gpu_overrides")


def model_of(scenario: Scenario):
    m = scenario.model
    return preset_of(hardware.model, m.name, "model.name", m.overrides, "model.overrides")


def resolve(scenario: Scenario) -> Resolved:
    engine = scenario.engine
    gpu, model = gpu_of(scenario), model_of(scenario)
    tp_size = scenario.hardware.tp_size

    if engine.chunked_prefill_size == "auto":
        chunk = default_chunked_prefill_size(gpu.memory_gib)
        chunk_source = f"auto: {gpu.memory_gib:g} GiB GPU memory (handle_gpu_memory_settings)"
    elif engine.chunked_prefill_size <= 0:
        chunk, chunk_source = None, "disabled (chunked_prefill_size <= 0)"
    else:
        chunk, chunk_source = engine.chunked_prefill_size, "set"
    if chunk is not None and chunk % engine.page_size:
        raise InputError("engine.chunked_prefill_size",
                         f"{chunk} must be divisible by page_size {engine.page_size}")

    if engine.max_total_tokens is not None:
        pool, pool_source = engine.max_total_tokens, "set (max_total_tokens)"
    else:
        kwargs = ({} if engine.mem_fraction_static is None
                  else {"mem_fraction_static": engine.mem_fraction_static})
        try:
            pool = hardware.kv_capacity_tokens(
                gpu, model, tp_size, scenario.model.weight_dtype, scenario.model.kv_dtype, **kwargs
            )
        except InputError as err:
            raise InputError(f"hardware ({err.where})", err.problem) from None
        pool_source = f"from GPU memory: {gpu.name} x TP{tp_size}, {model.name}"
    caps = capabilities(engine.version)
    if engine.schedule_policy == "shortest-prefill-first" and not caps.has_shortest_prefill_first:
        raise InputError("engine.schedule_policy", f"shortest-prefill-first exists from SGLang "
                         f"{first_release('has_shortest_prefill_first')}; engine.version is {engine.version}")
    context_len = engine.context_length or model.context_length
    max_req_len = min(context_len - 1, pool - 1)  # Scheduler.__init__: max_req_len
    ratio_init = min(INIT_NEW_TOKEN_RATIO * engine.schedule_conservativeness, 1.0)
    ratio_min = min(ratio_init * MIN_NEW_TOKEN_RATIO_FACTOR, 1.0)
    return Resolved(
        version=engine.version,
        caps=caps,
        chunked_prefill_size=chunk,
        chunked_prefill_size_source=chunk_source,
        is_mixed_chunk=chunk is not None and engine.enable_mixed_chunk,  # init_chunked_prefill
        max_prefill_tokens=engine.max_prefill_tokens,
        page_size=engine.page_size,
        max_total_tokens=pool,
        max_total_tokens_source=pool_source,
        max_running_requests=engine.max_running_requests or default_max_running_requests(pool, context_len),
        context_len=context_len,
        max_req_len=max_req_len,
        max_req_input_len=max_req_len - 5,
        schedule_policy=engine.schedule_policy,
        ratio_init=ratio_init,
        ratio_min=ratio_min,
        ratio_decay=(ratio_init - ratio_min) / NEW_TOKEN_RATIO_DECAY_STEPS,
        prefill_decode_interval=engine.prefill_decode_interval,
        prefill_decode_interval_min_bs=engine.prefill_decode_interval_min_bs,
        prefill_max_requests=engine.prefill_max_requests,
        gpu_memory_gib=gpu.memory_gib,
        tp_size=tp_size,
        overlap_schedule=not engine.disable_overlap_schedule,
    )
