"""Model and accelerator presets shipped with clustersim (YAML; users add their own files).

Entries read from a user's file are checked here, so that a bad value is reported as
`file:line: field: problem`: types first (a count is a whole number, a rate a finite number),
then values by the engine's own checks (`check_description`)."""

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

HERE = Path(__file__).parent

ACCELERATOR_RATES = ("hbm_gb", "hbm_tbps")
# The compute model's two peaks, derived from an entry's per-data-type `tflops` table (`peaks`).
ACCELERATOR_PEAKS = ("matmul_tflops", "vector_tflops")
DTYPES = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8")
ACCELERATOR_LINKS = ("nvlink_busbw", "nic_busbw")
ACCELERATOR_COMPUTE = ("sms", "gemm_efficiency", "hbm_efficiency", "attention_efficiency")
ACCELERATOR_OPTIONAL = ("gemm_tile", "kernel_overhead_ns", "gemm_fill_drain_ns", "attention_bwd_efficiency")


def read_yaml(path: str | os.PathLike[str]) -> tuple[dict[str, Any], str]:
    """The mapping in YAML file `path` (entries named `_…` dropped) and the file's text. Each text
    is parsed once: a search or a sweep that names a user's file in thousands of runs reads it in
    each (microseconds) but parses it only the first time (1–2 ms)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise InputError(f"{path}: cannot read: {reason}") from None
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


def engine_check(kind: str, doc: dict[str, Any], path: str | os.PathLike[str], text: str) -> None:
    """The engine's checks of a model or accelerator, reported at the field's line in `path`."""
    from clustersim import _engine

    problem = _engine.check_description(kind, json.dumps(doc))
    if problem is not None:
        fail(path, text, *problem)


def peaks(entry: dict[str, Any]) -> dict[str, Any]:
    """The entry with the compute model's peaks taken from its `tflops` table (TFLOP/s per data
    type, the one place a peak is written): `matmul_tflops`, the dense tensor-core peak, is
    bf16's (fp16's where there is no bf16, as on V100); `vector_tflops` is fp32's. An entry
    without a table (an older user file) gives the two itself."""
    table = entry.get("tflops")
    if not isinstance(table, dict):
        return entry
    matmul = table.get("bf16", table.get("fp16"))
    return entry | {"matmul_tflops": matmul, "vector_tflops": table.get("fp32")}


def check_accelerator(entry: dict[str, Any], path: str | os.PathLike[str], text: str | None) -> None:
    """An accelerator from a user's file (or, with `text` None, a mapping given in Python): the
    fields a run needs, of the right types and values. A missing field is reported at the
    entry's line. Peaks come from the `tflops` table, or from `matmul_tflops` and
    `vector_tflops` in a file without one (given beside a table, they must be its figures)."""
    name = str(entry.get("name", "accelerator"))
    given = [k for k in ACCELERATOR_PEAKS if k in entry]
    peak_keys = ("tflops",) if "tflops" in entry or not given else ACCELERATOR_PEAKS
    for key in (*peak_keys, *ACCELERATOR_RATES, *ACCELERATOR_LINKS, *ACCELERATOR_COMPUTE):
        if key not in entry:
            where = f"{path}:{line_of(text, name)}" if text is not None else str(path)
            raise InputError(f"{where}: {key}: missing in accelerator '{name}'")
    text = text or ""
    if "tflops" in entry:
        check_tflops(entry["tflops"], path, text)
    derived = peaks(entry)
    for key in given:
        if entry[key] != derived[key]:
            problem = f"{entry[key]!r} is not the tflops table's {derived[key]!r} (give the table alone)"
            fail(path, text, key, problem)
    entry = derived
    numbers = (*ACCELERATOR_PEAKS, *ACCELERATOR_RATES, *ACCELERATOR_LINKS, *ACCELERATOR_COMPUTE, "nvls_busbw")
    for key in (*numbers, "kernel_overhead_ns", "gemm_fill_drain_ns", "attention_bwd_efficiency"):
        v = entry.get(key, 0)
        if not is_number(v) and not (key == "nvls_busbw" and v is None):
            fail(path, text, key, f"must be a finite number, got {v!r}")
    for key in (*ACCELERATOR_LINKS, "nvls_busbw"):
        v = entry.get(key)
        if v is not None and not 0 < v <= 1e9:
            fail(path, text, key, f"must be a bandwidth from 0 to 1e9 GB/s, got {v!r}")
    if not is_count(entry["sms"]):
        fail(path, text, "sms", f"must be a whole number, got {entry['sms']!r}")
    tile = entry.get("gemm_tile", [128, 128])
    if not (isinstance(tile, list) and len(tile) == 2 and all(map(is_count, tile))):
        fail(path, text, "gemm_tile", f"must be [rows, columns] in whole numbers, got {tile!r}")
    fields = ("name", *ACCELERATOR_PEAKS, *ACCELERATOR_RATES, *ACCELERATOR_COMPUTE, *ACCELERATOR_OPTIONAL)
    engine_check("accelerator", {k: entry[k] for k in fields if k in entry}, path, text)


def check_tflops(table: object, path: str | os.PathLike[str], text: str) -> None:
    """A `tflops` table: positive TFLOP/s by data type, fp32 and bf16 or fp16 among them."""
    if not isinstance(table, dict):
        fail(path, text, "tflops", f"must map data types ({', '.join(DTYPES)}) to TFLOP/s, got {table!r}")
    for dtype, v in table.items():
        if dtype not in DTYPES:
            fail(path, text, "tflops", f"unknown data type {dtype!r} (valid: {', '.join(DTYPES)})")
        if not (is_number(v) and v > 0):
            fail(path, text, "tflops", f"{dtype}: must be a positive number of TFLOP/s, got {v!r}")
    for need in (("fp32",), ("bf16", "fp16")):
        if not any(d in table for d in need):
            fail(path, text, "tflops", f"needs {' or '.join(need)} (the compute model's peaks)")


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
    entries = shipped(kind)
    text = ""
    if extra is not None:
        own, text = read_yaml(extra)
        entries = entries | {str(k): v for k, v in own.items()}
    key = name.lower()
    if key not in entries:
        where = extra if extra is not None and kind == "accelerators" else kind
        raise InputError(f"{where}: {name}: unknown name (valid: {', '.join(sorted(map(str, entries)))})")
    if not isinstance(entries[key], dict):
        fail(extra or kind, text, key, "expected a mapping of fields")
    entry = dict(entries[key], name=key)
    if extra is not None and kind == "accelerators" and key in set(map(str, own)):
        check_accelerator(entry, extra, text)
    return peaks(entry) if kind == "accelerators" else entry
