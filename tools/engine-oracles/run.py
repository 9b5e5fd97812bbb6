#!/usr/bin/env python3
"""The released engines' own sizing code as the planner's oracle (issue 38).

  python3 tools/engine-oracles/run.py [RELEASE ...] [--planner PATH] [--cache DIR] [--json FILE]

RELEASE: sglang@0.5.23, vllm@0.33.0, tokenspeed@0.1.1 (default: all three). For each release it
builds the release's environment (env.py: the wheel from the package index, torch, the packages
its sizing modules import), runs the release's own sizing functions unchanged on CPU through a
driver (drivers/*.py: what each runs unchanged and what it constructs is written at its top; the
only stubs are the GPU and driver queries and the GPU kernel packages, all listed in
gpu_stubs.py), runs the planner (`dsv4-cache-plan ... --json`) on the same grid point, and
compares every figure. It prints, per release, the figures compared, how many are equal, each
differing figure with both values, and what it could not run and why.

Exit status: 0 when every figure compared is equal, 1 when one differs or a release that should
run did not (a release the report marks as not runnable, tokenspeed 0.1.1's broken scheduler
dependency, is reported, not failed), 2 on bad arguments.
"""
import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import env  # noqa: E402

ROOT = HERE.parent.parent
CONTEXT = 131072


def planner_json(planner, engines, args):
    """Runs the planner with the first engine name it accepts; returns (json, engine name)."""
    last = ""
    for engine in engines:
        p = subprocess.run([str(planner), "--engine", engine, "--json", *args], capture_output=True, text=True)
        if p.returncode == 0:
            return json.loads(p.stdout), engine
        last = p.stderr.strip()
    raise RuntimeError(f"the planner refused {engines}: {last}")


def run_driver(py, driver, points):
    """Runs a driver in the release's environment; its results are the last line of its stdout."""
    p = subprocess.run([str(py), str(HERE / "drivers" / driver)], input=json.dumps(points), env=env.boot_env(),
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"driver {driver} failed: {p.stderr.strip()[-2000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


class NotRunnable(RuntimeError):
    """A release that cannot run for a reason the report names (not a failure of the oracle)."""
    expected = True


def ready_env(release, cache):
    py, why = env.ensure(release, cache, quiet=True)
    if py is None:
        raise RuntimeError(f"{release}: {why}")
    return py


class Report:
    def __init__(self, release):
        self.release = release
        self.compared = 0
        self.equal = 0
        self.differing = []
        self.not_run = []
        self.notes = []

    def check(self, point, figure, release_value, planner_value):
        self.compared += 1
        if release_value == planner_value:
            self.equal += 1
        else:
            self.differing.append((point, figure, release_value, planner_value))

    def lines(self):
        out = [f"== {self.release}: {self.compared} figures compared, {self.equal} equal, "
               f"{len(self.differing)} differ"]
        out += [f"   note: {n}" for n in self.notes]
        for point, figure, rv, pv in self.differing:
            out.append(f"   DIFFERS {point}: {figure}: release {rv!r}, planner {pv!r}")
        out += [f"   NOT RUN: {n}" for n in self.not_run]
        return out


# ---------------------------------------------------------------- SGLang 0.5.23
SGLANG = "sglang@0.5.23"
SGLANG_PLANNER_ENGINES = ["sglang@0.5.23", "sglang"]
SGLANG_FIGURES = ["bytes_per_full_token", "max_total_num_tokens", "full", "swa", "c4", "c128", "c4_state",
                  "c128_state"]


def sglang_grid():
    return [{"model": m, "memory_gib": g, "swa_full_tokens_ratio": r, "max_running_requests": n}
            for m in ("v4-flash", "v4-pro") for g in (16, 64, 120) for r in (0.1, 0.05) for n in (256, 64)]


def compare_sglang(rep, cache, planner):
    py = ready_env(SGLANG, cache)
    points = sglang_grid()
    out = run_driver(py, "sglang_0_5_23.py", points)
    rep.notes.append("stubs: " + ", ".join(out["stubs"]))
    rep.notes.append("kernel names the imports looked up (none called): " + ", ".join(out["kernel_stubs_touched"]))
    for point, res in zip(points, out["results"]):
        args = ["--preset", point["model"], "--memory-gib", str(point["memory_gib"]), "--context", str(CONTEXT),
                "--swa-full-tokens-ratio", str(point["swa_full_tokens_ratio"]),
                "--max-running-requests", str(point["max_running_requests"])]
        plan, engine = planner_json(planner, SGLANG_PLANNER_ENGINES, args)
        er = plan["engine_report"]
        name = (f"{point['model']} {point['memory_gib']} GiB ratio {point['swa_full_tokens_ratio']} "
                f"mrr {point['max_running_requests']}")
        starts = "error" not in res
        rep.check(name, "starts", starts, er["starts"])
        if not starts:
            rep.notes.append(f"{name}: the release says {res['error']}")
            continue
        rep.check(name, "configurator", res["configurator"], "DSV4PoolConfigurator")
        planner_figures = dict(er["pool_sizes"], bytes_per_full_token=er["bytes_per_full_token"],
                               max_total_num_tokens=er["max_total_num_tokens"])
        for f in SGLANG_FIGURES:
            rep.check(name, f, res[f], planner_figures[f])
        release_line = next(line for line in res["log_lines"] if line.startswith("DSV4 pool sizes:"))
        planner_line = next(line for line in er["log_lines"] if line.startswith("DSV4 pool sizes:"))
        rep.check(name, "log line 'DSV4 pool sizes: ...'", release_line, planner_line)
    rep.notes.append(f"planner: --engine {engine} (preset {er['preset']}); grid: V4-Flash and V4-Pro x "
                     "16 / 64 / 120 GiB x --swa-full-tokens-ratio 0.1 / 0.05 x --max-running-requests 256 / 64, "
                     f"--context {CONTEXT}")


# ---------------------------------------------------------------- vLLM 0.33.0
VLLM = "vllm@0.33.0"
VLLM_PLANNER_ENGINES = ["vllm@0.33.0", "vllm"]


def vllm_grid():
    return [{"model": m, "memory_gib": g, "context": c, "max_num_seqs": 1024, "prefill_chunk": 8192, "async": a}
            for m in ("v4-flash", "v4-pro") for g in (16, 64, 120) for c in (131072, 1048576) for a in (True, False)]


def compare_vllm(rep, cache, planner):
    py = ready_env(VLLM, cache)
    points = vllm_grid()
    out = run_driver(py, "vllm_0_33_0.py", points)
    rep.notes.append("stubs: " + ", ".join(out["stubs"]))
    rep.notes.append("kernel names the imports looked up (none called): " + ", ".join(out["kernel_stubs_touched"]))
    for point, res in zip(points, out["results"]):
        args = ["--preset", point["model"], "--memory-gib", str(point["memory_gib"]), "--context", str(point["context"]),
                "--max-running-requests", str(point["max_num_seqs"]), "--prefill-chunk", str(point["prefill_chunk"]),
                "--overlap" if point["async"] else "--no-overlap"]
        plan, engine = planner_json(planner, VLLM_PLANNER_ENGINES, args)
        er = plan["engine_report"]
        name = (f"{point['model']} {point['memory_gib']} GiB context {point['context']} "
                f"async {'on' if point['async'] else 'off'}")
        if "error" in res and "starts" not in res:
            rep.check(name, "driver ran", res["error"], None)
            continue
        rep.check(name, "starts", res["starts"], er["starts"])
        if not res["starts"]:
            rep.notes.append(f"{name}: the release says {res['error']}")
            continue
        rep.check(name, "num_blocks", res["num_blocks"], er["num_blocks"])
        rep.check(name, "bytes per block (each KV cache tensor)", res["bytes_per_block"], [er["bytes_per_block"]])
        rep.check(name, "groups", res["num_groups"], len(er["groups"]))
        rep.check(name, "groups' (page bytes, block tokens)",
                  sorted(zip(res["group_page_bytes"], res["group_block_sizes"])),
                  sorted((g["bytes"], g["block_tokens"]) for g in er["groups"]))
        rep.check(name, "KV cache size tokens", res["kv_cache_size_tokens"], er["reported_tokens"])
        rep.check(name, "maximum concurrency", res["max_concurrency"], er["reported_concurrency"])
        planner_line = next(line for line in er["log_lines"] if "KV cache size" in line)
        rep.check(name, "log line 'GPU KV cache size: ... Maximum concurrency ...'",
                  res["log_lines"][0] if res["log_lines"] else None, planner_line)
    rep.notes.append(f"planner: --engine {engine} (preset {er['preset']}); grid: V4-Flash and V4-Pro x "
                     "16 / 64 / 120 GiB x --context 131072 / 1048576 x async scheduling on / off, max_num_seqs 1024, "
                     "max_num_batched_tokens 8192")


# ---------------------------------------------------------------- tokenspeed 0.1.1
TOKENSPEED = "tokenspeed@0.1.1"
TOKENSPEED_PLANNER_ENGINES = ["tokenspeed@0.1.1", "tokenspeed"]
# 0.1.1 requires tokenspeed-scheduler>=0.1.25; pip resolves the newest, and 0.1.37 and later lack
# CacheGroupFamily (which 0.1.1's scheduler bridge imports), so these two are tried.
TOKENSPEED_SCHEDULERS = ["0.1.25", "0.1.36"]
# The wheels beside the scheduler: tokenspeed, its kernel wheel and what that imports. torch and
# the rest come from the vLLM 0.33.0 environment (a .pth file points there).
TOKENSPEED_WHEELS = ["tokenspeed==0.1.1", "tokenspeed-kernel==0.1.4", "tokenspeed-triton", "tokenspeed-proton",
                     "nvidia-cutlass-dsl==4.8.0", "nvidia-cutlass-dsl-libs-base==4.8.0",
                     "nvidia-cutlass-dsl-libs-cu12==4.8.0", "nvidia-cutlass-dsl-libs-cu13==4.8.0", "cuda-bindings", "cuda-pathfinder",
                     "apache-tvm-ffi==0.1.13.post3", "pandas", "python-dateutil", "pytz", "tzdata"]


def tokenspeed_env(cache, scheduler, vllm_py):
    venv = Path(cache) / f"tokenspeed-0.1.1-sched-{scheduler}"
    py = venv / "bin" / "python"
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    site = subprocess.run([str(vllm_py), "-c", "import site; print(site.getsitepackages()[0])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    own = subprocess.run([str(py), "-c", "import site; print(site.getsitepackages()[0])"],
                         capture_output=True, text=True, check=True).stdout.strip()
    (Path(own) / "zz-vllm-env.pth").write_text(site + "\n")
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps",
                    f"tokenspeed-scheduler=={scheduler}", *TOKENSPEED_WHEELS], check=True, stdout=subprocess.DEVNULL)
    return py


def compare_tokenspeed(rep, cache, planner):
    vllm_py = ready_env(VLLM, cache)
    points = [{"model": m, "memory_gib": 16} for m in ("v4-flash", "v4-pro")]
    tried = []
    ran = False
    for scheduler in TOKENSPEED_SCHEDULERS:
        out = run_driver(tokenspeed_env(cache, scheduler, vllm_py), "tokenspeed_0_1_1.py", points)
        imports = out["imports"]
        tried.append(f"tokenspeed-scheduler {scheduler}: scheduler {imports.get('tokenspeed_scheduler')}, "
                     f"CacheGroupFamily {'present' if imports.get('CacheGroupFamily') else 'absent'}, "
                     f"recipe module: {imports.get('recipe')}")
        if imports.get("recipe") != "ok":
            continue
        ran = True
        for point, res in zip(points, out["results"]):
            args = ["--preset", point["model"], "--memory-gib", str(point["memory_gib"]), "--context", str(CONTEXT)]
            plan, engine = planner_json(planner, TOKENSPEED_PLANNER_ENGINES, args)
            er = plan["engine_report"]
            name = f"scheduler {scheduler} {point['model']} {point['memory_gib']} GiB"
            rep.check(name, "parent bytes", res.get("parent_bytes", res.get("error")), er["parent_bytes"])
            if "token_capacity" in res:
                rep.check(name, "token_capacity", res["token_capacity"], er["token_capacity"])
    rep.notes += tried
    if not ran:
        raise NotRunnable("tokenspeed 0.1.1's DeepSeek V4 recipe did not import on CPU with any scheduler tried ("
                          + ", ".join(TOKENSPEED_SCHEDULERS) + "); see the notes")


RUNNERS = {SGLANG: compare_sglang, VLLM: compare_vllm, TOKENSPEED: compare_tokenspeed}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("releases", nargs="*", default=list(RUNNERS), metavar="RELEASE")
    ap.add_argument("--planner", default=str(ROOT / "build" / "tools" / "dsv4-cache-plan"))
    ap.add_argument("--cache", default=env.default_cache())
    ap.add_argument("--json", metavar="FILE", help="also write the report as JSON")
    a = ap.parse_args()
    bad = [r for r in a.releases if r not in RUNNERS]
    if bad:
        ap.error(f"unknown release(s) {bad}; known: {sorted(RUNNERS)}")
    if not Path(a.planner).exists():
        ap.error(f"no planner at {a.planner} (build it: ninja -C build dsv4-cache-plan)")
    reports = []
    failed = False
    for release in a.releases:
        rep = Report(release)
        reports.append(rep)
        try:
            RUNNERS[release](rep, a.cache, a.planner)
        except Exception as e:  # reported: what could not run and why
            rep.not_run.append(f"{type(e).__name__}: {e}")
            failed = failed or not getattr(e, "expected", False)
        failed = failed or bool(rep.differing)
        print("\n".join(rep.lines()), flush=True)
    total = sum(r.compared for r in reports)
    equal = sum(r.equal for r in reports)
    print(f"== all: {total} figures compared, {equal} equal, {total - equal} differ")
    if a.json:
        Path(a.json).write_text(json.dumps([{"release": r.release, "compared": r.compared, "equal": r.equal,
                                             "differing": r.differing, "not_run": r.not_run, "notes": r.notes}
                                            for r in reports], indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
