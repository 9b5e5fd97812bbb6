"""dsv4_cache: the KV-cache byte layout of DeepSeek V4-family models (V4, V4.1, V3.2), from Python.

The planner, the engine reports, the layout contract and the row codecs of the dsv4-cache C++
library, compiled from the same headers (no second copy of any rule):

    import dsv4_cache as d
    m = d.Model.preset("v4-pro")
    p = d.plan(m, engine="vllm", requests=64, context=131072, tp=8, memory_gib=60)
    print(p.verdict)            # the operator screen's verdict line
    p.to_dict()                 # == dsv4-cache-plan --preset v4-pro ... --json

Models: `Model.preset`, `Model.from_config`. Plans: `plan`, `capacity`, `engine_report`,
`rank_plans`, `simulate` (a `Plan`, its `Verdict`). The results are the C++ types, bound with
their C++ names (no command line, no JSON text in between): `PlanResult`, `MemoryPlan` and its
`GroupPlan`s and `PoolSpec`s, `RankPlan`, `EngineReport`, `EngineFit`, `Verdict`, `Hint`.
Contract: `describe`, `layout` (the typed `Layout`), `fingerprint`, `diff`, `check`. Formats
and codecs: `formats`, `quantize_rows`, `dequantize_rows`, `golden`.
Files: `write_file` (the CLIs' checked, all-or-nothing write: `Plan.svg()` to a file, say).
Bad input raises ValueError naming the parameter, its value and the rule.
"""

from __future__ import annotations

from .codec import Format, Golden, dequantize_rows, formats, golden, quantize_rows, write_file
from .contract import CheckResult, Diff, Difference, Transfer, check, describe, diff, fingerprint, layout, transfer
from .model import GroupSpec, Layer, Model, Pool
from .plan import Capacity, Hint, Plan, Verdict, capacity, engine_report, plan, rank_plans, simulate
from ._core import EngineFit, EngineReport, GroupPlan, Layout, MemoryPlan, PlanResult, PoolSpec, RankPlan

__version__ = "0.1.0"

__all__ = [
    "Capacity", "CheckResult", "Diff", "Difference", "EngineFit", "EngineReport", "Format", "Golden", "GroupPlan",
    "GroupSpec", "Hint", "Layer", "Layout", "MemoryPlan", "Model", "Plan", "PlanResult", "Pool", "PoolSpec",
    "RankPlan", "Transfer", "Verdict", "capacity", "check", "dequantize_rows", "describe", "diff", "engine_report", "fingerprint",
    "formats", "golden", "layout", "plan", "quantize_rows", "rank_plans", "simulate", "transfer", "write_file",
]
