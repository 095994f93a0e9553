"""The radix tree over token runs (engine_model/radix.py): what SGLang's tree does, on small cases."""

from engine_model.core import Request
from engine_model.prefix import PrefixCache, prompt_runs
from engine_model.radix import REPLY, RadixTree, common


def blocks(*ids: int, last: int = 512) -> tuple:
    """A prompt of 512-token blocks, the last one `last` tokens long."""
    return tuple((("block", b), 0, 512 if i < len(ids) - 1 else last) for i, b in enumerate(ids))


def test_runs_share_tokens_only_from_the_same_stream_at_the_same_place_and_replies_are_one_token():
    assert common(blocks(1, 2, 3), blocks(1, 2, 4)) == 1024
    assert common(blocks(1, 2, last=100), blocks(1, 2)) == 612  # a partial block is a prefix of the whole
    assert common(blocks(2), blocks(1)) == 0
    assert common(((REPLY, 0, 10),), ((REPLY, 3, 20),)) == 10  # every reply token is the same token


def test_a_match_splits_the_node_it_ends_in_and_stamps_the_path_deepest_newest():
    tree = RadixTree(1)
    tree.insert(blocks(1, 2, 3))
    num, node = tree.match(blocks(1, 2, 9), 1536)
    assert num == 1024 and node.size == 1024 and len(node.children) == 1
    (rest,) = node.children.values()
    assert rest.size == 512 and rest.last_access < node.last_access  # the remainder keeps an older stamp
    assert tree.match(blocks(1, 2, 3), 1535)[0] == 1535  # at most the limit asked for


def test_eviction_takes_unlocked_leaves_least_recently_used_first_and_a_bare_parent_after():
    tree = RadixTree(1)
    _, a = tree.insert(blocks(1, 2))
    _, b = tree.insert(blocks(1, 3))  # splits block 1 off as their shared parent
    _, c = tree.insert(blocks(7))
    assert tree.evictable == 512 * 4
    tree.match(blocks(1, 2), 1024)  # a is used again: b is now the oldest leaf
    locked = tree.lock(c)
    assert locked == 512 and tree.evictable == 512 * 3
    assert tree.evict(1) == 512 and b not in tree.leaves and a in tree.leaves
    assert [n.size for n in tree.leaves] == [512]  # a is left; c is locked; the parent still has a child
    assert tree.evict(10_000) == 1024  # a, then the parent it left bare; never the locked c
    assert tree.evictable == 0 and tree.protected == 512
    assert tree.unlock(c) == 512 and tree.evictable == 512


def test_a_page_aligned_tree_matches_and_keeps_whole_pages():
    tree = RadixTree(16)
    tree.insert(blocks(1, last=100))  # 96 tokens kept: 6 pages
    assert tree.evictable == 96
    assert tree.match(blocks(1), 512)[0] == 96


def request(rid: str, prompt_len: int, ids: tuple = (), group: str | None = None) -> Request:
    return Request(rid, "g", 0.0, prompt_len, 4, 4, prefix_group=group, prefix_blocks=ids)


def test_a_prompt_is_its_blocks_then_its_own_tokens():
    assert prompt_runs(request("a", 1100, (5, 6))) == ((("block", 5), 0, 512), (("block", 6), 0, 512),
                                                        (("own", "a"), 0, 76))
    assert prompt_runs(request("b", 700, (5, 6, 7))) == ((("block", 5), 0, 512), (("block", 6), 0, 188))
    assert prompt_runs(request("c", 10, group="sys")) == ((("group", "sys"), 0, 10),)


def test_a_finished_turn_stays_cached_for_the_next_and_the_pool_counts_it_free():
    cache = PrefixCache(1)
    first = request("t1", 1100, (5, 6))
    first.kv_len = cache.match(first)
    assert first.kv_len == 0 and cache.admit(first) == 0
    first.kv_len = 1100  # prefilled
    assert cache.checkpoint(first) == 0  # its slots move into the tree, locked: still in use
    first.num_generated, first.kv_len = 4, 1103  # three decode slots beyond the prompt
    assert cache.release(first, checkpoint=True) == -1103  # prompt and reply stay, evictable
    assert cache.evictable == 1103
    second = request("t2", 2000, (5, 6, 8))
    assert cache.match(second) == 1024  # the two whole blocks; the third differs
    assert cache.newly_locked(second) == 1024


def test_lpm_runs_as_fcfs_above_128_waiting_and_every_cache_aware_policy_without_the_cache():
    cache = PrefixCache(1)
    assert cache.active_policy("lpm", 128) == "lpm" and cache.active_policy("lpm", 129) == "fcfs"
    assert cache.active_policy("dfs-weight", 1000) == "dfs-weight"
    off = PrefixCache(1, enabled=False)
    assert {off.active_policy(p, 1) for p in ("lpm", "dfs-weight", "shortest-prefill-first")} == {"fcfs"}


def test_a_cache_agnostic_queue_stamps_its_first_128_prefixes_every_32nd_sort_head_last():
    cache = PrefixCache(1)
    for i in range(3):
        cache.tree.insert(prompt_runs(request(f"old{i}", 512, (i,))))
    waiting = [request(f"w{i}", 600, (i,)) for i in range(3)]
    stamps = []
    for _ in range(33):
        cache.touch_waiting(waiting)
        stamps.append(sorted(n.last_access for n in cache.tree.root.children.values()))
    assert stamps[1:32] == [stamps[1]] * 31 and stamps[32] != stamps[31]  # the 1st and 33rd sorts touch
    order = sorted(cache.tree.root.children.values(), key=lambda n: n.last_access)
    assert [n.runs[0][0] for n in order] == [("block", 2), ("block", 1), ("block", 0)]  # the head newest
