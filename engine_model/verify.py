"""A speculative decode pass's cost: the draft steps and the verify (engine_model/speculative.py says what
is simplified). Apart from speculative.py because the cost model's module imports resolve.py, which reads the
speculative settings."""

from __future__ import annotations

from engine_model.cost import PassShape, attn_pairs
from engine_model.speculative import Speculative


def verify_shape(spec: Speculative, shape: PassShape) -> PassShape:
    """A decode pass's shape as the verify pass runs it: every row scores its draft tokens over its KV."""
    n, d = shape.num_rows, spec.num_draft_tokens
    past = shape.past_kv_sum
    return PassShape(n, n, n * d, past, past * d + n * attn_pairs(d, 0))


def draft_seconds(spec: Speculative, cost, shape: PassShape) -> float:
    """The draft passes before a verify: num_steps steps over rows x topk (the branches read their request's
    KV once), each a share of the target's decode pass of that shape (an assumption)."""
    if not spec.draft_share or not shape.num_rows:
        return 0.0
    rows = shape.num_rows * spec.topk
    step = cost.seconds(PassShape(rows, rows, rows, shape.past_kv_sum, shape.past_kv_sum + rows))
    return spec.num_steps * spec.draft_share * step
