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


def functions() -> list[tuple[str, ast.FunctionDef, object]]:
    """Every function of the stub with what it stubs: module functions, class constructors
    (`__init__` against the class) and methods."""
    out = []
    for name, node in stub().items():
        if isinstance(node, ast.FunctionDef):
            out.append((name, node, getattr(_engine, name)))
        elif isinstance(node, ast.ClassDef):
            cls = getattr(_engine, name)
            for f in node.body:
                if not isinstance(f, ast.FunctionDef) or any(
                    isinstance(d, ast.Name) and d.id in ("property", "staticmethod") for d in f.decorator_list
                ):
                    continue
                if f.name == "__init__":
                    out.append((name, f, cls))
                elif not f.name.startswith("_"):
                    out.append((f"{name}.{f.name}", f, getattr(cls, f.name)))
    return out


def test_every_class_has_the_methods_the_stub_names():
    for name, node in stub().items():
        if isinstance(node, ast.ClassDef) and isinstance(getattr(_engine, name), type):
            named = {
                f.name for f in node.body if isinstance(f, ast.FunctionDef) and not f.name.startswith("_")
            }
            real = {m for m in dir(getattr(_engine, name)) if not m.startswith("_")}
            assert named <= real, (name, named - real)


def test_every_function_has_the_modules_parameters():
    for name, node, real_object in functions():
        try:
            params = list(inspect.signature(real_object).parameters.values())
        except ValueError:  # a method PyO3 gives no text signature
            continue
        # A method's receiver is no parameter a caller passes.
        real = {p.name: p for p in params if p.name != "self"}
        args = node.args
        args = ast.arguments(**{**args.__dict__, "args": [a for a in args.args if a.arg != "self"]})
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
