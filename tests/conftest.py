"""Shared fixtures: where the example data lives, and a helper that runs the `clustersim` CLI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

# Everything the tests read is in the repository (tests/data/README.md says where each file is from).
ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
SIMAI = DATA / "simai"
AICB = DATA / "aicb"
REFERENCE = SIMAI / "reference"
EXAMPLE_WORKLOAD = ROOT / "examples" / "workload_analytical.txt"
EXAMPLE_BUSBW = ROOT / "examples" / "busbw.yaml"
# SimAI's size-efficiency tables, as shipped with the engine.
RATIO_DIR = ROOT / "crates" / "engine" / "data" / "ratio"

# SimAI_analytical's flags for the two reference runs (see tests/data/simai/reference/README.md).
AUTO_FLAGS = ["-g", "9216", "-nv", "360", "-nic", "48.5", "-n_p_s", "8", "-g_p_s", "8"]
BUSBW_FLAGS = ["-g", "9216", "-g_p_s", "8", "-busbw", str(EXAMPLE_BUSBW)]


@pytest.fixture(scope="session")
def example_workload() -> Path:
    return EXAMPLE_WORKLOAD


def run_clustersim(*args, cwd, timeout=60):
    """Run `python -m clustersim ARGS` in `cwd`; return (returncode, stdout, stderr)."""
    proc = subprocess.run(
        [sys.executable, "-m", "clustersim", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return proc.returncode, proc.stdout, proc.stderr


@pytest.fixture
def run_cli(tmp_path):
    """`run_cli(*args, cwd=None)` runs the CLI with tmp_path (or `cwd`) as working directory."""

    def run(*args, cwd=None):
        return run_clustersim(*args, cwd=tmp_path if cwd is None else cwd)

    return run
