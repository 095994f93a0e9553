"""How long one forward pass takes: the reference linear predictor and a documented roofline.

The scheduler calls `seconds(shape)` once per pass with the pass's aggregate numbers (`PassShape`), so
a cost model is O(1) per pass. docs/cost-model.md gives the formulas in notation, every factor with its
value and reason, and the check against Vidur's measured operator times.
"""

from bisect import bisect_left
from dataclasses import dataclass, field
from typing import NamedTuple

from pydantic import ValidationError

from engine_model.backend import priced_gpu
from engine_model.errors import InputError
from engine_model.frontend import OUTPUT_ROW_S, TOKENIZE_S_PER_TOKEN
from engine_model.hardware import (
    EFFICIENCY_FIELDS,
    GPU,
    KV_DTYPES,
    Model,
    dtype_bytes,
    kv_bytes_per_token,
)
from engine_model.kernels import (
    ACTIVATION_BYTES,
    Time,
    attention_gemms,
    attention_time,
    elementwise_kernels,
    elementwise_layer_time,
    experts_touched,
    indexer_gemms,
    linear_time,
    mlp_gemms,
)
from engine_model.precision import weight_path
from engine_model.resolve import (
    attention_for,
    chunk_of,
    decode_graph_bs_of,
    default_chunked_prefill_size,
    default_cuda_graph_max_bs,
    default_prefill_graph_tokens,
    gpu_of,
    model_of,
    prefill_graph_sizes,
    prefill_graphs_run,
)

__all__ = ["LinearCost", "PassShape", "RooflineCost", "attn_pairs", "cost_of", "experts_touched",
           "linear_layer_seconds", "roofline_cost"]

# CPU time per pass, outside the GPU's kernels (docs/cost-model.md, "Time outside the kernels"). Vidur's
# A100 profile of sarathi-serve (shared/data/vidur_profiling/legacy_7f14d6a, Llama-2-7B TP1, batch 8-128):
# schedule + sampling + input preparation + output processing = 0.79 ms + 0.043 ms per request (linear
# fit, within 0.06 ms). SGLang's own figures are not published; we take Vidur's.
PER_PASS_S = 0.79e-3
PER_REQUEST_S = 43e-6
# Assumption: CPU time per kernel in eager mode (PyTorch dispatch and the model's Python around it). The
# docs-CI log shared/data/sglang_logs/02 (Qwen2.5-0.5B, CUDA graphs off) decodes one request at 106-130
# tokens/s: ~8-9 ms for ~290 kernels (count_kernels), ~27 us each, on a shared CI machine; we take 20 us.
KERNEL_LAUNCH_S = 20e-6
GRAPH_REPLAY_S = 30e-6  # assumption: CPU time to replay one captured CUDA graph
FRONTEND_S = 2e-3  # assumption: HTTP in and out, tokenizer and detokenizer hops, for the first token
TOKENIZE_S = TOKENIZE_S_PER_TOKEN  # measured on this CPU (engine_model/frontend.py, bench/bench_tokenize.py)
ALLREDUCE_LATENCY_S = 20e-6  # assumption: per all-reduce call on NVLink (Vidur DGX profile: 10-40 us)
# A prefill graph replays only where padding to its captured size at most doubles the tokens
# (_MAX_PREFILL_CUDA_GRAPH_PADDING_FACTOR, prefill_cuda_graph_runner.py)
PREFILL_GRAPH_PADDING = 2
KERNELS_PER_PASS = 4  # assumption: embedding, logits, sampling and the KV-index kernels outside the layers
CPU_FIGURES = ("per_pass_s", "per_request_s", "kernel_launch_s", "graph_replay_s", "frontend_s", "tokenize_s",
               "output_row_s")


class PassShape(NamedTuple):
    num_rows: int  # requests in the pass (prefill rows + decode rows)
    num_decode_rows: int  # rows of extend length 1 that are decode steps
    new_tokens: int  # sum over rows of extend (tokens computed this pass)
    past_kv_sum: int  # sum over rows of tokens already in KV before the pass
    attn_pairs: int  # sum over rows of extend * past_kv + extend * (extend + 1) // 2


def attn_pairs(extend: int, past_kv: int) -> int:
    """Causal query-key pairs of one row: each new token sees the past and the new tokens before it."""
    return extend * past_kv + extend * (extend + 1) // 2


@dataclass(frozen=True)
class LinearCost:
    """latency = a + b * new_tokens + c * past_kv_sum: the predictor of the SGLang reference traces
    (shared/data/sglang_reference/README.md). Same float operations in the same order, so the traces'
    `latency` field equals round(seconds(shape), 9)."""

    a: float = 0.010
    b: float = 5e-5
    c: float = 1e-7

    def seconds(self, shape: PassShape) -> float:
        return self.a + self.b * shape.new_tokens + self.c * shape.past_kv_sum

    def describe(self) -> str:
        return f"linear: {self.a} s + {self.b} s/new token + {self.c} s/past KV token"



    def frontend_seconds(self, prompt_len: int) -> float:
        """The reference traces time the scheduler only: no front end."""
        return 0.0


def linear_peak_tflops(gpu: GPU, weight_dtype: str) -> float:
    """The tensor-core peak the GEMMs of `weight_dtype` weights run at on this GPU: that of the compute dtype
    SGLang's backend uses (engine_model/precision.py). W8A8 fp8 on the FP8 peak; weight-only Marlin or
    Petit (fp8 on SM80-SM88, nvfp4 on SM80-SM99 and ROCm) on the BF16 peak; nvfp4 on Blackwell on the FP8
    peak (assumption: no FP4 speed-up). Routed experts compute in the same dtype as the dense layers."""
    path = weight_path(gpu, weight_dtype)
    return gpu.fp8_tflops if path.compute_dtype == "fp8" else gpu.bf16_tflops


def linear_layer_seconds(gpu: GPU, model: Model, num_tokens: int, weight_dtype: str = "bf16",
                         tp_size: int = 1) -> float:
    """One layer's GEMMs (QKV, O, MLP up/gate and down) for num_tokens tokens, floors included: the
    RooflineCost linear term without the LM head, averaged over layers."""
    time = linear_time(gpu, model, num_tokens, 0, weight_dtype, tp_size,
                       linear_peak_tflops(gpu, weight_dtype))
    return (time.roof_s + time.floor_s) / model.num_layers


def elementwise_layer_seconds(gpu: GPU, model: Model, num_tokens: int, tp_size: int = 1,
                              names: tuple[str, ...] | None = None) -> float:
    """One layer's element-wise kernels (those named, or all), floors included."""
    time = elementwise_layer_time(gpu, model, num_tokens, tp_size, names)
    return time.roof_s + time.floor_s


@dataclass(frozen=True)
class RooflineCost:
    """Forward-pass time on one TP rank (ranks run in lockstep), from the kernels up (docs/cost-model.md):

    kernels = GEMMs + attention + element-wise + all-reduce, each a roofline at the GPU's efficiency,
              plus the floors small kernels cannot go below (the GPU's busy time);
    launch  = one CUDA-graph replay (decode batches up to cuda_graph_max_bs_decode); for prefill and mixed
              passes up to cuda_graph_max_bs_prefill tokens a breakable graph: one replay per segment
              between the attention kernels, which launch eagerly; else every kernel launched one by one;
    cpu     = per_pass_s + per_request_s x rows (scheduling, input preparation, sampling, output);
    pass    = max(kernels, launch + cpu) with SGLang's overlap schedule (the default),
              cpu + max(kernels, launch) without it.
    """

    gpu: GPU
    model: Model
    tp_size: int = 1
    weight_dtype: str = "bf16"
    kv_dtype: str = "bf16"
    per_pass_s: float = PER_PASS_S
    per_request_s: float = PER_REQUEST_S
    kernel_launch_s: float = KERNEL_LAUNCH_S
    graph_replay_s: float = GRAPH_REPLAY_S
    cuda_graph_max_bs_decode: int | None = None  # None: SGLang's default for this GPU and tp_size; 0: none
    # tokens; None: SGLang's default for this GPU's default chunk; 0: no prefill graphs
    cuda_graph_max_bs_prefill: int | None = None
    overlap: bool = True  # SGLang's overlap schedule: engine.disable_overlap_schedule = False
    frontend_s: float = FRONTEND_S
    tokenize_s: float = TOKENIZE_S
    output_row_s: float = OUTPUT_ROW_S  # the front-end loop per stream per output batch (frontend.py)
    allreduce_latency_s: float = ALLREDUCE_LATENCY_S
    attention_backend: str = ""  # the backend whose kernel figures `gpu` carries (engine_model/backend.py)
    num_kernels: int = field(default=0, init=False, compare=False)
    num_breakable_launches: int = field(default=0, init=False, compare=False)  # per breakable-graph pass
    prefill_graph_sizes: tuple[int, ...] = field(default=(), init=False, compare=False)
    kv_bytes: float = field(default=0.0, init=False, compare=False)  # per token, this model, dtype and TP
    _memo: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self):
        if self.tp_size < 1:
            raise InputError("tp_size", f"must be >= 1, got {self.tp_size}")
        dtype_bytes(self.weight_dtype, "weight_dtype")
        dtype_bytes(self.kv_dtype, "kv_dtype", KV_DTYPES)
        for name in (*CPU_FIGURES, "allreduce_latency_s"):
            if getattr(self, name) < 0:
                raise InputError(name, f"must be >= 0, got {getattr(self, name)}")
        if self.cuda_graph_max_bs_decode is None:
            object.__setattr__(self, "cuda_graph_max_bs_decode",
                               default_cuda_graph_max_bs(self.gpu.memory_gib, self.tp_size))
        if self.cuda_graph_max_bs_prefill is None:
            chunk = default_chunked_prefill_size(self.gpu.memory_gib)
            object.__setattr__(self, "cuda_graph_max_bs_prefill", default_prefill_graph_tokens(
                chunk, self.model.name, self.model.attention == "mla", None))
        for name in ("cuda_graph_max_bs_decode", "cuda_graph_max_bs_prefill"):
            if getattr(self, name) < 0:
                raise InputError(name, f"must be >= 0 (0: no CUDA graphs), got {getattr(self, name)}")
        object.__setattr__(self, "prefill_graph_sizes", prefill_graph_sizes(self.cuda_graph_max_bs_prefill))
        object.__setattr__(self, "num_kernels", count_kernels(self.model, self.tp_size))
        object.__setattr__(self, "num_breakable_launches", count_breakable_launches(self.model))
        object.__setattr__(self, "kv_bytes", kv_bytes_per_token(self.model, self.kv_dtype, self.tp_size))

    def seconds(self, shape: PassShape) -> float:
        return self.breakdown(shape)["total_s"]

    def graph_of(self, shape: PassShape) -> str:
        """Which CUDA graph the pass replays (the "cuda graph: True/False" field of SGLang's log lines):
        "decode" for decode batches up to cuda_graph_max_bs_decode; "breakable" for prefill and mixed
        passes whose tokens fit a captured size without more than doubling (the prefill graph runner,
        BCG, on by default on CUDA in 0.5.20-0.5.23); "" when it runs eager."""
        if not shape.num_rows:
            return ""
        if shape.num_rows == shape.num_decode_rows:
            return "decode" if shape.num_rows <= self.cuda_graph_max_bs_decode else ""
        sizes, tokens = self.prefill_graph_sizes, shape.new_tokens
        if not sizes or tokens > sizes[-1]:
            return ""
        return "breakable" if sizes[bisect_left(sizes, tokens)] <= PREFILL_GRAPH_PADDING * tokens else ""

    def uses_cuda_graph(self, shape: PassShape) -> bool:
        return bool(self.graph_of(shape))

    def breakdown(self, shape: PassShape, attention_s: float | None = None) -> dict:
        """Every term of seconds(shape), for a hover: total = gpu + launch + cpu - hidden_cpu.

        gpu_s is the kernels back to back (rooflines + floors); launch_s the CPU time launching them
        (one graph replay, or every kernel eagerly); cpu_s the scheduler's CPU time. With the overlap
        schedule both CPU parts run while the GPU works on the previous batch: max(gpu, launch + cpu).
        Without it the scheduler's part waits for the GPU: cpu + max(gpu, launch). attention_s replaces
        the attention roofline (a DP worker's slowest rank); the floors stay."""
        linear, attention, elementwise, allreduce_s = self._kernels(shape)
        attention_s = attention.roof_s if attention_s is None else attention_s
        floor_s = linear.floor_s + attention.floor_s + elementwise.floor_s
        gpu_s = linear.roof_s + attention_s + elementwise.roof_s + allreduce_s + floor_s
        graph = self.graph_of(shape)
        launch_s = self.launch_seconds(graph) if shape.num_rows else 0.0
        cpu_s = self.per_pass_s + self.per_request_s * shape.num_rows if shape.num_rows else 0.0
        total_s = max(gpu_s, launch_s + cpu_s) if self.overlap else cpu_s + max(gpu_s, launch_s)
        compute_s = linear.compute_s + attention.compute_s
        memory_s = linear.memory_s + attention.memory_s + elementwise.memory_s
        return {
            "linear_s": linear.roof_s, "attention_s": attention_s, "elementwise_s": elementwise.roof_s,
            "allreduce_s": allreduce_s, "floor_s": floor_s, "gpu_s": gpu_s, "launch_s": launch_s,
            "cpu_s": cpu_s, "hidden_cpu_s": gpu_s + launch_s + cpu_s - total_s, "cuda_graph": bool(graph),
            "graph": graph,
            "overlap": self.overlap, "compute_s": compute_s,
            "memory_s": memory_s, "bound": "compute" if compute_s >= memory_s else "memory",
            "total_s": total_s,
        }

    def launch_seconds(self, graph: str) -> float:
        """CPU time launching one pass: a decode graph is one replay; a breakable graph one launch per
        graph segment and per eager attention kernel (assumption: each costs an eager kernel launch);
        eager, every kernel."""
        if graph == "decode":
            return self.graph_replay_s
        num = self.num_breakable_launches if graph == "breakable" else self.num_kernels
        return num * self.kernel_launch_s

    def frontend_seconds(self, prompt_len: int) -> float:
        """Time a client sees outside the scheduler before its first token: HTTP, tokenizer, detokenizer."""
        return self.frontend_s + self.tokenize_s * prompt_len

    @property
    def _backend(self) -> str:
        return f" ({self.attention_backend})" if self.attention_backend else ""

    def describe(self) -> str:
        gpu = self.gpu
        path = weight_path(gpu, self.weight_dtype, moe=self.model.is_moe)
        backend = f" ({path.backend}, {path.compute_dtype} compute)" if path.runs else ""
        return (f"roofline: {self.model.name} on {gpu.name} x{self.tp_size}, weights {self.weight_dtype}"
                f"{backend}, KV {self.kv_dtype}; GEMM mfu {gpu.gemm_mfu} mbu {gpu.gemm_mbu}, "
                f"element-wise mbu {gpu.elementwise_mbu}, attention{self._backend} mfu {gpu.attention_mfu} "
                f"mbu {gpu.attention_mbu}; "
                f"CPU {self.per_pass_s * 1e3:g} ms + {self.per_request_s * 1e6:g} us/request, "
                f"overlap {'on' if self.overlap else 'off'}, CUDA graphs: decode batches up to "
                f"{self.cuda_graph_max_bs_decode}, prefill (breakable) up to "
                f"{self.cuda_graph_max_bs_prefill} tokens")

    def _kernels(self, shape: PassShape) -> tuple[Time, Time, Time, float]:
        """GEMMs, attention, element-wise kernels and all-reduce; all but attention depend only on the
        new tokens and rows, so they are computed once per (tokens, rows)."""
        key = (shape.new_tokens, shape.num_rows)
        if key not in self._memo:
            if len(self._memo) > 100_000:
                self._memo.clear()
            self._memo[key] = self._token_kernels(*key)
        linear, elementwise, allreduce_s = self._memo[key]
        return linear, self._attention(shape), elementwise, allreduce_s

    def _attention(self, shape: PassShape) -> Time:
        kv_tokens = shape.past_kv_sum + 2 * shape.new_tokens
        return attention_time(self.gpu, self.model, shape.attn_pairs, kv_tokens, shape.num_rows,
                              self.tp_size, self.kv_bytes, shape.new_tokens)

    def attention_seconds(self, shape: PassShape) -> float:
        """The attention roofline of one pass (the part a DP worker takes from its slowest rank)."""
        return self._attention(shape).roof_s

    def _token_kernels(self, new_tokens: int, num_rows: int) -> tuple[Time, Time, float]:
        gpu, model, tp = self.gpu, self.model, self.tp_size
        linear = linear_time(gpu, model, new_tokens, num_rows, self.weight_dtype, tp,
                             linear_peak_tflops(gpu, self.weight_dtype))
        elementwise = elementwise_layer_time(gpu, model, new_tokens, tp).times(model.num_layers)
        return linear, elementwise, self._allreduce_seconds(new_tokens)

    def _allreduce_seconds(self, new_tokens: int) -> float:
        """Two ring all-reduces per layer of the hidden states: 2(tp-1)/tp x bytes / link bandwidth +
        latency."""
        tp = self.tp_size
        if tp == 1 or new_tokens == 0:
            return 0.0
        size = new_tokens * self.model.hidden_size * ACTIVATION_BYTES
        one = 2 * (tp - 1) / tp * size / (self.gpu.interconnect_gbps * 1e9) + self.allreduce_latency_s
        return 2 * self.model.num_layers * one


def count_kernels(model: Model, tp_size: int) -> int:
    """Kernels one eager pass launches: per layer its GEMMs, element-wise kernels, attention and KV store
    (and two all-reduces at tp > 1), the LM head, and KERNELS_PER_PASS more; a DSA indexer layer adds
    its three projections, its key store, its scores and its top-k."""
    per_layer = len(attention_gemms(model, tp_size)) + len(elementwise_kernels(model, tp_size)) + 2
    per_layer += 2 if tp_size > 1 else 0
    num_moe = model.num_moe_layers
    mlp = (model.num_layers - num_moe) * len(mlp_gemms(model, tp_size, 1, False))
    mlp += num_moe * len(mlp_gemms(model, tp_size, 1, True)) if num_moe else 0
    indexer = model.num_index_layers * (len(indexer_gemms(model)) + 3)
    return model.num_layers * per_layer + mlp + indexer + 1 + KERNELS_PER_PASS


def count_breakable_launches(model: Model) -> int:
    """Launches of one breakable-graph pass: a graph segment before each layer's attention and one after
    the last, the attention and KV-store kernels of each layer eagerly between them, and the eager tail
    (LM head and the KERNELS_PER_PASS outside the layers)."""
    return (model.num_layers + 1) + 2 * model.num_layers + 1 + KERNELS_PER_PASS


def cost_of(scenario) -> LinearCost | RooflineCost:
    """The scenario's cost model: the reference linear predictor, or the roofline on its GPU and model."""
    if scenario.cost.kind == "linear":
        return LinearCost(scenario.cost.a, scenario.cost.b, scenario.cost.c)
    return roofline_cost(scenario, gpu_of(scenario), model_of(scenario))


def roofline_cost(scenario, gpu: GPU, model: Model) -> RooflineCost:
    """The scenario's roofline: the GPU preset with cost.roofline's efficiency figures applied, the CPU-side
    figures of `cost` (None: the defaults above), and the engine's CUDA-graph and overlap settings."""
    cost, engine = scenario.cost, scenario.engine
    figures = {k: v for k, v in cost.roofline.items() if k in EFFICIENCY_FIELDS}
    unknown = sorted(set(cost.roofline) - set(figures) - {"allreduce_latency_s"})
    if unknown:
        raise InputError(f"cost.roofline.{unknown[0]}",
                         f"unknown figure; allowed: {', '.join(EFFICIENCY_FIELDS)}, allreduce_latency_s")
    attention = attention_for(scenario, gpu, model)  # attention priced for the backend that runs
    gpu = priced_gpu(gpu, attention, set(scenario.hardware.gpu_overrides))
    try:
        gpu = GPU.model_validate({**gpu.model_dump(), **figures})
    except ValidationError as err:
        first = err.errors()[0]
        raise InputError(f"cost.roofline.{first['loc'][0]}", first["msg"]) from None
    cpu = {name: getattr(cost, name) for name in CPU_FIGURES if getattr(cost, name) is not None}
    extra = {k: v for k, v in cost.roofline.items() if k == "allreduce_latency_s"}
    chunk, _ = chunk_of(scenario, gpu)
    return RooflineCost(
        gpu=gpu, model=model, tp_size=scenario.hardware.tp_size, weight_dtype=scenario.model.weight_dtype,
        kv_dtype=attention.kv_dtype, cuda_graph_max_bs_decode=decode_graph_bs_of(scenario, gpu),
        cuda_graph_max_bs_prefill=prefill_graphs_run(scenario, gpu, model, chunk),
        overlap=not engine.disable_overlap_schedule, attention_backend=attention.backend, **cpu, **extra)
