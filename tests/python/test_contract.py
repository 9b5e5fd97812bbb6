"""describe(), fingerprint(), diff() and check() against dsv4-cache-layout."""

from __future__ import annotations

import json

import pytest

import dsv4_cache as d

# (preset, layout keywords, the same layout as dsv4-cache-layout flags)
LAYOUTS = [
    ("v4-flash", {}, []),
    ("v4-pro", dict(tp=8, rank=5), ["--tp", "8", "--rank", "5"]),
    ("v4-pro", dict(pp=2, rank=1), ["--pp", "2", "--rank", "1"]),
    ("v4-flash", dict(engine="vllm"), ["--engine", "vllm"]),
    ("v4.1-flash", dict(format_set="v4", engine="vllm", tokens_per_step=3),
     ["--format-set", "v4", "--engine", "vllm", "--tokens-per-step", "3"]),
    ("v3.2", dict(tp=4, dcp=2, rank=1), ["--tp", "4", "--dcp", "2", "--rank", "1"]),
    ("v4-flash", dict(indexer="mxfp4", kv_format="v4.fp8_ds_mla.footer", mtp=False),
     ["--indexer", "mxfp4", "--kv-format", "v4.fp8_ds_mla.footer", "--no-mtp"]),
]


@pytest.mark.parametrize("preset,kwargs,flags", LAYOUTS, ids=[f"{c[0]}-{i}" for i, c in enumerate(LAYOUTS)])
def test_fingerprint_and_descriptor_are_the_cli_ones(layout_cli, preset, kwargs, flags):
    m = d.Model.preset(preset)
    fp = d.fingerprint(m, **kwargs)
    assert isinstance(fp, int)
    assert f"0x{fp:016x}" == layout_cli.run(["fingerprint", "--preset", preset, *flags]).strip()
    desc = d.describe(m, **kwargs)
    assert desc == layout_cli.json(["describe", "--preset", preset, *flags])
    assert d.fingerprint(desc) == fp  # a descriptor's own fingerprint, checked first


def test_a_tp_rank_is_the_whole_model():
    m = d.Model.preset("v4-pro")
    assert d.fingerprint(m, tp=8, rank=5) == d.fingerprint(m) == 0x2A0F2A1AB200EE9C


def test_diff_and_check_as_the_cli(layout_cli, tmp_path):
    m = d.Model.preset("v4-pro")
    cases = [(dict(), dict()), (dict(pp=2, rank=0), dict(pp=2, rank=1)), (dict(), dict(kv_format="v4.fp8_uniform"))]
    for ka, kb in cases:
        a, b = d.describe(m, **ka), d.describe(m, **kb)
        pa, pb = tmp_path / "a.json", tmp_path / "b.json"
        pa.write_text(json.dumps(a, indent=2))
        pb.write_text(json.dumps(b, indent=2))
        r = d.diff(a, b)
        cli = layout_cli.run(["diff", str(pa), str(pb)], code=r.code)
        assert r.text == cli
        assert d.diff(pa, pb).text == cli  # paths as well as dicts
        assert [x.text for x in r.differences] == cli.splitlines()[2:]
    assert d.diff(d.describe(m), d.describe(m)).verdict == "identical"
    assert d.diff(d.describe(m, pp=2, rank=0), d.describe(m, pp=2, rank=1)).verdict == "compatible"
    bad = d.diff(d.describe(m), d.describe(m, kv_format="v4.fp8_uniform"))
    assert bad.verdict == "incompatible" and not bad.compatible

    good = d.describe(m, engine="vllm")
    p = tmp_path / "good.json"
    p.write_text(json.dumps(good))
    c = d.check(good)
    assert c.ok and c.wrong is None and c.fingerprint == int(good["fingerprint"], 16)
    assert layout_cli.run(["check", str(p)]).strip().endswith(good["fingerprint"])
    wrong = json.loads(json.dumps(good))
    wrong["layout"]["groups"][0]["pools"][0]["page_bytes"] += 1
    p.write_text(json.dumps(wrong))
    c = d.check(wrong)
    assert not c.ok and c.wrong
    assert layout_cli.run(["check", str(p)], code=1) == f"{p}: {d.check(p).wrong}\n"
    with pytest.raises(ValueError, match="descriptor"):
        d.fingerprint(wrong)
    with pytest.raises(ValueError, match="fails check"):
        d.diff(wrong, good)


def test_transfer_is_the_cli_manifest(layout_cli, tmp_path):
    m = d.Model.preset("v4-flash")
    prefill = d.describe(m, engine="vllm", tp=8)
    decode = d.describe(m, engine="vllm", dp=8)
    pa, pb = tmp_path / "p.json", tmp_path / "d.json"
    pa.write_text(json.dumps(prefill, indent=2))
    pb.write_text(json.dumps(decode, indent=2))
    t = d.transfer(pa, pb, prompt_len=131072)
    assert t and t.refused is None
    assert t.manifest == layout_cli.json(["transfer", str(pa), str(pb), "--prompt-len", "131072", "--json"])
    assert t.nixl == layout_cli.json(["transfer", str(pa), str(pb), "--prompt-len", "131072", "--nixl"])
    assert t.mooncake == layout_cli.json(["transfer", str(pa), str(pb), "--prompt-len", "131072", "--mooncake"])
    assert t.text == layout_cli.run(["transfer", str(pa), str(pb), "--prompt-len", "131072"])
    # Hand sum (vLLM's NIXL rule): 512 + 2 + 2 + 2 + 16 blocks of 1,002,240 B.
    assert t.manifest["bytes_moved"] == 534 * 1002240
    # Block tables given: the decode side's ids from another end of its pool.
    ids = d.transfer(prefill, decode, prompt_len=300).manifest
    assert ids["block_ids"] == "dry_run"
    pro = d.describe(d.Model.preset("v4-pro"), engine="vllm")
    refused = d.transfer(prefill, pro, prompt_len=4096)
    assert not refused and "engine block 1,002,240 B vs" in refused.refused
    with pytest.raises(ValueError, match="no engine placement"):
        d.transfer(prefill, d.describe(m), prompt_len=100)
    with pytest.raises(ValueError, match="outside the pool"):
        d.transfer(prefill, decode, prompt_len=4, blocks={"prefill": [[1], [2], [3], [4], [10**9]],
                                                          "decode": [[1], [2], [3], [4], [5]]})
    with pytest.raises(ValueError, match="blocks"):
        d.transfer(prefill, decode, prompt_len=4, blocks={"prefill": [[1]]})
    # Integers past 64 bits are a ValueError naming the argument, never a binding's TypeError.
    with pytest.raises(ValueError, match=r"prompt_len 9223372036854775808 is outside \[-2\^63, 2\^63\)"):
        d.transfer(prefill, decode, prompt_len=2**63)
    with pytest.raises(ValueError, match=r"block id 18446744073709551616 is outside"):
        d.transfer(prefill, decode, prompt_len=4, blocks={"prefill": [[1], [2], [3], [4], [2**64]],
                                                          "decode": [[1], [2], [3], [4], [5]]})
    # A prompt past the deployments' context is bad input naming it.
    with pytest.raises(ValueError, match="is longer than the context, 1048576 tokens"):
        d.transfer(prefill, decode, prompt_len=2**40)
