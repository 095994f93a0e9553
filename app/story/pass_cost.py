"""What the pass under the cursor cost, term by term: in words a trainer can read aloud, and a small
stacked bar of the GPU's kernels beside the CPU's work (engine_model.pass_cost, docs/cost-model.md).

The words and the bar of a pass are built once for the whole server (every person stepping through the
same run sees the same passes): building the bar's chart was a third of a warm page view's server time."""

from __future__ import annotations

import streamlit as st

from app import compute
from app.charts.pass_cost import cost_bar, cost_frame
from app.ui.chart import packed, unlabelled_marks
from engine_model import InputError, PassCost, PassShape, Scenario, pass_cost

GPU_TERMS = ("GEMMs", "attention", "element-wise", "all-reduce", "floors")


def pass_cost_ui(scenario: Scenario | None, row) -> None:
    """The breakdown of the pass in `row` (a row of the iterations frame) under the run's cost model."""
    if scenario is None:
        return
    st.markdown("**What this pass cost**")
    if not ran(row):
        st.caption("Nothing ran in this iteration: no forward pass, no cost.")
        return
    try:
        words, spec = breakdown(compute.run_key(scenario), shape_of(row), scenario)
    except InputError as err:
        st.caption(f"No breakdown here: `{err.where}`: {err.problem}.")
        return
    st.markdown(words)
    st.vega_lite_chart(spec, width="stretch")


@st.cache_resource(max_entries=1024, show_spinner=False)
def breakdown(run_key: str, shape: PassShape, _scenario: Scenario) -> tuple[str, dict]:
    """The pass's breakdown in words and its bar's spec (datasets as Arrow), shared under (run, shape).
    Never mutate the spec: other sessions hold the same dict."""
    cost = pass_cost(_scenario, shape)
    spec = cost_bar(cost_frame(cost), cost.total_s * 1e3).to_dict(validate=False)
    return say(cost), packed(unlabelled_marks(spec))


def ran(row) -> bool:
    """Whether the iteration in `row` ran a forward pass (an idle turn did not)."""
    return int(row["num_prefill_rows"]) + int(row["num_decode_rows"]) > 0


def shape_of(row) -> PassShape:
    """The pass's aggregates from the iterations frame (the columns engine_model.pass_shape fills)."""
    num_decode = int(row["num_decode_rows"])
    return PassShape(num_rows=int(row["num_prefill_rows"]) + num_decode, num_decode_rows=num_decode,
                     new_tokens=int(row["num_new_tokens"]), past_kv_sum=int(row["past_kv_sum"]),
                     attn_pairs=int(row["attn_pairs"]))


def say(cost: PassCost) -> str:
    """The breakdown in sentences."""
    if cost.kind == "linear":
        a, b, c = cost.terms
        return (f"This run uses the **reference predictor** (a + b·new + c·past), the one that timed the "
                f"SGLang reference traces — a teaching device, not a GPU. **{ms(cost.total_s)}** = "
                f"{ms(a.seconds)} per pass + {ms(b.seconds)} for {b.detail} + {ms(c.seconds)} for "
                f"{c.detail}.")
    return "  \n".join((_gpu_line(cost), _cpu_line(cost), _total_line(cost)))


def _gpu_line(cost: PassCost) -> str:
    parts = ", ".join(f"{t.name} {ms(t.seconds)}" for t in cost.terms
                      if t.name in GPU_TERMS and t.seconds > 0)
    return f"**GPU {ms(cost.gpu_s)}** ({cost.bound}-bound): {parts}."


def _cpu_line(cost: PassCost) -> str:
    launch, per_pass, per_request = (t for t in cost.terms if t.side == "CPU")
    return (f"**CPU {ms(cost.cpu_s)}**: {launch.detail} = {ms(launch.seconds)}; scheduler "
            f"{ms(per_pass.seconds)} per pass; {per_request.detail} = {ms(per_request.seconds)}.")


def _total_line(cost: PassCost) -> str:
    total = f"**The pass took {ms(cost.total_s)}.** "
    if not cost.overlap:
        return total + ("Overlap schedule **off**: the scheduler's CPU work ran first and the GPU waited for "
                        "it (CPU + GPU).")
    if cost.hidden_s >= cost.cpu_s - 1e-12:
        return total + f"Overlap schedule on: all {ms(cost.cpu_s)} of CPU work hid behind the GPU."
    return total + (f"Overlap schedule on, but the CPU took longer than the GPU: only {ms(cost.hidden_s)} of "
                    f"it hid, and the GPU waited {ms(cost.cpu_s - cost.gpu_s)}.")


def ms(seconds: float) -> str:
    """A duration at the precision a pass needs: 0.043 ms, 1.72 ms, 13.4 ms, 253 ms, 1.25 s."""
    value = seconds * 1e3
    if value >= 1000:
        return f"{seconds:.2f} s"
    if value >= 100:
        return f"{value:.0f} ms"
    if value >= 10:
        return f"{value:.1f} ms"
    return f"{value:.2f} ms" if value >= 0.1 else f"{value:.3f} ms"
