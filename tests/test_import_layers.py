"""The Python package's layers (pyproject.toml's import-linter contracts) hold, and the check
fails, naming the import, when a module imports from a layer above its own, when two modules
import each other, or when a module is in no layer."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from conftest import ROOT

pytest.importorskip("importlinter", reason="the dev extra's import-linter checks the layers")

LINT = "from importlinter.cli import lint_imports_command; lint_imports_command()"


def lint(root) -> subprocess.CompletedProcess:
    """`lint-imports` on the package under root/python, with root/pyproject.toml's contracts."""
    env = dict(os.environ, PYTHONPATH=str(root / "python"))
    return subprocess.run(
        [sys.executable, "-c", LINT, "--no-cache"], cwd=root, env=env, capture_output=True, text=True
    )


@pytest.fixture
def copy(tmp_path):
    """The package's Python files and pyproject.toml, copied to change one import."""
    shutil.copytree(ROOT / "python" / "clustersim", tmp_path / "python" / "clustersim", ignore=keep_python)
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    return tmp_path


def keep_python(folder: str, names: list[str]) -> list[str]:
    return [n for n in names if not n.endswith(".py") and not os.path.isdir(os.path.join(folder, n))]


def append(path, line: str) -> None:
    path.write_text(path.read_text(encoding="utf-8") + f"\n{line}\n", encoding="utf-8")


def test_the_package_keeps_its_layers():
    out = lint(ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Contracts: 2 kept, 0 broken." in out.stdout


def test_the_copy_keeps_them_too(copy):
    out = lint(copy)
    assert out.returncode == 0, out.stdout + out.stderr


def test_an_upward_import_fails(copy):
    # The base layer's file helpers reaching up to the API.
    append(copy / "python" / "clustersim" / "files.py", "from clustersim import api")
    out = lint(copy)
    assert out.returncode == 1, out.stdout
    assert "Contracts: 0 kept, 2 broken." in out.stdout
    assert "clustersim.files is not allowed to import clustersim.api" in out.stdout


def test_an_import_from_the_cli_fails(copy):
    append(
        copy / "python" / "clustersim" / "explore" / "search.py", "import clustersim.cli.train  # noqa: E402"
    )
    out = lint(copy)
    assert out.returncode == 1
    assert "clustersim.explore is not allowed to import clustersim.cli" in out.stdout


def test_independent_siblings_stay_apart(copy):
    # measure and explore share a layer and import nothing from each other.
    append(
        copy / "python" / "clustersim" / "measure" / "replay" / "report.py",
        "from clustersim.explore import store",
    )
    out = lint(copy)
    assert out.returncode == 1
    assert "clustersim.measure is not allowed to import clustersim.explore" in out.stdout


def test_a_circle_inside_a_layer_fails(copy):
    # workload builds IR from training's plans; training importing workload closes a circle.
    append(copy / "python" / "clustersim" / "training.py", "import clustersim.workload")
    out = lint(copy)
    assert out.returncode == 1
    assert "no import circle between the modules of any package BROKEN" in out.stdout
    assert ".training -> .workload" in out.stdout or ".workload -> .training" in out.stdout


def test_a_module_in_no_layer_fails(copy):
    (copy / "python" / "clustersim" / "stray.py").write_text("X = 1\n")
    out = lint(copy)
    assert out.returncode == 1
    assert "clustersim.stray" in out.stdout


def names_through_the_root(package) -> list[str]:
    """Imports that reach a public name through the package root (`import clustersim`, `from
    clustersim import train`): the root loads them lazily, so import-linter, which ignores
    imports of the root (it is where `_engine` and `__version__` come from), cannot see which
    layer they reach. Only submodules, `_engine` and `__version__` may come from it."""
    import ast

    submodules = {p.stem for p in package.glob("*.py")} | {p.name for p in package.iterdir() if p.is_dir()}
    allowed = submodules | {"_engine", "__version__"}
    found = []
    for path in sorted(package.rglob("*.py")):
        if path == package / "__init__.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            where = f"{path.relative_to(package)}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.Import) and any(a.name == "clustersim" for a in node.names):
                found.append(f"{where}: import clustersim")
            elif isinstance(node, ast.ImportFrom) and node.module == "clustersim" and node.level == 0:
                found += [
                    f"{where}: from clustersim import {a.name}" for a in node.names if a.name not in allowed
                ]
    return found


def test_no_module_reaches_a_public_name_through_the_root():
    assert names_through_the_root(ROOT / "python" / "clustersim") == []


def test_a_public_name_through_the_root_is_caught(copy):
    files = copy / "python" / "clustersim" / "files.py"
    append(files, "import clustersim  # noqa: E402")
    append(files, "from clustersim import _engine, train  # noqa: E402")
    found = names_through_the_root(copy / "python" / "clustersim")
    assert [f.split(": ", 1)[1] for f in found] == ["import clustersim", "from clustersim import train"]
    assert all(f.startswith("files.py:") for f in found)
