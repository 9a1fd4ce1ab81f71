"""The engine's type stubs (python/clustersim/_engine.pyi) name exactly what the compiled module
exports, with the same parameters (names, kinds and defaults), so they cannot drift from it."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from clustersim import _engine

STUB = Path(__file__).resolve().parents[1] / "python" / "clustersim" / "_engine.pyi"
# Names the stub defines only for its own annotations.
ALIASES = {"Progress", "Columns"}


def stub() -> dict[str, ast.AST]:
    out = {}
    for node in ast.parse(STUB.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            out[node.name] = node
        elif isinstance(node, ast.AnnAssign):
            out[node.target.id] = node
        elif isinstance(node, ast.Assign):
            out[node.targets[0].id] = node
    return {k: v for k, v in out.items() if k not in ALIASES}


def test_the_stub_names_what_the_module_exports():
    exported = {n for n in dir(_engine) if not n.startswith("_")}
    assert set(stub()) == exported


def test_every_function_has_the_modules_parameters():
    for name, node in stub().items():
        if not isinstance(node, ast.FunctionDef):
            continue
        real = inspect.signature(getattr(_engine, name)).parameters
        args = node.args
        stubbed = [(a.arg, "POSITIONAL_OR_KEYWORD") for a in args.args]
        stubbed += [(a.arg, "KEYWORD_ONLY") for a in args.kwonlyargs]
        assert [(p.name, p.kind.name) for p in real.values()] == stubbed, name
        defaults = args.defaults + [d for d in args.kw_defaults if d is not None]
        with_default = [p for p in real.values() if p.default is not inspect.Parameter.empty]
        assert len(defaults) == len(with_default), name
        for param, default in zip(with_default, defaults, strict=True):
            value = ast.literal_eval(default)
            # PyO3 shows a tuple default as `...`.
            assert param.default is Ellipsis or param.default == value, (name, param.name)
