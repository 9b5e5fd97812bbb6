"""The layout contract: a deployment's descriptor, its fingerprint, and diff / check of descriptors.

`describe()` and `fingerprint()` take a model and the layout flags of `dsv4-cache-layout
describe` (formats, parallel layout, `engine` to record its placement, `rank`); `diff()` and
`check()` take descriptors as dicts or as paths of the files `describe` wrote.
"""

from __future__ import annotations

import json
import numbers
import os
import re
import stat
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

from . import _core
from ._args import call, fill, text
from .plan import _require_model
from .model import Model

_LAYOUT_PARAMS = ("indexer", "format_set", "kv_format", "formats", "indexer_format", "tp", "dp", "pp", "pp_layers",
                  "dcp", "dcp_interleave", "mtp", "tokens_per_step", "context", "requests", "gpu")
Descriptor = Union[Mapping[str, Any], str, "os.PathLike[str]"]


def _contract_args(model: Model, engine: Optional[str], rank: Optional[int],
                   layout: Dict[str, Any]) -> _core.ContractArgs:
    """The C++ contract_args of describe / fingerprint: the model's and the layout keywords'
    typed fields, the engine whose placement to record, the rank (no command line is built)."""
    model = _require_model(model)
    c = _core.ContractArgs()
    c.plan = fill(model._args(), layout, _LAYOUT_PARAMS)
    if engine is not None:
        c.plan = fill(c.plan, {"engine": engine}, ("engine",))
        c.engine_given = True
    if rank is not None:
        c.rank = _rank(rank)
    return c


def _rank(rank: Any) -> int:
    if isinstance(rank, bool) or not isinstance(rank, numbers.Integral):
        raise ValueError(f"rank must be an int, got {rank!r} ({type(rank).__name__})")
    if not -2**63 <= int(rank) < 2**63:
        raise ValueError(f"rank must fit in 64 bits, got {int(rank)}")
    return int(rank)


def describe(model: Model, *, engine: Optional[str] = None, rank: Optional[int] = None, **layout: Any) -> Dict[str, Any]:
    """The descriptor of the cache layout of `model` (dsv4-cache-layout describe): {"schema",
    "fingerprint" ("0x" + 16 hex digits), "layout" (the canonical layout), "info"}. With
    parallel flags (`tp`, `dp`, `pp`, `dcp`) the layout is rank `rank`'s (default 0);
    `engine` records the engine's placement (schema dsv4-cache-layout/2). Other keywords:
    indexer, format_set, kv_format, formats, indexer_format, pp_layers, dcp_interleave, mtp,
    tokens_per_step. Raises ValueError as the CLI (naming the parameter)."""
    return call(_core.describe, _contract_args(model, engine, rank, layout))


def layout(model: Model, *, engine: Optional[str] = None, rank: Optional[int] = None,
           **layout: Any) -> _core.Layout:
    """The typed cache layout of `model` (`Layout`, the C++ cache_layout `describe()`'s descriptor
    is made of): `family`, `layers`, `groups` (`GroupSpec`), `engine`, `canonical`, `fingerprint`;
    two layouts compare equal when their canonical bytes are. Keywords as `describe()`."""
    return call(_core.layout, _contract_args(model, engine, rank, layout))


def fingerprint(model_or_descriptor: Union[Model, Descriptor], *, engine: Optional[str] = None,
                rank: Optional[int] = None, **layout: Any) -> int:
    """The layout's fingerprint as an int (XXH64 of its canonical bytes; the CLI prints it as
    0x + 16 hex digits): of `model` under the layout keywords of `describe()`, or of a descriptor
    (a dict or a file), checked first (ValueError if a number in it is wrong)."""
    if isinstance(model_or_descriptor, Model):
        return call(_core.fingerprint, _contract_args(model_or_descriptor, engine, rank, layout))
    if engine is not None or rank is not None or layout:
        raise ValueError("layout keywords are for a model; a descriptor carries its own layout")
    c = check(model_or_descriptor)
    if not c.ok or c.fingerprint is None:
        raise ValueError(f"descriptor: {c.wrong}")
    return c.fingerprint


# Largest descriptor file read (a descriptor is a few KiB; this bounds a wrong path's read).
_MAX_DESCRIPTOR_BYTES = 16 << 20


def _descriptor_text(d: Descriptor, param: str) -> Tuple[str, str]:
    if isinstance(d, Mapping):
        try:
            return text(param, json.dumps(d, allow_nan=False)), param
        except (TypeError, ValueError, RecursionError) as e:
            raise ValueError(f"{param} must be a descriptor (a JSON object): {e}") from None
    if isinstance(d, (str, bytes, os.PathLike)):
        path = os.fspath(d)
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        text(param, path)
        try:
            st = os.stat(path)
            if not stat.S_ISREG(st.st_mode):
                raise ValueError(f"{param}: {path} is not a regular file (a directory, a device or a FIFO): "
                                 "not a descriptor")
            if st.st_size > _MAX_DESCRIPTOR_BYTES:
                raise ValueError(f"{param}: {path} is {st.st_size} bytes, over the {_MAX_DESCRIPTOR_BYTES} a "
                                 "descriptor may take")
            with open(path, "rb") as f:
                raw = f.read(_MAX_DESCRIPTOR_BYTES + 1)
        except OSError as e:
            raise ValueError(f"{param}: cannot read {path!r}: {e.strerror or e}") from None
        if not raw:
            raise ValueError(f"{param}: {path} is empty (0 bytes), not a descriptor")
        try:
            return raw.decode("utf-8"), path
        except UnicodeDecodeError as e:
            raise ValueError(f"{param}: {path} is not UTF-8 text ({e.reason} at byte {e.start}): not a "
                             "descriptor") from None
    raise ValueError(f"{param} must be a descriptor dict or a path, got {type(d).__name__}")


_FINGERPRINT = re.compile(r"0x[0-9a-f]{16}")


@dataclass(frozen=True)
class CheckResult:
    """`check()`'s answer: ok, or the first wrong number as "path: value, but <rule> gives <want>";
    `fingerprint` the descriptor's (checked when ok; None when it is not 0x + 16 hex digits)."""

    ok: bool
    wrong: Optional[str]
    fingerprint: Optional[int]

    def __bool__(self) -> bool:
        return self.ok


def check(descriptor: Descriptor) -> CheckResult:
    """Recomputes every derived number of `descriptor` from the format registry and the
    fingerprint (dsv4-cache-layout check). Raises ValueError for what is not a descriptor (not
    JSON, another schema, a key its schema does not define), naming the parameter or the file."""
    text, name = _descriptor_text(descriptor, "descriptor")
    wrong, fp = call(_core.check, text, name)
    return CheckResult(ok=not wrong, wrong=wrong or None,
                       fingerprint=int(fp, 16) if _FINGERPRINT.fullmatch(fp) else None)


@dataclass(frozen=True)
class Difference:
    """One difference of two layouts; lower `rank` = more consequential (see `Diff`)."""

    rank: int
    text: str


@dataclass(frozen=True)
class Diff:
    """`diff()`'s answer: verdict "identical", "compatible" (for page transfer: only layer sets,
    the rank part or the engine's name differ, every page has the same bytes) or "incompatible";
    `code` the CLI's exit code (0, 4, 1); `text` what the CLI prints; the differences, most
    consequential first."""

    verdict: str
    code: int
    text: str
    differences: Tuple[Difference, ...]

    @property
    def identical(self) -> bool:
        return self.code == 0

    @property
    def compatible(self) -> bool:
        """Whether a page transfer between the two stays byte-exact (identical or compatible)."""
        return self.code in (0, 4)

    def __str__(self) -> str:
        return self.text


def diff(a: Descriptor, b: Descriptor) -> Diff:
    """The differences of descriptors `a` and `b` (dsv4-cache-layout diff). Both must pass
    `check()` first: one that does not is bad input (ValueError naming it)."""
    a_text, a_name = _descriptor_text(a, "a")
    b_text, b_name = _descriptor_text(b, "b")
    code, text, diffs = call(_core.diff, a_text, b_text, a_name, b_name)
    verdict = {0: "identical", 4: "compatible", 1: "incompatible"}[code]
    return Diff(verdict=verdict, code=code, text=text, differences=tuple(Difference(r, t) for r, t in diffs))


@dataclass(frozen=True)
class Transfer:
    """`transfer()`'s answer: the manifest of one request between two descriptors, as
    `dsv4-cache-layout transfer` computes it. `refused` says why the layouts cannot exchange pages
    (the CLI's exit 1; then the rest is empty); `manifest` is `--json` (per group the entries,
    blocks, bytes and merged ranges; `bytes_moved`, `bytes_held`, `ranges`,
    `ranges_before_merge`), `nixl` and `mooncake` the wire shapes of `--nixl` / `--mooncake`,
    `text` what the CLI prints."""

    refused: Optional[str]
    manifest: Dict[str, Any]
    nixl: Dict[str, Any]
    mooncake: Dict[str, Any]
    text: str

    def __bool__(self) -> bool:
        return self.refused is None

    def __str__(self) -> str:
        return self.text


_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1


def _block_tables(blocks: Any) -> Optional[Tuple[List[List[int]], List[List[int]]]]:
    if blocks is None:
        return None
    if not isinstance(blocks, Mapping) or set(blocks) != {"prefill", "decode"}:
        raise ValueError('blocks must be {"prefill": [[ids] per engine group], "decode": [...]}')
    out = []
    for side in ("prefill", "decode"):
        tables = blocks[side]
        if not isinstance(tables, (list, tuple)):
            raise ValueError(f"blocks[{side!r}] must be a list of block tables")
        rows = []
        for g, ids in enumerate(tables):
            if not isinstance(ids, (list, tuple)) or any(isinstance(x, bool) or not isinstance(x, int) for x in ids):
                raise ValueError(f"blocks[{side!r}][{g}] must be a list of integer block ids")
            for x in ids:
                if not _INT64_MIN <= x <= _INT64_MAX:
                    raise ValueError(f"blocks[{side!r}][{g}]: block id {x} is outside [-2^63, 2^63)")
            rows.append([int(x) for x in ids])
        out.append(rows)
    return out[0], out[1]


def transfer(prefill: Descriptor, decode: Descriptor, *, prompt_len: int, prefix: int = 0,
             blocks: Optional[Mapping[str, Any]] = None, prefill_dp_rank: int = 0,
             decode_dp_rank: int = 0) -> Transfer:
    """One request's prefill -> decode transfer manifest (dsv4-cache-layout transfer): the byte
    ranges the engine's connector moves between the two descriptors' pools (both written by
    `describe(..., engine="vllm")`: vLLM's NIXL connector, or `engine="tokenspeed"`: its PD
    transfer), for a prompt of `prompt_len` tokens, `prefix` of them
    cached on the decode side, the block tables `blocks` ({"prefill": [[ids] per engine group],
    "decode": [...]}; None: a dry run). Bad input (a block id outside the pool, a table shorter
    than the prompt, a descriptor without the engine's placement) is a ValueError naming it."""
    p_text, p_name = _descriptor_text(prefill, "prefill")
    d_text, d_name = _descriptor_text(decode, "decode")
    for name, v in (("prompt_len", prompt_len), ("prefix", prefix), ("prefill_dp_rank", prefill_dp_rank),
                    ("decode_dp_rank", decode_dp_rank)):
        if isinstance(v, bool) or not isinstance(v, int):
            raise ValueError(f"{name} must be an integer, got {type(v).__name__}")
        if not _INT64_MIN <= v <= _INT64_MAX:  # the C++ side takes 64-bit integers
            raise ValueError(f"{name} {v} is outside [-2^63, 2^63)")
    refused, manifest, nixl, mooncake, screen = call(_core.transfer, p_text, d_text, p_name, d_name, prompt_len,
                                                     prefix, _block_tables(blocks), prefill_dp_rank, decode_dp_rank)
    if refused:
        return Transfer(refused=refused, manifest={}, nixl={}, mooncake={}, text=screen)
    return Transfer(refused=None, manifest=json.loads(manifest), nixl=json.loads(nixl), mooncake=json.loads(mooncake),
                    text=screen)
