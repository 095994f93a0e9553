"""Shared prompt prefixes: the part of SGLang's radix cache that lets requests reuse each other's prompt KV.

Requests of one `prefix_group` share a token sequence: the shorter prompt is a prefix of the longer one
(as the reference tool's `prompt_seed` makes them). For each group the cache keeps a chain of prompt
tokens; each running request locks the part it uses (`_lock_node`), and the chain outlives its requests
as evictable cache (free in every SGLang budget) that later requests of the group hit
(`init_next_round_input` -> `match_prefix`). KV is counted once: slots in use = each request's private
tokens + each group's locked chain.

Simplified: the chain is never evicted (SGLang evicts least-recently-used leaves when it needs room), and
requests without a group share nothing (see docs/design.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engine_model.core import Request


@dataclass
class Chain:
    """One group's cached prompt tokens, and how many of them each running request holds."""

    num_cached: int = 0
    holders: dict[str, int] = field(default_factory=dict)  # rid -> prompt tokens it has in KV
    private: dict[str, int] = field(default_factory=dict)  # rid -> its own slots at the last hold

    @property
    def num_locked(self) -> int:
        return max(self.holders.values(), default=0)


class PrefixCache:
    def __init__(self, page_size: int):
        self.page_size = page_size
        self.chains: dict[str, Chain] = {}

    def match(self, req: Request) -> int:
        """`match_prefix`: cached tokens of the request's prompt, page-aligned, at most input length - 1."""
        chain = self.chains.get(req.prefix_group) if req.prefix_group else None
        if chain is None:
            return 0
        tokens = min(chain.num_cached, req.prompt_len, req.fill_len - 1)
        return max(tokens, 0) // self.page_size * self.page_size

    def newly_locked(self, req: Request, num_matched: int) -> int:
        """Evictable tokens that locking this match takes out of the free pool."""
        chain = self.chains.get(req.prefix_group) if req.prefix_group else None
        return 0 if chain is None else max(num_matched - chain.num_locked, 0)

    def growth(self, req: Request, kv_len: int) -> int:
        """The change in slots in use if the request held `kv_len` tokens now: its new private slots plus
        the growth of the group's locked chain (a matched prefix taken out of the evictable cache counts
        here; a shared one does not). Changes nothing."""
        chain = self.chains.get(req.prefix_group) or Chain()
        num_prompt = self._floor(min(kv_len, req.prompt_len))  # the tree keeps whole pages
        others = max((n for rid, n in chain.holders.items() if rid != req.rid), default=0)
        locked_growth = max(others, num_prompt) - chain.num_locked
        return self._private(kv_len, num_prompt) - chain.private.get(req.rid, 0) + locked_growth

    def hold(self, req: Request) -> int:
        """The request now has `kv_len` tokens in KV after a prefill pass: it locks its prompt part.
        Returns the change in slots in use (`growth`)."""
        delta = self.growth(req, req.kv_len)
        chain = self.chains.setdefault(req.prefix_group, Chain())
        num_prompt = self._floor(min(req.kv_len, req.prompt_len))
        chain.holders[req.rid], chain.private[req.rid] = num_prompt, self._private(req.kv_len, num_prompt)
        chain.num_cached = max(chain.num_cached, num_prompt)
        return delta

    def release(self, req: Request) -> int:
        """`release_kv_cache`: slots freed when the request leaves KV (its private slots, and the prompt
        tokens no other request of the group still locks; those stay cached as evictable)."""
        if not req.prefix_group or req.prefix_group not in self.chains:
            return -1  # not shared: the caller frees the request's own slots
        chain = self.chains[req.prefix_group]
        before = chain.num_locked
        num_prompt = chain.holders.pop(req.rid, 0)
        chain.private.pop(req.rid, None)
        return self._private(req.kv_len, num_prompt) + (before - chain.num_locked)

    def _floor(self, tokens: int) -> int:
        return tokens // self.page_size * self.page_size

    def _private(self, kv_len: int, num_prompt: int) -> int:
        """Slots of a request holding `kv_len` tokens not in the chain: its pages past the locked prompt."""
        return -(-kv_len // self.page_size) * self.page_size - num_prompt
