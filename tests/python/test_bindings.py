"""The package binds the typed C++ core: every object against dsv4-cache-plan --json on a grid,
the typed inputs' errors, and that no command line is built (no CLI parser is linked in).

The CLI's JSON is the independent side: it is parsed here from the C++ program's stdout, and
each typed property is compared with the key the CLI prints for it.
"""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path

import pytest

import dsv4_cache as d
from dsv4_cache import _core

# (preset, plan() keywords, the same plan as dsv4-cache-plan flags)
GRID = [
    ("v4-flash", {}, []),
    ("v4-flash", dict(memory_gib=64, context=131072), ["--memory-gib", "64", "--context", "131072"]),
    ("v4-flash", dict(engine="tokenspeed", memory_gib=40, requests=8, context=65536),
     ["--engine", "tokenspeed", "--memory-gib", "40", "--requests", "8", "--context", "65536"]),
    ("v4-flash", dict(engine="sglang", memory_gib=64, context=262144),
     ["--engine", "sglang", "--memory-gib", "64", "--context", "262144"]),
    ("v4-pro", dict(tp=8, memory_gib=60, context=131072, requests=64),
     ["--tp", "8", "--memory-gib", "60", "--context", "131072", "--requests", "64"]),
    ("v4-pro", dict(tp=4, pp=2, context=65536, requests=16), ["--tp", "4", "--pp", "2", "--context", "65536",
                                                               "--requests", "16"]),
    ("v4.1-flash", dict(memory_gib="80GB", context=65536, requests=16, gpu="b200"),
     ["--memory-gib", "80GB", "--context", "65536", "--requests", "16", "--gpu", "b200"]),
    ("v3.2", dict(memory_gib=70.5, context=131072, prefill_chunk=4096, pools="own"),
     ["--memory-gib", "70.5", "--context", "131072", "--prefill-chunk", "4096", "--pools", "own"]),
    ("v4-flash", dict(indexer="mxfp4", gpu="b200", mtp=True, overlap=False, context=32768, memory_gib=30),
     ["--indexer", "mxfp4", "--gpu", "b200", "--mtp", "--no-overlap", "--context", "32768", "--memory-gib", "30"]),
]


def _group_fields(g):
    return (g.id, g.family, g.retention, g.prefix_cache, g.rows_per_page, g.entry_stride_tokens, g.page_size_tokens,
            g.sliding_window_tokens, g.num_layers, g.row_bytes, g.page_bytes, g.pages_per_request, g.shared_pages,
            g.pages, g.bytes, g.ideal_bytes,
            [(p.format, p.row_bytes, p.page_bytes, n) for p, n in zip(g.pools, g.pool_pages)])


def _json_group_fields(g):
    return (g["id"], g["family"], g["retention"], g["prefix_cache"], g["rows_per_page"], g["entry_stride_tokens"],
            g["page_size_tokens"], g["sliding_window_tokens"], g["num_layers"], g["row_bytes"], g["page_bytes"],
            g["pages_per_request"], g["shared_pages"], g["pages"], g["bytes"], g["ideal_bytes"],
            [(p["format"], p["row_bytes"], p["page_bytes"], p["pages_per_layer"]) for p in g["pools"]])


VERDICT_KEYS = ("has_budget", "requests", "context_tokens", "plan_max_requests", "engine_starts",
                "simulated_max_requests", "simulated_lower_bound", "max_requests", "max_requests_lower_bound",
                "max_requests_by_plan", "by_plan_why", "limit", "limit_text", "why", "line", "bound")


@pytest.mark.parametrize("preset,kwargs,flags", GRID, ids=[f"{c[0]}-{i}" for i, c in enumerate(GRID)])
def test_every_typed_object_is_the_cli_json(plan_cli, preset, kwargs, flags):
    p = d.plan(d.Model.preset(preset), **kwargs)
    j = plan_cli.json(["--preset", preset, *flags, "--json"])
    mp = p.memory_plan
    assert (mp.total_bytes, mp.requests, mp.context_tokens, mp.holding_requests) == (
        j["plan"]["total_bytes"], j["plan"]["requests"], j["plan"]["context_tokens"], j["plan"]["holding_requests"])
    assert p.total_bytes == j["plan"]["total_bytes"]
    assert [_group_fields(g) for g in p.groups] == [_json_group_fields(g) for g in j["groups"]]
    assert p.result.budget_bytes == j["plan"].get("budget_bytes")
    assert (mp.engine, mp.structure, mp.overhead) == (j["plan"]["engine"], j["plan"]["pool_structure"], j["plan"]["overhead"])
    v = p.verdict
    for key in VERDICT_KEYS:  # the keys the CLI prints (without a budget only the first three and the line)
        if key in j["verdict"]:
            want = j["verdict"][key]
            if want is None and key in ("by_plan_why", "why"):
                want = ""  # the C++ string's "none"
            assert getattr(v, key) == want, key
    assert set(j["verdict"]) - {"fits"} <= set(VERDICT_KEYS)
    assert v.fits == j["fits"] and p.fits == j["fits"] and bool(v) == bool(j["fits"])
    if j["hint"] is None:
        assert p.hint is None
    else:
        assert (p.hint.flag, p.hint.requests_now, p.hint.requests_then, p.hint.why) == tuple(
            j["hint"][k] for k in ("flag", "requests_now", "requests_then", "why"))
    assert [(r.rank, r.tp_rank, r.dp_rank, r.stage, r.requests, r.plan.total_bytes) for r in p.rank_plans] == [
        (r["rank"], r["tp_rank"], r["dp_rank"], r["stage"], r["requests"], r["total_bytes"]) for r in j.get("ranks", [])]
    er = j.get("engine_report")
    if er is None:
        assert p.report is None
    else:
        r = p.report
        assert (r.engine, r.structure, r.async_scheduling, r.max_running or None) == (
            er["engine"], er["structure"], er["async_scheduling"], er["max_running_requests"])
        if "simulated_max_requests" in er and er["simulated_max_requests"] is not None:
            assert r.fit.simulated and r.fit.max_requests * r.dp == er["simulated_max_requests"]
            assert r.fit.max_context_tokens == er["simulated_max_context_tokens"]
    assert p.to_dict() == j and json.loads(p.to_json()) == j
    assert (p.model.name, p.model.family) == (j["model"]["name"], j["model"]["family"])


def test_the_issue_done_when_line(plan_cli):
    """`d.plan(d.Model.preset('v4-flash')).total_bytes` is the CLI's figure, through the bindings."""
    p = d.plan(d.Model.preset("v4-flash"))
    assert isinstance(p.result, _core.PlanResult) and isinstance(p.memory_plan, _core.MemoryPlan)
    assert p.total_bytes == plan_cli.json(["--json"])["plan"]["total_bytes"]


LAYOUTS = [
    ("v4-flash", {}, []),
    ("v4-flash", dict(engine="vllm", tp=2, pp=2, rank=3), ["--engine", "vllm", "--tp", "2", "--pp", "2", "--rank", "3"]),
    ("v4.1-flash", dict(format_set="v4", dcp=2, tp=2), ["--format-set", "v4", "--dcp", "2", "--tp", "2"]),
    ("v3.2", dict(kv_format="v3.2.fp8_ds_mla", mtp=False), ["--kv-format", "v3.2.fp8_ds_mla", "--no-mtp"]),
]


@pytest.mark.parametrize("preset,kwargs,flags", LAYOUTS, ids=[f"{c[0]}-{i}" for i, c in enumerate(LAYOUTS)])
def test_the_typed_layout_is_the_cli_descriptor(layout_cli, preset, kwargs, flags):
    lay = d.layout(d.Model.preset(preset), **kwargs)
    desc = json.loads(layout_cli.run(["describe", "--preset", preset, *flags]))
    assert isinstance(lay, _core.Layout)
    assert f"0x{lay.fingerprint:016x}" == desc["fingerprint"]
    assert json.loads(lay.canonical) == desc["layout"]  # compacting `layout` gives the canonical bytes back
    assert lay.engine == (desc["layout"]["engine"]["name"] if "engine" in desc["layout"] else None)
    assert [list(x) for x in lay.layers] == [
        [x["index"], x["attention"], x["ratio"], x["role"], x["owner"]] for x in desc["layout"]["layers"]]
    assert [(g.id, g.rows_per_page, g.layers, [(p.format, p.row_bytes, p.page_bytes) for p in g.pools])
            for g in lay.groups] == [
        (g["id"], g["rows_per_page"], g["layers"], [(p["format"], p["row_bytes"], p["page_bytes"]) for p in g["pools"]])
        for g in desc["layout"]["groups"]]
    assert lay == d.layout(d.Model.preset(preset), **kwargs) and hash(lay) == hash(d.layout(d.Model.preset(preset),
                                                                                            **kwargs))
    assert (lay == d.layout(d.Model.preset("v4-pro"))) is False and (lay == 3) is False


def test_plan_args_are_the_cpp_struct_and_raise_the_cli_rules():
    a = _core.PlanArgs()
    assert (a.preset, a.engine, a.requests, a.context, a.pools, a.tp) == ("flash", "vllm", 1, None, "engine", 1)
    a.requests = 0
    with pytest.raises(ValueError, match=r"^--requests: '0' must be at least 1$"):
        _core.compute(a)
    a.requests, a.role = 1, "both"
    with pytest.raises(ValueError, match=r"^--role: both not in \{colocated,prefill,decode\}$"):
        _core.compute(a)
    a.role, a.gpu_memory_utilization = "colocated", float("nan")
    with pytest.raises(ValueError, match=r"--gpu-memory-utilization: 'nan' is not a decimal number"):
        _core.compute(a)
    with pytest.raises(ValueError, match=r"--memory-gib: '3 parsecs' is not a memory size"):
        _core.memory_size_gib("--memory-gib", "3 parsecs")
    assert _core.memory_size_gib("--memory-gib", "141GB") == pytest.approx(141e9 / 2**30, rel=0, abs=1e-12)
    with pytest.raises(ValueError, match=r"^tokens_per_step: '0' must be at least 1$"):
        d.plan(d.Model.preset("v4-flash"), tokens_per_step=0)


def test_no_command_line_is_built():
    """No `_core` function takes an argument list, the package's sources build none, and the
    extension holds none of CLI11's code (its help text would be in the binary)."""
    for name, fn in inspect.getmembers(_core, callable):
        signature = (fn.__doc__ or "").split("\n")[0]  # nanobind's: "name(params) -> result"
        params = signature[signature.find("(") + 1:signature.rfind(")")]
        assert "argv" not in params and "list[str]" not in params and "Sequence[str]" not in params, name
    pkg = Path(d.__file__).parent
    for src in pkg.glob("*.py"):
        assert "argv" not in src.read_text(), src.name
    so = next(pkg.glob("_core*.so"), None) or next(pkg.glob("_core*.pyd"))
    binary = so.read_bytes()
    for cli11_text in (b"Print this help message and exit", b"CLI11", b"--help"):
        assert cli11_text not in binary, cli11_text


def test_stubs_ship_with_the_typed_classes():
    stub = Path(d.__file__).parent / "_core.pyi"
    assert stub.is_file(), "the type stubs of _core are installed beside it"
    text = stub.read_text()
    for cls in ("PlanArgs", "ContractArgs", "PlanResult", "MemoryPlan", "GroupPlan", "GroupSpec", "PoolSpec",
                "RankPlan", "Verdict", "Hint", "EngineReport", "EngineFit", "Layout"):
        assert re.search(rf"^class {cls}\b", text, re.M), cls
    assert re.search(r"def compute\(args: PlanArgs\) -> PlanResult", text)
    assert re.search(r"def total_bytes\(self\) -> int", text)


def test_the_package_and_a_user_type_check_against_the_stubs(tmp_path):
    """mypy over the installed package (its modules use the stubs' types) and over a user's code
    that reads typed results: the stubs are complete enough that neither has an error."""
    import shutil
    import subprocess
    import sys

    pytest.importorskip("mypy", reason="mypy is not installed (python/requirements.txt installs it)")
    pkg = tmp_path / "dsv4_cache"
    shutil.copytree(Path(d.__file__).parent, pkg, ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyd"))
    user = tmp_path / "user.py"
    user.write_text(
        "import dsv4_cache as d\n"
        "p = d.plan(d.Model.preset('v4-flash'))\n"
        "x: int = p.total_bytes + p.groups[0].page_bytes + p.memory_plan.groups[0].spec.rows_per_page\n"
        "line: str = p.verdict.line\n"
        "r = p.report\n"
        "if r is not None and r.fit is not None:\n"
        "    n: int = r.fit.max_requests\n"
        "lay = d.layout(d.Model.preset('v4-pro'), tp=8)\n"
        "fp: int = lay.fingerprint\n"
        "bad: str = p.total_bytes\n")  # the one error mypy must find: the stubs say int
    r = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", "-p", "dsv4_cache"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", "user.py"], cwd=tmp_path,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 1 and "user.py:10: error: Incompatible types in assignment" in r.stdout, r.stdout
    assert r.stdout.count("error:") == 1, r.stdout


def test_what_a_hostile_run_found():
    """Each case a hostile run of the typed API found (issue 44): refused with ValueError naming
    the value, or answered; none hangs, crashes or raises another exception."""
    flash = d.Model.preset("v4-flash")
    with pytest.raises(ValueError, match=r"^engine sglang: prefill_chunk 128 is below SGLang's page of 256 tokens"):
        d.plan(d.Model.preset("v4-pro"), engine="sglang", context=8192, prefill_chunk=128, memory_gib=60)
    lay = d.layout(flash)
    assert (lay == None) is False and (lay != None) is True and lay not in [None, 3]  # noqa: E711
    for bad in (b"30,31", bytearray(b"1"), {30: 1, 31: 2}, 5):
        with pytest.raises(ValueError, match=r"pp_layers must be a str or a list of int layer counts"):
            d.plan(flash, pp=2, pp_layers=bad)
    a = _core.PlanArgs()
    a.kv_format = "v4.fp8\x00_ds_mla"
    with pytest.raises(ValueError, match=r"^--kv-format: must not hold a NUL byte, got 'v4.fp8.x00_ds_mla'$"):
        _core.compute(a)
    good = _core.compute(_core.PlanArgs())
    b = _core.PlanArgs()
    b.tp = -5
    with pytest.raises(ValueError, match=r"^--tp: '-5' must be at least 1$"):
        _core.svg(b, good)
