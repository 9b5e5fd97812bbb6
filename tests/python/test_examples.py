"""The Python examples and the README's Python example run as written."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import dsv4_cache as d
from conftest import ROOT


def _run(args, code=0):
    r = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert r.returncode == code, r.stderr
    return r.stdout


def test_size_deployment_prints_each_engines_verdict(plan_cli):
    out = _run(["examples/python/size_deployment.py", "--memory-gib", "60", "--requests", "32", "--context", "131072"])
    for engine in ("vllm", "sglang"):
        line = plan_cli.json(["--preset", "v4-pro", "--engine", engine, "--tp", "8", "--memory-gib", "60",
                              "--requests", "32", "--context", "131072", "--json"])["verdict"]["line"]
        assert f"  {engine:<7} {line}\n" in out
    # 64 requests fit vLLM's pool but not SGLang's (its SWA pool is a share of its full tokens): exit 1
    out = _run(["examples/python/size_deployment.py", "--requests", "64"], code=1)
    assert "vllm    verdict: 64 x 131,072 tokens FITS" in out and "DOES NOT FIT" in out
    # 4,000 requests of 131,072 tokens fit no engine: exit 1
    _run(["examples/python/size_deployment.py", "--requests", "4000"], code=1)


def test_capacity_plot_writes_one_png(tmp_path):
    png = tmp_path / "capacity.png"
    out = _run(["examples/python/capacity_plot.py", "--preset", "v4-flash", "--memory-gib", "64", "--out", str(png)])
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    m = d.Model.preset("v4-flash")
    for engine in ("vllm", "tokenspeed", "sglang"):  # the printed figures are capacity()'s
        want = d.capacity(m, 64, engine=engine, context=131072).verdict.max_requests
        assert f"{engine:<10}   131,072 tokens: {want:,} requests\n" in out
    out = _run(["examples/python/capacity_plot.py", "--preset", "v3.2", "--out", str(tmp_path / "v32.png")])
    assert re.search(r"sglang +left out: .*V4 models only", out)


def test_capacity_plot_refuses_what_is_not_a_png_file(tmp_path):
    """--out goes through the CLIs' checked write (file_io.hpp): a FIFO or directory is refused
    with exit 2 naming it (a FIFO used to block the write forever), as is a name without .png."""
    fifo = tmp_path / "fifo.png"
    os.mkfifo(fifo)
    (tmp_path / "dir.png").mkdir()
    for target, what in ((fifo, "a FIFO"), (tmp_path / "dir.png", "a directory")):
        r = subprocess.run([sys.executable, "examples/python/capacity_plot.py", "--out", str(target)],
                           capture_output=True, text=True, timeout=900, cwd=ROOT)
        assert r.returncode == 2 and f"error: --out {target}: {what}; an output is written only" in r.stderr, r.stderr
    r = subprocess.run([sys.executable, "examples/python/capacity_plot.py", "--out", str(tmp_path / "x.svg")],
                       capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert r.returncode == 2 and "must end in .png" in r.stderr, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dir.png", "fifo.png"]


def test_the_readme_python_example_runs_as_written(plan_cli):
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("\n## Python"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert len(code.strip().splitlines()) == 6
    out = _run(["-c", code]).splitlines()
    j = plan_cli.json(["--preset", "v4-pro", "--engine", "vllm", "--requests", "64", "--context", "131072", "--tp",
                       "8", "--memory-gib", "60", "--json"])
    assert out[0] == j["verdict"]["line"]
    fp = subprocess.run([str(plan_cli.path.parent / "dsv4-cache-layout"), "fingerprint", "--preset", "v4-pro", "--tp",
                         "8"], capture_output=True, text=True, check=True).stdout.strip()
    assert out[1] == f"{j['plan']['total_bytes']} {j['groups'][0]['page_bytes']}"
    assert out[2] == str(int(fp, 16))
