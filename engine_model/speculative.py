"""Speculative decoding's effect on who waits: what SGLang changes at start-up, the KV a decode step
reserves, the tokens a verify pass commits and what the draft and verify passes cost.

Source: SGLang 0.5.23 (`sglang/srt/...`; the same rules in 0.5.20's wheel):
- `arg_groups/speculative_hook.py` `_resolve_speculative_algorithm_alias` (lines 109-116): NEXTN is EAGLE.
- `_handle_eagle_family` (1072-1173, EAGLE, EAGLE3, STANDALONE): STANDALONE refuses DP attention (1078-1084);
  an unset --max-running-requests becomes 48 (1086-1094); mixed chunk is switched off when
  `SpeculativeAlgorithm.supports_mixed_chunk()` is false (1104-1116: "Mixed steps degrade running requests to
  a plain 1-token decode"); unset steps / topk / draft tokens come from `_auto_choose_speculative_params`
  (1159-1173, 1430-1461: (5, 4, 8) for Llama, (3, 1, 4) for STANDALONE, DeepSeek and the rest).
- `_handle_ngram` (1285-1372): max running requests 48 (1294-1300), mixed chunk always off (1304-1307),
  topk = --speculative-ngram-max-bfs-breadth (10, `fields/spec.py` 256-259), 12 draft tokens, steps =
  draft tokens // topk; refuses DP attention (1366-1371).
- `speculative/spec_info.py` `supports_mixed_chunk` (147-158): only EAGLE, EAGLE3, DFLASH and DSPARK keep it.
- `mem_cache/allocation_sizing.py` `get_alloc_len_per_decode` (28-61): a request may allocate
  max(steps x topk, draft tokens) KV slots in one decode step (page 1 or topk 1), and
  `get_alloc_reserve_per_decode` (64-70) keeps twice that beyond its committed tokens.
- `managers/schedule_batch.py` `_new_tokens_required_next_decode_spec_v2` (3421-3430) and `check_decode_mem`
  (3432): a decode step needs the slots that bring each request to committed + reserve, page-rounded; the
  same check drives `retract_decode`; `speculative/eagle_utils.py` `eagle_prepare_for_decode` (857-) allocates
  them. `mix_with_running` (3267-): a mixed pass's running rows decode one plain token at the committed
  base.

The reference tool cannot run draft passes, so none of this is matched against a recorded trace. What is
simplified (docs/design.md, "Simplifications"): the number of tokens a verify commits is the user's accept
length (an assumption), drawn per request and pass from the run's seed; a draft step costs a share of the
target's decode pass (an assumption per algorithm, `cost.speculative_draft_share`); the verify pass is priced
as one target pass over every row's draft tokens.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass

from engine_model.config import Scenario
from engine_model.errors import InputError
from engine_model.rules import mirrors

ALGORITHMS = ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM")
KEEPS_MIXED_CHUNK = frozenset(("EAGLE", "EAGLE3"))  # supports_mixed_chunk (DFLASH, DSPARK: not modelled)
SPEC_MAX_RUNNING = 48  # _handle_eagle_family, _handle_ngram: an unset --max-running-requests
NGRAM_DRAFT_TOKENS = 12  # _handle_ngram: an unset --speculative-num-draft-tokens
NGRAM_BFS_BREADTH = 10  # --speculative-ngram-max-bfs-breadth's default, which becomes the topk
# Assumptions (no public figure priced here): a draft step's cost as a share of the target's decode pass over
# the same rows. EAGLE / NEXTN drafts are one decoder layer plus the LM head; STANDALONE a small model;
# NGRAM's drafts come from a CPU trie, no GPU pass.
DRAFT_SHARE = {"EAGLE": 0.15, "EAGLE3": 0.15, "STANDALONE": 0.3, "NGRAM": 0.0}


@dataclass(frozen=True)
class Speculative:
    """Speculative decoding as SGLang runs it after start-up."""

    algorithm: str  # after the alias: NEXTN -> EAGLE
    asked: str  # as the user wrote it
    num_steps: int
    topk: int
    num_draft_tokens: int
    accept_length: float  # mean tokens one verify commits per request (an assumption), within its bounds
    max_accept: int  # the most one verify can commit
    draft_share: float
    alloc_len: int  # get_alloc_len_per_decode
    source: str  # where steps / topk / draft tokens came from
    seed: int = 0  # the scenario's: which verifies commit one token more

    @property
    def reserve(self) -> int:
        """get_alloc_reserve_per_decode: KV slots kept beyond a request's committed tokens."""
        return 2 * self.alloc_len

    @property
    def keeps_mixed_chunk(self) -> bool:
        return self.algorithm in KEEPS_MIXED_CHUNK

    @property
    def words(self) -> str:
        """'EAGLE: 5 steps, topk 4, 8 draft tokens, accept length 2.5 (assumption)'."""
        alias = f" ({self.asked} is EAGLE)" if self.asked != self.algorithm else ""
        return (f"{self.algorithm}{alias}: {self.num_steps} steps, topk {self.topk}, {self.num_draft_tokens} "
                f"draft tokens; accept length {self.accept_length:g} tokens per verify (assumption)")


def auto_params(algorithm: str, architecture: str) -> tuple[int, int, int]:
    """`_auto_choose_speculative_params`: (steps, topk, draft tokens) when none is set."""
    if algorithm == "STANDALONE":
        return 3, 1, 4
    if architecture in ("LlamaForCausalLM", "Grok1ForCausalLM"):
        return 5, 4, 8
    return 3, 1, 4


def architecture_of(model_name: str) -> str:
    return "LlamaForCausalLM" if "llama" in model_name.lower() else "other"


@mirrors("handle_speculative_decoding", "_handle_eagle_family", "_handle_ngram", "get_alloc_len_per_decode")
def speculative_of(scenario: Scenario, page_size: int, attn_dp: int,
                   backends: tuple[str, ...] = ()) -> Speculative | None:
    """The speculative settings SGLang resolves at start-up, or None when speculative decoding is off.
    `backends`: the attention backend and its prefill and decode kernels. Raises InputError with SGLang's
    refusal where it refuses the combination."""
    engine = scenario.engine
    asked = engine.speculative_algorithm
    if asked is None:
        return None
    algorithm = "EAGLE" if asked == "NEXTN" else asked  # _resolve_speculative_algorithm_alias
    if attn_dp > 1 and algorithm in ("STANDALONE", "NGRAM"):
        kind = "standalone" if algorithm == "STANDALONE" else "ngram"
        raise InputError("engine.speculative_algorithm",
                         f"Currently {kind} speculative decoding does not support dp attention (SGLang "
                         "refuses it at start-up); turn DP attention off or pick EAGLE")
    steps, topk, tokens = engine.speculative_num_steps, engine.speculative_eagle_topk, \
        engine.speculative_num_draft_tokens
    if algorithm == "NGRAM":
        topk = NGRAM_BFS_BREADTH  # _handle_ngram overwrites it with the BFS breadth
        tokens = tokens or NGRAM_DRAFT_TOKENS
        steps = steps or max(1, tokens // topk)
        source = "NGRAM: topk = the BFS breadth 10, 12 draft tokens unless set (_handle_ngram)"
    elif steps is None:
        if topk is not None or tokens is not None:
            raise InputError("engine.speculative_num_steps", "set speculative_num_steps, eagle_topk and "
                             "num_draft_tokens together, or none (SGLang asserts the other two are unset "
                             "when steps is)")
        steps, topk, tokens = auto_params(algorithm, architecture_of(scenario.model.name))
        source = "auto (_auto_choose_speculative_params)"
    else:
        topk, tokens = topk or 1, tokens or steps + 1
        source = "set"
    if algorithm != "NGRAM" and topk == 1 and tokens != steps + 1:
        tokens = steps + 1  # _handle_eagle_family (1255-1266): with topk 1, draft tokens = steps + 1
    refuse_tree_on_pages(algorithm, topk, page_size, backends)
    max_accept = tokens if algorithm == "NGRAM" else steps + 1
    accept = min(max(engine.speculative_accept_length, 1.0), max_accept)
    share = scenario.cost.speculative_draft_share
    return Speculative(
        algorithm=algorithm, asked=asked, num_steps=steps, topk=topk, num_draft_tokens=tokens,
        accept_length=accept, max_accept=max_accept,
        draft_share=DRAFT_SHARE[algorithm] if share is None else share,
        alloc_len=alloc_len_per_decode(steps, topk, tokens, page_size), source=source,
        seed=scenario.seed)


PAGE_TREE_BACKENDS = ("flashinfer", "fa3", "triton")  # _handle_eagle_family: _PAGE_TREE_SPEC_BACKENDS


def refuse_tree_on_pages(algorithm: str, topk: int, page_size: int, backends: tuple[str, ...]) -> None:
    """SGLang's start-up refusals of a draft tree (topk > 1) the attention backend cannot run:
    `_handle_eagle_family` (1176-1180: trtllm_mha takes topk 1 only; 1268-1283: topk > 1 with pages of more
    than one token only on flashinfer, fa3, triton) and `_handle_ngram` (1355-1365: only on flashinfer)."""
    if topk <= 1 or not backends:
        return
    where = "engine.speculative_eagle_topk"
    if algorithm == "NGRAM":
        if page_size > 1 and backends[0] != "flashinfer":
            raise InputError("engine.speculative_algorithm", f"NGRAM drafts a tree of {topk} branches "
                             f"(speculative_eagle_topk({topk}) > 1) with page_size({page_size}) > 1, which "
                             "SGLang refuses outside the 'flashinfer' backend; pick EAGLE or page_size 1")
        return
    if "trtllm_mha" in backends:
        raise InputError(where, "trtllm_mha backend only supports topk = 1 for speculative decoding (SGLang "
                         "refuses it at start-up); set speculative_num_steps with speculative_eagle_topk 1")
    if page_size > 1 and backends[0] not in PAGE_TREE_BACKENDS:
        raise InputError(where, f"speculative_eagle_topk > 1 with page_size > 1 is only supported on "
                         f"{', '.join(PAGE_TREE_BACKENDS)}; got attention_backend {backends[0]!r} (SGLang "
                         "refuses it at start-up). Use topk 1 or one of those backends")


def alloc_len_per_decode(steps: int, topk: int, tokens: int, page_size: int) -> int:
    """`get_alloc_len_per_decode`: KV one request may allocate in one decode step."""
    if page_size == 1 or topk == 1:
        return max(steps * topk, tokens)
    pages_per_branch = (page_size - 1 + steps + page_size - 1) // page_size
    return max(pages_per_branch * page_size * topk, tokens)


def startup_note(scenario: Scenario, spec: Speculative | None) -> str:
    """What SGLang changed at start-up because of speculative decoding, in words ("" when nothing)."""
    if spec is None:
        return ""
    notes = []
    if scenario.engine.enable_mixed_chunk and not spec.keeps_mixed_chunk:
        where = "_handle_ngram" if spec.algorithm == "NGRAM" else "_handle_eagle_family"
        notes.append(f"you set mixed chunk on; SGLang turned it off because speculative_algorithm="
                     f"{spec.asked} does not support it ({where})")
    elif scenario.engine.enable_mixed_chunk:
        notes.append(f"mixed chunk stays on with {spec.algorithm}, but a mixed pass gives each running "
                     "request one plain token, not a verify's")
    if scenario.engine.max_running_requests is None:
        notes.append(f"max_running_requests reset to {SPEC_MAX_RUNNING} for speculative decoding")
    return "; ".join(notes)


# -- the scheduler's side ------------------------------------------------------------------------------
def ceil_page(tokens: int, page: int) -> int:
    return -(-tokens // page) * page


@mirrors("_new_tokens_required_next_decode_spec_v2")
def slots_needed(spec: Speculative, rows, extra: dict, page: int) -> int:
    """`new_tokens_required_next_decode` with speculative decoding: the slots that bring each row's
    allocation to its committed tokens + the reserve, page-rounded (`check_decode_mem`)."""
    total = 0
    for req in rows:
        cur = ceil_page(req.kv_len, page) + extra.get(req.rid, 0)
        total += max(cur, ceil_page(req.kv_len + spec.reserve, page)) - cur
    return total


@mirrors("eagle_prepare_for_decode")
def allocate(spec: Speculative, rows, extra: dict, page: int) -> int:
    """`eagle_prepare_for_decode`: allocate each row up to committed + reserve. Returns the slots taken."""
    taken = 0
    for req in rows:
        base = ceil_page(req.kv_len, page)
        cur = base + extra.get(req.rid, 0)
        nxt = max(cur, ceil_page(req.kv_len + spec.reserve, page))
        taken += nxt - cur
        extra[req.rid] = nxt - base
    return taken


def accepted(spec: Speculative, req) -> int:
    """Tokens one verify commits for one request: the accept length's whole part, plus one with the
    probability of its fraction (mean: the accept length), within 1..max_accept. The draw is a hash of the
    seed, the request and its length so far: the same request verifies alike on any topology (one engine,
    replicas, DP ranks) and the run's own random draws are left as they were."""
    whole = math.floor(spec.accept_length)
    draw = zlib.crc32(f"{spec.seed}:{req.rid}:{req.num_generated}".encode()) / 2**32
    return min(spec.max_accept, whole + (draw < spec.accept_length - whole))


def commit(req, num: int, extra: dict, page: int) -> None:
    """The verify's `num` tokens enter KV from the over-allocation (no new slots)."""
    before = ceil_page(req.kv_len, page) + extra.get(req.rid, 0)
    req.kv_len += num
    extra[req.rid] = max(0, before - ceil_page(req.kv_len, page))
