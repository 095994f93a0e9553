"""Resolve a scenario's engine settings the way SGLang resolves its server arguments.

Each default names the SGLang function it mirrors (sglang-scheduler-facts.md section 4), and the
resolved values travel with every result so a figure always shows what produced it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from pydantic import ValidationError

from engine_model import hardware
from engine_model.backend import Attention, attention_of
from engine_model.config import Scenario
from engine_model.errors import InputError
from engine_model.priority import QueueRules, queue_rules
from engine_model.speculative import SPEC_MAX_RUNNING, Speculative, speculative_of, startup_note
from engine_model.versions import Capabilities, capabilities, first_release

# `handle_gpu_memory_settings` (arg_groups/memory_hook.py): GPU memory (GiB) below which each chunk size
# applies.
CHUNK_BY_GPU_MEMORY = ((20, 2048), (35, 4096), (60, 4096), (90, 8192), (160, 8192))
CHUNK_FOR_LARGEST_GPU = 16384

# `handle_gpu_memory_settings`: the decode CUDA graph's default max batch by GPU memory (GiB below which
# each applies): (below, tp < 4, tp >= 4); 512 above 160 GiB. Checked in the 0.5.20-0.5.23 wheels.
CUDA_GRAPH_MAX_BS = ((20, 8, 8), (35, 48, 160), (60, 32, 160), (90, 256, 512), (160, 256, 512))
CUDA_GRAPH_MAX_BS_LARGEST = 512
# `handle_gpu_memory_settings` -> mem_fraction_static = (GPU memory - reserved) / GPU memory, reserved in MiB:
MEM_BASE_MIB = 512  # constant metadata (attention backend) and activation slack
MEM_PER_ACTIVATION_TOKEN_MIB = 1.5  # x max(chunked_prefill_size, 2048) activation tokens
MEM_PER_DECODE_GRAPH_BS_MIB = 2  # x the decode CUDA graph's max batch (`reserve_for_graph_mb`)
MEM_PER_PREFILL_GRAPH_MIB = 8  # x the number of prefill (breakable) graph sizes captured
MEM_MLA_PREFILL_GRAPH_MIB = 1536  # MLA models: instead of the line above
MEM_FLOOR_ABOVE_60GIB_MIB = 10 * 1024  # on GPUs above 60 GiB, reserve at least this much
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
    disable_radix_cache: bool
    ratio_init: float
    ratio_min: float
    ratio_decay: float
    prefill_decode_interval: int
    prefill_decode_interval_min_bs: int
    prefill_max_requests: int | None
    gpu_memory_gib: float
    tp_size: int
    overlap_schedule: bool = False  # event_loop_overlap: a pass's results land after the next is launched
    gpu_name: str = ""
    model_name: str = ""
    kv_bytes_per_token: float = 0.0  # on each GPU (TP splits a token's KV heads over the GPUs)
    kv_heads_per_gpu: int = 0  # GQA: KV heads each GPU holds (copied when TP exceeds them); 0 for MLA
    # The attention backend and what it forces (engine_model/backend.py); each *_source names the SGLang rule
    page_size_source: str = ""
    attention_backend: str = ""
    attention_prefill: str = ""  # the prefill kernels (DSA: dsa_prefill_backend), else the backend
    attention_decode: str = ""
    attention_source: str = ""
    attention_kernels: str = ""  # the kernel figures that price attention: "fa3", "sm100", "fa2"
    prefill_graphs: bool = True  # False: the backend turns prefill CUDA graphs off
    prefill_graphs_source: str = ""
    kv_dtype: str = "bf16"  # "bf16" or "fp8", after --kv-cache-dtype auto
    kv_dtype_source: str = ""

    @property
    def attention_words(self) -> str:
        """'attention fa3, page 1', 'attention trtllm_mla, page 64, prefill CUDA graphs off', 'attention dsa
        (prefill flashmla_sparse, decode fa3), page 64': the backend SGLang runs and what it forces."""
        split = (f" (prefill {self.attention_prefill}, decode {self.attention_decode})"
                 if self.attention_prefill != self.attention_decode else "")
        graphs = "" if self.prefill_graphs else ", prefill CUDA graphs off"
        return f"attention {self.attention_backend}{split}, page {self.page_size}{graphs}"
    decode_extra_slots: int = 0  # PD decode: request rows beyond max_running_requests (DecodeReqToTokenPool)
    speculative: Speculative | None = None  # speculative decoding as SGLang resolves it (speculative.py)
    startup_note: str = ""  # what SGLang changed at start-up for it ("you set mixed chunk on; ...")
    queueing: QueueRules = QueueRules()  # priority scheduling, preemption, queue limits (priority.py)

    @property
    def kv_pool_gib_per_gpu(self) -> float:
        return self.max_total_tokens * self.kv_bytes_per_token / hardware.GIB

    def to_dict(self) -> dict:
        return {**asdict(self), "kv_pool_gib_per_gpu": self.kv_pool_gib_per_gpu,
                "attention_words": self.attention_words,
                "speculative_words": self.speculative.words if self.speculative else ""}


def default_chunked_prefill_size(gpu_memory_gib: float) -> int:
    """SGLang's default `chunked_prefill_size` from GPU memory (`handle_gpu_memory_settings`)."""
    for below_gib, size in CHUNK_BY_GPU_MEMORY:
        if gpu_memory_gib < below_gib:
            return size
    return CHUNK_FOR_LARGEST_GPU


def default_cuda_graph_max_bs(memory_gib: float, tp_size: int) -> int:
    """SGLang's default `--cuda-graph-max-bs-decode` for a GPU of this memory at this tp_size."""
    for below_gib, small_tp, large_tp in CUDA_GRAPH_MAX_BS:
        if memory_gib < below_gib:
            return small_tp if tp_size < 4 else large_tp
    return CUDA_GRAPH_MAX_BS_LARGEST


def prefill_graph_sizes(max_tokens: int) -> tuple[int, ...]:
    """`generate_prefill_cuda_graph_batch_sizes`: the token counts a prefill (breakable) CUDA graph is
    captured at, up to max_tokens: every 4 to 32, 16 to 256, 32 to 512, 64 to 1,024, 256 to 4,096, then
    every 512."""
    steps = ((4, 32, 4), (48, 256, 16), (288, 512, 32), (576, 1024, 64), (1280, 4096, 256))
    sizes = [n for start, stop, step in steps for n in range(start, stop + 1, step)]
    sizes += range(4608, max_tokens + 1, 512)
    return tuple(n for n in sizes if n <= max_tokens)


MLA_PREFILL_GRAPH_CAP = 8192  # 0.5.23: min(8192, chunked_prefill_size)
MLA_PREFILL_GRAPH_TOKENS_OLD = 2048  # 0.5.20-0.5.22: 2048, whatever the chunk


def default_prefill_graph_tokens(chunk: int | None, model_name: str, is_mla: bool,
                                 max_total_tokens: int | None, version: str = "0.5.23") -> int:
    """`handle_gpu_memory_settings` (arg_groups/memory_hook.py): the prefill graph's max "batch" (tokens) is
    chunked_prefill_size, for MLA min(8192, chunk) in 0.5.23 and 2,048 in 0.5.20-0.5.22
    (versions.py `mla_prefill_graph_follows_chunk`); at most max_total_tokens when that is set, at most 4,096
    for Llama-2; 0 without chunking (no size is captured; MLA before 0.5.23 still captures up to 2,048)."""
    if is_mla and not capabilities(version).mla_prefill_graph_follows_chunk:
        tokens = MLA_PREFILL_GRAPH_TOKENS_OLD
    elif chunk is None:
        return 0
    else:
        tokens = min(chunk, MLA_PREFILL_GRAPH_CAP) if is_mla else chunk
    if max_total_tokens is not None:
        tokens = min(tokens, max_total_tokens)
    if "llama-2" in model_name.lower():
        tokens = min(tokens, 4096)
    return tokens


def default_mem_fraction_static(gpu_memory_gib: float, activation_tokens: int, tp_size: int,
                                decode_graph_bs: int, num_prefill_graphs: int, is_mla: bool) -> float:
    """`handle_gpu_memory_settings` (0.5.20-0.5.23, the same arithmetic): reserve room for activations
    (1.5 MiB per token of the larger of the chunk and 2,048), CUDA-graph buffers and metadata, and give the
    rest to weights and the KV pool: round((memory - reserved) / memory, 3)."""
    memory_mib = gpu_memory_gib * 1024
    reserved = MEM_BASE_MIB + max(activation_tokens, 2048) * MEM_PER_ACTIVATION_TOKEN_MIB
    reserved += tp_size / 8 * 1024  # "adjustments for large parallel size" (pp = 1)
    reserved += decode_graph_bs * MEM_PER_DECODE_GRAPH_BS_MIB
    if num_prefill_graphs:
        reserved += MEM_MLA_PREFILL_GRAPH_MIB if is_mla else num_prefill_graphs * MEM_PER_PREFILL_GRAPH_MIB
    if memory_mib > 60 * 1024:
        reserved = max(reserved, MEM_FLOOR_ABOVE_60GIB_MIB)
    return round((memory_mib - reserved) / memory_mib, 3)


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


def chunk_of(scenario: Scenario, gpu) -> tuple[int | None, str]:
    """chunked_prefill_size as SGLang resolves it (None: chunking off), and where it came from."""
    chunk = scenario.engine.chunked_prefill_size
    if chunk == "auto":
        return (default_chunked_prefill_size(gpu.memory_gib),
                f"auto: {gpu.memory_gib:g} GiB GPU memory (handle_gpu_memory_settings)")
    if chunk <= 0:
        return None, "disabled (chunked_prefill_size <= 0)"
    return chunk, "set"


def decode_graph_bs_of(scenario: Scenario, gpu) -> int:
    """The decode CUDA graph's max batch: the flag, else SGLang's default by GPU memory and TP, capped at
    max_running_requests when that is set (0.5.22+); 0: no decode graphs."""
    engine = scenario.engine
    if engine.cuda_graph_max_bs_decode is not None:
        return engine.cuda_graph_max_bs_decode
    bs = default_cuda_graph_max_bs(gpu.memory_gib, scenario.hardware.tp_size)
    if engine.max_running_requests is not None and capabilities(engine.version).caps_graph_bs_at_running:
        bs = min(bs, engine.max_running_requests)
    return bs


def prefill_graph_tokens_of(scenario: Scenario, model, chunk: int | None) -> int:
    """The largest prefill or mixed pass (tokens) a breakable CUDA graph is captured for: the flag, else
    SGLang's default; 0: no prefill graphs. What `handle_gpu_memory_settings` reserves memory for; whether the
    backend then turns them off is `prefill_graphs_run`."""
    engine = scenario.engine
    if engine.cuda_graph_max_bs_prefill is not None:
        return engine.cuda_graph_max_bs_prefill
    return default_prefill_graph_tokens(chunk, model.name, model.attention == "mla", engine.max_total_tokens,
                                        engine.version)


def attention_for(scenario: Scenario, gpu, model) -> Attention:
    """The scenario's attention backend, page size, prefill graphs and KV dtype (engine_model/backend.py)."""
    engine = scenario.engine
    return attention_of(gpu, model, scenario.hardware.tp_size, engine.version, engine.attention_backend,
                        engine.page_size, scenario.model.kv_dtype)


def kv_dtype_of(scenario: Scenario) -> str:
    """The KV cache's dtype, "bf16" or "fp8": model.kv_dtype, with "auto" as SGLang resolves it."""
    gpu, model = gpu_of(scenario), model_of(scenario)
    return attention_for(scenario, gpu, model).kv_dtype


def prefill_graphs_run(scenario: Scenario, gpu, model, chunk: int | None) -> int:
    """The largest pass a prefill graph replays once SGLang has resolved the backend: 0 when the backend
    turns prefill graphs off (`disable_prefill_cuda_graph_for_deepseek_trtllm_mla`, after the memory is
    reserved)."""
    if not attention_for(scenario, gpu, model).prefill_graphs:
        return 0
    return prefill_graph_tokens_of(scenario, model, chunk)


def mem_fraction_of(scenario: Scenario, gpu, model, chunk: int | None) -> tuple[float, str]:
    """engine.mem_fraction_static if set, else SGLang's derivation from this GPU's memory."""
    engine = scenario.engine
    if engine.mem_fraction_static is not None:
        return engine.mem_fraction_static, "set"
    activation = chunk if chunk is not None else engine.max_prefill_tokens
    num_prefill = len(prefill_graph_sizes(prefill_graph_tokens_of(scenario, model, chunk)))
    fraction = default_mem_fraction_static(gpu.memory_gib, activation, scenario.hardware.tp_size,
                                           decode_graph_bs_of(scenario, gpu), num_prefill,
                                           model.attention == "mla")
    return fraction, "derived from GPU memory as SGLang does (handle_gpu_memory_settings)"


def pool_of(scenario: Scenario, gpu, model, chunk: int | None) -> tuple[int, str]:
    """The KV pool in tokens per GPU, and where it came from: what fits in GPU memory after the weights, or
    max_total_tokens when set, capped at what fits (`_apply_token_constraints`: SGLang warns and uses the
    profiled value when the flag asks for more); either rounded down to whole pages
    (model_executor/pool_configurator.py `calculate_pool_sizes`, `calculate_pool_sizes_from_max_tokens`:
    tokens // page_size * page_size, in 0.5.20-0.5.23). A set pool on memory the model cannot size (weights
    that do not fit, a derived fraction below 0) is taken as set: engine_model.feasibility.check refuses such
    a deployment at every entry point, and the reference replays and property tests run such pools."""
    fraction, fraction_source = mem_fraction_of(scenario, gpu, model, chunk)
    tp_size = scenario.hardware.tp_size
    attention = attention_for(scenario, gpu, model)
    page = attention.page_size
    wanted = scenario.engine.max_total_tokens
    if wanted is not None:
        if wanted < page:
            raise InputError("engine.max_total_tokens", f"{wanted} is less than one page ({page} tokens, "
                             f"{attention.page_source}); SGLang rounds the pool down to whole pages")
        wanted = wanted // page * page
    try:
        capacity = hardware.kv_capacity_tokens(gpu, model, tp_size, scenario.model.weight_dtype,
                                               attention.kv_dtype, mem_fraction_static=fraction)
    except InputError as err:
        if wanted is not None:
            return wanted, "set (max_total_tokens)"
        if err.where == "deployment":  # the weights do not fit: the words every entry point shows
            raise
        raise InputError(f"hardware ({err.where})", err.problem) from None
    capacity = capacity // page * page
    if wanted is not None and wanted <= capacity:
        return wanted, "set (max_total_tokens)"
    pages = f", in whole pages of {page}" if page > 1 else ""
    source = (f"from GPU memory: {gpu.name} x TP{tp_size}, {model.name}, mem_fraction_static {fraction:g} "
              f"({fraction_source}){pages}")
    if wanted is not None:
        source = (f"max_total_tokens {wanted:,} is more than fits, so SGLang uses what fits, {source}")
    return capacity, source


def resolve(scenario: Scenario) -> Resolved:
    engine = scenario.engine
    gpu, model = gpu_of(scenario), model_of(scenario)
    tp_size = scenario.hardware.tp_size
    attention = attention_for(scenario, gpu, model)  # the backend, and the page size and KV dtype it forces
    page_size = attention.page_size

    chunk, chunk_source = chunk_of(scenario, gpu)
    if chunk is not None and chunk % page_size:
        raise InputError("engine.chunked_prefill_size", f"{chunk} must be divisible by page_size {page_size}")

    pool, pool_source = pool_of(scenario, gpu, model, chunk)
    caps = capabilities(engine.version)
    if engine.schedule_policy == "shortest-prefill-first" and not caps.has_shortest_prefill_first:
        raise InputError("engine.schedule_policy", f"shortest-prefill-first exists from SGLang "
                         f"{first_release('has_shortest_prefill_first')}; engine.version is {engine.version}")
    if engine.schedule_policy == "shortest-prefill-first" and engine.disable_radix_cache:
        raise InputError("engine.schedule_policy", "shortest-prefill-first needs the radix cache (SGLang: "
                         "'Experimental shortest-prefill-first requires prefix caching'): set "
                         "engine.disable_radix_cache=false or another policy")
    context_len = engine.context_length or model.context_length
    max_req_len = min(context_len - 1, pool - 1)  # Scheduler.__init__: max_req_len
    ratio_init = min(INIT_NEW_TOKEN_RATIO * engine.schedule_conservativeness, 1.0)
    ratio_min = min(ratio_init * MIN_NEW_TOKEN_RATIO_FACTOR, 1.0)
    spec = speculative_of(scenario, page_size, engine.dp_size if engine.enable_dp_attention else 1,
                          (attention.backend, attention.prefill, attention.decode))
    mixed = chunk is not None and engine.enable_mixed_chunk  # init_chunked_prefill
    running = engine.max_running_requests or default_max_running_requests(pool, context_len)
    if spec is not None:
        mixed = mixed and spec.keeps_mixed_chunk  # _handle_eagle_family, _handle_ngram
        running = engine.max_running_requests or SPEC_MAX_RUNNING
    return Resolved(
        version=engine.version,
        caps=caps,
        chunked_prefill_size=chunk,
        chunked_prefill_size_source=chunk_source,
        is_mixed_chunk=mixed,
        max_prefill_tokens=engine.max_prefill_tokens,
        page_size=page_size,
        max_total_tokens=pool,
        max_total_tokens_source=pool_source,
        max_running_requests=running,
        context_len=context_len,
        max_req_len=max_req_len,
        max_req_input_len=max_req_len - 5,
        schedule_policy=engine.schedule_policy,
        disable_radix_cache=engine.disable_radix_cache,
        ratio_init=ratio_init,
        ratio_min=ratio_min,
        ratio_decay=(ratio_init - ratio_min) / NEW_TOKEN_RATIO_DECAY_STEPS,
        prefill_decode_interval=engine.prefill_decode_interval,
        prefill_decode_interval_min_bs=engine.prefill_decode_interval_min_bs,
        prefill_max_requests=engine.prefill_max_requests,
        gpu_memory_gib=gpu.memory_gib,
        tp_size=tp_size,
        gpu_name=gpu.name,
        model_name=model.name,
        kv_bytes_per_token=hardware.kv_bytes_per_token(model, attention.kv_dtype, tp_size),
        kv_heads_per_gpu=(0 if model.attention == "mla" else hardware.kv_heads_per_rank(model, tp_size)),
        overlap_schedule=not engine.disable_overlap_schedule,
        page_size_source=attention.page_source,
        attention_backend=attention.backend,
        attention_prefill=attention.prefill,
        attention_decode=attention.decode,
        attention_source=attention.source,
        attention_kernels=attention.kernels,
        prefill_graphs=attention.prefill_graphs,
        prefill_graphs_source=attention.graphs_source,
        kv_dtype=attention.kv_dtype,
        kv_dtype_source=attention.kv_source,
        speculative=spec,
        startup_note=startup_note(scenario, spec),
        queueing=queue_rules(scenario),
    )
