"""What made a result, recorded once for every writer: the command, clustersim's version, the plan,
the model, the fabric (its name and a hash of its content) and the backend. `record` builds it;
results carry it (`TrainResult`, `AnalyticalResult`, `CollectiveResult`: their `provenance`), so
every `--json`, `-o`, summary file and sweep row holds it; CSV files carry it as `#` comment
lines above their header (`comment_lines`, written by `clustersim.files.write_csv`); and
`clustersim compare` reads it to say what differs between two runs before their numbers.

The content hashes are SHA-256: of a fabric, its nodes, links, link rates, placement and device
types as the engine holds them (`platform_digest`: a fabric given as a template, a file or a
Platform object hashes alike, and a calibrated fabric differs from the raw one); of a model, its
resolved description as canonical JSON (sorted keys, no spaces: the catalog entry or file as
read, with any overrides applied); of a SimAI workload file, its text as read (UTF-8, `\n` line
ends: `sha256sum`'s hash of a file with Unix line ends); of a workload graph, its document as the
engine reads it (normalised JSON, so a re-indented or GraphML copy of a graph hashes alike).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from typing import Any

#: The command line being run (set by the CLI); None from the API, which records the call.
_COMMAND: ContextVar[str | None] = ContextVar("clustersim_command", default=None)

#: The record's fields, in order.
FIELDS = ("command", "version", "plan", "model", "fabric", "backend")


@contextlib.contextmanager
def command_line(argv: list[str]) -> Iterator[None]:
    """While the CLI runs `argv`, results record it (shell-quoted) as their command."""
    import shlex

    token = _COMMAND.set(shlex.join(["clustersim", *argv]))
    try:
        yield
    finally:
        _COMMAND.reset(token)


@contextlib.contextmanager
def api_calls() -> Iterator[None]:
    """Results made inside record their API call, not the command line (a sweep's points: each
    is a call of its own, the same in this process or a worker)."""
    token = _COMMAND.set(None)
    try:
        yield
    finally:
        _COMMAND.reset(token)


def call_text(function: str, arguments: Mapping[str, Any]) -> str:
    """How the result was asked for: the command line under the CLI, else the API call with the
    arguments given (those not None), e.g. `clustersim.train(model='llama3-8b', gpus=8, gbs=8)`."""
    given = _COMMAND.get()
    if given is not None:
        return given
    shown = ", ".join(f"{k}={_shown(v)!r}" for k, v in arguments.items() if v is not None)
    return f"clustersim.{function}({shown})"


def _shown(value: Any) -> Any:
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, Mapping):
        return {str(k): _shown(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_shown(v) for v in value]
    fields = getattr(value, "__dataclass_fields__", None)  # ReductionServers: its settings
    if fields is not None:
        return {type(value).__name__: {f: _shown(getattr(value, f)) for f in fields}}
    return getattr(value, "name", None) or type(value).__name__


def jsonable(values: Mapping[str, Any]) -> dict[str, Any]:
    """`values` as JSON can hold them: paths as text, objects by their name."""
    return {str(k): _shown(v) for k, v in values.items()}


def digest(value: Any) -> str:
    """SHA-256 (hex) of `value` as canonical JSON."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=True, default=_shown)
    return _sha256_hex(text.encode())


def platform_digest(platform: Any) -> str:
    """SHA-256 of a fabric's content as the engine holds it (an `_engine.Platform`): its node
    kinds and names, links (ends, rates, latencies, forwarding, error rates), placement and
    accelerator types, each as packed bytes (little-endian 64-bit numbers, NUL-separated text)
    behind its length. Bytes, not JSON: AlibabaHPN's 17,640 nodes hash in a fraction of the time."""
    import hashlib
    from array import array

    def text(values: list[str]) -> bytes:
        return "\x00".join(values).encode()

    def ints(values: list[int] | list[bool]) -> bytes:
        packed = array("q", values)  # bools are ints
        return packed.tobytes() if sys.byteorder == "little" else _swapped(packed)

    def floats(values: list[float]) -> bytes:
        packed = array("d", values)
        return packed.tobytes() if sys.byteorder == "little" else _swapped(packed)

    src, dst, rate, latency = platform.links
    chunks = [text(platform.kinds), text(platform.names), ints(src), ints(dst), floats(rate)]
    chunks += [floats(latency), ints(platform.forwards), floats(platform.error_rates)]
    chunks += [ints(column) for column in platform.placement]
    chunks.append(text(platform.accelerator_types))
    h = hashlib.sha256()
    for chunk in chunks:
        h.update(len(chunk).to_bytes(8, "little"))
        h.update(chunk)
    return h.hexdigest()


def _sha256_hex(data: bytes) -> str:
    """SHA-256 of `data` in hex. Below 1 MB, CPython's built-in SHA-256 (`_sha2` from 3.12,
    `_sha256` before): `hashlib` loads OpenSSL, which costs a command more start-up than the
    built-in's slower hashing of that much."""
    if len(data) < 1 << 20:
        try:
            from _sha2 import sha256
        except ImportError:
            try:
                from _sha256 import sha256
            except ImportError:  # an interpreter built without either
                from hashlib import sha256
    else:
        from hashlib import sha256
    return sha256(data).hexdigest()


def _swapped(packed: Any) -> bytes:
    packed.byteswap()
    return packed.tobytes()


def fabric(spec: Any, platform: Any) -> dict[str, Any] | None:
    """The fabric a run used: `spec` as given (a file, a template NAME[:GPUS], a Topology) and
    the hash of the `platform` it became; None for none (the analytical backend)."""
    if platform is None:
        return None
    if isinstance(spec, (str, os.PathLike)):
        name = os.fspath(spec)
    else:
        name = getattr(spec, "name", None) or f"a {type(spec).__name__} object"
    return {"name": name, "sha256": platform_digest(platform)}


def model(description: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A model as resolved: its name and the hash of its canonical JSON."""
    if description is None:
        return None
    return {"name": str(description.get("name", "model")), "sha256": digest(description)}


def workload_file(name: str, text: str) -> dict[str, Any]:
    """A workload file (or a graph document) as the model: its name and the SHA-256 of `text`
    (UTF-8; for a file with Unix line ends, what `sha256sum` prints)."""
    return {"name": name, "sha256": _sha256_hex(text.encode())}


def record(
    *,
    command: str,
    plan: Mapping[str, Any] | None,
    model: Mapping[str, Any] | None,
    fabric: Mapping[str, Any] | None,
    backend: str,
) -> dict[str, Any]:
    """The provenance of one result (`FIELDS`, in order)."""
    from clustersim import __version__

    return {
        "command": command,
        "version": __version__,
        "plan": None if plan is None else jsonable(plan),
        "model": None if model is None else dict(model),
        "fabric": None if fabric is None else dict(fabric),
        "backend": backend,
    }


def describe(field: str, value: Any) -> str:
    """One field of a record as a line of text."""
    if value is None:
        return "none (the analytical model)" if field == "fabric" else "none"
    if isinstance(value, Mapping) and "sha256" in value:
        return f"{value.get('name')} (sha256 {str(value['sha256'])[:16]})"
    if isinstance(value, Mapping):
        return json.dumps(value, sort_keys=False, separators=(", ", ": "), default=str)
    return str(value)


def comment_lines(provenance: Mapping[str, Any] | None) -> list[str]:
    """The record as `# field: value` lines, for the top of a CSV file (pandas: `comment="#"`)."""
    if provenance is None:
        return []
    return [f"# {f}: {describe(f, provenance.get(f))}" for f in FIELDS]


#: What two runs can differ in, in the order `differences` names them; the command is shown
#: after them (it differs whenever any of them does).
COMPARED = ("fabric", "plan", "model", "backend", "version")


def differences(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> list[str]:
    """What differs between two runs' records, as lines of text: first which of fabric, plan,
    model, backend and version differ (`what differs: fabric`), then each in detail (a plan's
    options one by one), then both commands."""
    if a is None or b is None:
        which = " and ".join(n for n, p in (("A", a), ("B", b)) if p is None)
        return [f"what differs: unknown ({which}: no provenance recorded, written before results held it)"]
    fields = [f for f in COMPARED if a.get(f) != b.get(f)]
    same = "nothing that made them (same inputs, same version)"
    lines = [f"what differs: {', '.join(fields) if fields else same}"]
    for f in fields:
        x, y = a.get(f), b.get(f)
        if f == "plan" and isinstance(x, Mapping) and isinstance(y, Mapping):
            keys = [k for k in dict.fromkeys([*x, *y]) if x.get(k) != y.get(k)]
            lines.append("  plan: " + ", ".join(f"{k} {_plain(x.get(k))} → {_plain(y.get(k))}" for k in keys))
        else:
            lines.append(f"  {f}: {describe(f, x)} → {describe(f, y)}")
    if a.get("command") != b.get("command"):
        lines += [f"  command of A: {a.get('command')}", f"  command of B: {b.get('command')}"]
    return lines


def _plain(v: Any) -> str:
    return "—" if v is None else json.dumps(v) if isinstance(v, (dict, list)) else str(v)
