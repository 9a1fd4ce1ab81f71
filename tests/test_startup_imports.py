"""Start-up stays lean: importing the CLI, and running `clustersim analytical`, load none of the heavy
libraries (they are imported where they are used). A regression here once cost every command 0.12 s."""

from __future__ import annotations

import subprocess
import sys

from conftest import AUTO_FLAGS, EXAMPLE_WORKLOAD

HEAVY = ("networkx", "matplotlib", "pandas", "scipy", "ray", "plotly", "tqdm", "mpi4py", "numpy")


def loaded_after(code: str, cwd) -> list[str]:
    check = f"import sys\n{code}\nprint('loaded:' + ','.join(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, check=True, cwd=cwd)
    return [m for m in out.stdout.splitlines()[-1].removeprefix("loaded:").split(",") if m]


def test_importing_the_cli_loads_no_heavy_library(tmp_path):
    assert loaded_after("import clustersim.cli", tmp_path) == []


def test_clustersim_analytical_loads_neither_networkx_nor_matplotlib(tmp_path):
    argv = ["analytical", "-w", str(EXAMPLE_WORKLOAD), *AUTO_FLAGS, "-r", "s-"]
    code = f"from clustersim.cli import main\nassert main({argv!r}) == 0"
    assert loaded_after(code, tmp_path) == []
    assert (tmp_path / "s-EndToEnd.csv").is_file()
