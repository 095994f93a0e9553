"""Per-role figures of a PD run: pure functions of its lanes, spans and transfers (docs/pd.md defines each).

  busy_share            time a worker runs passes / run length
  rank_busy_share       mean over its DP ranks of the time each has real work (not a dummy batch) / run length
  mean_running          decode: mean running batch per decode pass (all ranks), weighted by pass time
  kv_*_token_s          decode: integral over time of KV slots in use, reserved (held for requests still in
                        prefill or transfer: reserved but idle) and free
  transfer_s            last byte handed to the link -> delivered
  phase_s               mean seconds per request in each phase, by group; `transfer` counts only what the
                        transfer adds after the request's last prefill chunk (under early each chunk's KV
                        leaves as it is computed, so most of the span overlaps prefill)
  clients               metrics.group_metrics per closed-loop client pool (e.g. the benchmark without warm-up)
"""

from __future__ import annotations

from collections import defaultdict

from engine_model.config import ClosedArrival
from engine_model.core import Iteration, PassKind
from engine_model.metrics import GroupMetrics, Stats, Typed, group_metrics, summarize


class PrefillWorkerFigures(Typed):
    num_passes: int
    busy_share: float
    rank_busy_share: float
    num_prefill_tokens: int


class DecodeWorkerFigures(Typed):
    num_passes: int
    busy_share: float
    rank_busy_share: float
    mean_running: float
    kv_capacity: int
    kv_in_use_token_s: float
    kv_reserved_token_s: float
    kv_free_token_s: float
    max_kv_reserved: int


class TransferFigures(Typed):
    num_transfers: int
    kv_bytes_per_token: float
    transfer_s: Stats


class PDFigures(Typed):
    decode_allocation_policy: str
    roles: dict[str, dict]  # one rank's resolved settings per role
    workers: dict[str, PrefillWorkerFigures | DecodeWorkerFigures]
    kv_reserved_idle_token_s: float
    transfer: TransferFigures
    phase_s: dict[str, dict[str, float]]  # group -> phase -> mean seconds per request
    clients: dict[str, GroupMetrics]


def busy_s(its: list[Iteration]) -> float:
    return sum(it.duration_s for it in its if it.kind is not PassKind.IDLE)


def worker_figures(result, name: str) -> PrefillWorkerFigures | DecodeWorkerFigures:
    its = result.lanes[name]
    span = result.end_at or 1.0
    ranks = [lane for key, lane in result.pd.rank_lanes.items() if key.startswith(f"{name}.")]
    out = {
        "num_passes": sum(it.kind is not PassKind.IDLE for it in its),
        "busy_share": busy_s(its) / span,
        "rank_busy_share": sum(busy_s(lane) for lane in ranks) / (len(ranks) * span) if ranks else 0.0,
    }
    if name.startswith("prefill"):
        out["num_prefill_tokens"] = sum(row.extend for it in its for row in it.prefill_rows)
        return PrefillWorkerFigures(**out)
    decode = [it for it in its if it.kind is PassKind.DECODE]
    decode_s = sum(it.duration_s for it in decode)
    out["mean_running"] = (sum(len(it.decode_rids) * it.duration_s for it in decode) / decode_s
                           if decode_s else 0.0)
    out["kv_capacity"] = its[0].kv_capacity if its else 0
    out["kv_in_use_token_s"] = sum(it.kv_used * it.duration_s for it in its)
    out["kv_reserved_token_s"] = sum(it.kv_reserved * it.duration_s for it in its)
    out["kv_free_token_s"] = sum((it.kv_capacity - it.kv_used - it.kv_reserved) * it.duration_s for it in its)
    out["max_kv_reserved"] = max((it.kv_reserved for it in its), default=0)
    return DecodeWorkerFigures(**out)


def phase_figures(requests) -> dict:
    by_group: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    counts: dict[str, int] = defaultdict(int)
    for req in requests:
        counts[req.group] += 1
        prefilled = max((end for phase, _, end in req.spans if phase == "prefill"), default=None)
        for phase, start, end in req.spans:
            if phase == "transfer" and prefilled is not None:
                start = min(max(start, prefilled), end)  # the part after prefill: what it adds
            by_group[req.group][phase] += end - start
    return {g: {p: s / counts[g] for p, s in phases.items()} for g, phases in by_group.items()}


def client_requests(result) -> dict[str, list]:
    """Each closed-loop client pool's requests (its groups'), in run order."""
    client_of = {g.name: g.arrival.client for g in result.scenario.workload.groups
                 if isinstance(g.arrival, ClosedArrival)}
    members: dict[str, list] = defaultdict(list)
    for req in result.requests:
        if req.group in client_of:
            members[client_of[req.group]].append(req)
    return dict(members)


def client_figures(result) -> dict[str, GroupMetrics]:
    return {name: group_metrics(reqs) for name, reqs in client_requests(result).items()}


def pd_figures(result) -> PDFigures:
    transfers = [t.duration_s for t in result.pd.transfers if t.duration_s is not None]
    workers = {name: worker_figures(result, name) for name in result.lanes}
    decode = [w for w in workers.values() if isinstance(w, DecodeWorkerFigures)]
    return PDFigures(
        decode_allocation_policy=result.pd.policy,
        roles={name: res.to_dict() for name, res in result.pd.roles.items()},
        workers=workers,
        kv_reserved_idle_token_s=sum(w.kv_reserved_token_s for w in decode),
        transfer=TransferFigures(num_transfers=len(transfers),
                                 kv_bytes_per_token=result.pd.kv_bytes_per_token,
                                 transfer_s=summarize(transfers)),
        phase_s=phase_figures(result.requests),
        clients=client_figures(result),
    )
