"""SGLang's radix tree over token sequences, with the sequences written as runs instead of token ids.

A request's tokens are runs `(key, start, length)`: `length` tokens of the token stream named `key`, from
position `start`. Two tokens are equal when they come from the same stream at the same position; the reply
stream (`REPLY`) is the same token throughout, as the reference tool's replies are (every output id is 1).
A prompt is one stream per 512-token block of Mooncake's `hash_ids` (equal ids, equal blocks), one stream
per prefix group (the reference tool's `prompt_seed`), or a stream of its own.

The tree mirrors `UnifiedTreeCore` (mem_cache/unified_cache/unified_tree_core.py) for the full-attention KV
component without HiCache: a match walks down and splits the node it ends inside, then stamps the matched
path newest-last (`_match_post_processor`); an insert touches every node it walks and adds one leaf; a lock
protects the path to the root; eviction takes unlocked leaves, least recently used first. Times come from
one counter (`get_and_increase_time_counter`), so the order of events alone decides what is evicted.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

from engine_model.rules import mirrors

REPLY = "reply"  # the reply stream: one token repeated
Run = tuple[object, int, int]  # (stream key, start position in the stream, number of tokens)


def length(runs: Sequence[Run]) -> int:
    return sum(run[2] for run in runs)


def head(runs: Sequence[Run], num: int) -> tuple[Run, ...]:
    """The first `num` tokens."""
    out = []
    for key, start, n in runs:
        if num <= 0:
            break
        out.append((key, start, min(n, num)))
        num -= n
    return tuple(out)


def tail(runs: Sequence[Run], num: int) -> tuple[Run, ...]:
    """Everything after the first `num` tokens."""
    out = []
    for key, start, n in runs:
        if num >= n:
            num -= n
            continue
        out.append((key, start + num, n - num))
        num = 0
    return tuple(out)


def _same(a: Run, b: Run) -> bool:
    return a[0] == b[0] and (a[1] == b[1] or a[0] == REPLY)


def common(a: Sequence[Run], b: Sequence[Run]) -> int:
    """How many leading tokens two sequences share."""
    i = j = 0
    ai = bj = 0  # tokens already consumed from a[i] and b[j]
    total = 0
    while i < len(a) and j < len(b):
        ka, sa, na = a[i]
        kb, sb, nb = b[j]
        if not _same((ka, sa + ai, 0), (kb, sb + bj, 0)):
            break
        step = min(na - ai, nb - bj)
        total += step
        ai += step
        bj += step
        if ai == na:
            i, ai = i + 1, 0
        if bj == nb:
            j, bj = j + 1, 0
    return total


def first_page(runs: Sequence[Run], page: int) -> tuple:
    """The child key (`RadixKey.child_key`): the identity of the first page's tokens."""
    ids = []
    for key, start, n in runs:
        for pos in range(start, start + min(n, page - len(ids))):
            ids.append((key,) if key == REPLY else (key, pos))
        if len(ids) >= page:
            break
    return tuple(ids)


class Node:
    __slots__ = ("runs", "size", "parent", "children", "lock_ref", "last_access")

    def __init__(self, runs: tuple[Run, ...], parent: Node | None, at: float):
        self.runs, self.size, self.parent = runs, length(runs), parent
        self.children: dict[tuple, Node] = {}
        self.lock_ref = 0
        self.last_access = at

    def __lt__(self, other: Node) -> bool:
        return self.last_access < other.last_access


class RadixTree:
    """The tree and its two counts: `evictable` (unlocked tokens) and `protected` (locked ones)."""

    def __init__(self, page_size: int):
        self.page = page_size
        self.clock = 0.0
        self.root = Node((), None, self._tick())
        self.root.lock_ref = 1
        self.evictable = 0
        self.protected = 0
        self.leaves: set[Node] = set()  # evictable_device_leaves

    def _tick(self) -> float:
        at, self.clock = self.clock, self.clock + 1.0
        return at

    def _new_node(self, runs: tuple[Run, ...], parent: Node) -> Node:
        node = Node(runs, parent, self._tick())
        self._tick()  # creation_time
        return node

    def _floor(self, num: int) -> int:
        return num // self.page * self.page

    def _step(self, node: Node, key: tuple[Run, ...]) -> tuple[Node | None, int]:
        child = node.children.get(first_page(key, self.page))
        if child is None:
            return None, 0
        return child, self._floor(common(child.runs, key))

    def _split(self, child: Node, num: int) -> Node:
        """`_split_node`: a new node holds the child's first `num` tokens; the child keeps the rest."""
        parent = child.parent
        new = self._new_node(head(child.runs, num), parent)
        new.lock_ref = child.lock_ref
        child.runs = tail(child.runs, num)
        child.size -= num
        child.parent = new
        new.children[first_page(child.runs, self.page)] = child
        parent.children[first_page(new.runs, self.page)] = new  # same key: keeps its place
        child.last_access = self._tick()
        self._update_leaf(new)
        self._update_leaf(child)
        return new

    @mirrors("UnifiedTreeCore._match_prefix_helper", "_match_post_processor")
    def match(self, runs: Sequence[Run], limit: int) -> tuple[int, Node]:
        """`match_prefix` of the first `limit` tokens (page-aligned): how many are cached, and the node the
        match ends on (split there if it ends inside one). Stamps the path, the deepest node newest."""
        key = head(runs, self._floor(limit))
        node, matched = self.root, 0
        while key:
            child, num = self._step(node, key)
            if child is None or num == 0:
                break
            if num < child.size:
                node = self._split(child, num)
                matched += num
                break
            node, matched, key = child, matched + num, tail(key, num)
        at, upd = self._tick(), node
        while upd is not None:
            upd.last_access = at
            at -= 0.00001
            upd = upd.parent
        return matched, node

    @mirrors("UnifiedTreeCore.begin_insert", "_insert_walk_step", "_insert_commit_step")
    def insert(self, runs: Sequence[Run]) -> tuple[int, Node]:
        """`insert` of a page-aligned sequence: touches the root and each node walked, splits where the
        sequence leaves a node, adds the rest as a new leaf. Returns the tokens that were already cached
        and the node holding the last token."""
        key = head(runs, self._floor(length(runs)))
        node, matched = self.root, 0
        node.last_access = self._tick()
        while key:
            child, num = self._step(node, key)
            if child is None:
                break
            child.last_access = self._tick()
            if num < child.size:
                child = self._split(child, num)
            node, matched, key = child, matched + num, tail(key, num)
        if key:
            leaf = self._new_node(tuple(key), node)
            node.children[first_page(leaf.runs, self.page)] = leaf
            self.evictable += leaf.size
            self._update_leaf(leaf)
            self._update_leaf(node)
            node = leaf
        return matched, node

    def unlocked_on_path(self, node: Node) -> int:
        """Tokens a lock on `node` would take out of the evictable pool."""
        total = 0
        while node is not self.root:
            total += node.size if node.lock_ref == 0 else 0
            node = node.parent
        return total

    @mirrors("inc_lock_ref")
    def lock(self, node: Node) -> int:
        """`inc_lock_ref`: the path to the root is protected. Returns the tokens that stopped being
        evictable."""
        moved = 0
        while node is not self.root:
            if node.lock_ref == 0:
                moved += node.size
            node.lock_ref += 1
            self._update_leaf(node)
            node = node.parent
        self.evictable -= moved
        self.protected += moved
        return moved

    @mirrors("dec_lock_ref")
    def unlock(self, node: Node) -> int:
        """`dec_lock_ref`. Returns the tokens that became evictable."""
        moved = 0
        while node is not self.root:
            if node.lock_ref == 1:
                moved += node.size
            node.lock_ref -= 1
            self._update_leaf(node)
            node = node.parent
        self.evictable += moved
        self.protected -= moved
        return moved

    @mirrors("FullComponent._evict_device_next_node")
    def evict(self, num_tokens: int) -> int:
        """Evicts unlocked leaves, least recently used first (a parent left childless joins the heap),
        until `num_tokens` are freed or nothing is evictable. Returns the tokens freed."""
        heap = [(n.last_access, n) for n in self.leaves]
        heapq.heapify(heap)
        freed = 0
        while freed < num_tokens and heap:
            _, node = heapq.heappop(heap)
            if node not in self.leaves:
                continue
            parent = node.parent
            del parent.children[first_page(node.runs, self.page)]
            self.leaves.discard(node)
            self.evictable -= node.size
            freed += node.size
            self._update_leaf(parent)
            if parent in self.leaves:
                heapq.heappush(heap, (parent.last_access, parent))
        return freed

    def _update_leaf(self, node: Node) -> None:
        if node is not self.root and node.lock_ref == 0 and not node.children:
            self.leaves.add(node)
        else:
            self.leaves.discard(node)

    def size(self) -> int:
        return self.evictable + self.protected
