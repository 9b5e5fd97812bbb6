"""Row formats and their codecs: the registry, quantize / dequantize of rows in pages, golden pages.

Arrays are numpy arrays or, through DLPack, torch CPU tensors (read and written in place, no
copy). BF16 values are uint16 bit patterns, `ml_dtypes.bfloat16` or `torch.bfloat16`; float32
values are rounded to BF16 to nearest even for a BF16 format (fp32_state takes float32 as is).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple, Union

import numpy as np

from . import _core
from ._args import text


@dataclass(frozen=True)
class Format:
    """A registered row format (dsv4-cache-layout formats --json, plus its writers).

    name: registry name ("v4.fp8_ds_mla", ...); model: "v4", "v4.1", "v3.2" or "any"; role:
    "main_kv", "indexer_k" or "state"; row_bytes: bytes a row takes in a page (None for
    fp32_state, bound per group); page_rule: "split_padded" (padded to `alignment` bytes),
    "split" or "interleaved"; values_per_row: values a row holds (None for fp32_state: row
    bytes / 4); fields: {data, scales, rope}: each {type, count, block} or None; source: where
    the layout is read; writers: the producers whose writers it models, the default first.
    """

    name: str
    model: str
    role: str
    row_bytes: Optional[int]
    page_rule: str
    alignment: Optional[int]
    values_per_row: Optional[int]
    fields: Dict[str, Any]
    source: str
    writers: Tuple[str, ...]

    def page_bytes(self, rows: int, row_bytes: Optional[int] = None) -> int:
        """Bytes of a page of `rows` rows, padding included (fp32_state: give `row_bytes`)."""
        if _int("rows", rows) < 1:
            raise ValueError(f"rows must be >= 1, got {rows}")
        return _core.page_bytes(self.name, int(rows), _int("row_bytes", row_bytes or 0))


def _int(name: str, v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise ValueError(f"{name} must be an int, got {v!r} ({type(v).__name__})")
    if not -(2**63) <= int(v) < 2**63:
        raise ValueError(f"{name} must fit in 64 bits, got {int(v)}")
    return int(v)


_FORMATS: Optional[Tuple[Format, ...]] = None


def formats() -> Tuple[Format, ...]:
    """Every registered row format, in registry order."""
    global _FORMATS
    if _FORMATS is None:
        writers = {f["format"]: tuple(w["name"] for w in f["writers"]) for f in _core.writers_table()["formats"]}
        out = []
        for f in _core.formats_table(64):
            out.append(Format(name=f["name"], model=f["model"], role=f["role"], row_bytes=f["row_bytes"],
                              page_rule=f["page_rule"], alignment=f["alignment"],
                              values_per_row=None if f["row_bytes"] is None else _core.values_per_row(f["name"]),
                              fields=f["fields"], source=f["source"], writers=writers.get(f["name"], ())))
        _FORMATS = tuple(out)
    return _FORMATS


def _format_name(format: Union[str, Format]) -> str:
    if isinstance(format, Format):
        return format.name
    if not isinstance(format, str):
        raise ValueError(f"format must be a format name or a dsv4_cache.Format, got {format!r}")
    return text("format", format)


def _writer_name(writer: Optional[str]) -> str:
    if writer is None:
        return "default"
    if not isinstance(writer, str):
        raise ValueError(f"writer must be a producer name (str) or None, got {writer!r}")
    return text("writer", writer)


def _is_torch(a: Any) -> bool:
    return type(a).__module__.startswith("torch")


# numpy kinds the codecs read or write: unsigned / signed ints (uint8 pages, 16-bit BF16 bits)
# and floats (float32); the compiled module checks the exact dtype and names the one it wants.
_ARRAY_KINDS = "uif"


def _as_array(a: Any, name: str, writable: bool) -> Any:
    """`a` as the compiled module takes it: numpy arrays (ml_dtypes.bfloat16 viewed as uint16) and
    DLPack tensors as they are; anything else array-like through numpy (input only)."""
    if isinstance(a, np.ndarray):
        if writable and not a.flags.writeable:
            raise ValueError(f"{name} must be writable, got a read-only array")
        if a.dtype.name == "bfloat16":
            return a.view(np.uint16)
        if a.dtype.kind not in _ARRAY_KINDS:
            raise ValueError(f"{name} must be a numeric array (uint8 pages, BF16 or float32 values), got dtype "
                             f"{a.dtype}")
        return a
    if _is_torch(a) or hasattr(a, "__dlpack__"):
        return a
    if writable or a is None or np.isscalar(a):
        raise ValueError(f"{name} must be a numpy array or a DLPack tensor, got {type(a).__name__}")
    try:
        return np.ascontiguousarray(np.asarray(a, dtype=np.float32))
    except (TypeError, ValueError) as e:
        raise ValueError(f"{name} must be an array of rows x values: {e}") from None


def _array_call(fn, *args):
    """fn(*args); an array that nanobind cannot take (a broken __dlpack__, a read-only or
    broadcast tensor, a dtype DLPack has no code for) is bad input: ValueError, not TypeError."""
    try:
        return fn(*args)
    except TypeError as e:
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise ValueError(f"x, pages and out must be writable (out) C-contiguous CPU arrays of a supported dtype: "
                         f"{first}") from None


def _overlap(a: Any, b: Any) -> bool:
    return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and np.may_share_memory(a, b)


def quantize_rows(format: Union[str, Format], x: Any, writer: Optional[str] = None, *,
                  rows_per_page: Optional[int] = None, row_bytes: Optional[int] = None, out: Any = None) -> Any:
    """Quantizes the rows of `x` into pages of `format`, as `writer` writes them.

    x: rows x values_per_row values (BF16 bit patterns as uint16, ml_dtypes.bfloat16,
    torch.bfloat16 or float32; C-contiguous, on the CPU). rows_per_page: N, rows per page
    (default: every row in one page). writer: a producer the format models (`Format.writers`;
    default its first). row_bytes: fp32_state only, its row bytes. Returns uint8 pages of shape
    (ceil(rows / N), page_bytes(N)): page p holds rows [p N, (p + 1) N) in slots 0.., the bytes
    the format's writer writes into a zeroed page (padding and unused slots zero): for N = rows
    the golden page of these rows. With `out` (uint8, that shape, or flat), writes into it in
    place (its old bytes zeroed first) and returns `out` itself.

    Raises ValueError naming the parameter: an unknown format or writer, a shape, dtype or
    layout `x` / `out` cannot have; nothing is written unless every check passes.
    """
    name = _format_name(format)
    w = _writer_name(writer)
    rb = 0 if row_bytes is None else _int("row_bytes", row_bytes)
    n = 0 if rows_per_page is None else _int("rows_per_page", rows_per_page)
    if rows_per_page is not None and n < 1:
        raise ValueError(f"rows_per_page must be >= 1, got {n}")
    xa = _as_array(x, "x", writable=False)
    if out is None:
        result = np.zeros(_array_call(_core.quantize_shape, name, w, xa, n, rb), dtype=np.uint8)
        _array_call(_core.quantize_rows, name, w, xa, n, rb, result)
        return result
    oa = _as_array(out, "out", writable=True)
    if _overlap(xa, oa):
        raise ValueError("out must not overlap x (out is zeroed before x is read)")
    _array_call(_core.quantize_rows, name, w, xa, n, rb, oa)
    return out


_DTYPES = ("float32", "bfloat16", "uint16")


def dequantize_rows(format: Union[str, Format], pages: Any, rows: int, dtype: Any = "float32", *,
                    writer: Optional[str] = None, count: Optional[int] = None, row_bytes: Optional[int] = None,
                    out: Any = None) -> Any:
    """Dequantizes rows from pages of `format` of `rows` rows each (N, rows per page).

    pages: uint8, shape (pages, page_bytes(N)) or flat, C-contiguous, on the CPU. count: rows to
    read, in page order (default every slot of every page). dtype: "float32" (default),
    "bfloat16" (ml_dtypes.bfloat16 when installed, else uint16 bit patterns) or "uint16" (BF16 bit
    patterns). Returns count x values_per_row values, bit for bit the C++ `dequantize_rows`'s.
    With `out` (float32 or a 16-bit BF16 array of that shape, numpy or torch), writes into it in
    place and returns `out` itself. Raises ValueError naming the parameter for a shape, dtype or
    size the format's pages cannot have.
    """
    name = _format_name(format)
    w = _writer_name(writer)
    n = _int("rows", rows)
    rb = 0 if row_bytes is None else _int("row_bytes", row_bytes)
    c = -1 if count is None else _int("count", count)
    if count is not None and c < 1:
        raise ValueError(f"count must be >= 1, got {c}")
    pa = _as_array(pages, "pages", writable=False)
    if out is not None:
        oa = _as_array(out, "out", writable=True)
        if _overlap(pa, oa):
            raise ValueError("out must not overlap pages")
        _array_call(_core.dequantize_rows, name, w, pa, n, rb, c, oa)
        return out
    try:
        dt = dtype if isinstance(dtype, str) else np.dtype(dtype).name
    except TypeError:
        dt = None
    if dt not in _DTYPES:
        raise ValueError(f"dtype must be 'float32', 'bfloat16' or 'uint16', got {dtype!r}")
    shape = _array_call(_core.dequantize_shape, name, w, pa, n, rb, c)
    if dt == "float32":
        result = np.empty(shape, dtype=np.float32)
        _array_call(_core.dequantize_rows, name, w, pa, n, rb, c, result)
        return result
    bits = np.empty(shape, dtype=np.uint16)
    _array_call(_core.dequantize_rows, name, w, pa, n, rb, c, bits)
    if dt == "bfloat16":
        try:
            import ml_dtypes  # noqa: PLC0415 (optional)
        except ImportError:
            return bits
        return bits.view(ml_dtypes.bfloat16)
    return bits


@dataclass(frozen=True)
class Golden:
    """A golden page (dsv4-cache-layout golden): `input` (rows x values BF16 bit patterns as
    uint16, float32 for fp32_state), `page` (uint8, the page bytes), the `manifest` (dict and
    `manifest_text`, byte for byte the CLI's manifest.json) and each file's SHA-256."""

    format: str
    writer: str
    rows: int
    seed: int
    input_name: str
    input: np.ndarray
    page: np.ndarray
    manifest: Dict[str, Any]
    manifest_text: str
    sha256: Dict[str, str]

    def write(self, directory: Union[str, "os.PathLike[str]"]) -> None:
        """Writes input.bf16 (or input.f32), page.bin and manifest.json into `directory` as the
        CLI does: all or nothing (temporary files renamed, the manifest last). `directory` must be
        a new or existing directory you may write, and each of the three files in it new, a
        regular file you may write or a symlink to one (written through): a device, FIFO,
        socket, directory, dangling or looping symlink there raises ValueError naming the path
        and what it is, nothing written. Raises OSError when the system fails a write (nothing
        left half-written)."""
        files = [(self.input_name, self.input.tobytes()), ("page.bin", self.page.tobytes()),
                 ("manifest.json", self.manifest_text.encode())]
        if not isinstance(directory, (str, bytes, os.PathLike)):
            raise ValueError(f"directory must be a path, got {type(directory).__name__}")
        path = os.fspath(directory)
        path = text("directory", os.fsdecode(path) if isinstance(path, bytes) else path)
        try:
            _core.write_files(path, files)
        except RuntimeError as e:
            raise OSError(str(e)) from None


def write_file(path: Union[str, "os.PathLike[str]"], data: bytes, *, label: str = "path") -> None:
    """Writes `data` to `path` as the CLIs write their file outputs (dsv4-cache-plan --svg FILE):
    `path` must be a new file in a folder you may write, a regular file you may write (it keeps
    its mode and owner) or a symlink to one (written through: the link stays). A device, FIFO,
    socket, directory, dangling or looping symlink, or a file or folder you may not write raises
    ValueError naming `label`, the path and what it is, nothing written. The write is all or
    nothing (a temporary file in the same folder, synced, renamed over it); OSError with the
    system's reason when the system fails it, nothing left behind."""
    if not isinstance(path, (str, bytes, os.PathLike)):
        raise ValueError(f"{label} must be a path, got {type(path).__name__}")
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise ValueError(f"data must be bytes, got {type(data).__name__}")
    p = os.fspath(path)
    p = text(label, os.fsdecode(p) if isinstance(p, bytes) else p)
    try:
        _core.write_file(p, bytes(data), text("label", label))
    except RuntimeError as e:
        raise OSError(str(e)) from None


def golden(format: Union[str, Format], writer: Optional[str] = None, rows: int = 64, seed: int = 0, *,
           row_bytes: Optional[int] = None) -> Golden:
    """The golden page of `rows` rows (1 to 65,536) of `format` under `writer` from the SplitMix64
    input of `seed` (a uint64), as `dsv4-cache-layout golden FORMAT --writer W --rows N --seed S`
    writes it. Raises ValueError naming the value and the rule (unknown format or writer, rows,
    seed, row_bytes)."""
    name = _format_name(format)
    w = _writer_name(writer)
    n = _int("rows", rows)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= int(seed) < 2**64:
        raise ValueError(f"seed must be an int in [0, 2^64), got {seed!r}")
    rb = 0 if row_bytes is None else _int("row_bytes", row_bytes)
    try:
        input_name, inp, page, manifest_text, in_sha, page_sha, man_sha = _core.golden(name, w, n, int(seed), rb)
    except ValueError as e:
        msg = str(e).replace("--rows", "rows").replace("--row-bytes", "row_bytes").replace("give row_bytes B", "give row_bytes")
        raise ValueError(msg) from None
    manifest = json.loads(manifest_text)
    values = manifest["values_per_row"]
    dt = np.float32 if input_name == "input.f32" else np.uint16
    return Golden(format=manifest["format"], writer=manifest["writer"], rows=manifest["rows"], seed=int(seed),
                  input_name=input_name, input=np.frombuffer(inp, dtype=dt).reshape(-1, values).copy(),
                  page=np.frombuffer(page, dtype=np.uint8).copy(), manifest=manifest, manifest_text=manifest_text,
                  sha256={input_name: in_sha, "page.bin": page_sha, "manifest.json": man_sha})
