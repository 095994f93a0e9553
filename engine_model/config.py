"""Scenario configuration: frozen pydantic models validated at the boundary, unknown keys rejected.

A `Scenario` is what a TOML file, the CLI's `--set` and the app's controls all produce. `resolve()`
turns it into the `Resolved` settings the engine runs with, applying SGLang's own defaults
(sglang-scheduler-facts.md section 4) so the resolved values can be shown beside every figure.
"""

from __future__ import annotations

from typing import Annotated, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from engine_model.backend import ATTENTION_BACKENDS
from engine_model.pd.config import PDConfig

Version = Literal["0.5.20", "0.5.21", "0.5.22", "0.5.23"]
# Ranges every value must lie in: beyond them a number is a typo or an attack, never a server (assumptions).
MAX_TOKENS = 10_000_000  # a prompt, reply or chunk; the longest contexts served today are ~1-10M tokens
MAX_POOL_TOKENS = 10**10  # a KV pool; an 8-GPU H200 node holds well under 10^8 tokens
MAX_SIM_SECONDS = 10_000_000.0  # about 116 days of simulated time
MAX_REQUESTS = 1_000_000  # per run; each request's tokens are kept, so memory grows with this
MAX_TRACE_SECONDS = 1e10  # a trace's own clock: about 300 years
MIN_SPEEDUP, MAX_SPEEDUP = 0.001, 1000.0  # a trace's arrival times are divided by its speed-up
MIN_RATE = 1 / MAX_SIM_SECONDS
MAX_PRIORITY = 10**9  # a request's priority (SGLang takes any int; beyond this it is a typo)


class Frozen(BaseModel):
    """Frozen, unknown keys rejected, and no float may be inf or nan."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)


class EngineConfig(Frozen):
    """SGLang server arguments that change who waits (names as in `sglang/srt/arg_groups/fields`)."""

    version: Version = "0.5.23"
    # --dp-size without --enable-dp-attention: dp_size whole engines of hardware.tp_size GPUs each, requests
    # dealt round-robin (engine_model/replicas.py); a PD scenario sets its ranks per role instead
    dp_size: int = Field(1, ge=1, le=64)
    # "auto": from GPU memory; <= 0 disables chunking
    chunked_prefill_size: Annotated[int, Field(ge=-1, le=MAX_TOKENS)] | Literal["auto"] = "auto"
    enable_mixed_chunk: bool = False
    max_prefill_tokens: int = Field(16384, ge=1, le=MAX_TOKENS)
    # --page-size: None takes SGLang's default for the attention backend (engine_model/backend.py: 1, or what
    # the backend forces: 64 for trtllm_mha on SM100, trtllm_mla and DSA models, 128 for fa4)
    page_size: int | None = Field(None, ge=1, le=256)
    # --attention-backend: None takes SGLang's default for the GPU and model (engine_model/backend.py)
    attention_backend: Literal[ATTENTION_BACKENDS] | None = None
    max_running_requests: int | None = Field(None, ge=1, le=MAX_REQUESTS)
    max_total_tokens: int | None = Field(None, ge=16, le=MAX_POOL_TOKENS)  # KV pool in tokens; None: from GPU
    # shortest-prefill-first: SGLang 0.5.21+; it and lpm / dfs-weight need the radix cache (lpm and dfs-weight
    # run as fcfs without it; shortest-prefill-first refuses to start)
    schedule_policy: Literal["fcfs", "lof", "random", "lpm", "dfs-weight", "shortest-prefill-first"] = "fcfs"
    disable_radix_cache: bool = False  # --disable-radix-cache: no prefix reuse across requests
    schedule_conservativeness: float = Field(1.0, ge=0.0, le=100.0)
    prefill_decode_interval: int = Field(0, ge=0, le=10_000)
    prefill_decode_interval_min_bs: int = Field(0, ge=0, le=MAX_REQUESTS)
    prefill_max_requests: int | None = Field(None, ge=1, le=MAX_REQUESTS)
    mem_fraction_static: float | None = Field(None, gt=0.0, lt=1.0)
    context_length: int | None = Field(None, ge=16, le=MAX_TOKENS)
    disable_overlap_schedule: bool = False  # SGLang's default: the overlap schedule is on
    # --cuda-graph-max-bs-decode: decode batches up to it replay one captured graph. None: SGLang's default
    # by GPU memory and TP; 0: no decode graphs (--disable-decode-cuda-graph)
    cuda_graph_max_bs_decode: int | None = Field(None, ge=0, le=65536)
    # --cuda-graph-max-bs-prefill (tokens): prefill and mixed passes up to it replay breakable graphs, every
    # kernel but attention captured (SGLang's default on CUDA). None: the chunk size; 0: none
    # (--disable-prefill-cuda-graph)
    cuda_graph_max_bs_prefill: int | None = Field(None, ge=0, le=MAX_TOKENS)
    # --speculative-algorithm and its shape (engine_model/speculative.py); None: off. Steps, topk and draft
    # tokens left unset take SGLang's defaults for the algorithm and model
    speculative_algorithm: Literal["EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM"] | None = None
    speculative_num_steps: int | None = Field(None, ge=1, le=64)
    speculative_eagle_topk: int | None = Field(None, ge=1, le=64)
    speculative_num_draft_tokens: int | None = Field(None, ge=1, le=1024)
    # not a flag: the mean tokens one verify commits per request (an assumption; bounded by the algorithm)
    speculative_accept_length: float = Field(2.5, ge=1.0, le=1024.0)
    # --enable-dp-attention with --dp-size N: one engine of hardware.tp_size GPUs, N attention DP ranks in
    # lockstep (engine_model/dp_attention.py); SGLang 0.5.23 reads it as --attn-dp-size N
    enable_dp_attention: bool = False
    # Priority scheduling and the queue limit (engine_model/priority.py). Higher priority values first unless
    # schedule_low_priority_values_first; a running request is preempted for one whose priority is more than
    # the threshold better (unless disable_priority_preemption). default_priority_value: for requests that
    # carry none (SGLang: set by the tokenizer manager; None there: the lowest priority there is).
    enable_priority_scheduling: bool = False
    schedule_low_priority_values_first: bool = False
    priority_scheduling_preemption_threshold: int = Field(10, ge=-MAX_PRIORITY, le=MAX_PRIORITY)
    disable_priority_preemption: bool = False
    default_priority_value: int | None = Field(None, ge=-MAX_PRIORITY, le=MAX_PRIORITY)
    abort_on_priority_when_disabled: bool = False  # no priority scheduling: refuse a request that has one
    # --retraction-policy: "priority" retracts the lowest priority first (needs priority scheduling)
    retraction_policy: Literal["length", "priority"] = "length"
    max_queued_requests: int | None = Field(None, ge=1, le=MAX_REQUESTS)  # a full queue aborts (503)
    # SGLANG_REQ_WAITING_TIMEOUT (seconds, an environment variable): a request waiting longer is aborted
    req_waiting_timeout_s: float | None = Field(None, gt=0, le=MAX_SIM_SECONDS)

    @model_validator(mode="before")
    @classmethod
    def _renamed(cls, data):
        """The model's old key, named after a flag SGLang does not have."""
        if isinstance(data, dict) and "cuda_graph_max_bs" in data:
            raise ValueError("cuda_graph_max_bs is now cuda_graph_max_bs_decode (SGLang's "
                             "--cuda-graph-max-bs-decode); prefill graphs: cuda_graph_max_bs_prefill")
        return data


class HardwareConfig(Frozen):
    gpu: str = "h100-sxm"
    tp_size: int = Field(1, ge=1, le=64)
    gpu_overrides: dict[str, float | int | str] = Field(default_factory=dict)


class ModelConfig(Frozen):
    name: str = "llama-3.1-8b"
    weight_dtype: Literal["bf16", "fp8", "nvfp4"] = "bf16"
    # --kv-cache-dtype: "auto" is SGLang's default, the model's dtype (bf16), or fp8 for a DSA model on SM100+
    # (engine_model/backend.py)
    kv_dtype: Literal["auto", "bf16", "fp8"] = "auto"
    overrides: dict[str, float | int | str] = Field(default_factory=dict)


class CostConfig(Frozen):
    """How long a forward pass takes: the documented roofline, or the reference tool's linear predictor.
    The CPU-side figures apply to the roofline only; None takes the documented default (engine_model/cost.py,
    docs/cost-model.md "Time as a real server spends it")."""

    kind: Literal["roofline", "linear"] = "roofline"
    a: float = Field(0.010, ge=0, le=60.0)  # linear: seconds per pass
    b: float = Field(5e-5, ge=0, le=1.0)  # linear: seconds per new token
    c: float = Field(1e-7, ge=0, le=1.0)  # linear: seconds per token of past KV
    roofline: dict[str, float] = Field(default_factory=dict)  # GPU efficiency figures, allreduce_latency_s
    per_pass_s: float | None = Field(None, ge=0, le=10.0)  # CPU per pass: schedule, inputs, sampling, output
    per_request_s: float | None = Field(None, ge=0, le=1.0)  # CPU per running request per pass
    kernel_launch_s: float | None = Field(None, ge=0, le=1.0)  # CPU per kernel launched eagerly
    graph_replay_s: float | None = Field(None, ge=0, le=1.0)  # CPU per CUDA-graph replay
    frontend_s: float | None = Field(None, ge=0, le=60.0)  # HTTP, tokenizer and detokenizer hops, per request
    tokenize_s: float | None = Field(None, ge=0, le=1.0)  # tokenizing one prompt token
    output_row_s: float | None = Field(None, ge=0, le=1.0)  # front-end loop time per stream per output batch
    front_end: bool = True  # the server's event loop between scheduler and client (engine_model/frontend.py)
    # a speculative draft step's cost as a share of the target's decode pass (an assumption; None: the
    # algorithm's, engine_model/speculative.py DRAFT_SHARE)
    speculative_draft_share: float | None = Field(None, ge=0, le=10.0)


class LengthDist(Frozen):
    """A length drawn per request: uniform between low and high, or lognormal around a median."""

    dist: Literal["uniform", "lognormal"]
    low: int = Field(1, ge=1, le=MAX_TOKENS)
    high: int = Field(ge=1, le=MAX_TOKENS)
    median: int | None = Field(None, ge=1, le=MAX_TOKENS)
    sigma: float = Field(0.5, gt=0, le=10.0)

    @model_validator(mode="after")
    def _check(self) -> LengthDist:
        if self.high < self.low:
            raise ValueError(f"high ({self.high}) must be >= low ({self.low})")
        if self.dist == "lognormal" and self.median is None:
            raise ValueError("lognormal needs a median")
        return self


Length = Annotated[int, Field(ge=1, le=MAX_TOKENS)] | LengthDist


class AtArrival(Frozen):
    """Requests arrive at start_at, then one every interval_s (0: all together, a burst)."""

    kind: Literal["at"] = "at"
    start_at: float = Field(0.0, ge=0, le=MAX_SIM_SECONDS)
    interval_s: float = Field(0.0, ge=0, le=MAX_SIM_SECONDS)


class PoissonArrival(Frozen):
    kind: Literal["poisson"]
    start_at: float = Field(0.0, ge=0, le=MAX_SIM_SECONDS)
    rate_per_s: float = Field(ge=MIN_RATE, le=1e6)


class ClosedArrival(Frozen):
    """Sent by a closed-loop client pool (see `ClientConfig`), like bench_serving --max-concurrency."""

    kind: Literal["closed"]
    client: str


Arrival = Annotated[AtArrival | PoissonArrival | ClosedArrival, Field(discriminator="kind")]
ARRIVAL_KINDS = frozenset(get_args(m.model_fields["kind"].annotation)[0]
                          for m in (AtArrival, PoissonArrival, ClosedArrival))


class GroupConfig(Frozen):
    """A named group of similar requests, e.g. the forty `streams` or the one `log`."""

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]{1,40}$")
    count: int = Field(1, ge=1, le=100_000)
    prompt_len: Length
    output_len: Length
    # The client's max_tokens (SGLang's max_new_tokens): "reply" (or left out) asks for exactly the reply's
    # length, as a benchmark client does; "none" sends none, as an OpenAI-style chat client may, and SGLang
    # fills in its own bound (workload.NO_MAX_NEW_TOKENS, clipped at intake); or a number of tokens.
    max_new_tokens: Annotated[int, Field(ge=1, le=MAX_TOKENS)] | Literal["reply", "none"] | None = None
    num_return_logprob: int = Field(0, ge=0)  # the first N requests of the group ask for logprobs
    ignore_eos: bool = False
    already_generated: int = Field(0, ge=0, le=MAX_TOKENS)  # > 0: the request starts mid-reply
    arrival: Arrival = AtArrival()
    priority: int | None = Field(None, ge=-MAX_PRIORITY, le=MAX_PRIORITY)  # each request's `priority`

    @property
    def last_arrival_at(self) -> float:
        """When the last request arrives, by arithmetic (a Poisson group: its mean); 0 for a client pool."""
        arrival = self.arrival
        if isinstance(arrival, PoissonArrival):
            return arrival.start_at + (self.count - 1) / arrival.rate_per_s
        if isinstance(arrival, AtArrival):
            return arrival.start_at + (self.count - 1) * arrival.interval_s
        return 0.0


class RequestConfig(Frozen):
    """One explicit request."""

    rid: str = Field(pattern=r"^[A-Za-z0-9_.:-]{1,64}$")
    group: str = "requests"
    arrival_at: float = Field(0.0, ge=0, le=MAX_SIM_SECONDS)
    prompt_len: int = Field(ge=1, le=MAX_TOKENS)
    output_len: int = Field(ge=1, le=MAX_TOKENS)
    max_new_tokens: int | None = Field(None, ge=1, le=MAX_TOKENS)
    return_logprob: bool = False
    ignore_eos: bool = False
    already_generated: int = Field(0, ge=0, le=MAX_TOKENS)
    # shared prompt prefix (radix cache): a group's prompts share one token stream (the shorter is a prefix of
    # the longer), or hash_ids name the prompt's 512-token blocks (Mooncake's: equal ids, equal blocks)
    prefix_group: str | None = Field(None, pattern=r"^[A-Za-z0-9_.:-]{1,64}$")
    priority: int | None = Field(None, ge=-MAX_PRIORITY, le=MAX_PRIORITY)
    hash_ids: tuple[Annotated[int, Field(ge=0, lt=2**31)], ...] = Field((), max_length=MAX_TOKENS // 512 + 1)


class ClientConfig(Frozen):
    """A closed-loop client pool: keeps `concurrency` requests in flight, sends the next on a finish."""

    name: str
    concurrency: int = Field(ge=1, le=10_000)
    think_s: float = Field(0.0, ge=0, le=MAX_SIM_SECONDS)
    shuffle: bool = True  # interleave its groups in a seeded random order
    start_at: float = Field(0.0, ge=0, le=MAX_SIM_SECONDS)
    start_after: str | None = None  # name of a client pool that must finish first (e.g. a warm-up)


class TraceConfig(Frozen):
    path: str
    fmt: Literal["azure", "mooncake", "burstgpt", "jsonl"] | None = None
    group: str = "trace"
    window_start_s: float = Field(0.0, ge=0, le=MAX_TRACE_SECONDS)  # seconds of the trace's own clock
    window_end_s: float | None = Field(None, gt=0, le=MAX_TRACE_SECONDS)
    speedup: float = Field(1.0, ge=MIN_SPEEDUP, le=MAX_SPEEDUP)  # arrival times are divided by it
    sample: float = Field(1.0, gt=0, le=1)
    max_requests: int | None = Field(10_000, ge=1, le=MAX_REQUESTS)


class WorkloadConfig(Frozen):
    groups: list[GroupConfig] = Field(default_factory=list)
    requests: list[RequestConfig] = Field(default_factory=list)
    clients: list[ClientConfig] = Field(default_factory=list)
    trace: TraceConfig | None = None

    @field_validator("trace", mode="before")
    @classmethod
    def _trace_path(cls, value):
        """`--set workload.trace=PATH` is short for `workload.trace = {path = "PATH"}`."""
        return {"path": value} if isinstance(value, str) else value


class LimitsConfig(Frozen):
    """Bounds that stop runaway work; a run that hits one says so."""

    max_iterations: int = Field(1_000_000, ge=1, le=100_000_000)
    max_sim_seconds: float = Field(36_000.0, gt=0, le=MAX_SIM_SECONDS)
    max_requests: int = Field(100_000, ge=1, le=MAX_REQUESTS)
    max_wall_seconds: float = Field(300.0, gt=0, le=86_400)  # real seconds a run may take


class MetricsConfig(Frozen):
    bucket_edges: list[int] = Field(default_factory=lambda: [8192, 32768])

    @model_validator(mode="after")
    def _sorted(self) -> MetricsConfig:
        if self.bucket_edges != sorted(set(self.bucket_edges)) or any(e <= 0 for e in self.bucket_edges):
            raise ValueError("bucket_edges must be positive and strictly increasing")
        return self


class Scenario(Frozen):
    name: str = "custom"
    title: str = ""
    about: str = Field("", max_length=120)  # one line for lists (`python -m engine_model scenarios`)
    description: str = ""
    seed: int = Field(0, ge=0, le=2**63 - 1)
    engine: EngineConfig = EngineConfig()
    hardware: HardwareConfig = HardwareConfig()
    model: ModelConfig = ModelConfig()
    cost: CostConfig = CostConfig()
    workload: WorkloadConfig = WorkloadConfig()
    limits: LimitsConfig = LimitsConfig()
    metrics: MetricsConfig = MetricsConfig()
    pd: PDConfig | None = None  # prefill-decode disaggregation (engine_model/pd); None: one engine

    @model_validator(mode="after")
    def _within_limits(self) -> Scenario:
        """Check the limits by arithmetic before a single request is built (a count of ten million fails
        here in microseconds, not after minutes and gigabytes)."""
        work = self.workload
        num = sum(g.count for g in work.groups) + len(work.requests)
        if num > self.limits.max_requests:
            raise ValueError(f"workload: it declares {num:,} requests, above limits.max_requests "
                             f"({self.limits.max_requests:,}; at most {MAX_REQUESTS:,})")
        for i, group in enumerate(work.groups):
            if group.last_arrival_at > MAX_SIM_SECONDS:
                raise ValueError(f"workload.groups.{i}.arrival: its {group.count:,} "
                                 f"arrivals reach {group.last_arrival_at:.3g} s; arrivals must lie within "
                                 f"{MAX_SIM_SECONDS:.0e} s")
        if self.pd is not None and self.engine.dp_size > 1:
            raise ValueError("engine.dp_size: a PD scenario sets its DP ranks per role (pd.prefill.dp_size, "
                             "pd.decode.dp_size); leave engine.dp_size at 1")
        if self.pd is not None and self.engine.enable_dp_attention:
            raise ValueError("engine.enable_dp_attention: a PD scenario sets its attention DP ranks per role "
                             "(pd.prefill.dp_size, pd.decode.dp_size)")
        if self.pd is not None and self.engine.speculative_algorithm:
            raise ValueError("engine.speculative_algorithm: the model runs speculative decoding on one "
                             "engine or replicas, not on PD workers")
        return self
