"""plan(), capacity(), engine_report(), rank_plans(), simulate() and Model against dsv4-cache-plan.

Each case gives the Python call and the CLI flags written out by hand (not derived from the
package's own flag table), and the two results must be equal as JSON values.
"""

from __future__ import annotations

import pytest

import dsv4_cache as d

# (preset, plan() keywords, the same plan as dsv4-cache-plan flags)
CASES = [
    ("v4-flash", {}, []),
    ("v4-pro", dict(tp=8, memory_gib=60, context=131072, requests=64),
     ["--tp", "8", "--memory-gib", "60", "--context", "131072", "--requests", "64"]),
    ("v4-flash", dict(engine="tokenspeed", memory_gib=40, requests=8, context=65536),
     ["--engine", "tokenspeed", "--memory-gib", "40", "--requests", "8", "--context", "65536"]),
    ("v4-flash", dict(engine="sglang", memory_gib=64, context=262144),
     ["--engine", "sglang", "--memory-gib", "64", "--context", "262144"]),
    ("v4-flash", dict(engine="trtllm", memory_gib=60, context=131072, max_running_requests=256),
     ["--engine", "trtllm", "--memory-gib", "60", "--context", "131072", "--max-running-requests", "256"]),
    ("v4.1-flash", dict(format_set="v4", dp=2, pp=2, memory_gib="80GB", context=65536, requests=16),
     ["--format-set", "v4", "--dp", "2", "--pp", "2", "--memory-gib", "80GB", "--context", "65536", "--requests", "16"]),
    ("v3.2", dict(memory_gib=70.5, context=131072, prefill_chunk=4096),
     ["--memory-gib", "70.5", "--context", "131072", "--prefill-chunk", "4096"]),
    ("v4-pro", dict(engine="tokenspeed", tp=4, dcp=2, dcp_interleave=4, context=65536, requests=32, memory_gib=50),
     ["--engine", "tokenspeed", "--tp", "4", "--dcp", "2", "--dcp-interleave", "4", "--context", "65536",
      "--requests", "32", "--memory-gib", "50"]),
    ("v4-flash", dict(pp=2, pp_layers=[22, 21], mtp=False, tokens_per_step=2, overlap=True),
     ["--pp", "2", "--pp-layers", "22,21", "--no-mtp", "--tokens-per-step", "2", "--overlap"]),
    ("v4-flash", dict(indexer="mxfp4", formats={"v4.swa_kv": "v4.fp8_uniform"}, pools="own", context=32768,
                      gpu="b200"),
     ["--indexer", "mxfp4", "--format", "v4.swa_kv=v4.fp8_uniform", "--pools", "own", "--context", "32768",
      "--gpu", "b200"]),
    ("v4-flash", dict(role="decode", handover=4, requests=8, context=65536, gpu_memory_gib="141GB", reserved_gib=90),
     ["--role", "decode", "--handover", "4", "--requests", "8", "--context", "65536", "--gpu-memory-gib", "141GB",
      "--reserved-gib", "90"]),
    ("v4-flash", dict(requests=4, context=32768, simulate=True, memory_gib=20),
     ["--requests", "4", "--context", "32768", "--simulate", "--memory-gib", "20"]),
]


@pytest.mark.parametrize("preset,kwargs,flags", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_to_dict_is_the_cli_json(plan_cli, preset, kwargs, flags):
    p = d.plan(d.Model.preset(preset), **kwargs)
    assert p.to_dict() == plan_cli.json(["--preset", preset, *flags, "--json"])


@pytest.mark.parametrize("preset,kwargs,flags", CASES[:4], ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES[:4])])
def test_screen_and_summary_are_the_cli_outputs(plan_cli, preset, kwargs, flags):
    p = d.plan(d.Model.preset(preset), **kwargs)
    assert p.screen() == plan_cli.run(["--preset", preset, *flags])
    assert p.summary() == plan_cli.run(["--preset", preset, *flags, "--summary"])
    assert p.tables() == plan_cli.run(["--preset", preset, *flags, "--verbose"])
    assert str(p) == p.screen()


def test_the_readme_done_when_figure(plan_cli):
    total = d.plan(d.Model.preset("v4-flash")).to_dict()["plan"]["total_bytes"]
    assert total == plan_cli.json(["--json"])["plan"]["total_bytes"]
    assert isinstance(total, int) and total > 0


def test_from_config_path_and_dict(plan_cli, data_dir):
    path = data_dir / "deepseek-v4-pro.config.json"
    by_path = d.plan(d.Model.from_config(path), memory_gib=60, context=131072, tp=8)
    assert by_path.to_dict() == plan_cli.json(["--config", str(path), "--memory-gib", "60", "--context", "131072",
                                               "--tp", "8", "--json"])
    import json
    config = json.loads(path.read_text())
    by_dict = d.plan(d.Model.from_config(config, name="DeepSeek-V4-Pro"), memory_gib=60, context=131072, tp=8)
    a, b = by_path.to_dict(), by_dict.to_dict()
    assert b["model"]["name"] == "DeepSeek-V4-Pro"
    a["model"]["name"] = b["model"]["name"]
    assert a == b  # the same config, read from a file or given inline


def test_model_schedule_and_groups(plan_cli):
    m = d.Model.preset("v4-flash")
    j = plan_cli.json(["--preset", "v4-flash", "--json"])
    assert m.name == j["model"]["name"] and m.family == "v4"
    assert m.num_hidden_layers == j["model"]["num_hidden_layers"]
    assert len(m.layers) == len(j["layers"])
    assert [(l.index, l.attention, l.compress_ratio, l.mtp) for l in m.layers] == [
        (l["index"], l["attention"], l["compress_ratio"], l["mtp"]) for l in j["layers"]]
    assert [(g.id, g.rows_per_page, g.row_bytes, g.page_bytes, g.sliding_window_tokens) for g in m.groups] == [
        (g["id"], g["rows_per_page"], g["row_bytes"], g["page_bytes"], g["sliding_window_tokens"]) for g in j["groups"]]
    assert [p.format for p in m.groups[0].pools] == [p["format"] for p in j["groups"][0]["pools"]]
    with pytest.raises(Exception):
        m.layers[0].index = 3  # read-only
    v41 = d.Model.preset("v4.1-flash")
    assert v41.family == "v4.1" and any(l.kv_owner is not None for l in v41.layers)
    assert d.Model.preset("flash") != m and d.Model.preset("v4-flash") == m


def test_capacity_and_verdict(plan_cli):
    m = d.Model.preset("v4-pro")
    c = d.capacity(m, 60, requests=64, context=131072, tp=8)
    j = plan_cli.json(["--preset", "v4-pro", "--memory-gib", "60", "--requests", "64", "--context", "131072",
                       "--tp", "8", "--json"])
    # One headline: what really fits (the replayed allocator); the plan's bound apart.
    assert c.max_requests == j["verdict"]["max_requests"] and c.plan_max_requests == j["verdict"]["plan_max_requests"]
    assert c.plan_max_requests == min(j["cluster"]["max_requests"], j["engine_report"]["max_running_requests"])
    assert c.max_context_tokens == j["cluster"]["max_context_tokens"]
    assert c.budget_bytes == 60 * 2**30 and c.fits is j["fits"] is True
    assert c.verdict.line == j["verdict"]["line"] and c.verdict.max_requests == j["verdict"]["max_requests"]
    assert str(c.verdict) == c.verdict.line and bool(c.verdict)
    big = d.capacity(m, 60, requests=10_000, context=131072, tp=8)
    assert big.fits is False and not big.verdict and big.verdict.why
    one = d.capacity(d.Model.preset("v4-flash"), 64)
    j1 = plan_cli.json(["--memory-gib", "64", "--json"])
    assert (one.max_requests, one.max_context_tokens) == (j1["verdict"]["max_requests"],
                                                          j1["plan"]["max_context_tokens"])
    assert one.plan_max_requests == min(j1["plan"]["max_requests"], 1024)  # vLLM's max_num_seqs


def test_absent_inputs_are_the_engines_defaults(plan_cli):
    """None leaves an input to the engine (the flag absent); True / False give --x / --no-x."""
    m = d.Model.preset("v4-flash")
    for engine in ("vllm", "tokenspeed", "sglang"):
        p = d.plan(m, engine=engine, memory_gib=64, context=1048576)
        j = plan_cli.json(["--engine", engine, "--memory-gib", "64", "--context", "1048576", "--json"])
        assert p.assumptions == j["assumptions"]
        assert p.assumptions["async_scheduling"]["value"] is True  # every engine's default
        assert p.assumptions["async_scheduling"]["source"] == "engine default"
        assert p.assumptions["draft_layer"]["value"] is False
    off = d.plan(m, overlap=False, mtp=True, memory_gib=64)
    assert off.to_dict() == plan_cli.json(["--no-overlap", "--mtp", "--memory-gib", "64", "--json"])
    assert off.assumptions["async_scheduling"] == {"value": False, "source": "flag", "reference": None}
    with pytest.raises(ValueError, match=r"enable_dp_attention: engine vllm@2026.11 has no such flag"):
        d.plan(m, enable_dp_attention=True)
    no_budget = d.plan(m)
    assert no_budget.fits is None and no_budget.verdict.has_budget is False and not no_budget.verdict


def test_hint_breakdown_engine_report_ranks(plan_cli):
    m = d.Model.preset("v4-flash")
    j = plan_cli.json(["--engine", "sglang", "--memory-gib", "64", "--context", "1048576", "--json"])
    p = d.plan(m, engine="sglang", memory_gib=64, context=1048576)
    assert p.hint is not None and p.hint.flag == j["hint"]["flag"] and p.hint.requests_then == j["hint"]["requests_then"]
    assert p.breakdown == j["breakdown"]
    assert p.engine_report == j["engine_report"]
    r = d.engine_report(m, engine="sglang", memory_gib=64, context=1048576)
    assert (r.engine, r.structure, r.fit.max_requests * r.dp, r.log_lines) == (
        j["engine_report"]["engine"], j["engine_report"]["structure"], j["engine_report"]["simulated_max_requests"],
        j["engine_report"]["log_lines"])
    ranks = d.rank_plans(d.Model.preset("v4-pro"), tp=4, pp=2)
    jr = plan_cli.json(["--preset", "v4-pro", "--tp", "4", "--pp", "2", "--json"])
    assert [(r.rank, r.stage, r.requests, r.plan.total_bytes) for r in ranks] == [
        (x["rank"], x["stage"], x["requests"], x["total_bytes"]) for x in jr["ranks"]] and len(ranks) == 8
    s = d.simulate(m, requests=2, context=16384)
    assert s.to_dict()["plan"]["simulated_peak_bytes"] == plan_cli.json(
        ["--requests", "2", "--context", "16384", "--simulate", "--json"])["plan"]["simulated_peak_bytes"]


def test_svg_is_the_cli_file(plan_cli, tmp_path):
    out = tmp_path / "plan.svg"
    plan_cli.run(["--memory-gib", "64", "--context", "131072", "--svg", str(out)])
    assert d.plan(d.Model.preset("v4-flash"), memory_gib=64, context=131072).svg() == out.read_text()
