"""Start-up stays lean: importing the CLI, and running `clustersim analytical`, load none of the heavy
libraries (they are imported where they are used). A regression here once cost every command 0.12 s."""

from __future__ import annotations

import subprocess
import sys

from conftest import AUTO_FLAGS, EXAMPLE_WORKLOAD

HEAVY = ("networkx", "matplotlib", "pandas", "scipy", "ray", "plotly", "tqdm", "mpi4py", "numpy")


def loaded_after(code: str, cwd, names: tuple[str, ...] = HEAVY) -> list[str]:
    """Which of `names` are imported once `code` has run."""
    check = f"import sys\n{code}\nprint('loaded:' + ','.join(m for m in {names!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, check=True, cwd=cwd)
    return [m for m in out.stdout.splitlines()[-1].removeprefix("loaded:").split(",") if m]


def test_importing_the_cli_loads_no_heavy_library(tmp_path):
    assert loaded_after("import clustersim.cli", tmp_path) == []


def test_clustersim_analytical_loads_neither_networkx_nor_matplotlib(tmp_path):
    argv = ["analytical", "-w", str(EXAMPLE_WORKLOAD), *AUTO_FLAGS, "-r", "s-"]
    code = f"from clustersim.cli import main\nassert main({argv!r}) == 0"
    assert loaded_after(code, tmp_path) == []
    assert (tmp_path / "s-EndToEnd.csv").is_file()


def subcommand_modules_after(code: str, cwd) -> set[str]:
    check = f"import sys\n{code}\nprint(','.join(m for m in sys.modules if m.startswith('clustersim.cli.')))"
    out = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, cwd=cwd)
    return set(out.stdout.splitlines()[-1].split(",")) - {"clustersim.cli.common", ""}


def test_one_command_imports_no_other_commands_module(tmp_path):
    """Each command's module (and what it imports) loads only when that command runs or asks for
    its help: `--version` and the top-level `--help` load none."""
    run = "from clustersim.cli import main\ntry:\n    main({argv!r})\nexcept SystemExit:\n    pass"
    assert subcommand_modules_after(run.format(argv=["--version"]), tmp_path) == set()
    assert subcommand_modules_after(run.format(argv=["--help"]), tmp_path) == set()
    got = subcommand_modules_after(run.format(argv=["analytical", "--help"]), tmp_path)
    assert got == {"clustersim.cli.analytical"}


def test_start_up_skips_the_costly_standard_modules_it_does_not_need(tmp_path):
    """OpenSSL's hashlib (a workload file is hashed by the built-in SHA-256), csv (SimAI's CSV
    comes from the engine) and, for `--version`, json each cost start-up measurable time."""
    argv = ["analytical", "-w", str(EXAMPLE_WORKLOAD), *AUTO_FLAGS, "-r", "s-"]
    code = f"from clustersim.cli import main\nassert main({argv!r}) == 0"
    assert loaded_after(code, tmp_path, ("hashlib", "csv")) == []
    version = "from clustersim.cli import main\ntry:\n    main(['--version'])\nexcept SystemExit:\n    pass"
    assert loaded_after(version, tmp_path, ("hashlib", "csv", "json")) == []
