"""Models: a built-in preset or a config.json, its layer schedule and its group specs."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

from . import _core
from ._args import call, text


@dataclass(frozen=True)
class Layer:
    """One layer of the schedule (dsv4-cache-plan --json `layers[i]`).

    index: 0-based layer; attention: "swa", "csa", "hca" (V4), V4.1's and V3.2's kinds;
    compress_ratio: tokens per compressed row (0 or 1 for uncompressed); mtp: an MTP layer;
    cached: its caches are planned (MTP layers unless mtp=False); bytes_per_context_token: bytes
    of full-history rows a token of context adds in this layer (all pools); fixed_bytes_per_request:
    bytes its sliding rows (SWA window, compressor states) take per request whatever the context;
    role, kv_owner: V4.1 only (the layer whose caches it reads), else None.
    """

    index: int
    attention: str
    compress_ratio: int
    mtp: bool
    cached: bool
    bytes_per_context_token: float
    fixed_bytes_per_request: int
    role: Optional[str] = None
    kv_owner: Optional[int] = None


@dataclass(frozen=True)
class Pool:
    """One pool of a group: its row format and sizes in bytes (`row_bytes` per row, `page_bytes` per page)."""

    format: str
    row_bytes: int
    page_bytes: int


@dataclass(frozen=True)
class GroupSpec:
    """A paged cache group (dsv4-cache-plan --json `groups[i]`, without the plan's page counts).

    id: e.g. "v4.swa_kv"; retention: "full" or "sliding"; rows_per_page: rows (slots) per page;
    entry_stride_tokens: tokens per row; page_size_tokens: tokens a page covers;
    sliding_window_tokens: rows a request keeps (None for full history); num_layers: layers
    sharing the group's block table; row_bytes, page_bytes: over all its pools, per layer.
    """

    id: str
    family: str
    retention: str
    prefix_cache: str
    rows_per_page: int
    entry_stride_tokens: int
    page_size_tokens: int
    sliding_window_tokens: Optional[int]
    num_layers: int
    row_bytes: int
    page_bytes: int
    pools: Tuple[Pool, ...]


def layers_of(plan_dict: Mapping[str, Any]) -> Tuple[Layer, ...]:
    return tuple(Layer(**layer) for layer in plan_dict["layers"])


def groups_of(plan_dict: Mapping[str, Any]) -> Tuple[GroupSpec, ...]:
    fields = GroupSpec.__dataclass_fields__
    out = []
    for g in plan_dict["groups"]:
        kw = {k: v for k, v in g.items() if k in fields and k != "pools"}
        pools = tuple(Pool(p["format"], p["row_bytes"], p["page_bytes"]) for p in g["pools"])
        out.append(GroupSpec(pools=pools, **kw))
    return tuple(out)


class Model:
    """A DeepSeek V4-family model: `Model.preset("v4-flash")` or `Model.from_config(path_or_dict)`.

    Read-only. `name`, `family` ("v4", "v4.1", "v3.2") and the config's sizes come from the
    planner's model section; `layers` is the layer schedule and `groups` the cache group specs
    under the planner's defaults (vLLM, the model's max context). Raises ValueError for an
    unknown preset or a config the library refuses, with the library's rule.
    """

    __slots__ = ("_argv", "_config_text", "_config_name", "_info", "_layers", "_groups")

    def __init__(self) -> None:
        raise TypeError("use Model.preset(name) or Model.from_config(path_or_dict)")

    @classmethod
    def _make(cls, argv: List[str], config_text: str, config_name: str) -> "Model":
        self = object.__new__(cls)
        self._argv = argv
        self._config_text = config_text
        self._config_name = config_name
        d = json.loads(call(_core.plan, argv, config_text, config_name).json())
        self._info: Dict[str, Any] = d["model"]
        self._layers = layers_of(d)
        self._groups = groups_of(d)
        return self

    @classmethod
    def preset(cls, name: str) -> "Model":
        """A built-in model: "v4-flash" (or "flash"), "v4-pro" (or "pro"), "v4.1-flash", "v3.2"."""
        names = _core.preset_names()
        if not isinstance(name, str) or name not in names:
            raise ValueError(f"name must be one of {', '.join(names)}, got {name!r}")
        return cls._make([f"--preset={name}"], "", "")

    @classmethod
    def from_config(cls, config: Union[str, "os.PathLike[str]", Mapping[str, Any]], name: Optional[str] = None) -> "Model":
        """A model from a Hugging Face config.json: a path to the file or to a model directory
        holding one (named after the directory, as dsv4-cache-plan --config), or the config as a
        dict (named `name`, default "DeepSeek V4"). Raises ValueError naming the key and the rule
        for a config the library refuses (a missing key, a list of the wrong length, ...)."""
        if isinstance(config, Mapping):
            try:
                config_text = json.dumps(config, allow_nan=False)
            except (TypeError, ValueError, RecursionError) as e:
                raise ValueError(f"config must be a JSON object (str keys, JSON values): {e}") from None
            text("config (as JSON)", config_text)
            if name is not None:
                text("name", name)
            return cls._make([], config_text, name or "")
        if isinstance(config, (str, bytes, os.PathLike)):
            path = os.fspath(config)
            if isinstance(path, bytes):
                path = os.fsdecode(path)
            text("config (a path)", path)
            if name is not None:
                raise ValueError("name is for a config given as a dict (a file's model is named after its directory)")
            return cls._make([f"--config={path}"], "", "")
        raise ValueError(f"config must be a path or a dict, got {type(config).__name__}")

    @property
    def name(self) -> str:
        return self._info["name"]

    @property
    def family(self) -> str:
        return self._info["family"]

    @property
    def num_hidden_layers(self) -> int:
        return self._info["num_hidden_layers"]

    @property
    def num_nextn_predict_layers(self) -> int:
        return self._info["num_nextn_predict_layers"]

    @property
    def max_position_embeddings(self) -> int:
        return self._info["max_position_embeddings"]

    @property
    def sliding_window(self) -> int:
        return self._info["sliding_window"]

    @property
    def config(self) -> Dict[str, Any]:
        """The planner's model section (dsv4-cache-plan --json `model`), a copy."""
        return json.loads(json.dumps(self._info))

    @property
    def layers(self) -> Tuple[Layer, ...]:
        """The layer schedule, main layers then MTP layers."""
        return self._layers

    @property
    def groups(self) -> Tuple[GroupSpec, ...]:
        """The cache group specs under the planner's defaults."""
        return self._groups

    def __repr__(self) -> str:
        return f"Model({self.name!r}, family={self.family!r}, layers={self.num_hidden_layers}+{self.num_nextn_predict_layers} MTP)"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Model) and (self._argv, self._config_text) == (other._argv, other._config_text)

    def __hash__(self) -> int:
        return hash((tuple(self._argv), self._config_text))
