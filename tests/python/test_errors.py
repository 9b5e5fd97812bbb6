"""Bad input raises ValueError naming the Python parameter and the value, with the CLI's rule;
never a crash, and nothing written to an `out=` buffer."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

import dsv4_cache as d

FLASH = d.Model.preset("v4-flash")

PLAN_CASES = [
    (dict(requests=0), r"requests: '0' must be at least 1"),
    (dict(tp=0), r"tp: '0' must be at least 1"),
    (dict(context=0), r"context must be >= 1, got 0"),
    (dict(memory_gib=-1), r"memory_gib must be at least 1 byte .* got -1"),
    (dict(memory_gib="12 parsecs"), r"memory_gib: '12 parsecs' is not a memory size"),
    (dict(memory_gib=float("nan")), r"memory_gib must be a finite number, got nan"),
    (dict(engine="tensorrt-llm"), r"engine must be one of .*got 'tensorrt-llm'"),
    (dict(engine="trtllm", pp=2), r"engine trtllm: pp 2 \(pipeline stages\) is not modelled for TensorRT-LLM"),
    (dict(engine="sglang", pp=2), r"engine sglang: pp 2 \(pipeline stages\) is not modelled"),
    (dict(tp=4, dcp=3, pools="own"), r"dcp must divide tp: .*\(tp=4, dcp=3\)"),
    (dict(pp=100), r"pp must be <= num_hidden_layers .*\(pp=100, num_hidden_layers=43\)"),
    (dict(pools="shared"), r"pools: shared not in \{engine,own\}"),
    (dict(prefill_chunk=2, tokens_per_step=4, engine="tokenspeed"),
     r"prefill_chunk 2 must be >= tokens_per_step 4"),
    (dict(max_running_requests=0), r"max_running_requests must be >= 1, got 0"),
    (dict(swa_full_tokens_ratio=0.5), r"swa_full_tokens_ratio has no effect without engine sglang"),
    (dict(reserved_gib=10), r"reserved_gib needs gpu_memory_gib"),
    (dict(formats={"v4.swa_kv": "nope"}), r"formats v4.swa_kv: unknown row format 'nope'"),
    (dict(requests="8"), r"requests must be an int, got '8' \(str\)"),
    (dict(requests=True), r"requests must be an int, got True"),
    (dict(requests=2**70), r"requests must fit in 64 bits"),
    (dict(overlap=1), r"overlap must be True or False, got 1"),
    (dict(pp_layers=[22, "x"]), r"pp_layers must be a list of int layer counts"),
    (dict(context=2**62, requests=2**40), r"context|requests|overflow|bytes"),
]


@pytest.mark.parametrize("kwargs,pattern", PLAN_CASES, ids=[str(i) for i in range(len(PLAN_CASES))])
def test_plan_errors_name_the_parameter(kwargs, pattern):
    with pytest.raises(ValueError, match=pattern) as e:
        d.plan(FLASH, **kwargs)
    assert "--" not in str(e.value)  # Python's names, not the CLI's flags


def test_model_errors(tmp_path):
    with pytest.raises(ValueError, match=r"name must be one of v4-flash, .*got 'v5'"):
        d.Model.preset("v5")
    with pytest.raises(ValueError, match=r"no such file"):
        d.Model.from_config(tmp_path / "missing.json")
    empty = tmp_path / "config.json"
    empty.write_text("")
    with pytest.raises(ValueError, match=r"empty"):
        d.Model.from_config(tmp_path)
    with pytest.raises(ValueError, match=r"missing keys .*'head_dim'"):
        d.Model.from_config({"model_type": "deepseek_v4"})
    with pytest.raises(ValueError, match=r"config must be a path or a dict"):
        d.Model.from_config(42)
    with pytest.raises(ValueError, match=r"model must be a dsv4_cache.Model"):
        d.plan("v4-flash")
    with pytest.raises(TypeError, match=r"memory"):  # an unknown keyword, as Python's own calls
        d.capacity(FLASH, 64, memory=3)
    with pytest.raises(TypeError, match=r"unexpected keyword argument 'memory_gib'"):
        d.describe(FLASH, memory_gib=3)
    with pytest.raises(ValueError, match=r"memory_gib .* is required"):
        d.capacity(FLASH)
    with pytest.raises(TypeError):
        d.Model()


def test_contract_errors(tmp_path):
    with pytest.raises(ValueError, match=r"rank needs parallel flags"):
        d.describe(FLASH, rank=1)
    with pytest.raises(ValueError, match=r"descriptor: .*not a dsv4-cache-layout descriptor"):
        d.check({"schema": "x"})
    with pytest.raises(ValueError, match=r"cannot read"):
        d.check(tmp_path / "missing.json")
    desc = d.describe(FLASH)
    desc["layout"]["colour"] = "blue"
    with pytest.raises(ValueError, match=r"colour"):
        d.check(desc)
    with pytest.raises(ValueError, match=r"a must be a descriptor dict or a path"):
        d.diff(3, desc)


def test_codec_errors_leave_out_untouched():
    g = d.golden("v4.fp8_ds_mla", rows=4, seed=0)
    out = np.full((1, g.page.size), 7, np.uint8)
    cases = [
        (lambda: d.quantize_rows("v9.nope", g.input, out=out), r"format: unknown row format 'v9.nope'"),
        (lambda: d.quantize_rows("v4.fp8_ds_mla", g.input, "trtllm", out=out), r"writer: unknown writer 'trtllm'"),
        (lambda: d.quantize_rows("v4.fp8_ds_mla", g.input[:, :100], out=out), r"x must be a 2-D array of rows x 512"),
        (lambda: d.quantize_rows("v4.fp8_ds_mla", g.input.astype(np.float64), out=out), r"x must hold BF16 .* got float64"),
        (lambda: d.quantize_rows("v4.fp8_ds_mla", g.input, out=out[:, :10]), r"out must have shape \(1, "),
        (lambda: d.quantize_rows("v4.fp8_ds_mla", g.input, out=out.astype(np.int32)), r"out must be a uint8 array"),
        (lambda: d.quantize_rows("v4.fp8_ds_mla", g.input, rows_per_page=0, out=out), r"rows_per_page must be >= 1"),
        (lambda: d.quantize_rows("v4.fp8_ds_mla", g.input, row_bytes=8192, out=out), r"row_bytes=8192 is for fp32_state"),
        (lambda: d.quantize_rows("fp32_state", g.input, out=out), r"row_bytes: fp32_state rows are bound per group"),
        (lambda: d.quantize_rows("v4.fp8_ds_mla", np.zeros((512, 4), np.uint16).T, out=out), r"x must be C-contiguous"),
        (lambda: d.quantize_rows("v4.fp8_ds_mla", g.input, out=np.zeros((2, 3, 4), np.uint8)), r"out must have shape"),
    ]
    for fn, pattern in cases:
        with pytest.raises(ValueError, match=pattern):
            fn()
        assert (out == 7).all()
    y = np.full((4, 512), 7, np.float32)
    dcases = [
        (lambda: d.dequantize_rows("v4.fp8_ds_mla", g.page[:-1], 4, out=y), r"pages must have shape"),
        (lambda: d.dequantize_rows("v4.fp8_ds_mla", g.page, 4, count=5, out=y), r"count must be in \[1, 4\]"),
        (lambda: d.dequantize_rows("v4.fp8_ds_mla", g.page, 0, out=y), r"rows must be >= 1"),
        (lambda: d.dequantize_rows("v4.fp8_ds_mla", g.page, 4, out=y[:, :5]), r"out must have shape \(4, 512\)"),
        (lambda: d.dequantize_rows("v4.fp8_ds_mla", g.page.view(np.int8).astype(np.int16), 4), r"pages must be a uint8"),
        (lambda: d.dequantize_rows("v4.fp8_ds_mla", g.page, 4, dtype="float16"), r"dtype must be"),
    ]
    for fn, pattern in dcases:
        with pytest.raises(ValueError, match=pattern):
            fn()
        assert (y == 7).all()
    with pytest.raises(ValueError, match=r"rows must be in \[1, 65536\], got 0"):
        d.golden("v4.fp8_ds_mla", rows=0)
    with pytest.raises(ValueError, match=r"seed must be an int in \[0, 2\^64\)"):
        d.golden("v4.fp8_ds_mla", seed=-1)


def test_random_arguments_raise_value_error_or_plan():
    """Random values for every plan() parameter: each call plans or raises ValueError (never
    another exception, never a crash)."""
    rng = random.Random(20261203)
    ints = [0, 1, 2, 3, 7, 8, 64, 4096, 2**31, 2**63 - 1, -1, -2**63]
    pick = {
        "engine": ["vllm", "tokenspeed", "tokenspeed-default", "sglang", "trtllm", "x", ""],
        "requests": ints, "context": ints + [None], "prefill_chunk": ints, "tokens_per_step": ints,
        "memory_gib": [None, 1e-12, 0.5, 64, 1e12, "141GB", "-3GiB", "", "1e400"],
        "tp": [None, 1, 2, 8, 0, 3], "dp": [None, 1, 2, 0], "pp": [None, 1, 2, 64], "dcp": [None, 1, 2],
        "role": [None, "colocated", "prefill", "decode", "both"], "handover": [None, 0, 4, -1],
        "pools": [None, "engine", "own", "x"], "overlap": [False, True], "mtp": [True, False],
        "indexer": [None, "fp8", "mxfp4", "int4"],
    }
    models = [FLASH, d.Model.preset("v4.1-flash"), d.Model.preset("v3.2")]
    planned = 0
    for _ in range(60):
        kwargs = {k: rng.choice(v) for k, v in pick.items() if rng.random() < 0.4}
        kwargs.setdefault("context", rng.choice([4096, 65536]))
        try:
            p = d.plan(rng.choice(models), **kwargs)
            json.dumps(p.to_dict())
            planned += 1
        except ValueError as e:
            assert str(e)  # a message, never an empty ValueError
    assert planned > 0


def test_what_a_new_user_broke(tmp_path):
    """Each case a helper found refused with ValueError naming the parameter (or, for the numpy
    float, now planned with its value): no hang, no TypeError / RuntimeError / OverflowError."""
    import functools
    import os

    ml_dtypes = pytest.importorskip("ml_dtypes", reason="ml_dtypes is not installed")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path in (fifo, "/dev/zero", tmp_path):  # never opened: stat first (a FIFO blocked forever)
        with pytest.raises(ValueError, match=r"descriptor: .* not a regular file"):
            d.check(path)
    bad_utf8 = tmp_path / "ff.json"
    bad_utf8.write_bytes(b"\xff")
    with pytest.raises(ValueError, match=r"not UTF-8 text"):
        d.check(bad_utf8)
    x = d.describe(FLASH)
    del x["fingerprint"]
    c = d.check(x)
    assert not c.ok and "fingerprint" in c.wrong and c.fingerprint is None
    x["fingerprint"] = "0x"
    assert d.check(x).fingerprint is None
    with pytest.raises(ValueError, match=r"engine must be valid Unicode"):
        d.plan(FLASH, engine="\ud800")
    with pytest.raises(ValueError, match=r"config \(a path\) must not hold a NUL byte"):
        d.Model.from_config("/etc/passwd\x00junk")
    with pytest.raises(ValueError, match=r"engine must not be empty"):
        d.plan(FLASH, engine="")
    with pytest.raises(ValueError, match=r"config must be a JSON object"):
        d.Model.from_config(functools.reduce(lambda a, _: {"a": a}, range(5000), 1))
    import fractions

    with pytest.raises(ValueError, match=r"memory_gib must be a finite number"):
        d.plan(FLASH, memory_gib=fractions.Fraction(10**400, 3))
    with pytest.raises(ValueError, match=r"memory_gib: '1358\d+' is not a memory size"):
        d.plan(FLASH, memory_gib=2**1100)
    # a numpy float is its value, not truncated to an int
    p = d.plan(FLASH, context=4096, memory_gib=np.float32(60.5))
    assert p.to_dict()["plan"]["budget_bytes"] == int(60.5 * 2**30)
    g = d.golden("v4.fp8_ds_mla", rows=4)
    with pytest.raises(ValueError, match=r"x must be a numeric array"):
        d.quantize_rows("v4.fp8_ds_mla", np.zeros((4, 512), object))
    ro = np.zeros((1, g.page.size), np.uint8)
    ro.setflags(write=False)
    with pytest.raises(ValueError, match=r"out must be writable"):
        d.quantize_rows("v4.fp8_ds_mla", g.input, out=ro)
    with pytest.raises(ValueError, match=r"out must not overlap x"):
        xs = g.input.copy()
        d.quantize_rows("v4.fp8_ds_mla", xs, out=xs.view(np.uint8).reshape(1, -1)[:, :g.page.size])
    with pytest.raises(ValueError, match=r"x must be a numpy array"):
        d.quantize_rows("v4.fp8_ds_mla", None)
    with pytest.raises(ValueError, match=r"^format: unknown row format 'nope'"):
        d.golden("nope")
    with pytest.raises(ValueError, match=r"^writer: unknown writer"):
        d.golden("v4.fp8_ds_mla", "x")
    with pytest.raises(ValueError, match=r"rows must be >= 1, got -1"):
        d.formats()[0].page_bytes(-1)
    bf = d.dequantize_rows("v4.fp8_ds_mla", g.page, 4, ml_dtypes.bfloat16)
    assert bf.dtype == ml_dtypes.bfloat16
    assert d.dequantize_rows("v4.fp8_ds_mla", g.page, 4, np.uint16).dtype == np.uint16
    with pytest.raises(ValueError, match=r"prefill_chunk: .0. must be at least 1"):
        d.plan(FLASH, prefill_chunk=0)
