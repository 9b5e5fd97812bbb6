"""Plans: what a deployment's KV cache takes under an engine's rules, and whether N x L fits.

`plan()` is `dsv4-cache-plan` with Python arguments: each sets a typed field of the C++
`planner_args` (no command line is built), computed by the same C++ `compute()`, so
`plan(...).to_dict()` equals `dsv4-cache-plan --json` for the same flags. The results are the
C++ types, bound: `Plan.result` (`PlanResult`), `Plan.memory_plan` (`MemoryPlan`, its `groups`
`GroupPlan`s), `Plan.verdict` (`Verdict`), `Plan.report` (`EngineReport`), `Plan.rank_plans`
(`RankPlan`s), with the C++ names and units (bytes, tokens, pages, requests).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

from . import _core
from ._args import FLAGS, call, fill
from .model import Model

_PLAN_PARAMS = tuple(p for p in FLAGS if p != "rank")
Size = Union[int, float, str]
Verdict = _core.Verdict
Hint = _core.Hint


class Plan:
    """A computed plan: `to_dict()` is dsv4-cache-plan --json; `screen()`, `summary()`,
    `tables()` and `svg()` its other outputs; `result` the C++ planner_result it holds. Sizes are
    bytes, contexts tokens."""

    __slots__ = ("_args", "_result", "model")

    def __init__(self, args: _core.PlanArgs, result: _core.PlanResult, model: Model) -> None:
        self._args = args
        self._result = result
        self.model = model

    @property
    def result(self) -> _core.PlanResult:
        """The C++ planner_result (`_core.PlanResult`): plan, report, ranks, verdict, hint."""
        return self._result

    def to_dict(self) -> Dict[str, Any]:
        """The report as dsv4-cache-plan --json prints it (new Python objects at each call)."""
        return self._result.to_dict()

    def to_json(self) -> str:
        """The report as dsv4-cache-plan --json prints it, compact JSON text."""
        return self._result.json()

    @property
    def memory_plan(self) -> _core.MemoryPlan:
        """The C++ memory_plan (`MemoryPlan`) of the whole model on one GPU: total_bytes, groups
        (`GroupPlan`), blocks (each rank's: `rank_plans`)."""
        return self._result.plan

    @property
    def total_bytes(self) -> int:
        """Bytes of the plan of the whole model on one GPU (dsv4-cache-plan --json `plan.total_bytes`;
        with parallel flags each rank's are in `rank_plans`, the worst in `cluster`)."""
        return self._result.plan.total_bytes

    @property
    def fits(self) -> Optional[bool]:
        """Whether N x L fits the budget (None without one)."""
        return self._result.verdict.fits

    @property
    def verdict(self) -> Verdict:
        """The operator screen's verdict (`Verdict`, the C++ plan_verdict)."""
        return self._result.verdict

    @property
    def hint(self) -> Optional[Hint]:
        """One flag change that plans more requests in the same budget (`Hint`), or None."""
        return self._result.hint

    @property
    def groups(self) -> Tuple[_core.GroupPlan, ...]:
        """Every group's plan (`GroupPlan`: the group spec's rows, pages and bytes, and its pages here)."""
        return tuple(self._result.plan.groups)

    @property
    def report(self) -> Optional[_core.EngineReport]:
        """The engine's own view (`EngineReport`), None for own pools."""
        return self._result.report

    @property
    def rank_plans(self) -> List[_core.RankPlan]:
        """Every GPU rank's plan (`RankPlan`) with parallel flags (empty without)."""
        return list(self._result.ranks)

    @property
    def breakdown(self) -> Dict[str, Any]:
        """Where the worst GPU's bytes go; the parts sum to `total_bytes` of that GPU."""
        return self.to_dict()["breakdown"]

    @property
    def assumptions(self) -> Dict[str, Dict[str, Any]]:
        """Every input as planned (dsv4-cache-plan --json `assumptions`): {input: {"value",
        "source": "flag" | "engine default" | "planner default", "reference": the engine code that
        sets the default, "repo path@commit symbol", None when given}}."""
        return self.to_dict()["assumptions"]

    @property
    def engine_report(self) -> Optional[Dict[str, Any]]:
        """The engine's pool, its startup log figures and (with a budget) what really fits, every
        figure (dsv4-cache-plan --json `engine_report`); `report` is the typed object."""
        return self.to_dict().get("engine_report")

    @property
    def ranks(self) -> List[Dict[str, Any]]:
        """Every rank's plan as dsv4-cache-plan --json `ranks` (empty without parallel flags)."""
        return self.to_dict().get("ranks", [])

    @property
    def cluster(self) -> Optional[Dict[str, Any]]:
        """The worst rank and (with a budget) what the whole cluster fits; None without parallel flags."""
        return self.to_dict().get("cluster")

    def screen(self) -> str:
        """The operator screen, dsv4-cache-plan's default output."""
        return self._result.screen()

    def summary(self) -> str:
        """The verdict in one line (dsv4-cache-plan --summary)."""
        return self._result.summary()

    def tables(self) -> str:
        """Every table (dsv4-cache-plan --verbose)."""
        return self._result.tables()

    def svg(self) -> str:
        """The plan as SVG text (dsv4-cache-plan --svg): group bars and capacity curves."""
        return call(_core.svg, self._args, self._result)

    def __str__(self) -> str:
        return self.screen()

    def __repr__(self) -> str:
        p = self._result.plan
        return (f"Plan({self.model.name!r}, engine={p.engine!r}, requests={p.requests}, "
                f"context_tokens={p.context_tokens}, total_bytes={p.total_bytes})")


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
    args = fill(model._args(), params, _PLAN_PARAMS)
    return Plan(args, call(_core.compute, args), model)


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
    d = p.to_dict()
    fit = d["cluster"] if d.get("parallel") else d["plan"]
    budget = d["plan"]["budget_bytes"]
    return Capacity(requests=d["plan"]["requests"], context_tokens=d["plan"]["context_tokens"], budget_bytes=budget,
                    max_requests=d["verdict"]["max_requests"],
                    plan_max_requests=d["verdict"]["plan_max_requests"],
                    max_context_tokens=fit["max_context_tokens"], fits=bool(d["fits"]), verdict=p.verdict, plan=p)


def engine_report(model: Model, engine: str = "vllm", **kwargs: Any) -> _core.EngineReport:
    """The engine's own view of the plan (`EngineReport`, the C++ engine_report): its pool
    structure, scheduling, running cap, startup log lines or refusal and, with a budget, what
    really fits (`fit`, per engine); every figure as JSON is `plan(...).engine_report`. Keywords are
    `plan()`'s; errors as `plan()`."""
    r = plan(model, engine=engine, **kwargs).report
    if r is None:
        raise ValueError(f"engine={engine!r} has no engine report for these arguments")
    return r


def rank_plans(model: Model, **kwargs: Any) -> List[_core.RankPlan]:
    """Every GPU rank's plan (`RankPlan`, the C++ rank_plan_result: its coordinates, layers,
    requests and `plan`, a `MemoryPlan`) for the parallel layout given by `tp`, `dp`, `pp`,
    `pp_layers`, `dcp` (at least one above 1). Keywords are `plan()`'s."""
    if all(kwargs.get(k) in (None, 1) for k in ("tp", "dp", "pp", "dcp")) and kwargs.get("pp_layers") is None:
        raise ValueError("rank_plans needs tp, dp, pp or dcp above 1 (a parallel layout)")
    return plan(model, **kwargs).rank_plans


def simulate(model: Model, **kwargs: Any) -> Plan:
    """`plan()` with the engine's allocator replayed (dsv4-cache-plan --simulate): the result's
    `to_dict()["plan"]` holds `simulated_peak_bytes`, `simulations` and the peak pages beside the
    plan's. Refused (ValueError) above 4096 requests or an estimated 4e10 request steps."""
    kwargs["simulate"] = True
    return plan(model, **kwargs)
