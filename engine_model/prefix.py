"""Prefix reuse across requests: SGLang's radix cache as the scheduler uses it (engine_model/radix.py holds
the tree).

Every request's KV goes through the tree, as in SGLang: a prefill's tokens are inserted when its pass ends
(`checkpoint_kv_cache`) and stay locked while the request runs; a finished request inserts its prompt and
reply and unlocks them (`release_kv_cache`), so they stay as evictable cache that a later request with the
same leading tokens hits (`init_next_round_input` -> `match_prefix`). Evictable tokens count as free in
every budget; they are evicted, least recently used first, only when an allocation needs room.

A prompt's tokens come from `Request.prefix_blocks` (Mooncake's `hash_ids`: equal ids are equal 512-token
blocks), else from its `prefix_group` (one token stream per group, as the reference tool's `prompt_seed`),
else from a stream of its own. A reply is the same token throughout (the reference tool's id 1).

KV is counted as SGLang's allocator does: `kv_used` (the scheduler's) is the pool less what is free or
evictable = the tree's locked tokens + each request's own slots past its locked prefix.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine_model.core import Request
from engine_model.policy import ceil_page
from engine_model.radix import REPLY, Node, RadixTree, Run, head, length
from engine_model.rules import mirrors

BLOCK_TOKENS = 512  # Mooncake's hash_ids: one id per 512-token block
# IN_BATCH_PREFIX_CACHING_CHECK_THRESHOLD and _DEPRIORITIZE_THRESHOLD: a waiting request with at most this
# many cached tokens that shares at least this many with one ahead of it in the queue is pushed back
IN_BATCH_PREFIX_THRESHOLD = 32
WAITING_QUEUE_PREFIX_MATCH_MAX = 128  # lpm falls back to fcfs above this queue length; touches this many
WAITING_PREFIX_REFRESH_INTERVAL = 32  # a cache-agnostic policy touches the queue's prefixes every 32 calls
CACHE_AWARE = frozenset(("lpm", "dfs-weight", "shortest-prefill-first"))


def prompt_runs(req: Request) -> tuple[Run, ...]:
    """The prompt as token runs: its hash_ids blocks (any rest its own), its group's stream, or its own."""
    if req.prefix_blocks:
        runs, left = [], req.prompt_len
        for block in req.prefix_blocks:
            if left <= 0:
                break
            runs.append((("block", block), 0, min(BLOCK_TOKENS, left)))
            left -= BLOCK_TOKENS
        if left > 0:
            runs.append((("own", req.rid), 0, left))
        return tuple(runs)
    key = ("group", req.prefix_group) if req.prefix_group else ("own", req.rid)
    return ((key, 0, req.prompt_len),)


@dataclass(slots=True)
class Hold:
    """What one request holds in the tree: the locked node and the tokens it covers
    (`cache_protected_len`)."""

    protected: int = 0
    node: Node | None = None


class PrefixCache:
    def __init__(self, page_size: int, enabled: bool = True):
        self.page_size = page_size
        self.tree = RadixTree(page_size) if enabled else None
        self.prompts: dict[str, tuple[Run, ...]] = {}
        self.holds: dict[str, Hold] = {}
        self.matched: dict[str, tuple[int, Node]] = {}  # the last match of each waiting request
        self.num_refresh_calls = 0

    @property
    def evictable(self) -> int:
        return self.tree.evictable if self.tree is not None else 0

    def seq(self, req: Request) -> tuple[Run, ...]:
        """`origin_input_ids + output_ids`."""
        prompt = self.prompts.get(req.rid)
        if prompt is None:
            prompt = self.prompts[req.rid] = prompt_runs(req)
        return prompt + ((REPLY, 0, req.num_generated),) if req.num_generated > 0 else prompt

    # -- the waiting queue's order ----------------------------------------------------------------
    def num_matched(self, req: Request) -> int:
        """`num_matched_prefix_tokens` from the last sort: the cached prefix, at most input length - 1."""
        num = self.matched.get(req.rid, (0, None))[0]
        return min(num, req.fill_len - 1)

    def active_policy(self, policy: str, num_waiting: int) -> str:
        """`_validate_and_adjust_policy` and `_determine_active_policy`: without the cache every cache-aware
        policy is fcfs; lpm is fcfs while more than 128 requests wait."""
        if self.tree is None and policy in CACHE_AWARE:
            return "fcfs"
        if policy == "lpm" and num_waiting > WAITING_QUEUE_PREFIX_MATCH_MAX:
            return "fcfs"
        return policy

    @mirrors("_compute_prefix_matches")
    def prefix_matches(self, waiting: list[Request]) -> set[int]:
        """`_compute_prefix_matches`: each waiting request is matched against the cache (in queue order,
        stamping what it hits); one with at most 32 cached tokens that shares 32 or more with a request
        ahead of it in the queue is deferred this pass (so only one of them fills the cache). Returns the
        deferred requests' ids."""
        ahead = RadixTree(1)  # waiting_queue_radix_tree: the requests ahead that were not deferred
        deferred = set()
        for req in waiting:
            runs = self.seq(req)
            self.matched[req.rid] = num, _ = self.tree.match(runs, length(runs))
            if num > IN_BATCH_PREFIX_THRESHOLD:
                continue
            if ahead.match(runs, length(runs))[0] >= IN_BATCH_PREFIX_THRESHOLD:
                deferred.add(id(req))
            else:
                ahead.insert(runs)
        return deferred

    @mirrors("_sort_by_longest_prefix")
    def sort_longest_prefix(self, waiting: list[Request], deferred: set[int]) -> None:
        """`_sort_by_longest_prefix`: the longest cached prefix first, deferred requests last; ties keep
        queue order."""
        waiting.sort(key=lambda r: float("inf") if id(r) in deferred else -self.num_matched(r))

    @mirrors("_sort_by_dfs_weight", "_dfs_weight_order")
    def sort_dfs_weight(self, waiting: list[Request]) -> None:
        """`_dfs_weight_order`: a node weighs the waiting requests whose match ends there or below; the tree
        is walked depth first, heavier children first (ties in the children's order), each node's own
        requests after its children's."""
        at_node: dict[int, list[int]] = {}
        nodes: dict[int, Node] = {}
        for index, req in enumerate(waiting):
            node = self.matched[req.rid][1]
            at_node.setdefault(id(node), []).append(index)
            nodes[id(node)] = node
        weight: dict[int, int] = {key: len(v) for key, v in at_node.items()}
        stack: list[tuple[Node, bool]] = [(self.tree.root, False)]
        while stack:
            node, visited = stack.pop()
            if visited:
                weight[id(node)] = weight.get(id(node), 0) + sum(weight.get(id(c), 0)
                                                                 for c in node.children.values())
                continue
            stack.append((node, True))
            stack.extend((c, False) for c in reversed(list(node.children.values())))
        order: list[int] = []
        stack = [(self.tree.root, False)]
        while stack:
            node, visited = stack.pop()
            if visited:
                order.extend(at_node.get(id(node), ()))
                continue
            children = sorted(node.children.values(), key=lambda c: -weight.get(id(c), 0))
            stack.append((node, True))
            stack.extend((c, False) for c in reversed(children))
        waiting[:] = [waiting[i] for i in order]

    @mirrors("_touch_waiting_prefixes")
    def touch_waiting(self, waiting: list[Request]) -> None:
        """`_touch_waiting_prefixes` (cache-agnostic policies): on every 32nd sort the first 128 waiting
        requests' cached prefixes are stamped, the queue's head last, so LRU evicts them in reverse order
        of admission."""
        if self.tree is None or not waiting:
            return
        refresh = self.num_refresh_calls % WAITING_PREFIX_REFRESH_INTERVAL == 0
        self.num_refresh_calls += 1
        if refresh:
            for req in reversed(waiting[:WAITING_QUEUE_PREFIX_MATCH_MAX]):
                runs = self.seq(req)
                self.tree.match(runs, length(runs))

    # -- admission --------------------------------------------------------------------------------
    @mirrors("init_next_round_input", "match_kv_cache")
    def match(self, req: Request) -> int:
        """`init_next_round_input`: the cached prefix of prompt + reply so far, at most input length - 1,
        page-aligned; the request adopts it (`cache_protected_len`)."""
        if self.tree is None:
            return 0
        num, node = self.tree.match(self.seq(req), req.fill_len - 1)
        self.matched[req.rid] = (num, node)
        return num

    def newly_locked(self, req: Request) -> int:
        """Evictable tokens that locking the request's match takes out of the free pool (`_lock_node`)."""
        if self.tree is None:
            return 0
        return self.tree.unlocked_on_path(self.matched[req.rid][1])

    @mirrors("_commit_prefill_admission")
    def admit(self, req: Request) -> int:
        """The admitted request locks its match (`req.lock = tree_cache.lock(last_node)`). Returns the
        change in slots in use (the matched tokens that were evictable)."""
        if req.num_cached is None:
            req.num_cached = req.kv_len
        if self.tree is None:
            return 0
        node = self.matched[req.rid][1]
        self.holds[req.rid] = Hold(req.kv_len, node)
        return self.tree.lock(node)

    # -- the tree follows the request's KV --------------------------------------------------------
    @mirrors("checkpoint_kv_cache", "checkpoint_into_tree")
    def checkpoint(self, req: Request, up_to: int | None = None) -> int:
        """`checkpoint_into_tree`: the request's first `up_to` tokens (default: all it holds in KV) go into
        the tree, page-aligned; slots another request already cached are freed as duplicates; the leaf
        is split at the prompt's end (so eviction can drop a reply and keep its prompt); the request's
        lock moves to the new node. Returns the change in slots in use."""
        hold = self.holds.get(req.rid)
        if self.tree is None or hold is None:
            return 0
        up_to = req.kv_len if up_to is None else up_to
        runs = self.seq(req)
        key_len = up_to // self.page_size * self.page_size
        if key_len <= 0:
            return 0
        _, node = self.tree.insert(head(runs, key_len))
        # the request's own slots up to key_len leave it: duplicates of cached tokens are freed, the rest
        # become the new leaf, evictable until the lock below
        delta = -(key_len - hold.protected)
        prompt_len = req.prompt_len // self.page_size * self.page_size
        if 0 < prompt_len < key_len:
            self.tree.insert(head(runs, prompt_len))
        delta -= self.tree.unlock(hold.node) if hold.node is not None else 0
        delta += self.tree.lock(node)
        hold.protected, hold.node = key_len, node
        return delta

    @mirrors("release_kv_cache")
    def release(self, req: Request, *, checkpoint: bool) -> int:
        """`release_kv_cache`: with `checkpoint` (a finished request) its prompt and reply (all but the
        last token, whose KV was never written) go into the tree first; then its own slots are freed and
        its lock dropped (a retracted request's prompt stays cached as evictable). Returns the change in
        slots in use (negative)."""
        delta = 0
        if checkpoint:
            delta += self.checkpoint(req, min(req.kv_len, req.fill_len - 1))
        hold = self.holds.pop(req.rid, None) or Hold()
        delta -= ceil_page(req.kv_len, self.page_size) - hold.protected
        if hold.node is not None:
            delta -= self.tree.unlock(hold.node)
        self.matched.pop(req.rid, None)
        return delta

    @mirrors("evict_to_free_tokens")
    def make_room(self, num_tokens: int, num_free: int) -> None:
        """Before an allocation of `num_tokens` slots: evict least recently used cache until that many are
        free without it (`num_free`: free slots counting the evictable ones)."""
        if self.tree is None:
            return
        shortfall = num_tokens - (num_free - self.tree.evictable)
        if shortfall > 0:
            self.tree.evict(shortfall)

