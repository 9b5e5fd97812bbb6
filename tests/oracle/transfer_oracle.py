#!/usr/bin/env python3
"""Independent, dependency-free reference for prefill -> decode KV transfer ranges.

Independent oracle for issue 46 (dsv4-cache transfer manifests; citations in docs/engines/transfer.md
and the engines' transfer headers). It re-derives, from the
engines' documented behaviour (docs/engines/transfer.md), the
(src_offset, dst_offset, length) byte ranges that each engine's connector moves for one
request. It is written from the rules, not copied from engine code.

Three producers:

* ``vllm_nixl_ranges``   - vLLM NIXL connector (pull / READ). One descriptor per
  (region, block): the whole block of one registered region. Every block id of every
  transfer group is read in every region (HMA groups share the per-layer tensors), in
  region-major order over the concatenation of the groups' block lists. Sliding-window
  groups keep the last ``cdiv(window, block_tokens) + 1`` blocks; the prefill (remote)
  list is end-trimmed to the decode (local) list length per group (prefix hit).
  The DeepSeek V4 packed slab is the special case of ONE region whose block length is
  bytes_per_block.
* ``tokenspeed_ranges``  - tokenspeed Mooncake PD (equal TP). For each group in spec
  order, each field of the group (sorted by field id), each (src page, dst page) pair of
  the manifest: one range of the field's payload bytes. Pages are selected with
  ``logical_slots`` (full_suffix trimmed to the window for sliding groups, or
  latest_snapshot). Never merged.
* ``sglang_ranges``      - SGLang Mooncake PD, per layer buffer: page indices of the
  prompt suffix (full history) or of the pages covering the last ``window`` tokens
  (floor to page); pairs grouped into runs consecutive on both sides
  (``group_concurrent_contiguous``), one range per run.

``merge_ranges`` coalesces ranges that are back to back on BOTH sides, preserving order
(what NIXL's makeXferReq does for dense strides, and what SGLang does per layer).

Offsets are plain integers: give each side's bases as offsets from that side's arena
(or as absolute addresses); the oracle never mixes the two sides.

Run ``python3 oracle.py`` to execute the hand-computed self-checks at the bottom.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

Range = Tuple[int, int, int]  # (src_offset, dst_offset, length)


def cdiv(a: int, b: int) -> int:
    if b <= 0:
        raise ValueError("divisor must be positive")
    return -(-a // b)


# --------------------------------------------------------------------------------------
# Labelled ranges
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LabelledRange:
    group: str
    region: str  # vLLM region / tokenspeed field / SGLang layer buffer
    src: int
    dst: int
    length: int

    def triple(self) -> Range:
        return (self.src, self.dst, self.length)


def merge_ranges(
    ranges: Sequence[LabelledRange], *, across_labels: bool = True
) -> List[LabelledRange]:
    """Coalesce consecutive ranges that are contiguous on both sides, keeping order.

    Two neighbours r, s merge when s.src == r.src + r.length and
    s.dst == r.dst + r.length. With ``across_labels`` False they must also carry the
    same (group, region) label. The merged range keeps the first range's label.
    Ranges are not sorted first: an engine only merges neighbours in its request order.
    """
    out: List[LabelledRange] = []
    for r in ranges:
        if r.length < 0:
            raise ValueError("negative length")
        if r.length == 0:
            continue
        if out:
            last = out[-1]
            same = across_labels or (last.group, last.region) == (r.group, r.region)
            if same and r.src == last.src + last.length and r.dst == last.dst + last.length:
                out[-1] = LabelledRange(
                    last.group, last.region, last.src, last.dst, last.length + r.length
                )
                continue
        out.append(r)
    return out


def total_bytes(ranges: Sequence[LabelledRange]) -> int:
    return sum(r.length for r in ranges)


# --------------------------------------------------------------------------------------
# vLLM NIXL
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class VllmRegion:
    """One registered NIXL region (one cache tensor; HMA groups share it).

    Block b of the region starts at ``base + b * block_stride`` and a descriptor covers
    ``block_len`` bytes (vLLM registers block_len == page size == stride; for the DSv4
    packed slab there is one region with block_len == block_stride == bytes_per_block).
    """

    name: str
    base: int
    block_len: int
    block_stride: Optional[int] = None

    def addr(self, block: int) -> int:
        return self.base + block * (self.block_stride or self.block_len)


@dataclass(frozen=True)
class VllmGroup:
    """One KV-cache transfer group: its block size in tokens and, if sliding, its window."""

    name: str
    block_tokens: int
    sliding_window: Optional[int] = None  # tokens; None = full attention

    def blocks_to_keep(self) -> Optional[int]:
        if self.sliding_window is None:
            return None
        return cdiv(self.sliding_window, self.block_tokens) + 1


def vllm_exchange_clip(group: VllmGroup, block_ids: Sequence[int]) -> List[int]:
    """get_exchange_clipped_blocks: sliding groups keep their last n blocks."""
    keep = group.blocks_to_keep()
    ids = list(block_ids)
    if keep is None:
        return ids
    return ids[-keep:] if keep else []


def vllm_nixl_ranges(
    groups: Sequence[VllmGroup],
    src_regions: Sequence[VllmRegion],
    dst_regions: Sequence[VllmRegion],
    src_block_ids: Sequence[Sequence[int]],
    dst_block_ids: Sequence[Sequence[int]],
    *,
    clip: bool = True,
) -> List[LabelledRange]:
    """Ranges the decode worker READs from the prefill worker (src = prefill).

    ``src_block_ids[g]`` is the prefill's block list of group g for the prompt (as in
    request_finished, before clipping); ``dst_block_ids[g]`` the decode's not-prefix-cached
    blocks (update_state_after_alloc, before clipping). Equal TP, equal block size
    (HMA requires block_size_ratio == 1), MLA-style REPLICATE regions (whole block).
    """
    if not (len(groups) == len(src_block_ids) == len(dst_block_ids)):
        raise ValueError("one block list per group on each side")
    if len(src_regions) != len(dst_regions):
        raise ValueError("number of regions must match (vLLM asserts it)")
    for s, d in zip(src_regions, dst_regions):
        if s.block_len != d.block_len:
            raise ValueError(f"region {s.name}: block_len differs ({s.block_len} vs {d.block_len})")
    pairs: List[Tuple[str, int, int]] = []  # (group, src_block, dst_block), concatenation order
    for g, src, dst in zip(groups, src_block_ids, dst_block_ids):
        s = vllm_exchange_clip(g, src) if clip else list(src)
        d = vllm_exchange_clip(g, dst) if clip else list(dst)
        if len(d) > len(s):
            raise ValueError(f"group {g.name}: decode has more blocks than prefill sent")
        if len(d) < len(s):
            s = s[len(s) - len(d):]  # _apply_prefix_caching: remote_group[-num_local:]
        pairs.extend((g.name, a, b) for a, b in zip(s, d))
    out: List[LabelledRange] = []
    for sr, dr in zip(src_regions, dst_regions):  # region-major descriptor ids
        for gname, a, b in pairs:
            out.append(LabelledRange(gname, sr.name, sr.addr(a), dr.addr(b), sr.block_len))
    return out


# --------------------------------------------------------------------------------------
# tokenspeed
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TsField:
    """One cache field (one layer's tensor of a group) on one side.

    ``page0`` is the byte offset of page 0 of the field; page p is at
    ``page0 + p * page_stride``; ``payload`` bytes are moved per page.
    For a tokenspeed CacheMemoryPlan, page0 = plane.arena_offset_bytes +
    plane.bytes_per_lcm_block - page_stride + field_offset_bytes (see ts_page0).
    """

    field_id: str
    page0: int
    page_stride: int
    payload: int

    def addr(self, page: int) -> int:
        return self.page0 + page * self.page_stride


def ts_page0(plane_offset: int, plane_bytes_per_lcm: int, page_stride: int, field_offset: int) -> int:
    """CacheMemoryPlan.field_page_byte_offset(field, 0)."""
    return plane_offset + plane_bytes_per_lcm - page_stride + field_offset


@dataclass(frozen=True)
class TsGroup:
    group_id: str
    block_tokens: int  # block_granularity = rows_per_page * entry_stride_tokens
    retention: str = "full_history"  # or "sliding_window"
    window: Optional[int] = None  # sliding_window_tokens
    policy: str = "full_suffix"  # or "latest_snapshot"


def logical_slots(group: TsGroup, prefix_len: int, prompt_len: int) -> List[int]:
    """tokenspeed _logical_slots."""
    g = group.block_tokens
    if group.policy == "full_suffix":
        begin = prefix_len // g
        if group.retention == "sliding_window":
            if group.window is None:
                raise ValueError("sliding group needs a window")
            retained_begin = max(0, prompt_len - group.window + 1)
            begin = max(begin, retained_begin // g)
        end = cdiv(prompt_len, g)
        return list(range(begin, end))
    if group.policy == "latest_snapshot":
        return [(prompt_len - 1) // g]
    raise ValueError(f"unknown policy {group.policy}")


def tokenspeed_manifest(
    groups: Sequence[TsGroup],
    block_tables: Sequence[Sequence[int]],
    prefix_len: int,
    prompt_len: int,
) -> List[List[int]]:
    """build_cache_block_manifest: per group, the block ids at the selected slots."""
    if prefix_len >= prompt_len:
        raise ValueError("prefix_len < prompt_len required")
    out = []
    for g, table in zip(groups, block_tables):
        slots = logical_slots(g, prefix_len, prompt_len)
        if slots and slots[-1] >= len(table):
            raise ValueError(f"table {g.group_id} misses logical slot {slots[-1]}")
        ids = [table[s] for s in slots]
        if any(b <= 0 for b in ids):
            raise ValueError(f"group {g.group_id}: null or invalid block id")
        out.append(ids)
    return out


def tokenspeed_ranges(
    groups: Sequence[TsGroup],
    src_fields: Dict[str, Sequence[TsField]],
    dst_fields: Dict[str, Sequence[TsField]],
    src_manifest: Sequence[Sequence[int]],
    dst_manifest: Sequence[Sequence[int]],
) -> List[LabelledRange]:
    """Equal-TP _cache_transfer_blocks: group -> field (sorted by id) -> page pair."""
    out: List[LabelledRange] = []
    for g, s_ids, d_ids in zip(groups, src_manifest, dst_manifest):
        if len(s_ids) != len(d_ids):
            raise ValueError(f"group {g.group_id}: manifests disagree in length")
        sf = sorted(src_fields.get(g.group_id, ()), key=lambda f: f.field_id)
        df = {f.field_id: f for f in dst_fields.get(g.group_id, ())}
        if [f.field_id for f in sf] != sorted(df):
            raise ValueError(f"group {g.group_id}: field ids differ")
        for f in sf:
            peer = df[f.field_id]
            for a, b in zip(s_ids, d_ids):
                out.append(LabelledRange(g.group_id, f.field_id, f.addr(a), peer.addr(b), f.payload))
    return out


# --------------------------------------------------------------------------------------
# SGLang
# --------------------------------------------------------------------------------------


def sglang_page_slots(
    prompt_len: int, page_tokens: int, *, start_token: int = 0, window: Optional[int] = None
) -> List[int]:
    """Logical page slots sent: full history from start_token, or the _swa_payload window."""
    if window is not None:
        start = max(0, prompt_len - window)
        start = (start // page_tokens) * page_tokens
    else:
        start = start_token
    return list(range(start // page_tokens, cdiv(prompt_len, page_tokens)))


def group_concurrent_contiguous(src: Sequence[int], dst: Sequence[int]) -> List[Tuple[List[int], List[int]]]:
    """Split index pairs into runs consecutive on both sides."""
    if len(src) != len(dst):
        raise ValueError("index lists differ in length")
    runs: List[Tuple[List[int], List[int]]] = []
    for a, b in zip(src, dst):
        if runs and a == runs[-1][0][-1] + 1 and b == runs[-1][1][-1] + 1:
            runs[-1][0].append(a)
            runs[-1][1].append(b)
        else:
            runs.append(([a], [b]))
    return runs


def sglang_ranges(
    group: str,
    layers: Sequence[Tuple[str, int, int, int]],
    src_pages: Sequence[int],
    dst_pages: Sequence[int],
) -> List[LabelledRange]:
    """_send_kvcache_generic (flat/MLA layout). layers = (name, src_base, dst_base, item_len).

    The destination is addressed with the SOURCE item_len, as SGLang does.
    """
    runs = group_concurrent_contiguous(src_pages, dst_pages)
    out = []
    for name, sb, db, item in layers:
        for s, d in runs:
            out.append(LabelledRange(group, name, sb + s[0] * item, db + d[0] * item, item * len(s)))
    return out


# --------------------------------------------------------------------------------------
# Self-checks (numbers computed by hand in the comments)
# --------------------------------------------------------------------------------------


def _check(name: str, got, want) -> None:
    if got != want:
        raise AssertionError(f"{name}: got {got!r}, want {want!r}")
    print(f"ok  {name}")


def _self_checks() -> None:
    # 1. tokenspeed slot selection, DeepSeek V4 groups, prompt 1000, no prefix.
    swa = TsGroup("v4.swa_kv", 64, "sliding_window", 128)
    c4st = TsGroup("v4.c4a.compressor_state", 4, "sliding_window", 8)
    c128st = TsGroup("v4.c128a.compressor_state", 8, "sliding_window", 128)
    c4kv = TsGroup("v4.c4a.compressed_kv", 256)
    # swa: retained_begin = 1000-128+1 = 873; 873//64 = 13; end = ceil(1000/64) = 16 -> 13,14,15
    _check("ts swa slots L=1000", logical_slots(swa, 0, 1000), [13, 14, 15])
    # c4 state: 1000-8+1 = 993; 993//4 = 248; end = 250 -> 248, 249
    _check("ts c4 state slots L=1000", logical_slots(c4st, 0, 1000), [248, 249])
    # c128 state: 873//8 = 109; end = 125 -> 109..124 (16 pages)
    _check("ts c128 state slots L=1000", logical_slots(c128st, 0, 1000), list(range(109, 125)))
    # compressed kv with prefix 256: begin 1, end ceil(1000/256) = 4 -> 1,2,3
    _check("ts c4 kv slots P=256 L=1000", logical_slots(c4kv, 256, 1000), [1, 2, 3])
    # latest_snapshot: (1000-1)//8 = 124
    snap = TsGroup("state", 8, "full_history", None, "latest_snapshot")
    _check("ts latest_snapshot L=1000", logical_slots(snap, 0, 1000), [124])
    # prompt 1024 (page aligned): swa (1024-127)=897//64 = 14 -> 14, 15 (2 pages)
    _check("ts swa slots L=1024", logical_slots(swa, 0, 1024), [14, 15])

    # 2. tokenspeed ranges: one field, payload 100 < stride 128, src page0 0, dst page0 10000.
    # src table slot i -> block i+1; dst table slot i -> block 2i+1.
    # slots 248, 249 -> src blocks 249, 250; dst blocks 497, 499.
    # ranges: (249*128, 10000+497*128, 100) = (31872, 73616, 100); (32000, 73872, 100).
    table_src = list(range(1, 301))
    table_dst = [2 * i + 1 for i in range(300)]
    sm = tokenspeed_manifest([c4st], [table_src], 0, 1000)
    dm = tokenspeed_manifest([c4st], [table_dst], 0, 1000)
    _check("ts manifest", (sm, dm), ([[249, 250]], [[497, 499]]))
    r = tokenspeed_ranges(
        [c4st],
        {c4st.group_id: [TsField("layer.2.compressor_state", 0, 128, 100)]},
        {c4st.group_id: [TsField("layer.2.compressor_state", 10000, 128, 100)]},
        sm,
        dm,
    )
    _check("ts ranges", [x.triple() for x in r], [(31872, 73616, 100), (32000, 73872, 100)])
    # not contiguous (payload < stride): merge keeps 2
    _check("ts merge payload<stride", len(merge_ranges(r)), 2)
    # tokenspeed plan address: plane at 0, 4096 B per parent, packing 2 -> stride 2048,
    # field offset 0: page0 = 0 + 4096 - 2048 + 0 = 2048; page 1 at 4096 (parent 1 slot 0).
    _check("ts page0", ts_page0(0, 4096, 2048, 0), 2048)

    # 3. tokenspeed: two fields of one group, payload == stride, consecutive pages on both
    # sides. Order is field-major: f_a p1, f_a p2, f_b p1, f_b p2.
    # f_a: src page0 0, dst page0 0, stride 10 -> (10,10,10),(20,20,10)
    # f_b: src page0 1000, dst page0 2000 -> (1010,2010,10),(1020,2020,10)
    # merge -> (10,10,20),(1010,2010,20)
    g2 = TsGroup("g", 256)
    r = tokenspeed_ranges(
        [g2],
        {"g": [TsField("b", 1000, 10, 10), TsField("a", 0, 10, 10)]},
        {"g": [TsField("a", 0, 10, 10), TsField("b", 2000, 10, 10)]},
        [[1, 2]],
        [[1, 2]],
    )
    _check(
        "ts two fields unmerged",
        [x.triple() for x in r],
        [(10, 10, 10), (20, 20, 10), (1010, 2010, 10), (1020, 2020, 10)],
    )
    _check("ts two fields merged", [x.triple() for x in merge_ranges(r)], [(10, 10, 20), (1010, 2010, 20)])

    # 4. vLLM packed DSv4 slab: one region, block 1000 B, src base 0, dst base 0.
    # full group src [1,2,3], dst [11,12,13]; sliding (window 128, block 64 -> keep 3)
    # src [6,7,8,9,10] -> [8,9,10]; dst [19,20,21,22,23] -> [21,22,23].
    # desc order (one region): blocks 1,2,3,8,9,10 -> 11,12,13,21,22,23, 1000 B each.
    # merged: (1000,11000,3000), (8000,21000,3000).
    full = VllmGroup("full", 256)
    sw = VllmGroup("swa", 64, 128)
    reg_s = [VllmRegion("slab", 0, 1000)]
    reg_d = [VllmRegion("slab", 0, 1000)]
    r = vllm_nixl_ranges([full, sw], reg_s, reg_d, [[1, 2, 3], [6, 7, 8, 9, 10]], [[11, 12, 13], [19, 20, 21, 22, 23]])
    _check(
        "vllm packed unmerged",
        [x.triple() for x in r],
        [
            (1000, 11000, 1000),
            (2000, 12000, 1000),
            (3000, 13000, 1000),
            (8000, 21000, 1000),
            (9000, 22000, 1000),
            (10000, 23000, 1000),
        ],
    )
    _check("vllm packed merged", [x.triple() for x in merge_ranges(r)], [(1000, 11000, 3000), (8000, 21000, 3000)])

    # 5. vLLM prefix hit + two regions: full group, src [1,2,3], dst has one cached block so
    # its unhashed list is [12,13] -> remote end-trimmed to [2,3].
    # regions: r0 src base 0 len 10, dst base 100; r1 src base 50 len 5, dst base 500.
    # region-major: r0: (20,220,10),(30,230,10); r1: (60,560,5),(65,565,5).
    rs = [VllmRegion("r0", 0, 10), VllmRegion("r1", 50, 5)]
    rd = [VllmRegion("r0", 100, 10), VllmRegion("r1", 500, 5)]
    r = vllm_nixl_ranges([full], rs, rd, [[1, 2, 3]], [[12, 13]])
    _check("vllm prefix hit", [x.triple() for x in r], [(20, 220, 10), (30, 230, 10), (60, 560, 5), (65, 565, 5)])
    # merged across labels: (20,220,20) then r1 (60,560,10)
    _check("vllm prefix hit merged", [x.triple() for x in merge_ranges(r)], [(20, 220, 20), (60, 560, 10)])

    # 6. vLLM vs tokenspeed sliding count at L=1024, window 128, 64-token blocks: vLLM keeps
    # cdiv(128,64)+1 = 3 blocks (slots 13,14,15), tokenspeed 2 (14,15).
    _check("vllm keep count", sw.blocks_to_keep(), 3)
    _check("vllm clip L=1024", vllm_exchange_clip(sw, list(range(16))), [13, 14, 15])

    # 7. SGLang: page 256, SWA window 128, prompt 1000: start = floor256(872) = 768 -> slot 3.
    _check("sglang swa slots", sglang_page_slots(1000, 256, window=128), [3])
    # full history from 0: slots 0..3; decode prefix 512 -> slots 2, 3.
    _check("sglang kv slots", sglang_page_slots(1000, 256), [0, 1, 2, 3])
    _check("sglang kv slots prefix", sglang_page_slots(1000, 256, start_token=512), [2, 3])
    # runs: src [5,6,7,9] dst [1,2,3,4] -> [5,6,7]/[1,2,3] and [9]/[4]; one layer, item 100,
    # src base 0, dst base 100000: (500,100100,300), (900,100400,100).
    r = sglang_ranges("kv", [("c4.L2", 0, 100000, 100)], [5, 6, 7, 9], [1, 2, 3, 4])
    _check("sglang runs", [x.triple() for x in r], [(500, 100100, 300), (900, 100400, 100)])

    # 8. merge does not join across a gap on one side only.
    a = [LabelledRange("g", "f", 0, 0, 10), LabelledRange("g", "f", 10, 11, 10)]
    _check("merge needs both sides", len(merge_ranges(a)), 2)
    # label-restricted merge
    b = [LabelledRange("g", "f", 0, 0, 10), LabelledRange("g", "h", 10, 10, 10)]
    _check("merge across labels", len(merge_ranges(b)), 1)
    _check("merge within labels", len(merge_ranges(b, across_labels=False)), 2)

    print("all self-checks passed")


if __name__ == "__main__":
    _self_checks()
