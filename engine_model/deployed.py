"""A scenario's deployment, resolved once: what runs where, as every surface names it.

`deployment_of(scenario)` gives one frozen `Deployment`: per role (the engine, or PD's prefill and decode) the
GPU, how many engines or workers, TP, attention DP and attention TP, the weights as SGLang runs them on that
GPU (engine_model/precision.py: the GEMM backend, its flag and the compute dtype), the KV dtype, page size,
the KV pool per rank, per worker and in all, and the chunk per rank. It reads what the run itself resolves
(engine_model/resolve.py for an engine, engine_model/pd/roles.py for a PD role), so the page's rows, cards,
captions, tables, the exports and the figure name the deployment the run ran. Words: `Deployment.words`,
'4 × H100 SXM 80GB, TP 4 prefill + 4 × H100 SXM 80GB, TP 4 decode · Llama-3.1-70B · bf16'.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine_model.config import Scenario
from engine_model.hardware import MODELS
from engine_model.precision import WeightPath, weight_path
from engine_model.resolve import gpu_of, model_of, resolve


@dataclass(frozen=True)
class Role:
    """One role's engines or workers: `name` is "engine", "prefill" or "decode"."""

    name: str
    gpu: str  # the GPU's name, "H100 SXM 80GB"
    num_workers: int  # engines (engine.dp_size) or PD workers of this role
    tp_size: int  # GPUs per engine or worker
    dp_size: int  # attention DP ranks per worker (1: none)
    weights: WeightPath
    kv_dtype: str
    page_size: int
    kv_per_rank: int  # KV pool of one rank, tokens
    chunk_per_rank: int | None  # None: chunking off
    attention: str = ""  # the attention backend and what it forces, in words (Resolved.attention_words)

    @property
    def attn_tp_size(self) -> int:
        return self.tp_size // self.dp_size

    @property
    def num_gpus(self) -> int:
        return self.num_workers * self.tp_size

    @property
    def kv_per_worker(self) -> int:
        return self.kv_per_rank * self.dp_size

    @property
    def kv_in_all(self) -> int:
        return self.kv_per_worker * self.num_workers

    @property
    def words(self) -> str:
        """'4 × H100 SXM 80GB, TP 4 prefill', '8 × H100 SXM 80GB, TP 8', '12 × H100…: 3 engines of TP 4',
        with attention DP where there is some."""
        dp = f", attention DP {self.dp_size}" if self.dp_size > 1 else ""
        if self.name == "engine":
            if self.num_workers == 1:
                return f"{self.num_gpus} × {self.gpu}, TP {self.tp_size}{dp}"
            return f"{self.num_gpus} × {self.gpu}: {self.num_workers} engines of TP {self.tp_size}"
        workers = "" if self.num_workers == 1 else f" ({self.num_workers} workers)"
        return f"{self.num_gpus} × {self.gpu}, TP {self.tp_size}{dp} {self.name}{workers}"


@dataclass(frozen=True)
class Deployment:
    """What a scenario runs on: the model and its precision, and each role's GPUs."""

    model: str  # the model's name, "Llama-3.1-70B"
    weight_dtype: str
    kv_dtype: str
    roles: tuple[Role, ...]  # ("engine",) or ("prefill", "decode")

    @property
    def is_pd(self) -> bool:
        return self.roles[0].name != "engine"

    @property
    def num_gpus(self) -> int:
        return sum(role.num_gpus for role in self.roles)

    @property
    def precision(self) -> str:
        """'bf16', 'nvfp4 weights, fp8 KV'."""
        if self.weight_dtype == self.kv_dtype:
            return self.weight_dtype
        return f"{self.weight_dtype} weights, {self.kv_dtype} KV"

    @property
    def words(self) -> str:
        """'4 × H100 SXM 80GB, TP 4 prefill + 4 × H100 SXM 80GB, TP 4 decode · Llama-3.1-70B · bf16'."""
        return f"{' + '.join(role.words for role in self.roles)} · {self.model} · {self.precision}"

    def role(self, name: str) -> Role:
        return next(role for role in self.roles if role.name == name)


def deployment_of(scenario: Scenario) -> Deployment:
    """The scenario's deployment as its run resolves it (no run needed)."""
    model = model_of(scenario)
    name = MODELS[scenario.model.name].name if scenario.model.name in MODELS else model.name
    if scenario.pd is None and scenario.engine.enable_dp_attention and scenario.engine.dp_size > 1:
        from engine_model.dp_attention import rank_settings  # it imports PD's roles, which import this module

        rank = rank_settings(scenario)[1]
        roles = (_role("engine", scenario, 1, scenario.hardware.tp_size, scenario.engine.dp_size, rank),)
    elif scenario.pd is None:
        res = resolve(scenario)
        roles = (_role("engine", scenario, scenario.engine.dp_size, res.tp_size, 1, res),)
    else:
        from engine_model.pd.roles import resolve_role  # PD imports this module's callers, not the reverse

        roles = tuple(_role(n, scenario, r.num_workers, r.tp_size, r.dp_size, r.rank)
                      for n in ("prefill", "decode") for r in (resolve_role(scenario, n),))
    return Deployment(name, scenario.model.weight_dtype, roles[0].kv_dtype, roles)


def _role(name: str, scenario: Scenario, num_workers: int, tp: int, dp: int, rank) -> Role:
    cfg = getattr(scenario.pd, name) if scenario.pd is not None else None
    gpu = gpu_of(scenario) if cfg is None or not cfg.gpu else gpu_of(_on(scenario, cfg.gpu))
    path = weight_path(gpu, scenario.model.weight_dtype, scenario.engine.version, model_of(scenario).is_moe)
    return Role(name, gpu.name, num_workers, tp, dp, path, rank.kv_dtype, rank.page_size,
                rank.max_total_tokens, rank.chunked_prefill_size, rank.attention_words)


def _on(scenario: Scenario, gpu: str) -> Scenario:
    return scenario.model_copy(update={"hardware": scenario.hardware.model_copy(update={"gpu": gpu})})
