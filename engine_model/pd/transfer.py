"""The KV link between prefill and decode GPUs. Every DP rank has its own NIC (one per GPU, as on a DGX);
a transfer leaves the prefill rank's NIC and enters the decode rank's. Concurrent transfers share NIC
bandwidth max-min fairly (progressive filling), recomputed whenever a transfer starts, gains bytes or ends.

With attention TP > 1 each GPU of a rank sends its own heads' share over its own NIC in parallel, so a
transfer moves `kv_bytes_per_token(model, kv_dtype, attention TP)` per token per NIC.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from engine_model.hardware import Link

DONE_WITHIN_S = 1e-12  # float slack when a transfer's last byte lands


@dataclass(eq=False)
class Transfer:
    """One request's KV on its way. Under `early` chunks are added as prefill computes them."""

    rid: str
    src: str  # the prefill rank's NIC
    dst: str  # the decode rank's NIC
    num_bytes: float = 0.0  # known so far
    num_sent: float = 0.0
    is_final: bool = False  # the last chunk's bytes are in
    rate: float = 0.0  # bytes/s now
    started_at: float | None = None  # first byte handed to the link
    final_at: float | None = None  # last byte handed to the link (the whole KV is computed and reserved)
    sent_at: float | None = None  # last byte
    delivered_at: float | None = None  # last byte + link latency

    @property
    def num_left(self) -> float:
        return self.num_bytes - self.num_sent

    @property
    def duration_s(self) -> float | None:
        """transfer_s: from the last byte handed to the link to delivery (what the transfer adds to TTFT)."""
        return None if self.delivered_at is None else self.delivered_at - self.final_at


@dataclass
class Network:
    link: Link
    now: float = 0.0
    active: list[Transfer] = field(default_factory=list)

    @property
    def nic_bytes_per_s(self) -> float:
        return self.link.bandwidth_gbps * 1e9 / 8

    def open(self, rid: str, src: str, dst: str) -> Transfer:
        transfer = Transfer(rid, src, dst)
        self.active.append(transfer)
        return transfer

    def add(self, transfer: Transfer, num_bytes: float, is_final: bool, at: float) -> None:
        self.advance(at)
        if transfer.started_at is None:
            transfer.started_at = at
        transfer.num_bytes += num_bytes
        transfer.is_final = is_final
        if is_final:
            transfer.final_at = at
        self._share()

    def advance(self, at: float) -> None:
        """Move every flowing transfer forward to time `at`."""
        elapsed = at - self.now
        for transfer in self.active:
            transfer.num_sent = min(transfer.num_bytes, transfer.num_sent + transfer.rate * elapsed)
        self.now = max(self.now, at)

    def next_sent_at(self) -> float | None:
        """When the next final transfer sends its last byte, at today's rates."""
        times = [self.now + t.num_left / t.rate for t in self.active if t.is_final and t.rate > 0]
        return min(times, default=None)

    def pop_sent(self, at: float) -> list[Transfer]:
        """Advance to `at` and remove the final transfers whose last byte has landed."""
        self.advance(at)
        done = [t for t in self.active
                if t.is_final and (t.num_left <= 0 or (t.rate > 0 and t.num_left / t.rate <= DONE_WITHIN_S))]
        for transfer in done:
            transfer.num_sent, transfer.sent_at = transfer.num_bytes, at
            transfer.delivered_at = at + self.link.latency_s
            self.active.remove(transfer)
        if done:
            self._share()
        return done

    def _share(self) -> None:
        """Max-min fair rates: fill the tightest NIC first, freeze its transfers, repeat."""
        for transfer in self.active:
            transfer.rate = 0.0
        left = [t for t in self.active if t.num_left > 0]
        room: dict[str, float] = {}
        while left:
            users = Counter(nic for t in left for nic in (t.src, t.dst))
            nic = min(users, key=lambda n: (room.get(n, self.nic_bytes_per_s) / users[n], n))
            share = room.get(nic, self.nic_bytes_per_s) / users[nic]
            for transfer in [t for t in left if nic in (t.src, t.dst)]:
                transfer.rate = share
                for end in (transfer.src, transfer.dst):
                    room[end] = room.get(end, self.nic_bytes_per_s) - share
                left.remove(transfer)
