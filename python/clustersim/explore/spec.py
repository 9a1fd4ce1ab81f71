"""A sweep spec: which command, which options every point shares, and which vary.

    command: train                  # train, run, collective, analytical or goodput
    fixed:   {model: llama3-8b, gpus: 64, gbs: 256, seq: 4096}
    grid:    {tp: [1, 2, 4, 8], pp: [1, 2], mbs: [1, 2]}      # every combination, in order
  or
    points:  [{tp: 8, pp: 1}, {tp: 4, pp: 2}]                 # these points, in order
  or
    random:  {samples: 20, seed: 1, grid: {tp: [1, 2, 4, 8], mbs: [1, 2, 4]}}
                                    # 20 distinct points of that grid, drawn with Python's seeded
                                    # random.Random(seed).sample (the same points on every run)

Option names are the API's (`clustersim.api`), which are the CLI's long options (`dist-opt` and
`dist_opt` both work). Paths are taken as on the command line, relative to the current folder.
A point is keyed by the SHA-256 of its options as canonical JSON (sorted keys, no spaces), so a
point is the same point in any spec and any store.
"""

from __future__ import annotations

import hashlib
import inspect
import itertools
import json
import math
import os
import random
from dataclasses import dataclass
from typing import Any

from clustersim import api
from clustersim.catalog import read_yaml
from clustersim.errors import InputError

COMMANDS = ("train", "run", "collective", "analytical", "goodput")
SECTIONS = ("grid", "points", "random")
# Options no point may set: callbacks, and what a stored row could not hold.
NOT_OPTIONS = {"progress", "trace", "options"}
# `run` passes these to `simulate` under names of its own (algo, …), so they are run's only.
RUN_SETS = {"topology", "algorithm", "channels", "seed", "routes", "qps", "routing"}
# Options whose value may be a mapping (a model description, an environment).
MAPPINGS = {"model", "env"}


def api_function(command: str) -> Any:
    if command == "goodput":
        from clustersim.explore.goodput import goodput

        return goodput
    return {"train": api.train, "run": api.run, "collective": api.collective, "analytical": api.simulate}[
        command
    ]


def _parameters(command: str) -> dict[str, inspect.Parameter]:
    """The API function's parameters of `command` (`run` also takes `analytical`'s that it does
    not set itself)."""
    params = dict(inspect.signature(api_function(command)).parameters)
    if command == "run":
        extra = inspect.signature(api_function("analytical")).parameters
        params |= {k: p for k, p in extra.items() if k not in RUN_SETS and k not in params}
    return params


def command_options(command: str) -> dict[str, Any]:
    """Every option of `command` a point may set, with its default (`inspect.Parameter.empty`
    where the option is required)."""
    return {k: p.default for k, p in _parameters(command).items() if k not in NOT_OPTIONS}


def option_types(command: str) -> dict[str, tuple[str, ...]]:
    """The type names (`int`, `float`, `str`, `bool`, …) each option of `command` takes, from
    the API function's annotations (for `train`, the plan schema's: `clustersim.plan`)."""
    out = {}
    for name, p in _parameters(command).items():
        text = p.annotation if isinstance(p.annotation, str) else getattr(p.annotation, "__name__", "")
        out[name] = tuple(t.strip() for t in str(text).split("|"))
    return out


@dataclass(frozen=True)
class Point:
    """One simulation: its place in the spec's order, key and options (the spec's fixed ones
    and its own)."""

    seq: int
    key: str
    options: dict[str, Any]


@dataclass(frozen=True)
class Spec:
    path: str
    command: str
    fixed: dict[str, Any]
    #: The options that vary from point to point, in the spec's order.
    varying: list[str]
    points: list[Point]
    #: The spec as canonical JSON: what a store was written for.
    canonical: str


def canonical(doc: Any) -> str:
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), allow_nan=False)


def point_key(command: str, options: dict[str, Any]) -> str:
    return hashlib.sha256(canonical({"command": command, "options": options}).encode()).hexdigest()


def load_spec(path: str | os.PathLike[str]) -> Spec:
    """The spec in YAML file `path`, checked: InputError `path:line: field: problem` otherwise."""
    import yaml

    doc, text = read_yaml(path)
    lines = key_lines(yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)))
    return Checker(os.fspath(path), lines).spec(doc)


def key_lines(node: Any, prefix: str = "") -> dict[str, int]:
    """Line (1-based) of every key and list item of a composed YAML document: `grid.tp`,
    `points.2.tp`."""
    import yaml

    out: dict[str, int] = {}
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            name = f"{prefix}{k.value}"
            out[name] = k.start_mark.line + 1
            out |= key_lines(v, name + ".")
    elif isinstance(node, yaml.SequenceNode):
        for i, v in enumerate(node.value):
            name = f"{prefix}{i}"
            out[name] = v.start_mark.line + 1
            out |= key_lines(v, name + ".")
    return out


class Checker:
    """Checks a spec document and reports the first problem at its line."""

    def __init__(self, path: str, lines: dict[str, int]) -> None:
        self.path = path
        self.lines = lines
        #: Each option's type names (`option_types`): what a value is checked against.
        self.types: dict[str, tuple[str, ...]] = {}
        #: Whether the options are the plan's (`train`), with their ranges and choices.
        self.plan = False

    def fail(self, field: str, problem: str) -> InputError:
        line = self.lines.get(field, self.lines.get(field.rsplit(".", 1)[0], 1))
        return InputError(f"{self.path}:{line}: {field}: {problem}")

    def spec(self, doc: dict[str, Any]) -> Spec:
        for key in doc:
            if key not in ("command", "fixed", *SECTIONS):
                raise self.fail(str(key), f"unknown section (valid: command, fixed, {', '.join(SECTIONS)})")
        command = doc.get("command")
        if command not in COMMANDS:
            what = "missing" if command is None else f"unknown command {command!r}"
            raise self.fail("command", f"{what} (valid: {', '.join(COMMANDS)})")
        allowed = command_options(command)
        self.types = option_types(command)
        self.plan = command == "train"
        fixed = self.options(doc.get("fixed") or {}, "fixed", allowed)
        given = sorted((s for s in SECTIONS if s in doc), key=lambda s: self.lines.get(s, 0))
        if len(given) != 1:
            raise self.fail(given[1] if given else "command", "give exactly one of grid, points or random")
        section = given[0]
        if section == "grid":
            grid = self.grid(doc["grid"], "grid", allowed)
            varying = list(grid)
            rows = [dict(zip(grid, values, strict=True)) for values in itertools.product(*grid.values())]
        elif section == "points":
            rows, varying = self.point_list(doc["points"], allowed)
        else:
            rows, varying = self.sample(doc["random"], allowed)
        for name in varying:
            if name in fixed:
                spelled = (
                    f for f in self.lines if f.startswith(section) and f.replace("-", "_").endswith(name)
                )
                where = next((f for f in spelled if f.replace("-", "_").endswith("." + name)), section)
                raise self.fail(where, "also set in fixed: set an option in one place")
        points = []
        keys: dict[str, int] = {}
        for seq, row in enumerate(rows):
            options = fixed | row
            for name, default in allowed.items():
                if default is inspect.Parameter.empty and name not in options:
                    raise self.fail("fixed", f"{command} needs {name}: set it in fixed or vary it")
            key = point_key(command, options)
            if key in keys:
                raise self.fail(f"points.{seq}", f"repeats point {keys[key]} (each point once)")
            keys[key] = seq
            points.append(Point(seq, key, options))
        return Spec(self.path, command, fixed, varying, points, canonical(doc))

    def options(self, doc: Any, field: str, allowed: dict[str, Any]) -> dict[str, Any]:
        """A mapping of option names (`-` or `_`) to single values."""
        if not isinstance(doc, dict):
            raise self.fail(field, "expected a mapping of option names to values")
        out = {}
        for raw, value in doc.items():
            name = str(raw).replace("-", "_")
            self.check(f"{field}.{raw}", name, value, allowed)
            out[name] = value
        return out

    def check(self, field: str, name: str, value: Any, allowed: dict[str, Any]) -> None:
        if name not in allowed:
            raise self.fail(field, f"unknown option (valid: {', '.join(allowed)})")
        default = allowed[name]
        if isinstance(value, dict) and name in MAPPINGS:
            return
        if isinstance(value, (list, dict)) or value is None:
            what = {list: "a list", dict: "a mapping"}.get(type(value), "empty")
            raise self.fail(
                field, f"{what}: expected one value (options that vary go in grid, points or random)"
            )
        if isinstance(value, float) and not math.isfinite(value):
            raise self.fail(field, f"expected a finite number, got {value}")
        want = type(default) if default not in (None, inspect.Parameter.empty) else self.declared(name)
        if want is bool and not isinstance(value, bool):
            raise self.fail(field, f"expected true or false, got {value!r}")
        if want is int and (isinstance(value, bool) or not isinstance(value, int)):
            # Sizes of `collective` are given as text ("16M") or as whole numbers.
            if not (name in ("minbytes", "maxbytes") and isinstance(value, str)):
                raise self.fail(field, f"expected a whole number, got {value!r}")
        if want is float and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise self.fail(field, f"expected a number, got {value!r}")
        if want is str and not isinstance(value, str) and name not in ("minbytes", "maxbytes"):
            raise self.fail(field, f"expected text, got {value!r}")
        self.check_plan(field, name, value)

    def declared(self, name: str) -> type | None:
        """The one plain type (int, float, str, bool) an option is annotated with, if it is one."""
        plain = {"int": int, "float": float, "str": str, "bool": bool}
        kinds = [t for t in self.types.get(name, ()) if t != "None"]
        return plain.get(kinds[0]) if len(kinds) == 1 else None

    def check_plan(self, field: str, name: str, value: Any) -> None:
        """A plan option's range and choices, as the CLI checks them (clustersim.plan)."""
        from clustersim.plan import BY_NAME

        option = BY_NAME.get(name) if self.plan else None
        if option is None or isinstance(value, bool) or not isinstance(value, int):
            return
        if option.choices is not None and value not in option.choices:
            raise self.fail(field, f"{value} is not one of {', '.join(map(str, option.choices))}")
        if option.type is int and option.count and not 1 <= value <= option.maximum:
            raise self.fail(field, f"must be a whole number from 1 to {option.maximum}, got {value}")

    def grid(self, doc: Any, field: str, allowed: dict[str, Any]) -> dict[str, list[Any]]:
        if not isinstance(doc, dict) or not doc:
            raise self.fail(field, "empty: expected a mapping of option names to lists of values")
        out = {}
        for raw, values in doc.items():
            name = str(raw).replace("-", "_")
            where = f"{field}.{raw}"
            if name not in allowed:
                raise self.fail(where, f"unknown option (valid: {', '.join(allowed)})")
            if not isinstance(values, list):
                raise self.fail(where, f"expected a list of values, got {values!r}")
            if not values:
                raise self.fail(where, "empty list: give at least one value")
            for i, v in enumerate(values):
                self.check(f"{where}.{i}", name, v, allowed)
            if len({canonical(v) for v in values}) != len(values):
                raise self.fail(where, "a value is repeated")
            out[name] = values
        return out

    def point_list(self, doc: Any, allowed: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
        if not isinstance(doc, list) or not doc:
            raise self.fail("points", "empty: expected a list of points (mappings of options to values)")
        rows = [self.options(p, f"points.{i}", allowed) for i, p in enumerate(doc)]
        varying = list(dict.fromkeys(k for row in rows for k in row))
        return rows, varying

    def sample(self, doc: Any, allowed: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
        if not isinstance(doc, dict):
            raise self.fail("random", "expected a mapping with samples, seed and grid")
        for key in doc:
            if key not in ("samples", "seed", "grid"):
                raise self.fail(f"random.{key}", "unknown field (valid: samples, seed, grid)")
        grid = self.grid(doc.get("grid"), "random.grid", allowed)
        size = math.prod(len(v) for v in grid.values())
        samples, seed = doc.get("samples"), doc.get("seed", 0)
        if isinstance(samples, bool) or not isinstance(samples, int) or not 1 <= samples <= size:
            raise self.fail("random.samples", f"expected a whole number from 1 to {size} (the grid's points)")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise self.fail("random.seed", f"expected a whole number, got {seed!r}")
        rows = []
        for index in random.Random(seed).sample(range(size), samples):
            row = {}
            for name, values in reversed(grid.items()):  # the last option varies fastest, as in the grid
                index, i = divmod(index, len(values))
                row[name] = values[i]
            rows.append({k: row[k] for k in grid})
        return rows, list(grid)
