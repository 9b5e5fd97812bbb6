"""Fixtures of the Python package's tests: the CLIs they compare with, and the test data.

The CLIs (dsv4-cache-plan, dsv4-cache-layout) are the C++ build's: $DSV4_TOOLS_DIR, else
build/tools of the repository. Without them the comparisons skip with the reason, unless
DSV4_REQUIRE_TOOLS=1 (scripts/test.sh sets it): then a missing CLI fails the test.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import List

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"


def _tools_dir() -> Path:
    return Path(os.environ.get("DSV4_TOOLS_DIR", ROOT / "build" / "tools"))


class Cli:
    """Runs one of the C++ CLIs and returns its stdout (checking the exit code)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def run(self, args: List[str], code: int = 0) -> str:
        r = subprocess.run([str(self.path), *args], capture_output=True, text=True, timeout=600)
        assert r.returncode == code, f"{self.path.name} {' '.join(args)}: exit {r.returncode}, stderr {r.stderr!r}"
        return r.stdout

    def json(self, args: List[str]):
        return json.loads(self.run(args))


def _cli(name: str) -> Cli:
    path = _tools_dir() / name
    if not (path.is_file() and os.access(path, os.X_OK)):
        reason = f"{name} not built at {path} (set DSV4_TOOLS_DIR, or build the C++ tools first)"
        if os.environ.get("DSV4_REQUIRE_TOOLS") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return Cli(path)


@pytest.fixture(scope="session")
def plan_cli() -> Cli:
    return _cli("dsv4-cache-plan")


@pytest.fixture(scope="session")
def layout_cli() -> Cli:
    return _cli("dsv4-cache-layout")


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return DATA
