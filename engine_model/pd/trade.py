"""early -> prefill_complete on the four figures PR #40703 reports, the model's beside upstream's.

Upstream (seed 000; sgl-project/sglang #40703, GLM-5.2-NVFP4 on 12 Rubin GPUs, 2 prefill + 1 decode
TP4/DP4/EP4, decode KV capped at 163,840 tokens per rank): the arithmetic mean of two runs per policy,
then the change. `mean_policy_trade` does the same over the model's runs (one run per seed).

A figure *matches* when it lies within a factor 2 of upstream's change (same sign); mean TPOT, a change of
a few percent, matches when its size is at most twice upstream's. `trade_statement` says in words which
figures match and, for each that does not, what the model leaves out. Pure functions of run summaries.
"""

from __future__ import annotations

from dataclasses import dataclass

UPSTREAM_SOURCE = ("the test behind prefill_complete, as sgl-project/sglang PR #40703 reports it (seed 000): "
                   "GLM-5.2-NVFP4 on 12 Rubin GPUs, mean of two runs per policy")


@dataclass(frozen=True)
class Figure:
    key: str
    label: str
    metric: str  # a GroupMetrics field
    stat: str | None
    upstream: float  # relative change early -> prefill_complete
    small: bool = False  # a change of a few percent: matches when |model| <= 2 x |upstream|


FIGURES = (
    Figure("throughput", "Output throughput", "output_throughput_tok_s", None, +0.27),
    Figure("ttft", "p95 time to first token", "ttft_s", "p95", -0.49),
    Figure("tpot", "Mean time per output token", "tpot_s", "mean", +0.02, small=True),
    Figure("itl", "p99 gap between tokens", "itl_s", "p99", +0.93),
)

# What the model leaves out where a figure does not match (docs/pd.md, "The upstream replica").
NOT_MODELLED = {
    "throughput": "the model's early run decodes smaller batches (its FIFO preallocation blocks behind each "
                  "long prompt's KV, reserved from arrival through prefill) at almost the same pass time, so "
                  "its output falls with the batch; what let the real test's early run keep more of its "
                  "output is not identified, so not modelled",
    "ttft": "the model's prefill and decode waits differ from the real test's; the cause is not identified",
    "tpot": "the model's decode pass changes with its batch only through the kernels and CPU time it prices",
    "itl": "in this model a token gap is one decode pass plus what the server's front end adds "
           "(engine_model/frontend.py): the decode server's event loop tokenizes every arriving prompt "
           "inline (`_tokenize_texts`; a 131,072-token prompt holds it for about half a second on the CPU "
           "the cost was measured on), and the replies that queued meanwhile reach the client as one chunk "
           "(`_coalesce_streaming_chunks`), whose gap bench_serving's default backend spreads over its "
           "tokens. Both policies tokenize the same prompts, so this raises the p99 gap under both; the "
           "decode loop's own additions under prefill_complete cost little (a merged prebuilt batch holds "
           "the host in 0.5.22 only after an eager decode forward, `prepare_for_prebuilt`'s blocking "
           "copies; polling costs microseconds). What else nearly doubles SGLang's p99 gap is not modelled: "
           "KV landing by RDMA in decode memory during decode steps, decode host backup and restore, the "
           "real server's CPU and tokenizer",
}


@dataclass(frozen=True)
class Trade:
    """One figure: the model's change beside upstream's."""

    figure: Figure
    early: float | None  # the model's value under each policy (seconds or tokens/s)
    prefill_complete: float | None

    @property
    def model(self) -> float | None:
        if not self.early or self.prefill_complete is None:
            return None
        return self.prefill_complete / self.early - 1

    @property
    def band(self) -> tuple[float, float]:
        """The changes within a factor 2 of upstream's."""
        u = self.figure.upstream
        if self.figure.small:
            return -2 * abs(u), 2 * abs(u)
        return tuple(sorted((u / 2, 2 * u)))

    @property
    def matches(self) -> bool:
        low, high = self.band
        return self.model is not None and low <= self.model <= high

    @property
    def words(self) -> tuple[str, str]:
        """The model's change and upstream's, as written: ("+85 %", "+27 %")."""
        return pct(self.model), pct(self.figure.upstream)


def metrics_of(summary):
    """The benchmark client's metrics when the run has one (the upstream replica), else every request's
    (`Summary.measured`: one population for every comparison)."""
    return summary.measured.overall


def mean_policy_trade(early: list, late: list) -> list[Trade]:
    """The four figures from run summaries, one per seed and policy: each value the mean over seeds."""
    def mean(summaries, figure):
        values = [metrics_of(s).value(figure.metric, figure.stat) for s in summaries]
        return None if not values or None in values else sum(values) / len(values)

    return [Trade(f, mean(early, f), mean(late, f)) for f in FIGURES]


def policy_trade(early, late) -> list[Trade]:
    """The four figures of one early and one prefill_complete run."""
    return mean_policy_trade([early], [late])


def pct(change: float | None) -> str:
    """A change in whole percent, signed with a typographic minus: "+85 %", "−41 %", "±0 %"."""
    if change is None:
        return "not measured"
    whole = round(100 * change)
    return "±0 %" if whole == 0 else f"{'+' if whole > 0 else '−'}{abs(whole)} %"  # the app's fmt_change


def trade_statement(trades: list[Trade]) -> list[str]:
    """Plain sentences: which figures are within a factor 2 of upstream, and what each other one lacks."""
    same = [t for t in trades if t.matches]
    out = []
    if same:
        out.append("Within a factor 2 of upstream: " + "; ".join(
            "{} (model {}, upstream {})".format(t.figure.label, *t.words) for t in same) + ".")
    for t in trades:
        if not t.matches:
            out.append("Not reproduced: {}, model {} against upstream's {}: {}.".format(
                t.figure.label, *t.words, NOT_MODELLED[t.figure.key]))
    return out
