"""formats(), quantize_rows(), dequantize_rows() and golden() against dsv4-cache-layout's golden
pages, for every registered format and writer; zero-copy (out=, torch tensors, ml_dtypes)."""

from __future__ import annotations

import json
import os
import re
import stat

import numpy as np
import pytest

import dsv4_cache as d

STATE_ROW_BYTES = 8192  # the V4 CSA compressor state's rows (fp32_state is bound per group)


def _pairs(layout_cli):
    """(format, writer) for every writer of every format, from the CLI's own `writers --json`."""
    j = layout_cli.json(["writers", "--json"])
    return [(f["format"], w["name"]) for f in j["formats"] for w in f["writers"]]


def _cli_golden(layout_cli, tmp_path, fmt, writer, rows, seed):
    out = tmp_path / f"{fmt}-{writer}-{rows}-{seed}"
    extra = ["--row-bytes", str(STATE_ROW_BYTES)] if fmt == "fp32_state" else []
    layout_cli.run(["golden", fmt, "--writer", writer, "--rows", str(rows), "--seed", str(seed), "--out", str(out),
                    *extra])
    manifest = (out / "manifest.json").read_text()
    name = "input.f32" if fmt == "fp32_state" else "input.bf16"
    return (out / name).read_bytes(), (out / "page.bin").read_bytes(), manifest


def test_formats_are_the_cli_registry(layout_cli):
    cli = layout_cli.json(["formats", "--json"])
    fs = d.formats()
    assert [f.name for f in fs] == [f["name"] for f in cli]
    for f, c in zip(fs, cli):
        assert (f.model, f.role, f.row_bytes, f.page_rule, f.alignment, f.fields, f.source) == (
            c["model"], c["role"], c["row_bytes"], c["page_rule"], c["alignment"], c["fields"], c["source"])
        if f.row_bytes is not None:
            assert f.page_bytes(64) == c["page_bytes"]
    writers = {}
    for fmt, w in _pairs(layout_cli):
        writers.setdefault(fmt, []).append(w)
    assert {f.name: list(f.writers) for f in fs} == writers


def test_every_format_and_writer_is_the_golden_page(layout_cli, tmp_path):
    pairs = _pairs(layout_cli)
    assert len(pairs) >= len(d.formats())
    for fmt, writer in pairs:
        rb = STATE_ROW_BYTES if fmt == "fp32_state" else None
        for rows, seed in ((64, 0), (5, 12345678901234567890)):
            inp, page, manifest = _cli_golden(layout_cli, tmp_path, fmt, writer, rows, seed)
            g = d.golden(fmt, writer, rows=rows, seed=seed, row_bytes=rb)
            assert g.input.tobytes() == inp and g.page.tobytes() == page and g.manifest_text == manifest, (fmt, writer)
            # the codec on the golden input writes the golden page
            assert d.quantize_rows(fmt, g.input, writer, row_bytes=rb).tobytes() == page, (fmt, writer)
            # float32 input: BF16 formats round it to BF16 to nearest even (exact here: the input is BF16)
            x32 = g.input if fmt == "fp32_state" else (g.input.astype(np.uint32) << 16).view(np.float32)
            assert d.quantize_rows(fmt, x32, writer, row_bytes=rb).tobytes() == page, (fmt, writer)


def test_golden_write_is_the_cli_directory(layout_cli, tmp_path):
    inp, page, manifest = _cli_golden(layout_cli, tmp_path, "v4.fp8_ds_mla", "vllm", 64, 3)
    out = tmp_path / "py"
    d.golden("v4.fp8_ds_mla", "vllm", rows=64, seed=3).write(out)
    assert (out / "input.bf16").read_bytes() == inp and (out / "page.bin").read_bytes() == page
    assert (out / "manifest.json").read_text() == manifest


def test_golden_write_refuses_what_is_not_a_directory_or_regular_file(tmp_path):
    """Golden.write takes the CLI's rule (file_io.hpp): a FIFO, socket, device, dangling or
    looping symlink where DIR or one of its files should be is ValueError naming the path and
    what it is, and nothing is written; a symlink to a regular file is written through."""
    g = d.golden("v4.bf16", rows=2, seed=1)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match=f"--out {re.escape(str(fifo))}: a FIFO; the output must be a new or existing"):
        g.write(fifo)
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / "page.bin")
    with pytest.raises(ValueError, match=re.escape(f"--out {out / 'page.bin'}: a FIFO; an output is written only")):
        g.write(out)
    assert sorted(p.name for p in out.iterdir()) == ["page.bin"] and stat.S_ISFIFO(os.lstat(out / "page.bin").st_mode)
    os.unlink(out / "page.bin")
    (out / "manifest.json").mkdir()
    with pytest.raises(ValueError, match=re.escape(f"--out {out / 'manifest.json'}: a directory")):
        g.write(out)
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json"]
    os.rmdir(out / "manifest.json")
    os.symlink("loop", out / "loop")
    os.symlink("../elsewhere", out / "input.bf16")
    (tmp_path / "elsewhere").write_bytes(b"old")
    g.write(out)
    assert os.path.islink(out / "input.bf16") and (tmp_path / "elsewhere").read_bytes() == g.input.tobytes()
    with pytest.raises(ValueError, match="a symlink loop"):
        g.write(out / "loop")


def test_pages_of_n_rows():
    g = d.golden("v4.fp8_ds_mla", rows=10, seed=1)
    pages = d.quantize_rows("v4.fp8_ds_mla", g.input, rows_per_page=4)
    f = {x.name: x for x in d.formats()}["v4.fp8_ds_mla"]
    assert pages.shape == (3, f.page_bytes(4)) and f.values_per_row == g.input.shape[1] == 512
    for p in range(3):  # page p holds rows 4p.., the last one 2 rows and zero slots
        one = d.quantize_rows("v4.fp8_ds_mla", g.input[4 * p:4 * p + 4], rows_per_page=4)
        assert (pages[p] == one[0]).all()
    back = d.dequantize_rows(f, pages, 4, count=10)
    assert (back == d.dequantize_rows(f, d.quantize_rows(f, g.input), 10)).all()


def test_dequantize_round_trips_and_dtypes():
    # fp32_state and BF16 rows are stored exactly
    x = d.golden("fp32_state", rows=8, seed=2, row_bytes=4096).input
    page = d.quantize_rows("fp32_state", x, row_bytes=4096)
    assert (d.dequantize_rows("fp32_state", page, 8, row_bytes=4096) == x).all()
    g = d.golden("v4.bf16", rows=8, seed=2)
    y = d.dequantize_rows("v4.bf16", d.quantize_rows("v4.bf16", g.input), 8, dtype="uint16")
    assert (y == g.input).all()
    # a quantized format: BF16 output is the float32 output rounded to BF16 (to nearest even)
    g = d.golden("v4.fp8_ds_mla", rows=16, seed=9)
    f = d.dequantize_rows("v4.fp8_ds_mla", g.page, 16)
    b = d.dequantize_rows("v4.fp8_ds_mla", g.page, 16, dtype="uint16")
    u = f.view(np.uint32).astype(np.uint64)
    rne = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    assert f.dtype == np.float32 and f.shape == (16, g.input.shape[1]) and (b == rne).all()
    assert d.dequantize_rows("v4.fp8_ds_mla", g.page, 16, count=5).shape == (5, g.input.shape[1])
    # the error E4M3 with a power-of-two scale 2^e per 64 values allows (e = ceil(log2(amax / 448))):
    # half a unit of the last place, 1/16 of |x| for normals, 2^(e-10) for subnormals; RoPE is BF16
    x = (g.input.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    xb = x[:, :448].reshape(16, 7, 64)
    amax = np.abs(xb).max(axis=2, keepdims=True)
    scale = 2.0 ** np.ceil(np.log2(np.maximum(amax, 2.0**-120) / 448))
    err = np.abs(f[:, :448].astype(np.float64).reshape(16, 7, 64) - xb)
    assert np.all(err <= np.maximum(np.abs(xb) / 16, scale * 2.0**-10))
    assert (f[:, 448:] == x[:, 448:]).all()


def test_out_is_written_in_place_and_returned():
    g = d.golden("v4.indexer_fp8", rows=32, seed=4)
    out = np.full(g.page.shape, 0xAB, np.uint8)  # old bytes are zeroed first
    r = d.quantize_rows("v4.indexer_fp8", g.input, out=out)
    assert r is out and out.tobytes() == g.page.tobytes()
    flat = np.empty(g.page.size, np.uint8)
    assert d.quantize_rows("v4.indexer_fp8", g.input, out=flat) is flat and (flat == g.page).all()
    y = np.empty((32, g.input.shape[1]), np.float32)
    assert d.dequantize_rows("v4.indexer_fp8", g.page, 32, out=y) is y
    assert (y == d.dequantize_rows("v4.indexer_fp8", g.page, 32)).all()
    yb = np.empty((32, g.input.shape[1]), np.uint16)
    assert d.dequantize_rows("v4.indexer_fp8", g.page, 32, out=yb) is yb


def test_ml_dtypes_bfloat16():
    ml_dtypes = pytest.importorskip("ml_dtypes", reason="ml_dtypes is not installed")
    g = d.golden("v4.fp8_ds_mla", rows=8, seed=5)
    xb = g.input.view(ml_dtypes.bfloat16)
    assert (d.quantize_rows("v4.fp8_ds_mla", xb) == g.page.reshape(1, -1)).all()
    y = d.dequantize_rows("v4.fp8_ds_mla", g.page, 8, dtype="bfloat16")
    assert y.dtype == ml_dtypes.bfloat16
    assert (y.view(np.uint16) == d.dequantize_rows("v4.fp8_ds_mla", g.page, 8, dtype="uint16")).all()
    out = np.empty(y.shape, ml_dtypes.bfloat16)
    assert d.dequantize_rows("v4.fp8_ds_mla", g.page, 8, out=out) is out and (out.view(np.uint16) == y.view(np.uint16)).all()


def test_torch_tensors_without_a_copy():
    torch = pytest.importorskip("torch", reason="torch is not installed (the DLPack zero-copy tests need it)")
    g = d.golden("v4.fp8_ds_mla", rows=16, seed=6)
    x = torch.from_numpy(g.input.view(np.int16)).view(torch.bfloat16)  # the golden BF16 rows as a torch tensor
    out = torch.zeros((1, g.page.size), dtype=torch.uint8)
    ptr = out.data_ptr()
    r = d.quantize_rows("v4.fp8_ds_mla", x, out=out)
    assert r is out and out.data_ptr() == ptr  # the tensor's own storage, written in place
    assert bytes(out.numpy().tobytes()) == g.page.tobytes()
    y = torch.empty((16, g.input.shape[1]), dtype=torch.bfloat16)
    yp = y.data_ptr()
    assert d.dequantize_rows("v4.fp8_ds_mla", out, 16, out=y) is y and y.data_ptr() == yp
    ref = d.dequantize_rows("v4.fp8_ds_mla", g.page, 16, dtype="uint16")
    assert (y.view(torch.int16).numpy().view(np.uint16) == ref).all()
    yf = torch.empty((16, g.input.shape[1]), dtype=torch.float32)
    d.dequantize_rows("v4.fp8_ds_mla", out, 16, out=yf)
    assert (yf.numpy() == d.dequantize_rows("v4.fp8_ds_mla", g.page, 16)).all()
    with pytest.raises(ValueError, match="C-contiguous"):
        d.quantize_rows("v4.fp8_ds_mla", torch.zeros((g.input.shape[1], 16), dtype=torch.bfloat16).t())


def test_write_file_takes_the_clis_rule(tmp_path):
    """write_file is dsv4-cache-plan --svg's checked write: a regular file keeps its mode, a FIFO
    or a missing folder is ValueError naming the path, nothing written."""
    f = tmp_path / "plan.svg"
    f.write_bytes(b"old")
    os.chmod(f, 0o640)
    d.write_file(f, b"new")
    assert f.read_bytes() == b"new" and stat.S_IMODE(os.stat(f).st_mode) == 0o640
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(ValueError, match=re.escape(f"path {tmp_path / 'fifo'}: a FIFO; an output is written only")):
        d.write_file(tmp_path / "fifo", b"x")
    with pytest.raises(ValueError, match=re.escape(f"--out {tmp_path / 'no' / 'x'}: folder {tmp_path / 'no'} does not")):
        d.write_file(tmp_path / "no" / "x", b"x", label="--out")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fifo", "plan.svg"]
