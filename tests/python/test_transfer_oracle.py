"""dsv4_cache.transfer() against the independent oracle tests/oracle/transfer_oracle.py (written
from the engines' rules, docs/engines/transfer.md): vLLM's NIXL ranges and tokenspeed's per-field
ranges for given block tables, merged the same way, over prompts around page and window edges and
prefix hits."""

from __future__ import annotations

import math
import random
import sys
from pathlib import Path

import pytest

import dsv4_cache as d

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "oracle"))
import transfer_oracle as o  # noqa: E402

PROMPTS = [1, 3, 4, 5, 63, 64, 65, 127, 128, 129, 255, 256, 257, 1000, 1025, 4097]


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _triples(ranges):
    return [(r["src_offset"], r["dst_offset"], r["length"]) for r in ranges]


def _vllm_tables(desc, prompt, rng):
    """Both sides' block tables of a request: distinct random ids, freed sliding entries 0 (vLLM
    frees [0, (P - W + 1) / block) once the prompt is computed)."""
    eng = desc["layout"]["engine"]
    windows = desc["info"]["windows"]
    n_blocks = desc["info"]["num_blocks"]
    sides = []
    for _ in range(2):
        ids = iter(rng.sample(range(1, n_blocks), min(n_blocks - 1, 4096)))
        tables = []
        for g in eng["groups"]:
            bt = g["block_tokens"]
            n = 1 if g["table"] == "request_ring" else _cdiv(prompt, bt)
            freed = 0
            if g["table"] == "sliding_window":
                freed = max(0, prompt - windows[g["tensors"][0]["group"]] + 1) // bt
            tables.append([0 if i < freed else next(ids) for i in range(n)])
        sides.append(tables)
    return sides


@pytest.mark.parametrize("preset", ["v4-flash", "v4-pro", "v4.1-flash", "v3.2"])
def test_vllm_manifest_is_the_oracles(preset):
    desc = d.describe(d.Model.preset(preset), engine="vllm")
    eng = desc["layout"]["engine"]
    windows = desc["info"]["windows"]
    region = o.VllmRegion("slab", 0, eng["block_bytes"])
    rng = random.Random(preset)
    lcm = 1
    for g in eng["groups"]:
        if g["table"] != "request_ring":
            lcm = lcm * g["block_tokens"] // math.gcd(lcm, g["block_tokens"])
    for prompt in PROMPTS:
        for prefix in (0, lcm):
            if prefix >= prompt:
                continue
            pre, dec = _vllm_tables(desc, prompt, rng)
            t = d.transfer(desc, desc, prompt_len=prompt, prefix=prefix, blocks={"prefill": pre, "decode": dec})
            groups, src, dst = [], [], []
            for g, p_ids, d_ids in zip(eng["groups"], pre, dec):
                sliding = g["table"] == "sliding_window"
                w = windows[g["tensors"][0]["group"]] if sliding else None
                groups.append(o.VllmGroup(g["table"], g["block_tokens"], w))
                src.append(p_ids)
                # The decode side sends its not-prefix-cached blocks (a ring's one block always).
                skip = 0 if g["table"] == "request_ring" else prefix // g["block_tokens"]
                dst.append(d_ids[skip:])
            want = o.vllm_nixl_ranges(groups, [region], [region], src, dst)
            # A freed entry (the null block 0) moves nothing here (engines/vllm/transfer.hpp).
            want = [r for r in want if r.src != 0 and r.dst != 0]
            merged = o.merge_ranges(want)
            assert _triples(t.manifest["ranges"]) == [r.triple() for r in merged], (preset, prompt, prefix)
            assert t.manifest["bytes_moved"] == o.total_bytes(want)
            assert t.manifest["ranges_before_merge"] == len(want)


def _ts_fields(desc, parents):
    """Per engine group, its fields (tensor x layer) as the oracle takes them, from the
    descriptor's planes (tokenspeed's field_page_byte_offset: planes in their listed order, each
    parents x bytes; page 0 of a packing-K field at plane_offset + bytes - bytes / K)."""
    eng = desc["layout"]["engine"]
    offset, size, at = {}, {}, 0
    for q in eng["planes"]:
        offset[q["id"]] = at
        size[q["id"]] = q["bytes"]
        at += parents * q["bytes"]
    out = []
    for gi, g in enumerate(eng["groups"]):
        k = g["packing"]
        fields = []
        for ti, t in enumerate(g["tensors"]):
            for layer, plane in zip(t["layers"], t["planes"]):
                pid = f"unit.{plane}"
                stride = size[pid] // k
                # field ids that sort in the descriptor's order (tensor, then layer)
                fid = f"{ti:03d}.{layer:03d}"
                fields.append(o.TsField(fid, o.ts_page0(offset[pid], size[pid], stride, 0), stride, t["page_bytes"]))
        out.append((f"g{gi}", fields))
    return out


@pytest.mark.parametrize("engine", ["tokenspeed", "tokenspeed@f4d8ec6e"])
def test_tokenspeed_manifest_is_the_oracles(engine):
    m = d.Model.preset("v4-flash")
    desc = d.describe(m, engine=engine)
    prefill = dict(desc, info=dict(desc["info"], num_blocks=64))
    decode = dict(desc, info=dict(desc["info"], num_blocks=48))
    eng = desc["layout"]["engine"]
    windows = desc["info"]["windows"]
    rng = random.Random(engine)
    for prompt in PROMPTS:
        for prefix in (0, 256):
            if prefix >= prompt:
                continue
            # Each side's page tables: the pages tokenspeed sends get ids in parents of their own
            # group (page p of packing K lives in parent (p + K - 1) / K; groups sharing a plane
            # never share a parent), shuffled; the others 0.
            tables = [[[0] * _cdiv(prompt, g["block_tokens"]) for g in eng["groups"]] for _ in range(2)]
            groups = []
            for gi, g in enumerate(eng["groups"]):
                sliding = g["table"] == "sliding_window"
                groups.append(o.TsGroup(f"g{gi}", g["block_tokens"], "sliding_window" if sliding else "full_history",
                                        windows[g["tensors"][0]["group"]] if sliding else None))
            for side, parents in zip(tables, (64, 48)):
                free = list(range(1, parents))
                rng.shuffle(free)
                for gi, g in enumerate(eng["groups"]):
                    k = g["packing"]
                    slots = o.logical_slots(groups[gi], 0, prompt)
                    need = _cdiv(len(slots), k)
                    parents_of = [free.pop() for _ in range(need)]
                    for j, s in enumerate(slots):
                        side[gi][s] = (parents_of[j // k] - 1) * k + 1 + j % k
            t = d.transfer(prefill, decode, prompt_len=prompt, prefix=prefix,
                           blocks={"prefill": tables[0], "decode": tables[1]})
            src_man = o.tokenspeed_manifest(groups, tables[0], prefix, prompt)
            dst_man = o.tokenspeed_manifest(groups, tables[1], prefix, prompt)
            want = o.tokenspeed_ranges(groups, dict(_ts_fields(prefill, 64)), dict(_ts_fields(decode, 48)), src_man,
                                       dst_man)
            assert t.manifest["ranges_before_merge"] == len(want), (engine, prompt, prefix)
            assert t.manifest["bytes_moved"] == o.total_bytes(want)
            assert _triples(t.manifest["ranges"]) == [r.triple() for r in o.merge_ranges(want)], (engine, prompt)
