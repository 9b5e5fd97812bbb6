"""Models: a built-in preset or a config.json, its layer schedule and its group specs."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional, Tuple, Union

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


# A group (C++ paged_cache_group_spec) and one of its pools (C++ pool_spec), bound.
GroupSpec = _core.GroupSpec
Pool = _core.PoolSpec


def layers_of(plan_dict: Mapping[str, Any]) -> Tuple[Layer, ...]:
    return tuple(Layer(**layer) for layer in plan_dict["layers"])


class Model:
    """A DeepSeek V4-family model: `Model.preset("v4-flash")` or `Model.from_config(path_or_dict)`.

    Read-only. `name`, `family` ("v4", "v4.1", "v3.2") and the config's sizes come from the
    planner's model section; `layers` is the layer schedule and `groups` the cache group specs
    under the planner's defaults (vLLM, the model's max context). Raises ValueError for an
    unknown preset or a config the library refuses, with the library's rule.
    """

    __slots__ = ("_fields", "_info", "_layers", "_groups")
    _fields: Tuple[Tuple[str, Any], ...]
    _info: Dict[str, Any]
    _layers: Tuple[Layer, ...]
    _groups: Tuple[_core.GroupPlan, ...]

    def __init__(self) -> None:
        raise TypeError("use Model.preset(name) or Model.from_config(path_or_dict)")

    def _args(self) -> _core.PlanArgs:
        """A new `_core.PlanArgs` (the C++ planner_args) holding this model."""
        a = _core.PlanArgs()
        for k, v in self._fields:
            setattr(a, k, v)
        return a

    @classmethod
    def _make(cls, **fields: Any) -> "Model":
        self = object.__new__(cls)
        self._fields = tuple(sorted(fields.items()))
        r = call(_core.compute, self._args())
        d = r.to_dict()
        self._info = d["model"]
        self._layers = layers_of(d)
        self._groups = tuple(r.plan.groups)
        return self

    @classmethod
    def preset(cls, name: str) -> "Model":
        """A built-in model: "v4-flash" (or "flash"), "v4-pro" (or "pro"), "v4.1-flash", "v3.2"."""
        names = _core.preset_names()
        if not isinstance(name, str) or name not in names:
            raise ValueError(f"name must be one of {', '.join(names)}, got {name!r}")
        return cls._make(preset=name, preset_given=True)

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
            return cls._make(config_text=config_text, config_name=name or "", preset_given=False)
        if isinstance(config, (str, bytes, os.PathLike)):
            path = os.fspath(config)
            if isinstance(path, bytes):
                path = os.fsdecode(path)
            text("config (a path)", path)
            if name is not None:
                raise ValueError("name is for a config given as a dict (a file's model is named after its directory)")
            return cls._make(config_path=path, preset_given=False)
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
    def groups(self) -> Tuple[_core.GroupPlan, ...]:
        """The cache groups under the planner's defaults (`GroupPlan`: spec fields, pools, pages)."""
        return self._groups

    def __repr__(self) -> str:
        return f"Model({self.name!r}, family={self.family!r}, layers={self.num_hidden_layers}+{self.num_nextn_predict_layers} MTP)"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Model) and self._fields == other._fields

    def __hash__(self) -> int:
        return hash(self._fields)
