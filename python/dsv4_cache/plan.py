"""Plans: what a deployment's KV cache takes under an engine's rules, and whether N x L fits.

`plan()` is `dsv4-cache-plan` with Python arguments: the same flags, parsed by the CLI's own
option table, computed by the same functions, so `plan(...).to_dict()` equals
`dsv4-cache-plan --json` for the same flags.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

from . import _core
from ._args import FLAGS, call, flag_args
from .model import GroupSpec, Model, groups_of

_PLAN_PARAMS = tuple(p for p in FLAGS if p != "rank")
Size = Union[int, float, str]


@dataclass(frozen=True)
class Verdict:
    """The operator screen's verdict (dsv4-cache-plan --json `verdict`).

    One headline number: max_requests, what really fits = the requests of L the engine's
    allocator, replayed on its pools, holds at once (the cluster's with parallel flags; the plan's
    bound where the replay is not run or cut short, max_requests_by_plan with by_plan_why; "at
    least" when max_requests_lower_bound). fits: None without a budget, else requests <=
    max_requests. limit: the limit that binds it ("budget", "running cap", "startup check",
    "single-request limit"), limit_text its sentence. plan_max_requests: the plan's bound (what its
    bytes guarantee), bound: its labelled sentence. simulated_max_requests: the replay's answer
    (None when not replayed). why: why N does not fit; line: the screen's verdict line.
    """

    has_budget: bool
    requests: int
    context_tokens: int
    line: str
    fits: Optional[bool] = None
    plan_max_requests: Optional[int] = None
    engine_starts: Optional[bool] = None
    simulated_max_requests: Optional[int] = None
    simulated_lower_bound: Optional[bool] = None
    max_requests: Optional[int] = None
    max_requests_lower_bound: Optional[bool] = None
    max_requests_by_plan: Optional[bool] = None
    by_plan_why: Optional[str] = None
    limit: Optional[str] = None
    limit_text: Optional[str] = None
    bound: Optional[str] = None
    why: Optional[str] = None

    def __bool__(self) -> bool:
        return bool(self.fits)

    def __str__(self) -> str:
        return self.line


@dataclass(frozen=True)
class Hint:
    """One flag change that plans more requests in the same budget (the screen's hint)."""

    flag: str
    requests_now: int
    requests_then: int
    why: str


class Plan:
    """A computed plan: `to_dict()` is dsv4-cache-plan --json; `screen()`, `summary()`,
    `tables()` and `svg()` its other outputs. Sizes are bytes, contexts tokens."""

    __slots__ = ("_report", "_dict", "model")

    def __init__(self, report: Any, model: Model) -> None:
        self._report = report
        self._dict: Dict[str, Any] = json.loads(report.json())
        self.model = model

    def to_dict(self) -> Dict[str, Any]:
        """The report as dsv4-cache-plan --json prints it (a deep copy)."""
        return copy.deepcopy(self._dict)

    @property
    def total_bytes(self) -> int:
        """Bytes the plan holds per GPU (rank 0's with parallel flags: see `ranks`)."""
        return self._dict["plan"]["total_bytes"]

    @property
    def fits(self) -> Optional[bool]:
        """Whether N x L fits the budget (None without one)."""
        return self._dict["fits"]

    @property
    def verdict(self) -> Verdict:
        return Verdict(**self._dict["verdict"])

    @property
    def hint(self) -> Optional[Hint]:
        h = self._dict["hint"]
        return Hint(**h) if h else None

    @property
    def breakdown(self) -> Dict[str, Any]:
        """Where the worst GPU's bytes go; the parts sum to `total_bytes` of that GPU."""
        return copy.deepcopy(self._dict["breakdown"])

    @property
    def groups(self) -> Tuple[GroupSpec, ...]:
        return groups_of(self._dict)

    @property
    def assumptions(self) -> Dict[str, Dict[str, Any]]:
        """Every input as planned (dsv4-cache-plan --json `assumptions`): {input: {"value",
        "source": "flag" | "engine default" | "planner default", "reference": the engine code that
        sets the default, "repo path@commit symbol", None when given}}."""
        return self._dict["assumptions"]

    @property
    def engine_report(self) -> Optional[Dict[str, Any]]:
        """The engine's pool, its startup log figures and (with a budget) what really fits."""
        r = self._dict.get("engine_report")
        return copy.deepcopy(r) if r is not None else None

    @property
    def ranks(self) -> List[Dict[str, Any]]:
        """Every rank's plan with parallel flags (empty without)."""
        return copy.deepcopy(self._dict.get("ranks", []))

    @property
    def cluster(self) -> Optional[Dict[str, Any]]:
        """The worst rank and (with a budget) what the whole cluster fits; None without parallel flags."""
        c = self._dict.get("cluster")
        return copy.deepcopy(c) if c is not None else None

    def screen(self) -> str:
        """The operator screen, dsv4-cache-plan's default output."""
        return self._report.screen()

    def summary(self) -> str:
        """The verdict in one line (dsv4-cache-plan --summary)."""
        return self._report.summary()

    def tables(self) -> str:
        """Every table (dsv4-cache-plan --verbose)."""
        return self._report.tables()

    def svg(self) -> str:
        """The plan as SVG text (dsv4-cache-plan --svg): group bars and capacity curves."""
        return call(self._report.svg)

    def __str__(self) -> str:
        return self.screen()

    def __repr__(self) -> str:
        p = self._dict["plan"]
        return (f"Plan({self.model.name!r}, engine={p['engine']!r}, requests={p['requests']}, "
                f"context_tokens={p['context_tokens']}, total_bytes={p['total_bytes']})")


def _require_model(model: Any) -> Model:
    if not isinstance(model, Model):
        raise ValueError(f"model must be a dsv4_cache.Model (Model.preset(...) or Model.from_config(...)), got {model!r}")
    return model


def plan(model: Model, engine: str = "vllm", requests: int = 1, context: Optional[int] = None,
         prefill_chunk: Optional[int] = None, tokens_per_step: Optional[int] = None, *,
         memory_gib: Optional[Size] = None, gpu_memory_gib: Optional[Size] = None, reserved_gib: Optional[Size] = None,
         pools: Optional[str] = None, max_running_requests: Optional[int] = None,
         swa_full_tokens_ratio: Optional[float] = None, overlap: Optional[bool] = None, simulate: bool = False,
         mtp: Optional[bool] = None, gpu: Optional[str] = None, enable_dp_attention: bool = False,
         indexer: Optional[str] = None,
         format_set: Optional[str] = None, kv_format: Optional[str] = None,
         formats: Optional[Mapping[str, str]] = None, indexer_format: Optional[str] = None, tp: Optional[int] = None,
         dp: Optional[int] = None, pp: Optional[int] = None, pp_layers: Any = None, dcp: Optional[int] = None,
         dcp_interleave: Optional[int] = None, role: Optional[str] = None, handover: Optional[int] = None,
         gpu_memory_utilization: Optional[float] = None, mem_fraction_static: Optional[float] = None,
         kv_cache_memory_bytes: Optional[int] = None, ep: Optional[int] = None) -> Plan:
    """The KV-cache plan of `model` for `requests` requests of `context` tokens under `engine`.

    Each parameter is the dsv4-cache-plan flag of its name (`memory_gib` is --memory-gib, ...;
    `mtp=True` / `mtp=False` is --mtp / --no-mtp, `overlap=True` / `False` --overlap /
    --no-overlap, `formats={"v4.swa_kv": "v4.fp8_uniform"}` is --format, `pp_layers` a list of
    layer counts or "22,21"); None leaves the input to the engine's default (the flag absent:
    async / overlap scheduling on, no draft layer, the engine's step budget and running cap), as
    `to_dict()["assumptions"]` says. Units: tokens (context,
    prefill_chunk, tokens_per_step), GiB per GPU (memory_gib, gpu_memory_gib, reserved_gib: a
    number, or a string with a unit, "141GB"), requests (requests, max_running_requests).
    context=None is the model's max_position_embeddings. `gpu` without a budget derives it as the
    engine does (`to_dict()["budget"]`: the GPU's memory x the engine's fraction,
    gpu_memory_utilization / mem_fraction_static, minus the weights per GPU, split by tp / dp / ep /
    pp, minus a runtime reserve estimate; kv_cache_memory_bytes: vLLM's fixed budget in bytes).
    `to_dict()` of the result equals
    dsv4-cache-plan --json for the same flags.

    Raises ValueError naming the parameter and its value with the CLI's rule (requests < 1, an
    engine that does not model the model, a budget below one byte, parallel sizes that do not
    divide, ...). `engine="sglang"` and `simulate=True` replay the engine's allocator (seconds).
    """
    model = _require_model(model)
    params = dict(engine=engine, requests=requests, context=context, prefill_chunk=prefill_chunk,
                  tokens_per_step=tokens_per_step, memory_gib=memory_gib, gpu_memory_gib=gpu_memory_gib,
                  reserved_gib=reserved_gib, pools=pools, max_running_requests=max_running_requests,
                  swa_full_tokens_ratio=swa_full_tokens_ratio, overlap=overlap, simulate=simulate, mtp=mtp,
                  gpu=gpu, enable_dp_attention=enable_dp_attention,
                  indexer=indexer, format_set=format_set, kv_format=kv_format, formats=formats,
                  indexer_format=indexer_format, tp=tp, dp=dp, pp=pp, pp_layers=pp_layers, dcp=dcp,
                  dcp_interleave=dcp_interleave, role=role, handover=handover,
                  gpu_memory_utilization=gpu_memory_utilization, mem_fraction_static=mem_fraction_static,
                  kv_cache_memory_bytes=kv_cache_memory_bytes, ep=ep)
    argv = model._argv + flag_args(params, _PLAN_PARAMS)
    return Plan(call(_core.plan, argv, model._config_text, model._config_name), model)


@dataclass(frozen=True)
class Capacity:
    """What a budget fits (dsv4-cache-plan --memory-gib): `max_requests` of `context_tokens`
    tokens, what really fits (the verdict's headline: the engine's allocator replayed, the
    cluster's with parallel flags), `plan_max_requests` the plan's bound (what its bytes
    guarantee, capped at the engine's running cap), `max_context_tokens` for `requests` requests
    (the plan's), `fits` for requests x context_tokens, the `verdict` and the `plan` they come
    from."""

    requests: int
    context_tokens: int
    budget_bytes: int
    max_requests: int
    plan_max_requests: int
    max_context_tokens: int
    fits: bool
    verdict: Verdict
    plan: Plan


def capacity(model: Model, memory_gib: Optional[Size] = None, *, engine: str = "vllm", requests: int = 1,
             context: Optional[int] = None, **kwargs: Any) -> Capacity:
    """How many requests of `context` tokens, and how long a context for `requests` requests,
    fit a budget of `memory_gib` GiB per GPU (or `gpu_memory_gib` minus `reserved_gib`) under
    `engine`. Other keywords are `plan()`'s. Raises ValueError without a budget, and as `plan()`.
    """
    if memory_gib is None and kwargs.get("gpu_memory_gib") is None:
        raise ValueError("memory_gib (or gpu_memory_gib with reserved_gib) is required: the budget per GPU in GiB")
    p = plan(model, engine=engine, requests=requests, context=context, memory_gib=memory_gib, **kwargs)
    d = p._dict
    fit = d.get("cluster") if d.get("parallel") else d["plan"]
    budget = d["plan"]["budget_bytes"]
    return Capacity(requests=d["plan"]["requests"], context_tokens=d["plan"]["context_tokens"], budget_bytes=budget,
                    max_requests=d["verdict"]["max_requests"],
                    plan_max_requests=d["verdict"]["plan_max_requests"],
                    max_context_tokens=fit["max_context_tokens"], fits=bool(d["fits"]), verdict=p.verdict, plan=p)


def engine_report(model: Model, engine: str = "vllm", **kwargs: Any) -> Dict[str, Any]:
    """The engine's own view of the plan (dsv4-cache-plan --json `engine_report`): its pool
    (vLLM's shared block pool, tokenspeed's parent arena, SGLang's pools), the figures it logs at
    startup and, with a budget, what really fits. Keywords are `plan()`'s; errors as `plan()`."""
    r = plan(model, engine=engine, **kwargs).engine_report
    if r is None:
        raise ValueError(f"engine={engine!r} has no engine report for these arguments")
    return r


def rank_plans(model: Model, **kwargs: Any) -> List[Dict[str, Any]]:
    """Every GPU rank's plan (dsv4-cache-plan --json `ranks`) for the parallel layout given by
    `tp`, `dp`, `pp`, `pp_layers`, `dcp` (at least one above 1). Keywords are `plan()`'s."""
    if all(kwargs.get(k) in (None, 1) for k in ("tp", "dp", "pp", "dcp")) and kwargs.get("pp_layers") is None:
        raise ValueError("rank_plans needs tp, dp, pp or dcp above 1 (a parallel layout)")
    return plan(model, **kwargs).ranks


def simulate(model: Model, **kwargs: Any) -> Plan:
    """`plan()` with the engine's allocator replayed (dsv4-cache-plan --simulate): the result's
    `to_dict()["plan"]` holds `simulated_peak_bytes`, `simulations` and the peak pages beside the
    plan's. Refused (ValueError) above 4096 requests or an estimated 4e10 request steps."""
    kwargs["simulate"] = True
    return plan(model, **kwargs)
