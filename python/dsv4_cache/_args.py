"""Python keyword arguments as the fields of the C++ `planner_args`, and the library's error
messages in Python's names.

The package computes nothing of its own and builds no command line: `plan()` and the contract
functions set the typed fields of a `_core.PlanArgs` (the C++ struct dsv4-cache-plan fills from
its flags) and call the C++ functions on it, which check every value with the CLI's rules, so a
result is the CLI's for the same flags and an error its message, the flag named as the parameter.
"""

from __future__ import annotations

import math
import numbers
import re
from typing import Any, Dict, Iterable, Mapping

from . import _core

# Python parameter -> the CLI flag of the same input (the library's messages name flags).
FLAGS: Dict[str, str] = {
    "engine": "--engine",
    "requests": "--requests",
    "context": "--context",
    "memory_gib": "--memory-gib",
    "gpu_memory_gib": "--gpu-memory-gib",
    "reserved_gib": "--reserved-gib",
    "gpu_memory_utilization": "--gpu-memory-utilization",
    "mem_fraction_static": "--mem-fraction-static",
    "kv_cache_memory_bytes": "--kv-cache-memory-bytes",
    "ep": "--ep",
    "prefill_chunk": "--prefill-chunk",
    "tokens_per_step": "--tokens-per-step",
    "pools": "--pools",
    "max_running_requests": "--max-running-requests",
    "swa_full_tokens_ratio": "--swa-full-tokens-ratio",
    "overlap": "--overlap",
    "simulate": "--simulate",
    "mtp": "--mtp",
    "gpu": "--gpu",
    "enable_dp_attention": "--enable-dp-attention",
    "indexer": "--indexer",
    "format_set": "--format-set",
    "kv_format": "--kv-format",
    "formats": "--format",
    "indexer_format": "--indexer-format",
    "tp": "--tp",
    "dp": "--dp",
    "pp": "--pp",
    "pp_layers": "--pp-layers",
    "dcp": "--dcp",
    "dcp_interleave": "--dcp-interleave",
    "role": "--role",
    "handover": "--handover",
    "rank": "--rank",
}
_PARAM_OF_FLAG = {flag: param for param, flag in FLAGS.items()}
_PARAM_OF_FLAG["--no-mtp"] = "mtp=False"
_PARAM_OF_FLAG["--no-overlap"] = "overlap=False"
# Defaults an engine sets: None leaves them to the engine (the CLI's flag absent), True and False
# give the flag that turns them on or off.
TWO_WAY_FLAGS: Dict[str, tuple] = {"overlap": ("--overlap", "--no-overlap"), "mtp": ("--mtp", "--no-mtp")}
_PARAM_OF_FLAG["--preset"] = "Model.preset()"
_PARAM_OF_FLAG["--config"] = "Model.from_config()"

INT_PARAMS = {
    "requests", "context", "prefill_chunk", "tokens_per_step", "max_running_requests", "tp", "dp", "pp", "dcp",
    "dcp_interleave", "handover", "rank", "kv_cache_memory_bytes", "ep",
}
SIZE_PARAMS = {"memory_gib", "gpu_memory_gib", "reserved_gib"}  # GiB, or a string with a unit: "141GB"
FLOAT_PARAMS = {"swa_full_tokens_ratio", "gpu_memory_utilization", "mem_fraction_static"}
BOOL_PARAMS = {"overlap", "simulate", "mtp", "enable_dp_attention"}
STR_PARAMS = {"engine", "pools", "indexer", "format_set", "kv_format", "indexer_format", "role", "gpu"}
_INT64_MAX = 2**63 - 1


# The library's own names of what a parameter sets (its messages name the plan option).
_PARAM_OF_OPTION = {"prefill_chunk_tokens": "prefill_chunk", "context_tokens": "context",
                    "dcp_interleave_rows": "dcp_interleave"}


def text(name: str, value: Any, *, empty: bool = False) -> str:
    """`value` as the compiled module takes a string: a str of valid UTF-8 without NUL bytes
    (a NUL would end it early) and, unless `empty`, not empty. Raises ValueError naming `name`."""
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a str, got {value!r} ({type(value).__name__})")
    if "\x00" in value:
        raise ValueError(f"{name} must not hold a NUL byte, got {value!r}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{name} must be valid Unicode (no lone surrogates), got {value!r}") from None
    if not empty and not value:
        raise ValueError(f"{name} must not be empty")
    return value


def python_names(message: str) -> str:
    """`message` with every CLI flag it names replaced by the Python parameter that sets it
    ("--preset v4-pro:" by "Model.preset('v4-pro'):", the model the error is about)."""
    message = re.sub(r"--preset (\S+):", r"Model.preset('\1'):", message)
    message = re.sub(r"--config (\S+):", r"Model.from_config('\1'):", message)
    message = re.sub(r"\b(prefill_chunk_tokens|context_tokens|dcp_interleave_rows)\b",
                     lambda m: _PARAM_OF_OPTION[m.group(0)], message)
    return re.sub(r"--[a-z][a-z0-9-]*", lambda m: _PARAM_OF_FLAG.get(m.group(0), m.group(0)), message)


def _number(name: str, value: Any) -> float:
    """`value` as a finite float; ValueError naming `name` otherwise (a bool, a str, nan, inf, an
    int too large for a double)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a number, got {value!r} ({type(value).__name__})")
    try:
        v = float(value)  # numpy floats and fractions too (never truncated to an int)
    except OverflowError:
        raise ValueError(f"{name} must be a finite number, got {value!r}") from None
    if not math.isfinite(v):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return v


# Python parameter -> the field of the C++ planner_args (`_core.PlanArgs`) it sets.
FIELDS: Dict[str, str] = {
    "max_running_requests": "max_running", "swa_full_tokens_ratio": "swa_ratio",
    "enable_dp_attention": "dp_attention", "formats": "group_formats",
}


def fill(args: _core.PlanArgs, params: Mapping[str, Any], allowed: Iterable[str]) -> _core.PlanArgs:
    """Sets the fields of `args` (a `_core.PlanArgs`) from `params` (parameters left at None
    are not set: the engine's default). Raises ValueError for a parameter of the wrong type,
    naming it and its value (the rules on values are the C++ `check_values`' and `compute`'s), and
    TypeError for a keyword not in `allowed`. Builds no command line: each value goes to its
    typed field."""
    allowed = set(allowed)
    for name, value in params.items():
        if name not in allowed:  # as Python's own calls: an unknown keyword is a TypeError
            raise TypeError(f"unexpected keyword argument {name!r} (accepted: {', '.join(sorted(allowed))})")
        if value is None:
            continue
        field = FIELDS.get(name, name)
        if name in BOOL_PARAMS:
            if not isinstance(value, bool):
                raise ValueError(f"{name} must be True or False, got {value!r}")
            if name in TWO_WAY_FLAGS:  # None: the engine's default; True / False: --x / --no-x
                setattr(args, field if value else "no_" + field, True)
            else:
                setattr(args, field, value)
        elif name in INT_PARAMS:
            if isinstance(value, bool) or not isinstance(value, numbers.Integral):
                raise ValueError(f"{name} must be an int, got {value!r} ({type(value).__name__})")
            if not -_INT64_MAX - 1 <= int(value) <= _INT64_MAX:
                raise ValueError(f"{name} must fit in 64 bits, got {int(value)}")
            setattr(args, field, int(value))
        elif name in SIZE_PARAMS:  # GiB; a string with a unit goes through the CLI's own rule
            if isinstance(value, str):
                size = call(_core.memory_size_gib, FLAGS[name], text(name, value))
            elif isinstance(value, numbers.Integral) and not isinstance(value, bool):
                size = call(_core.memory_size_gib, FLAGS[name], str(int(value)))  # exact, as the CLI reads it
            else:
                size = _number(name, value)
            setattr(args, field, size)
        elif name in FLOAT_PARAMS:
            setattr(args, field, _number(name, value))
        elif name == "formats":
            if not isinstance(value, Mapping):
                raise ValueError(f"formats must be a dict of group -> format name, got {value!r}")
            items = []
            for group, fmt in value.items():
                if not isinstance(group, str) or not isinstance(fmt, str):
                    raise ValueError(f"formats must map group names to format names (str), got {group!r}: {fmt!r}")
                text("formats key", group)
                text(f"formats[{group!r}]", fmt)
                if "=" in group:
                    raise ValueError(f"formats: a group name has no '=', got {group!r}")
                items.append(f"{group}={fmt}")
            args.group_formats = items
        elif name == "pp_layers":
            if isinstance(value, str):
                layers = text(name, value)
            elif isinstance(value, (bytes, bytearray, Mapping)) or not isinstance(value, Iterable):
                raise ValueError(f"pp_layers must be a str or a list of int layer counts, got {value!r}")
            else:
                try:
                    items = list(value)
                except TypeError:
                    raise ValueError(f"pp_layers must be a list of layer counts, got {value!r}") from None
                if not all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in items):
                    raise ValueError(f"pp_layers must be a list of int layer counts, got {value!r}")
                if not items:
                    raise ValueError("pp_layers must not be empty (one layer count per pipeline stage)")
                layers = ",".join(str(int(v)) for v in items)
            args.pp_layers = layers
        else:  # STR_PARAMS
            setattr(args, field, text(name, value))
    return args


def call(fn, *args):
    """fn(*args), a ValueError's message in Python's parameter names."""
    try:
        return fn(*args)
    except ValueError as e:
        raise ValueError(python_names(str(e))) from None
