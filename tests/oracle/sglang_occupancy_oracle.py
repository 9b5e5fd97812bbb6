#!/usr/bin/env python3
"""Independent oracle: how SGLang's scheduler fills its DeepSeek V4 KV pools.

This replays SGLang's scheduler step by step for N identical requests that all
arrive at t=0 (prompt P tokens, max_new_tokens G = L - P, all prompts distinct).
It was derived only from SGLang's Python source at commit
C = cce0a1244b5a3ee60411fb403f65f856a1d012f0 (read with
``git show C:python/sglang/srt/<path>``; paths below are relative to
``python/sglang/srt/``). No C++ from this repository was read to write it.

Modelled setting (SGLang's defaults for DeepSeek V4 on CUDA)
-------------------------------------------------------------
page_size 256, sliding window 128, UnifiedRadixCache with SWA (radix cache
on), overlap scheduler on, prefill first, chunked_prefill_size C,
max_prefill_tokens 16384, no prefix hits, no speculative decoding,
new_token_ratio 0.7 held constant (``--decay`` turns on SGLang's real decay),
allocator ``SWATokenToKVPoolAllocator``: a full index space of F tokens and an
SWA pool of S tokens, each paged at 256.

What "peak pages" means here: pages taken off an allocator's free list.
Radix-tree pages that are *evictable* (unlocked) are still counted as in use,
because they stay allocated until an allocation asks for them. The pinned
peak, which leaves out evictable tree pages, is also computed
(``--detail``).

Rules modelled, each with file:line at C
----------------------------------------
Allocator
  R1  Two paged allocators, one per pool, page 256:
      mem_cache/allocator/swa.py:58-78. Pages ids 1..size//256, so every
      F/256 and S/256 page can be used: mem_cache/allocator/paged.py:125,
      331-335. available_size = free pages * 256:
      mem_cache/allocator/base.py:57-58.
  R2  Extend: num_new_pages = sum(ceil(seq/256) - ceil(prefix/256)),
      utils/common.py:4486-4491. The SAME count must be free in BOTH pools
      (new_pages_available(n, n)), swa.py:186-190. If not, the result is
      "Prefill out of memory", mem_cache/allocation.py:216-225.
  R3  Decode: a new page when seq_len_next % 256 == 1, i.e. kv_len % 256 == 0
      (utils/common.py:4481-4484, allocation.py:533-541). Both pools are
      allocated in lockstep (swa.py:286-303). A failure is "Decode out of
      memory" (allocation.py:498-507).
  R4  Before each allocation the tree gives up the *shortfall* only:
      evict_from_tree_cache(num) evicts max(0, num - avail) per pool when
      either pool is short (mem_cache/common.py:114-133). For extend
      num = extend_num_tokens + bs*256 (allocation.py:185-188). For decode
      num = bs*256 (allocation.py:473-476).
  R5  free_swa frees whole SWA pages (swa.py:353-369, 382-387).
Lazy SWA eviction in decode (managers/schedule_batch.py:3346-3407)
  R6  Called first thing in alloc_for_extend and alloc_for_decode
      (allocation.py:292, 520), so it runs after check_decode_mem
      (scheduler.py:3576) and before the decode allocation. With the radix
      cache it does nothing in extend: the extend branch applies only to the
      chunk cache (schedule_batch.py:3392).
  R7  Decode: fires when decode_batch_idx >= 1 and
      seqlen - 1 - 128 >= swa_evicted_seqlen + SGLANG_SWA_EVICTION_INTERVAL
      (128, environ.py:600); then _evict_swa(req, seqlen - 1)
      (schedule_batch.py:3367-3373).
  R8  req.seqlen = len(origin_input_ids) + len(output_ids)
      (schedule_batch.py:1213-1216). output_ids grow only when a batch's
      result is processed (batch_result_processor.py:320, 922). Under overlap
      the result of batch t is processed after batch t+1 is scheduled
      (scheduler.py:1805-1841). So at decode step j seqlen is P + j - 1
      (P + 1 for step 1 when the prefill result was already processed). That
      is one less than without overlap, and it is replayed exactly here.
  R9  decode_batch_idx += 1 right after the decode allocation
      (schedule_batch.py:3091-3096). The first decode step therefore sees 0
      and never evicts. kv_committed_len also grows here (3096).
  R10 free_swa_out_of_window_slots (mem_cache/common.py:52-104), radix arm:
      the floor is raised to cache_protected_len (no free, :70-73);
      threshold = pre_len - max(window, page) = pre_len - 256 (:84);
      new = floor256(max(old, threshold)) (:91-97); SWA slots
      [old, new) are freed (:99-104). retain_floor is None: it applies only
      with mamba (unified_radix_cache.py:2693-2699).
Radix cache (mem_cache/unified_radix_cache.py, unified_cache/components/)
  R11 cache_unfinished_req (unified_radix_cache.py:836-959): token_ids =
      fill_ids[:extend_range.end] (schedule_batch.py:1277-1278), so
      pre_len = extend_end - 1. SWA slots out of the window are freed first
      (:877-884, env on by default, environ.py:598). Then [0, floor256(end))
      is inserted (:896-902). The request re-matches and re-locks
      (:906-950): cache_protected_len = floor256(end) (:944), and
      prefix_indices keeps the full length (:938-943).
  R12 Insert with SWA (swa_component.py:361-425): a new leaf is split at
      swa_evicted_seqlen. The part before it is a tombstone (full only). The
      in-window part is capped to a 256-token leaf: the older part becomes a
      live-SWA parent (:400-425). Rebuilt SWA values are counted as evictable
      (unified_tree_core.py:2051-2063).
  R13 Locks: FULL locks the whole path to the root
      (full_component.py:259-300). SWA locks from the leaf up until 128 live
      tokens are covered (swa_component.py:587-641): only the 256-token leaf
      is locked. The capped parent and the previous chunk's leaf (unlocked by
      _dec_req_lock, unified_radix_cache.py:921) are SWA-evictable but stay
      allocated.
  R14 cache_finished_req (unified_radix_cache.py:743-826), on finish
      (batch_result_processor.py:328, 1164; mem_cache/common.py:198-232):
      [0, floor256(kv_committed_len)) is inserted with the same SWA split.
      The unaligned tail page is freed in both pools (:806-810). All locks
      are released, so the whole path becomes evictable.
  R15 Eviction (unified_radix_cache.py:537-664): FULL evicts LRU leaves from
      a heap (full_component.py:188-221). SWA walks its LRU list: an
      unlocked device leaf is evicted whole, other nodes are tombstoned
      (swa_component.py:532-579). LRU refresh on insert or match moves the
      leaf and its window ancestors (window + page = 384 tokens) to MRU
      (swa_component.py:178-201, unified_tree_core.py:282-306). The LRU
      order is approximated by a global clock.
Scheduler (managers/scheduler.py)
  R16 Overlap loop (scheduler.py:1783-1852): schedule batch t, launch it,
      then process the result of batch t-1. Consecutive prefills overlap too
      (SGLANG_DISABLE_CONSECUTIVE_PREFILL_OVERLAP False, environ.py:569,
      scheduler.py:1873-1877).
  R17 get_next_batch_to_run (scheduler.py:3080-3218). (a) A chunked request
      whose last chunk produced new KV is stashed: cache_unfinished_req(
      chunked=True), 3106-3117, 2990-2991. This runs at the start of the next
      schedule, before that chunk's result is processed. (b) The last extend
      batch (chunked request excluded) is merged into running_batch
      (3132-3157). (c) Prefill first: a new prefill batch wins; otherwise
      decode (3191-3200). prefill_decode_interval is 0
      (server_args.py:831-835).
  R18 A prefill result frees SWA one iteration late: output append, then
      cache_unfinished_req (batch_result_processor.py:316-331). So the next
      prefill is admitted while the previous one still holds all of its SWA
      pages. A middle chunk's result only decrements inflight_middle_chunks
      (:358-360).
  R19 update_running_batch (scheduler.py:3566-3649): filter finished requests,
      then check_decode_mem (schedule_batch.py:2818-2823). That needs one page
      per request whose kv_committed_len % 256 == 0 (2801-2803), against
      min(full, swa) available (swa.py:104-108), after evicting only the
      shortfall. On failure: retract_decode (2825-2886); a single request is
      aborted (2861-2877). Otherwise new_token_ratio decays (3639).
  R20 Under overlap a finishing request is decoded once more: step G is
      scheduled before the result of step G-1 is processed. So its KV
      reaches L = P + G tokens (not L - 1) before release_kv_cache.
Admission (managers/schedule_policy.py, PrefillAdder)
  R21 CLIP_MAX_NEW_TOKENS 4096 (:73-75). Running requests reserve
      min(max_new - len(output_ids), 4096) * new_token_ratio (:661-668,
      562-569). Requests in the running batch whose prefill result is not
      processed yet still have len(output_ids) = 0.
  R22 rem_total = full_available + full_evictable - offset (:670-692).
      cur_rem is the same with cur_rem_token_offset (:702-725).
      rem_swa = swa_available + swa_evictable - rem_swa_offset (:694-700).
      Running requests reserve no SWA; only this pass's admissions do.
  R23 add_one_req (:1208-1435). total = extend + min(max_new, 4096) + 256 is
      refused (NO_TOKEN) if total >= rem_total (:1226-1244). The SWA need is
      _swa_budget_for_req(ceil256(extend), max_new)
      = max(min(ext, rem_chunk) - 128, 0) + min(ext + max_new, 128) + 256
      (:727-770, 1239-1255); note that extend is rounded up to a page here.
      It is refused if need >= rem_swa (:1256), unless need >= size_swa
      (never fits, :802-821). Then the chunk is capped to
      floor256(rem_swa - (min(max_new, 128) + 256)) (:782-800, 1263-1268),
      and NO_TOKEN if that is <= 0.
  R24 Whole prompt if ceil256(extend) <= chunk limit (:1361). Otherwise the
      first chunk is floor256(limit) (:1386-1433).
  R25 _update_prefill_budget (:864-920): ext = ceil256(extend);
      rem_total_offset += ext + max_new + 256; cur_rem_offset += ext + 256;
      rem_swa_offset += _swa_budget_for_req(ext, max_new) using rem_chunk
      before it is decremented; rem_chunk -= ext; rem_input -= ext.
  R26 budget_state (:841-862): NO_TOKEN if rem_total, cur_rem or rem_swa
      <= 0; OTHER if rem_input (max_prefill_tokens) or rem_chunk <= 0.
  R27 add_chunked_req (:1004-1053): the next chunk is
      min(rem_chunk, int(rem_total), int(rem_swa) - 256). If that is <= 0 the
      request is parked (not run this pass). max_new is reserved only for
      the last chunk.
  R28 The waiting-queue loop stops at the first non-CONTINUE result
      (scheduler.py:3365-3448). The slot limit is
      min(max_running - running_bs, free req slots) (scheduler.py:3220-3223,
      3369-3383).
  R29 new_token_ratio starts at 0.7 * schedule_conservativeness and decays
      to x0.14 over 600 decode steps (new_token_ratio_tracker.py:20-38,
      environ.py:522-524). It resets when idle (scheduler.py:4195).

"Held back" (fits = False): a new request refused by the full-token gate or
the SWA gate (R23); a request not tried because the budget ran out (R26
NO_TOKEN while requests still wait); a first chunk cut below what the chunk
budget allows by the SWA never-fits cap (R23); a continuing chunk capped by
rem_total or rem_swa, or parked (R27). Also not a fit: an allocation
failure, a decode retraction or abort, or a request that is never admitted.

Python 3.11, standard library only.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

PAGE = 256
WINDOW = 128
CLIP_MAX_NEW_TOKENS = 4096
SWA_EVICTION_INTERVAL = 128
INIT_NEW_TOKEN_RATIO = 0.7
MIN_NEW_TOKEN_RATIO_FACTOR = 0.14
NEW_TOKEN_RATIO_DECAY_STEPS = 600
MAX_PREFILL_TOKENS = 16384


def ceil_page(x: int) -> int:
    return -(-x // PAGE) * PAGE


def floor_page(x: int) -> int:
    return (x // PAGE) * PAGE


def pages_of(x: int) -> int:
    return -(-x // PAGE)


class Stop(Exception):
    """Raised when SGLang would fail (OOM, retraction/abort, deadlock)."""


@dataclass(eq=False)
class Node:
    req: "Req"
    start: int
    end: int
    full: bool = True
    swa: bool = False
    flock: int = 0
    slock: int = 0
    ts_full: int = 0
    ts_swa: int = 0

    @property
    def length(self) -> int:
        return self.end - self.start


@dataclass(eq=False)
class Req:
    rid: int
    P: int
    G: int
    out: int = 0                 # len(output_ids) as processed so far
    prefix: int = 0              # len(prefix_indices)
    ext_start: int = 0
    ext_end: int = 0
    kv_len: int = 0              # kv_committed_len == kv_allocated_len (non-spec)
    E: int = 0                   # req.kv.swa_evicted_seqlen
    protected: int = 0           # cache_protected_len
    has_kv: bool = False
    chain: List[Node] = field(default_factory=list)   # this request's tree path
    dbi: int = 0                 # decode_batch_idx
    finished: bool = False
    released: bool = False

    @property
    def seqlen(self) -> int:
        return self.P + self.out

    def private_full_pages(self) -> int:
        if not self.has_kv:
            return 0
        return max(0, pages_of(self.kv_len) - self.protected // PAGE)

    def private_swa_pages(self) -> int:
        if not self.has_kv:
            return 0
        lo = max(self.E, self.protected)
        return max(0, pages_of(self.kv_len) - lo // PAGE)


@dataclass
class Batch:
    kind: str                      # "extend" or "decode"
    reqs: List[Req]
    middle: Dict[int, bool] = field(default_factory=dict)  # rid -> middle chunk


class Sim:
    def __init__(self, full_pages: int, swa_pages: int, max_running: int,
                 chunk: int, n: int, context: int, prompt: int,
                 decay: bool = False, max_prefill_tokens: int = MAX_PREFILL_TOKENS,
                 trace: bool = False):
        if prompt < 1 or context <= prompt:
            raise ValueError("need 1 <= prompt < context")
        self.FP = full_pages
        self.SP = swa_pages
        self.R = max_running
        self.C = chunk
        self.max_prefill_tokens = max_prefill_tokens
        self.decay = decay
        self.trace = trace
        self.reqs = [Req(rid=i, P=prompt, G=context - prompt) for i in range(n)]
        self.waiting: List[Req] = list(self.reqs)
        self.running: List[Req] = []
        self.chunked: Optional[Req] = None
        self.last_batch: Optional[Batch] = None
        self.pending: Optional[Batch] = None   # launched, result not processed
        self.clock = 0
        self.nodes: List[Node] = []
        init = min(INIT_NEW_TOKEN_RATIO * 1.0, 1.0)
        self.ratio_init = init
        self.ratio_min = min(init * MIN_NEW_TOKEN_RATIO_FACTOR, 1.0)
        self.ratio_decay = (init - self.ratio_min) / NEW_TOKEN_RATIO_DECAY_STEPS
        self.ratio = init
        self.held: List[Tuple[str, str]] = []
        self.held_count: Dict[str, int] = {}
        self.failure: Optional[str] = None
        self.peak_full = 0
        self.peak_swa = 0
        self.peak_full_pinned = 0
        self.peak_swa_pinned = 0
        self.iterations = 0
        self.evictions = 0

    # ---------------- accounting ----------------
    def tree_full_pages(self) -> int:
        return sum(nd.length for nd in self.nodes if nd.full) // PAGE

    def tree_swa_pages(self) -> int:
        return sum(nd.length for nd in self.nodes if nd.swa) // PAGE

    def full_used(self) -> int:
        return self.tree_full_pages() + sum(r.private_full_pages() for r in self.reqs)

    def swa_used(self) -> int:
        return self.tree_swa_pages() + sum(r.private_swa_pages() for r in self.reqs)

    def full_free(self) -> int:
        return self.FP - self.full_used()

    def swa_free(self) -> int:
        return self.SP - self.swa_used()

    def full_evictable(self) -> int:
        return sum(nd.length for nd in self.nodes if nd.full and nd.flock == 0)

    def swa_evictable(self) -> int:
        return sum(nd.length for nd in self.nodes if nd.swa and nd.slock == 0)

    def record_peak(self) -> None:
        fu, su = self.full_used(), self.swa_used()
        assert 0 <= fu <= self.FP and 0 <= su <= self.SP, (fu, su)
        self.peak_full = max(self.peak_full, fu)
        self.peak_swa = max(self.peak_swa, su)
        fe = self.full_evictable() // PAGE
        se = self.swa_evictable() // PAGE
        self.peak_full_pinned = max(self.peak_full_pinned, fu - fe)
        self.peak_swa_pinned = max(self.peak_swa_pinned, su - se)

    def log(self, msg: str) -> None:
        if self.trace:
            print(f"[it {self.iterations}] {msg} | full {self.full_used()}/{self.FP}"
                  f" swa {self.swa_used()}/{self.SP}", file=sys.stderr)

    def hold(self, msg: str, key: Optional[str] = None) -> None:
        """Record a hold-back; only the first message per key is kept, with a count."""
        key = key or msg
        if key not in self.held_count:
            self.held_count[key] = 0
            self.held.append((key, msg))
        self.held_count[key] += 1
        self.log("HELD: " + msg)

    # ---------------- radix tree ----------------
    def tick(self) -> int:
        self.clock += 1
        return self.clock

    def touch(self, req: Req) -> None:
        """LRU refresh after insert/match (R15): full stamps the whole path
        root->leaf; SWA refreshes the leaf and its ancestors within
        window + page tokens (deeper = more recent)."""
        for nd in req.chain:
            nd.ts_full = self.tick()
        acc = 0
        window_nodes = []
        for nd in reversed(req.chain):
            if acc >= WINDOW + PAGE:
                break
            if nd.swa:
                window_nodes.append(nd)
            acc += nd.length
        for nd in reversed(window_nodes):
            nd.ts_swa = self.tick()

    def unlock(self, req: Req) -> None:
        for nd in req.chain:
            nd.flock = 0
            nd.slock = 0

    def lock(self, req: Req) -> None:
        """R13: full lock on the whole path, SWA lock from the leaf up until
        >= window live SWA tokens are covered (tombstones skipped)."""
        for nd in req.chain:
            if nd.full:
                nd.flock = 1
        acc = 0
        for nd in reversed(req.chain):
            if acc >= WINDOW:
                break
            if not nd.swa:
                continue
            nd.slock = 1
            acc += nd.length

    def insert(self, req: Req, upto: int) -> None:
        """Insert [protected, upto) (upto page aligned) with the SWA split at
        req.E and the 256-token cap on the in-window leaf (R12)."""
        lo = req.protected
        if upto <= lo:
            return
        E = req.E
        assert E % PAGE == 0
        new_nodes: List[Node] = []
        if E > lo:
            tomb_end = min(E, upto)
            new_nodes.append(Node(req, lo, tomb_end, full=True, swa=False))
            lo = tomb_end
        if lo < upto:
            # in-window part [lo, upto): cap the leaf at one page-aligned window
            tail = ceil_page(WINDOW)  # 256
            if upto - lo > tail:
                new_nodes.append(Node(req, lo, upto - tail, full=True, swa=True))
                new_nodes.append(Node(req, upto - tail, upto, full=True, swa=True))
            else:
                new_nodes.append(Node(req, lo, upto, full=True, swa=True))
        for nd in new_nodes:
            if nd.swa:
                nd.ts_swa = self.tick()   # SWARebuild: older prefix first
            req.chain.append(nd)
            self.nodes.append(nd)

    def is_leaf(self, nd: Node) -> bool:
        chain = nd.req.chain
        i = chain.index(nd)
        return i == len(chain) - 1

    def remove_node(self, nd: Node) -> None:
        nd.req.chain.remove(nd)
        self.nodes.remove(nd)

    def evict_from_tree_cache(self, num_tokens: int) -> None:
        """R4 + R15."""
        fa, sa = self.full_free() * PAGE, self.swa_free() * PAGE
        if fa >= num_tokens and sa >= num_tokens:
            return
        full_need = max(0, num_tokens - fa)
        swa_need = max(0, num_tokens - sa)
        got_full = 0
        got_swa = 0
        # FULL: LRU evictable leaves (unlocked), parents pushed as they become leaves
        while got_full < full_need:
            cands = [nd for nd in self.nodes
                     if nd.full and nd.flock == 0 and self.is_leaf(nd)]
            if not cands:
                break
            x = min(cands, key=lambda nd: nd.ts_full)
            got_full += x.length
            if x.swa:
                got_swa += x.length
            self.remove_node(x)
            self.evictions += 1
        # SWA: walk SWA LRU (unlocked); a device leaf goes whole, others tombstone
        while got_swa < swa_need:
            cands = [nd for nd in self.nodes if nd.swa and nd.slock == 0]
            if not cands:
                break
            x = min(cands, key=lambda nd: nd.ts_swa)
            got_swa += x.length
            if x.flock == 0 and self.is_leaf(x):
                got_full += x.length
                self.remove_node(x)
            else:
                x.swa = False
            self.evictions += 1
        if got_full or got_swa:
            self.log(f"evicted full {got_full} swa {got_swa} (asked {full_need}/{swa_need})")

    # ---------------- SWA window eviction ----------------
    def free_swa_out_of_window(self, req: Req, pre_len: int) -> None:
        """R10 (radix arm)."""
        if not req.has_kv:
            return
        assert req.protected % PAGE == 0
        req.E = max(req.E, req.protected)
        threshold = pre_len - max(WINDOW, PAGE)
        new = max(req.E, threshold)
        new = floor_page(new)
        if new > req.E:
            req.E = new  # private SWA pages [old, new) are now free

    # ---------------- cache hooks ----------------
    def cache_unfinished_req(self, req: Req) -> None:
        """R11: used for a chunk stash and after a non-final prefill result."""
        T = req.ext_end
        self.free_swa_out_of_window(req, T - 1)
        A = floor_page(T)
        self.insert(req, A)
        self.unlock(req)
        self.lock(req)
        self.touch(req)
        req.protected = max(req.protected, A)
        req.prefix = T

    def cache_finished_req(self, req: Req) -> None:
        """R14: insert [0, floor256(kv)), free the tail page, release locks."""
        A = floor_page(req.kv_len)
        self.insert(req, A)
        self.unlock(req)
        self.touch(req)
        req.protected = max(req.protected, A)
        req.has_kv = False   # remaining private pages (the tail) are freed
        req.released = True

    # ---------------- admission (PrefillAdder) ----------------
    def get_new_batch_prefill(self) -> Optional[Batch]:
        if not self.waiting and self.chunked is None:
            return None
        running_bs = len(self.running)
        live_slots = sum(1 for r in self.reqs if r.has_kv)
        free_slots = self.R - live_slots
        allocatable = min(self.R - running_bs, free_slots)
        if allocatable <= 0 and self.chunked is None:
            return None
        a = Adder(self)
        can_run: List[Req] = []
        middle: Dict[int, bool] = {}
        new_chunked: Optional[Req] = None
        if self.chunked is not None:
            req = self.chunked
            res = a.add_chunked_req(req)
            if res == "parked":
                self.hold(f"continuing chunk of req {req.rid} parked (rem_total/rem_swa exhausted)",
                          key=f"park{req.rid}")
            else:
                can_run.append(req)
                middle[req.rid] = res == "truncated"
                if res != "truncated":
                    self.chunked = None
        for req in list(self.waiting):
            if len(can_run) >= allocatable:
                break   # batch_is_full (slot limit); not an admission gate
            res, kind = a.add_one_req(req)
            if kind == "added_whole":
                can_run.append(req)
                middle[req.rid] = False
            elif kind == "added_chunk":
                can_run.append(req)
                middle[req.rid] = True
                new_chunked = req
            if res != "CONTINUE":
                if res == "NO_TOKEN":
                    if kind == "refused":
                        self.hold(f"req {req.rid} refused (first time): {a.last_refusal}",
                                  key=f"refuse{req.rid}")
                    else:
                        rest = [r for r in self.waiting if r is not req and r not in can_run]
                        if rest:
                            self.hold(f"req {rest[0].rid} not tried: budget exhausted "
                                      f"({a.exhausted_what()})", key=f"exhaust{rest[0].rid}")
                break
        if not can_run:
            return None
        self.waiting = [r for r in self.waiting if r not in can_run]
        if new_chunked is not None:
            assert self.chunked is None
            self.chunked = new_chunked
        batch = Batch("extend", can_run, middle)
        self.prepare_for_extend(batch)
        return batch

    def prepare_for_extend(self, batch: Batch) -> None:
        # R6: maybe_evict_swa is a no-op for extend with the radix cache.
        ext_tokens = sum(r.ext_end - r.prefix for r in batch.reqs)
        self.evict_from_tree_cache(ext_tokens + len(batch.reqs) * PAGE)
        need = sum(pages_of(r.ext_end) - pages_of(r.prefix) for r in batch.reqs)
        if need > self.full_free() or need > self.swa_free():
            self.failure = (f"Prefill out of memory: need {need} pages, free full "
                            f"{self.full_free()} swa {self.swa_free()}")
            raise Stop(self.failure)
        for r in batch.reqs:
            r.has_kv = True
            r.kv_len = r.ext_end
        self.record_peak()
        self.log("extend " + ", ".join(f"r{r.rid}[{r.prefix},{r.ext_end})" for r in batch.reqs))

    # ---------------- decode ----------------
    def update_running_batch(self) -> Optional[Batch]:
        self.running = [r for r in self.running if not r.finished]
        if not self.running:
            return None
        need_pages = sum(1 for r in self.running if r.kv_len % PAGE == 0)
        self.evict_from_tree_cache(need_pages * PAGE)
        if min(self.full_free(), self.swa_free()) * PAGE < need_pages * PAGE:
            kind = "aborted (single request)" if len(self.running) == 1 else "retraction"
            self.failure = (f"decode {kind}: check_decode_mem needs {need_pages} page(s), "
                            f"free full {self.full_free()} swa {self.swa_free()} "
                            f"(req {self.running[0].rid} kv_len {self.running[0].kv_len})")
            raise Stop(self.failure)
        if self.decay:
            self.ratio = max(self.ratio - self.ratio_decay, self.ratio_min)
        # prepare_for_decode -> alloc_for_decode
        for r in self.running:   # maybe_evict_swa (R7)
            if (r.dbi >= 1 and r.has_kv
                    and r.seqlen - 1 - WINDOW >= r.E + SWA_EVICTION_INTERVAL):
                self.free_swa_out_of_window(r, r.seqlen - 1)
        self.evict_from_tree_cache(len(self.running) * PAGE)
        need = sum(1 for r in self.running if r.kv_len % PAGE == 0)
        if need > self.full_free() or need > self.swa_free():
            self.failure = "Decode out of memory"
            raise Stop(self.failure)
        for r in self.running:
            r.kv_len += 1
            r.dbi += 1
        self.record_peak()
        return Batch("decode", list(self.running))

    # ---------------- results ----------------
    def process(self, batch: Batch) -> None:
        if batch.kind == "extend":
            for r in batch.reqs:
                if batch.middle.get(r.rid):
                    continue   # middle chunk: inflight_middle_chunks -= 1 only
                if r.finished:
                    continue
                r.out += 1
                if r.out >= r.G:
                    r.finished = True
                    self.cache_finished_req(r)
                else:
                    self.cache_unfinished_req(r)
        else:
            for r in batch.reqs:
                if r.finished:
                    continue
                r.out += 1
                if r.out >= r.G:
                    r.finished = True
                    self.cache_finished_req(r)

    # ---------------- main loop ----------------
    def run(self, max_iters: int = 10_000_000) -> None:
        idle_rounds = 0
        while True:
            self.iterations += 1
            if self.iterations > max_iters:
                raise Stop("iteration limit")
            # (a) stash the chunked request's previous chunk (R17a)
            c = self.chunked
            if c is not None and c.ext_end > c.prefix:
                self.cache_unfinished_req(c)
                self.log(f"stash r{c.rid} up to {c.ext_end}")
            # (b) merge last extend batch into running (R17b)
            if self.last_batch is not None and self.last_batch.kind == "extend":
                for r in self.last_batch.reqs:
                    if r is self.chunked or self.last_batch.middle.get(r.rid):
                        continue
                    if r.finished:
                        continue
                    if r not in self.running:
                        self.running.append(r)
            # (c) prefill first, else decode
            batch = self.get_new_batch_prefill()
            if batch is None and self.running:
                batch = self.update_running_batch()
            # launch batch; then process the previous one (R16)
            prev = self.last_batch
            if prev is not None:
                self.process(prev)
            elif batch is None:
                self.ratio = self.ratio_init   # on_idle resets the ratio
            self.last_batch = batch
            if all(r.finished for r in self.reqs) and batch is None:
                return
            if batch is None and prev is None:
                idle_rounds += 1
                if idle_rounds >= 2:
                    stuck = self.waiting[0] if self.waiting else self.chunked
                    self.failure = (f"deadlock: req {stuck.rid if stuck else '?'} can never be "
                                    f"admitted with an empty engine")
                    raise Stop(self.failure)
            else:
                idle_rounds = 0

    def result(self) -> dict:
        fits = self.failure is None and not self.held and all(r.finished for r in self.reqs)
        if fits:
            why = "fits: no request held back, no failed allocation, no retraction"
        else:
            parts = []
            if self.held:
                parts.append("held back: " + "; ".join(
                    msg + (f" (x{self.held_count[key]} passes)" if self.held_count[key] > 1 else "")
                    for key, msg in self.held))
            if self.failure:
                parts.append(self.failure)
            why = " | ".join(parts) if parts else "not finished"
        return {"fits": fits, "why": why,
                "peak_full_pages": self.peak_full, "peak_swa_pages": self.peak_swa}


class Adder:
    """PrefillAdder (managers/schedule_policy.py:511-1435), the parts used here."""

    def __init__(self, sim: Sim):
        self.sim = sim
        self.rem_input = sim.max_prefill_tokens
        self.rem_chunk = sim.C
        # R21: running requests reserve min(max_new - out, 4096) * ratio
        self.rem_total_offset = sum(
            min(r.G - r.out, CLIP_MAX_NEW_TOKENS) * sim.ratio for r in sim.running)
        self.cur_rem_offset = 0
        self.rem_swa_offset = 0
        self.last_refusal = ""
        self.base_full = sim.full_free() * PAGE + sim.full_evictable()
        self.base_swa = sim.swa_free() * PAGE + sim.swa_evictable()
        self.size_swa = sim.SP * PAGE

    @property
    def rem_total(self) -> float:
        return self.base_full - self.rem_total_offset

    @property
    def cur_rem(self) -> float:
        return self.base_full - self.cur_rem_offset

    @property
    def rem_swa(self) -> float:
        return self.base_swa - self.rem_swa_offset

    def swa_budget(self, ext: int, max_new: int) -> int:
        alloc = min(ext, self.rem_chunk)
        return max(alloc - WINDOW, 0) + self.swa_reserved(ext, max_new)

    @staticmethod
    def swa_reserved(ext: int, max_new: int) -> int:
        return min(ext + max_new, WINDOW) + PAGE

    def swa_chunk_cap(self, max_new: int) -> int:
        cap = int(self.rem_swa) - self.swa_reserved(0, max_new)
        if cap <= 0:
            return 0
        return cap // PAGE * PAGE

    def update_budget(self, ext: int, max_new: int) -> None:
        ext = ceil_page(ext)
        self.rem_total_offset += ext + max_new + PAGE
        self.cur_rem_offset += ext + PAGE
        self.rem_input -= ext
        self.rem_swa_offset += self.swa_budget(ext, max_new)
        self.rem_chunk -= ext

    def budget_state(self) -> str:
        if self.rem_total <= 0 or self.cur_rem <= 0 or self.rem_swa <= 0:
            return "NO_TOKEN"
        if self.rem_input <= 0:
            return "OTHER"
        if self.rem_chunk <= 0:
            return "OTHER"
        return "CONTINUE"

    def exhausted_what(self) -> str:
        w = []
        if self.rem_total <= 0:
            w.append(f"rem_total {self.rem_total:.1f}")
        if self.cur_rem <= 0:
            w.append(f"cur_rem {self.cur_rem:.1f}")
        if self.rem_swa <= 0:
            w.append(f"rem_swa {self.rem_swa:.1f}")
        return ", ".join(w)

    def add_chunked_req(self, req: Req) -> str:
        sim = self.sim
        rem = min(self.rem_chunk, int(self.rem_total))
        rem = min(rem, int(self.rem_swa) - PAGE)
        cand = req.P - req.prefix
        would = min(cand, self.rem_chunk)
        if rem <= 0:
            return "parked"
        truncated = cand > rem
        new_len = min(cand, rem)
        if new_len < would:
            sim.hold(f"continuing chunk of req {req.rid} capped to {new_len} < {would} "
                     f"(rem_total {int(self.rem_total)}, rem_swa-256 {int(self.rem_swa) - PAGE})",
                     key=f"cap{req.rid}@{req.prefix}")
        req.ext_start, req.ext_end = req.prefix, req.prefix + new_len
        self.update_budget(new_len, 0 if truncated else min(req.G, CLIP_MAX_NEW_TOKENS))
        return "truncated" if truncated else "last"

    def add_one_req(self, req: Req) -> Tuple[str, str]:
        sim = self.sim
        max_new = min(max(req.G - req.out, 0), CLIP_MAX_NEW_TOKENS)
        cand = req.P - req.prefix
        total = cand + max_new + PAGE
        real_input = ceil_page(cand)
        if total >= self.rem_total:
            self.last_refusal = (f"full-token gate: {cand}+{max_new}+256={total} >= "
                                 f"rem_total {self.rem_total:.1f}")
            return "NO_TOKEN", "refused"
        limit = self.rem_chunk
        capped_by_swa = False
        need = self.swa_budget(real_input, max_new)
        if need >= self.rem_swa:
            if not (need >= self.size_swa):
                self.last_refusal = f"SWA gate: need {need} >= rem_swa {self.rem_swa:.1f}"
                return "NO_TOKEN", "refused"
            cap = self.swa_chunk_cap(max_new)
            if cap <= 0:
                self.last_refusal = (f"SWA gate: need {need} >= pool {self.size_swa} "
                                     f"(never fits) and chunk cap 0")
                return "NO_TOKEN", "refused"
            if cap < limit:
                capped_by_swa = True
            limit = min(self.rem_chunk, cap)
        input_tokens = ceil_page(cand)
        if input_tokens <= limit:
            req.ext_start, req.ext_end = req.prefix, req.P
            self.update_budget(input_tokens, min(req.G, CLIP_MAX_NEW_TOKENS))
            return self.budget_state(), "added_whole"
        trunc = limit // PAGE * PAGE
        if trunc <= 0:
            return "OTHER", "other"
        now = (trunc + req.prefix) // PAGE * PAGE
        trunc = now - req.prefix
        if trunc <= 0:
            return "OTHER", "other"
        if capped_by_swa:
            sim.hold(f"req {req.rid} first chunk capped to {trunc} by the SWA never-fits cap "
                     f"(need {need} >= pool {self.size_swa})")
        req.ext_start, req.ext_end = req.prefix, req.prefix + trunc
        self.update_budget(trunc, 0)
        return self.budget_state(), "added_chunk"


def simulate(full_tokens: int, swa_tokens: int, max_running: int, chunk: int,
             requests: int, context: int, prompt: int, decay: bool = False,
             trace: bool = False, detail: bool = False) -> dict:
    sim = Sim(full_tokens // PAGE, swa_tokens // PAGE, max_running, chunk, requests,
              context, prompt, decay=decay, trace=trace)
    try:
        sim.run()
    except Stop:
        pass
    res = sim.result()
    if detail:
        res.update({"peak_full_pages_pinned": sim.peak_full_pinned,
                    "peak_swa_pages_pinned": sim.peak_swa_pinned,
                    "iterations": sim.iterations, "tree_evictions": sim.evictions})
    return res


# ---------------------------------------------------------------------------
# Self-test: expected values worked out by hand from the rules above.
# ---------------------------------------------------------------------------
def _hand_cases():
    K = PAGE
    cases = []
    # 1. One request, P = 1, L = 600 (G = 599), F = 64 pages, S = 3 pages.
    #    Gates: full 1+599+256 = 856 < 16384. SWA: ext ceil256(1) = 256,
    #    need = (256-128) + min(256+599,128) + 256 = 512 < 768: admitted whole.
    #    Decode step j writes position j (KV len 1+j). A new page is taken at
    #    j = 256 and j = 512 (kv_len % 256 == 0). Overlap: seqlen = 1 + (j-1)
    #    = j. Eviction fires when j-1-128 >= E+128, and frees up to
    #    floor256(j-1-256). The first real free is at j = 513 (floor256(256)
    #    = 256). So at j = 512 pages 0, 1, 2 are held: peak SWA = 3. The
    #    check at j = 512 needs 1 page, and 1 is free: fits. Full: KV reaches
    #    L = 600 tokens (overlap decodes once more, R20), so 3 pages.
    cases.append(((64 * K, 3 * K, 256, 8192, 1, 600, 1),
                  {"fits": True, "peak_full_pages": 3, "peak_swa_pages": 3}))
    # 2. Same with S = 2 pages: need 512 >= rem_swa 512 and 512 >= pool 512
    #    (never fits), so cap = 512 - (128+256) = 128 -> floor256 = 0, and
    #    NO_TOKEN for ever. The request is never admitted (it would only be
    #    retracted at j = 512, where 0 SWA pages are free). Peaks 0.
    cases.append(((64 * K, 2 * K, 256, 8192, 1, 600, 1),
                  {"fits": False, "peak_full_pages": 0, "peak_swa_pages": 0}))
    # 3. P = 4000, L = 4096 (G = 96). Full gate 4000+96+256 = 4352 < F*256,
    #    so F >= 18 pages. SWA gate: ext 4096, need = 3968 + 128 + 256 = 4352
    #    < S*256, so S >= 18 pages. With F = S = 18: one extend of 16 pages in
    #    each pool. After the result: free [0, floor256(3999-256) = 3584) and
    #    insert [0,3840): 2 SWA pages are left. KV ends at 4096 = 16 pages. So
    #    the peaks are 16 and 16, and it fits.
    cases.append(((18 * K, 18 * K, 256, 8192, 1, 4096, 4000),
                  {"fits": True, "peak_full_pages": 16, "peak_swa_pages": 16}))
    # 4. Same with F = 17: 4352 >= 4352, and there is no full-side fallback,
    #    so it is never admitted. Peaks 0.
    cases.append(((17 * K, 18 * K, 256, 8192, 1, 4096, 4000),
                  {"fits": False, "peak_full_pages": 0, "peak_swa_pages": 0}))
    # 5. Same with S = 17: need 4352 >= 4352 = pool (never fits), so
    #    cap = 4352 - (96+256) = 4000 -> 3840. The first chunk is capped to
    #    3840 (held back): 15 pages in both pools. Stash: free
    #    [0, floor256(3839-256) = 3328), tree keeps [3328,3584) evictable and
    #    [3584,3840) locked: 2 SWA pages. Chunk 2 is [3840,4000): 1 page
    #    -> SWA 3. Full reaches 16. Peaks full 16, SWA 15.
    cases.append(((18 * K, 17 * K, 256, 8192, 1, 4096, 4000),
                  {"fits": False, "peak_full_pages": 16, "peak_swa_pages": 15}))
    # 6. P = 18000, L = 20000, C = 8192, S = 35 pages. Chunk 1 gate: ext 18176,
    #    alloc min(18176, 8192) = 8192, need 8064+128+256 = 8448 < 8960.
    #    Chunk 1 [0,8192) takes 32 pages. The stash at the next schedule frees
    #    [0, floor256(8191-256) = 7680), and the tree keeps [7680,7936)
    #    (evictable) and [7936,8192) (locked): 2 pages. Chunk 2:
    #    rem_swa = 33*256 + 256 evictable, so min(8192, rem_swa-256 = 8448)
    #    = 8192, not capped. Its allocation evicts only when free < 8192+256,
    #    and 33 pages = 8448 are free, so it takes 32 more: peak SWA = 34.
    #    The chunk 3 alloc holds 3 + 7 = 10. Full: ceil(20000/256) = 79.
    cases.append(((1024 * K, 35 * K, 256, 8192, 1, 20000, 18000),
                  {"fits": True, "peak_full_pages": 79, "peak_swa_pages": 34}))
    # 7. Same with S = 34: chunk 1 need 8448 < 8704 passes. Chunk 2 gets
    #    min(8192, (33*256) - 256 = 8192) = 8192, not capped. Allocation: free
    #    32 pages = 8192 < 8448, so the evictable page [7680,7936) is evicted
    #    first: peak SWA = 1 + 32 = 33. It fits; the smallest uncapped pool is
    #    34 pages.
    cases.append(((1024 * K, 34 * K, 256, 8192, 1, 20000, 18000),
                  {"fits": True, "peak_full_pages": 79, "peak_swa_pages": 33}))
    # 8. Same with S = 33: need 8448 >= 8448 = pool (never fits), cap =
    #    8448 - 384 = 8064 -> 7936 < 8192: the first chunk is capped (held).
    cases.append(((1024 * K, 33 * K, 256, 8192, 1, 20000, 18000),
                  {"fits": False}))
    # 9. Eight requests, P = 1000, L = 2000, S = 64, F = 4096 pages. All 8
    #    fit in one batch (8 x 1024 = rem_chunk 8192; SWA offsets 8 x 1280 =
    #    10240 < 16384): 8 x 4 pages in each pool. After the results each one
    #    holds a locked leaf [512,768) plus page [768,1024): 2 pages. In
    #    decode a new page comes at j = 25, 281, 537, 793, and the oldest
    #    private page is freed at j = 282, 538, 794. So at most 4 per request
    #    = 32. Full: 8 x ceil(2000/256) = 64.
    cases.append(((4096 * K, 64 * K, 256, 8192, 8, 2000, 1000),
                  {"fits": True, "peak_full_pages": 64, "peak_swa_pages": 32}))
    # 10. Eight requests, P = 1, L = 2000: 8 x 3 SWA pages at most (case 1's
    #     pattern repeats: new page at j = 256k, old freed at 256k+1) = 24.
    #     Full 8 x 8 = 64.
    cases.append(((4096 * K, 64 * K, 256, 8192, 8, 2000, 1),
                  {"fits": True, "peak_full_pages": 64, "peak_swa_pages": 24}))
    return cases


def self_test() -> int:
    t0 = time.perf_counter()
    bad = 0
    for args, exp in _hand_cases():
        got = simulate(*args)
        ok = all(got[k] == v for k, v in exp.items())
        print(("PASS" if ok else "FAIL"), args, json.dumps(got))
        if not ok:
            print("   expected", exp)
            bad += 1
    dt = time.perf_counter() - t0
    print(f"{len(_hand_cases()) - bad}/{len(_hand_cases())} passed in {dt:.2f}s")
    return 1 if bad else 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--full-tokens", type=int)
    p.add_argument("--swa-tokens", type=int)
    p.add_argument("--max-running", type=int, default=256)
    p.add_argument("--chunk", type=int, default=8192)
    p.add_argument("--requests", type=int, default=1)
    p.add_argument("--context", type=int)
    p.add_argument("--prompt", type=int)
    p.add_argument("--json", action="store_true")
    p.add_argument("--self-test", action="store_true")
    p.add_argument("--decay", action="store_true",
                   help="apply SGLang's new_token_ratio decay (default: constant 0.7)")
    p.add_argument("--trace", action="store_true", help="log each step to stderr")
    p.add_argument("--detail", action="store_true", help="add pinned peaks and counters")
    a = p.parse_args(argv)
    if a.self_test:
        return self_test()
    for k in ("full_tokens", "swa_tokens", "context", "prompt"):
        if getattr(a, k) is None:
            p.error(f"--{k.replace('_', '-')} is required")
    res = simulate(a.full_tokens, a.swa_tokens, a.max_running, a.chunk, a.requests,
                   a.context, a.prompt, decay=a.decay, trace=a.trace, detail=a.detail)
    if a.json:
        print(json.dumps(res))
    else:
        for k, v in res.items():
            print(f"{k}: {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
