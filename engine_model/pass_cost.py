"""What one recorded pass cost, term by term: its shape rebuilt from the iteration's rows, priced again by
the scenario's cost model. The step-through shows it beside the decision under the cursor.

    pass_cost(scenario, iteration).total_s == iteration.duration_s   (one server; within float error)

A roofline pass splits into the GPU's kernels (GEMMs, attention, element-wise, all-reduce, floors) and the
CPU's work beside them (kernel launches, or CUDA-graph replays, the scheduler per pass, per running
request); the overlap schedule hides the CPU part behind the GPU (docs/cost-model.md). A linear pass is
the reference predictor's three terms, a + b × new tokens + c × past tokens.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from engine_model.config import Scenario
from engine_model.core import Iteration, PassKind
from engine_model.cost import LinearCost, PassShape, RooflineCost, attn_pairs, cost_of
from engine_model.errors import InputError
from engine_model.hardware import gpu as gpu_preset
from engine_model.resolve import resolve
from engine_model.verify import draft_seconds, verify_shape

GPU, CPU, PASS = "GPU", "CPU", "pass"  # which side of the pass a term runs on (PASS: the linear predictor)


@dataclass(frozen=True)
class CostTerm:
    name: str  # what a trainer reads aloud: "GEMMs", "per running request"
    side: str  # GPU, CPU or PASS
    seconds: float
    detail: str  # how the term is made, in words and figures


@dataclass(frozen=True)
class PassCost:
    """One pass's cost. With the roofline: total = gpu + cpu - hidden (cpu counts the launches)."""

    kind: str  # "roofline" or "linear"
    shape: PassShape
    terms: tuple[CostTerm, ...]
    total_s: float
    gpu_s: float = 0.0  # the kernels back to back: the GPU terms
    cpu_s: float = 0.0  # launches + scheduler: the CPU terms
    hidden_s: float = 0.0  # CPU time run while the GPU worked (overlap schedule)
    overlap: bool = False
    cuda_graph: bool = False
    bound: str = ""  # "compute" or "memory": which roof binds the kernels

    def seconds(self, name: str) -> float:
        """A term's seconds by name (0 when the pass has no such term)."""
        return sum(t.seconds for t in self.terms if t.name == name)


def pass_shape(it: Iteration) -> PassShape:
    """The aggregates the scheduler priced the pass with (`scheduler.Plan.shape`), from what it recorded:
    each prefill row's extend over its past KV, and decode rows of extend 1 over `decode_past_kv` in all."""
    num_decode = len(it.decode_rids)
    pairs = sum(attn_pairs(r.extend, r.past_kv) for r in it.prefill_rows) + it.decode_past_kv + num_decode
    return PassShape(num_rows=len(it.prefill_rows) + num_decode, num_decode_rows=num_decode,
                     new_tokens=it.num_new_tokens, past_kv_sum=it.past_kv_sum, attn_pairs=pairs)


def pass_cost(scenario: Scenario, pass_: Iteration | PassShape) -> PassCost:
    """The breakdown of one pass of a one-server run under the scenario's cost model. A PD worker prices
    its ranks in lockstep (pd/roles.py), which this does not rebuild: InputError."""
    if scenario.pd is not None:
        raise InputError("pd",
                         "the pass breakdown covers one server; a PD worker prices its ranks in lockstep")
    if scenario.engine.enable_dp_attention and scenario.engine.dp_size > 1:
        raise InputError("engine.enable_dp_attention", "the pass breakdown covers one scheduler; DP "
                         "attention's ranks price each pass in lockstep")
    shape = pass_shape(pass_) if isinstance(pass_, Iteration) else pass_
    model = cost_of(scenario)
    spec = resolve(scenario).speculative if scenario.engine.speculative_algorithm else None
    if spec is not None and isinstance(pass_, Iteration) and pass_.kind is PassKind.DECODE:
        return _speculative(spec, model, shape)
    if isinstance(model, LinearCost):
        return _linear(model, shape)
    return _roofline(model, shape)


def _speculative(spec, model, shape: PassShape) -> PassCost:
    """A speculative decode pass: the verify priced as a pass over every row's draft tokens, then the draft
    steps (engine_model/verify.py; both simplified, docs/design.md)."""
    verify = verify_shape(spec, shape)
    inner = _linear(model, verify) if isinstance(model, LinearCost) else _roofline(model, verify)
    draft = draft_seconds(spec, model, shape)
    term = CostTerm("draft steps", GPU if inner.kind == "roofline" else PASS, draft,
                    f"{spec.num_steps} steps × {shape.num_rows * spec.topk:,} rows × "
                    f"cost.speculative_draft_share {spec.draft_share:g} of a decode pass (an assumption)")
    return replace(inner, terms=(*inner.terms, term), total_s=inner.total_s + draft,
                   gpu_s=inner.gpu_s + (draft if inner.kind == "roofline" else 0.0))


def _linear(model: LinearCost, shape: PassShape) -> PassCost:
    terms = (
        CostTerm("a, per pass", PASS, model.a, f"a = {model.a:g} s"),
        CostTerm("b × new tokens", PASS, model.b * shape.new_tokens,
                 f"{model.b:g} s × {shape.new_tokens:,} new tokens"),
        CostTerm("c × past tokens", PASS, model.c * shape.past_kv_sum,
                 f"{model.c:g} s × {shape.past_kv_sum:,} tokens already in KV"),
    )
    return PassCost("linear", shape, terms, model.seconds(shape))


def _roofline(model: RooflineCost, shape: PassShape) -> PassCost:
    parts = model.breakdown(shape)
    rows = shape.num_rows
    graph, ran = parts["graph"], rows > 0
    launch = launch_words(model, shape, graph)
    terms = (
        CostTerm("GEMMs", GPU, parts["linear_s"],
                 f"every projection's roofline over {shape.new_tokens:,} new tokens"),
        CostTerm("attention", GPU, parts["attention_s"], f"{shape.attn_pairs:,} query-key pairs, "
                 f"{shape.past_kv_sum + 2 * shape.new_tokens:,} tokens of KV read"),
        CostTerm("element-wise", GPU, parts["elementwise_s"], "norms, rope, SiLU and residual adds"),
        CostTerm("all-reduce", GPU, parts["allreduce_s"],
                 (f"two per layer across TP{model.tp_size}" if model.tp_size > 1 else "none at TP1")),
        CostTerm("floors", GPU, parts["floor_s"],
                 "GEMM latencies, kernel and attention floors, row-block waves"),
        CostTerm("kernel launches", CPU, parts["launch_s"], launch),
        CostTerm("scheduler per pass", CPU, model.per_pass_s if ran else 0.0,
                 f"cost.per_pass_s = {model.per_pass_s * 1e3:g} ms"),
        CostTerm("per running request", CPU, model.per_request_s * rows,
                 f"{rows:,} request{'' if rows == 1 else 's'} × cost.per_request_s "
                 f"{model.per_request_s * 1e6:g} µs"),
    )
    cpu_s = parts["launch_s"] + parts["cpu_s"]
    return PassCost("roofline", shape, terms, parts["total_s"], gpu_s=parts["gpu_s"], cpu_s=cpu_s,
                    hidden_s=parts["hidden_cpu_s"], overlap=parts["overlap"], cuda_graph=bool(graph),
                    bound=parts["bound"])


def launch_words(model: RooflineCost, shape: PassShape, graph: str) -> str:
    """How the pass's kernels were launched, with the flag that decided it."""
    each = f"{model.kernel_launch_s * 1e6:g} µs"
    if graph == "decode":
        return (f"one CUDA-graph replay (batch {shape.num_rows} ≤ --cuda-graph-max-bs-decode "
                f"{model.cuda_graph_max_bs_decode})")
    if graph == "breakable":
        return (f"a breakable CUDA graph ({shape.new_tokens:,} tokens ≤ --cuda-graph-max-bs-prefill "
                f"{model.cuda_graph_max_bs_prefill:,}): {model.num_breakable_launches:,} launches (graph "
                f"segments and the eager attention kernels) × {each}")
    return f"{model.num_kernels:,} kernels launched one by one × {each} (no CUDA graph fits this pass)"


def cost_figures(scenario: Scenario) -> dict:
    """The figures the app's cost panel edits, as this scenario's roofline resolves them (GPU preset,
    overrides, cost.*, engine flags); {} on the linear predictor, which has none of them."""
    model = cost_of(scenario)
    if isinstance(model, LinearCost):
        return {}
    gpu = model.gpu
    return {"gemm_mfu": gpu.gemm_mfu, "gemm_mbu": gpu.gemm_mbu, "elementwise_mbu": gpu.elementwise_mbu,
            "attention_mfu": gpu.attention_mfu, "attention_mbu": gpu.attention_mbu,
            "per_pass_s": model.per_pass_s, "per_request_s": model.per_request_s, "overlap": model.overlap,
            "cuda_graph_max_bs_decode": model.cuda_graph_max_bs_decode,
            "cuda_graph_max_bs_prefill": model.cuda_graph_max_bs_prefill}


def attention_note(scenario: Scenario) -> str:
    """One sentence for beside a story's numbers when its prefill attention figure is an assumption (no
    measured attention profile for the GPU, docs/cost-model.md), or "" when it is measured or set by hand.
    Long prompts' first tokens and the stalls they cause scale with it."""
    model = cost_of(scenario)
    edited = "attention_mfu" in scenario.cost.roofline or "attention_mfu" in scenario.hardware.gpu_overrides
    if isinstance(model, LinearCost) or edited:
        return ""
    source = gpu_preset(scenario.hardware.gpu).efficiency_source
    if "attention: assumption" not in source and not source.startswith("assumption"):
        return ""
    return (f"Prefill attention ({model.attention_backend}) on the {model.gpu.name} is priced at "
            f"{model.gpu.attention_mfu:g} of its BF16 "
            "peak at long sequences: an assumption (published kernel benchmarks, no measured serving profile "
            "for this GPU); a long prompt's stall scales with it. The cost model edits it.")
