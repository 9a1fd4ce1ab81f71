"""Model and accelerator presets shipped with clustersim; users add their own files (YAML).

Accelerators (and NICs) are the engine's catalog (crates/engine/src/catalog/): one schema,
read and checked there; this module reads a user's file and places the engine's verdict on an
entry at its line (`file:line: field: problem`). Models are read here, types first (a count is a
whole number), then values by the engine's own checks (`check_model`)."""

from __future__ import annotations

import contextlib
import copy
import functools
import json
import math
import os
import re
import zlib
from pathlib import Path
from typing import Any, NoReturn

from clustersim.errors import InputError
from clustersim.files import read_text

HERE = Path(__file__).parent


def read_yaml(path: str | os.PathLike[str]) -> tuple[dict[str, Any], str]:
    """The mapping in YAML file `path` (entries named `_…` dropped) and the file's text. Each text
    is parsed once: a search or a sweep that names a user's file in thousands of runs reads it in
    each (microseconds) but parses it only the first time (1–2 ms)."""
    text = read_text(path)
    # A copy: callers may change what they get; the cached parse must stay as the file says.
    return copy.deepcopy(_parse_yaml(os.fspath(path), text)), text


@functools.lru_cache(maxsize=64)
def _parse_yaml(path: str, text: str) -> dict[str, Any]:
    import yaml

    try:
        doc = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = mark.line + 1 if mark is not None else text[: getattr(e, "position", 0)].count("\n") + 1
        problem = (getattr(e, "problem", None) or str(e)).splitlines()[0]
        raise InputError(f"{path}:{line}: YAML: not valid YAML: {problem}") from None
    if not isinstance(doc, dict):
        raise InputError(f"{path}:1: (top level): expected a mapping of names to entries")
    return {k: v for k, v in doc.items() if not str(k).startswith("_")}


def load_yaml(path: str | os.PathLike[str]) -> dict[str, Any]:
    return read_yaml(path)[0]


def line_of(text: str, field: str) -> int:
    """The line where `field` (`moe.experts`, `mla`) is set in a YAML or JSON text: each part
    searched for as a key after the previous one; line 1 if it is not there."""
    at = 0
    for part in field.split("."):
        m = re.compile(rf"""(^|[\s{{,"'])["']?{re.escape(part)}["']?\s*:""", re.M).search(text, at)
        if m is None:
            break
        at = m.end()
    return text.count("\n", 0, at) + 1


def fail(path: str | os.PathLike[str], text: str, field: str, problem: str) -> NoReturn:
    raise InputError(f"{path}:{line_of(text, field)}: {field}: {problem}")


def is_number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def is_count(v: object) -> bool:
    """A whole number the engine's fields hold (they are checked for range there)."""
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**31


def engine_check(doc: dict[str, Any], path: str | os.PathLike[str], text: str) -> None:
    """The engine's checks of a model, reported at the field's line in `path`."""
    from clustersim import _engine

    problem = _engine.check_model(doc)
    if problem is not None:
        fail(path, text, *problem)


def accelerators() -> dict[str, dict[str, Any]]:
    """The engine's accelerator catalog: names to entries (peaks, HBM, compute-model constants,
    NVLink and NIC figures), in file order."""
    from clustersim import _engine

    return _engine.catalog_accelerators()


def _finite(v: object) -> object:
    """`v` with every non-finite float written as Python writes it ('nan', 'inf'), and a whole
    number past 64 bits as the float a JSON reader makes of it."""
    if isinstance(v, float) and not math.isfinite(v):
        return repr(v)
    if isinstance(v, int) and not isinstance(v, bool) and not -(2**63) <= v < 2**64:
        return _finite(float(v))
    if isinstance(v, dict):
        return {k: _finite(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_finite(x) for x in v]
    return v


def accelerator(name: str, entry: object, path: str | os.PathLike[str], text: str | None) -> dict[str, Any]:
    """A user's accelerator `name` (from file `path` with `text`; `text` None: a mapping given in
    Python) as the engine's schema reads it, or the engine's objection at its field's line."""
    from clustersim import _engine

    if not isinstance(entry, dict):
        fail(path, text or "", name, "expected a mapping of fields")
    try:
        # The entry's JSON values, as a JSON or YAML file holds them: NaN and infinity as the text
        # YAML gave (which the engine refuses), keys as strings, nothing but numbers, strings,
        # lists and mappings.
        doc = json.loads(json.dumps(_finite(entry), allow_nan=False))
    except (TypeError, ValueError, OverflowError, RecursionError):  # Recursion: an anchor holding itself
        fail(path, text or "", name, "fields must be numbers, strings, lists or mappings")
    resolved, problem = _engine.accelerator_entry(name, doc)
    if problem is not None:
        field, message = problem
        if text is None:
            raise InputError(f"{path}: {field}: {message}")
        raise InputError(f"{path}:{line_of(text, f'{name}.{field}')}: {field}: {message}")
    return resolved


@functools.cache
def shipped(kind: str) -> dict[str, Any]:
    """The entries clustersim ships (read once; callers copy what they change).

    Kept parsed as JSON in the user's cache ($XDG_CACHE_HOME/clustersim, default ~/.cache), with
    the YAML text it was parsed from: reading it takes 0.2 ms where importing PyYAML and parsing
    take 20–30 ms, most of a small `clustersim search`. The copy is used only while the text is
    the same; the YAML is parsed again (and the copy rewritten) when it is not, when the copy
    cannot be read, and always when no cache can be written."""
    path = HERE / f"{kind}.yaml"
    text = path.read_text(encoding="utf-8")
    kept = _kept(f"catalog-{kind}-{zlib.crc32(text.encode()):08x}.json")
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        doc = json.loads(kept.read_text(encoding="utf-8")) if kept else None
        if doc and doc["text"] == text:
            return doc["entries"]
    entries = _parse_yaml(os.fspath(path), text)
    if kept and json.loads(json.dumps(entries)) == entries:
        with contextlib.suppress(OSError):
            kept.parent.mkdir(parents=True, exist_ok=True)
            staged = kept.with_name(f"{kept.name}.{os.getpid()}.tmp")
            staged.write_text(json.dumps({"text": text, "entries": entries}), encoding="utf-8")
            os.replace(staged, kept)
    return copy.deepcopy(entries)


def _kept(name: str) -> Path | None:
    """File `name` in clustersim's cache directory; None without a home directory."""
    try:
        return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "clustersim" / name
    except RuntimeError:
        return None


def lookup(kind: str, name: str, extra: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """The catalog entry `name` of `kind` ("models" or "accelerators"); entries of a user's file
    `extra` are added to the shipped ones and win on equal names (and are checked)."""
    entries = accelerators() if kind == "accelerators" else shipped(kind)
    text = ""
    own: dict[str, Any] = {}
    if extra is not None:
        own, text = read_yaml(extra)
        entries = entries | {str(k): v for k, v in own.items()}
    key = name.lower()
    if key not in entries:
        where = extra if extra is not None and kind == "accelerators" else kind
        raise InputError(f"{where}: {name}: unknown name (valid: {', '.join(sorted(map(str, entries)))})")
    if kind == "accelerators":
        if extra is not None and key in set(map(str, own)):
            return accelerator(key, entries[key], extra, text) | {"name": key}
        return entries[key]
    if not isinstance(entries[key], dict):
        fail(extra or kind, text, key, "expected a mapping of fields")
    return dict(entries[key], name=key)
