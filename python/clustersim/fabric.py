"""The flow backend's input: a fabric (a SimAI topology file or a template) and how collectives
run on it (NCCL's and SimAI's switches, queue pairs, ECMP seeds).

A fabric is given the same way everywhere (`run -n`, `train -n`, `collective -n`, the API's
`topology=`): a SimAI topology file, a platform file of typed devices (docs/platform-format.md,
read by the engine into a `Platform`), a template `NAME[:GPUS]` (`Spectrum-X:64`, `DCN+`,
`fat-tree:8`), the engine's `Platform` or a `Topology` view of one. Every form becomes one
`Platform` (`load_topology`); the topology package is imported only for a template or a `Topology`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clustersim import _engine
from clustersim.errors import InputError
from clustersim.files import read_text
from clustersim.platform import read_platform
from clustersim.reduction_server import on_platform_options
from clustersim.topology import TEMPLATES, Topology, fat_tree, simai_template

if TYPE_CHECKING:
    from clustersim.platform import Platform
    from clustersim.reduction_server import ReductionServers

# NCCL's most queue pairs per connection (NCCL_IB_MAX_QPS); each QP becomes a flow of its own.
MAX_QPS = 128
# Most ECMP seeds one run may go over: each is a whole simulation.
MAX_ECMP_SEEDS = 1024
# ECMP seeds are the engine's unsigned 64-bit numbers.
SEED_MAX = (1 << 64) - 1


def template(spec: str) -> tuple[str, int | None] | None:
    """(template name, GPUs or None) if `spec` names a template (`NAME[:GPUS]`), else None."""
    name, _, count = spec.partition(":")
    names = {t.lower(): t for t in TEMPLATES} | {"fat-tree": "fat-tree", "fattree": "fat-tree"}
    if name.lower() not in names:
        return None
    if ":" in spec and not (count.isdigit() and int(count) >= 1):
        # Spectrum-X:0 is not "the default size": a size of 0 is refused, as `topo -g 0` is.
        raise InputError(f"--topology {spec}: the part after ':' must be a whole number, at least 1")
    return names[name.lower()], int(count) if count else None


def load_topology(spec: str | os.PathLike[str] | Topology | Platform) -> Platform:
    """The engine's `Platform` of a fabric spec: a Platform, a `Topology` view, a template
    `NAME[:GPUS]` (a SimAI template or fat-tree:K, a k-ary fat-tree), a SimAI topology file or a
    platform file."""
    if isinstance(spec, _engine.Platform):
        return spec
    if not isinstance(spec, (str, os.PathLike)):
        if isinstance(spec, Topology):
            return spec.platform
        raise InputError(f"topology: expected a file, a template NAME[:GPUS] or a Platform, got {spec!r}")
    named = template(str(spec))
    if named is not None:
        name, count = named
        if name == "fat-tree":
            return fat_tree(count if count else 4).platform
        return simai_template(name, **({"gpu": count} if count else {})).platform
    if not Path(spec).is_file():
        raise InputError(
            f"--topology {spec}: no such file"
            f" (or give a template: {', '.join(TEMPLATES)}, fat-tree, as NAME[:GPUS])"
        )
    return read_platform(spec)


def gpu_count(topology: Platform) -> int:
    """GPUs (ranks) of a loaded fabric."""
    return topology.ranks


def tuning_env(env: Mapping[str, str]) -> dict[str, object]:
    """NCCL's NCCL_ALGO / NCCL_PROTO (one name each), NCCL_P2P_PXN_LEVEL (2, NCCL's default:
    all-to-all between servers through PXN; 0 or 1: direct) and SimAI's AS_* switches from
    `env`, as keyword arguments of the engine (names are checked there)."""
    out: dict[str, object] = {}
    for var, key in (("NCCL_ALGO", "algorithm"), ("NCCL_PROTO", "protocol")):
        value = env.get(var, "").strip()
        if value:
            out[key] = value
    lat = env.get("AS_SEND_LAT")
    if lat is not None:
        # SimAI reads an integer count of µs (formats.md §7).
        if not re.fullmatch(r"\s*\d+\s*", lat):
            raise InputError(f"AS_SEND_LAT: expected a whole number of µs, got '{lat}'")
        out["send_lat_us"] = float(int(lat))
    level = env.get("NCCL_P2P_PXN_LEVEL")
    if level is not None:
        if level.strip() not in ("0", "1", "2"):
            raise InputError(f"NCCL_P2P_PXN_LEVEL: expected 0, 1 or 2, got '{level}'")
        out["p2p_pxn"] = level.strip() == "2"
    for var, key in (
        ("AS_NVLS_ENABLE", "nvls"),
        ("AS_PXN_ENABLE", "pxn"),
        ("AS_NVLSTREE_ENABLE", "nvlstree"),
    ):
        value = env.get(var)
        if value is not None:
            if value.strip() not in ("0", "1"):
                raise InputError(f"{var}: expected 0 or 1, got '{value}'")
            out[key] = value.strip() == "1"
    return out


def qps_option(value: int | None, env: Mapping[str, str] | None = None) -> int:
    """Queue pairs per connection: `value`, else NCCL_IB_QPS_PER_CONNECTION, else NCCL's 1."""
    if value is not None:
        if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_QPS:
            raise InputError(f"qps: expected a whole number from 1 to {MAX_QPS}, got {value!r}")
        return value
    text = (os.environ if env is None else env).get("NCCL_IB_QPS_PER_CONNECTION")
    if text is None:
        return 1
    if not re.fullmatch(r"\s*[1-9]\d*\s*", text) or int(text) > MAX_QPS:
        raise InputError(
            f"NCCL_IB_QPS_PER_CONNECTION: expected a whole number from 1 to {MAX_QPS}, got '{text}'"
        )
    return int(text)


def ecmp_seeds(seed: int, n: int) -> list[int]:
    """The `n` ECMP seeds `seed` … `seed` + n − 1, all within the engine's 64 bits."""
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_ECMP_SEEDS:
        raise InputError(f"ecmp_seeds: expected a whole number from 1 to {MAX_ECMP_SEEDS}, got {n!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0 or seed + n - 1 > SEED_MAX:
        raise InputError(f"--seed {seed} with --ecmp-seeds {n}: seeds go past {SEED_MAX}")
    return [seed + i for i in range(n)]


def seed_stats(rows: list[dict[str, Any]], columns: list[str]) -> dict[str, Any]:
    """Runs over ECMP seeds: each row ({"seed": s, column: value, …}) and, per column, its mean,
    min and max."""
    out: dict[str, Any] = {"seeds": [r["seed"] for r in rows], "columns": columns, "rows": rows}
    for c in columns:
        values = [r[c] for r in rows]
        out[c] = {"mean": sum(values) / len(values), "min": min(values), "max": max(values)}
    return out


def fabric_document(
    topology: str | os.PathLike[str] | Topology | Platform,
    *,
    algorithm: str = "auto",
    channels: int = 0,
    seed: int = 0,
    routes: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    qps: int = 0,
    routing: str = "ecmp",
    reduction: ReductionServers | str | None = None,
    switch_reduce_gbps: float | None = None,
    backend: str = "flow",
    faults: str | None = None,
) -> dict[str, Any]:
    """The engine's "fabric" options, for the `Platform` given next to it (`load_topology`):
    where the topology came from (for messages), the algorithm ("auto": NCCL's tuner), channels
    (0: one per group rank of a server, at most one per NIC), the ECMP seed, a routes file's text
    (one route per line: the nodes of the path, source first; it overrides ECMP between its end
    nodes), NCCL_ALGO (where `algorithm` is "auto"), NCCL_PROTO and SimAI's AS_* switches from
    `env` (default: the process environment); `qps` queue pairs per connection
    (NCCL_IB_QPS_PER_CONNECTION, 0 = 1), each hashed on its own, and `routing` "ecmp" (per-flow
    hashing) or "spray" (per-packet spraying / adaptive routing, as Spectrum-X does);
    `reduction` (reduction servers) and `switch_reduce_gbps` (CollNet) take the all-reduces
    across servers (clustersim.reduction_server.on_platform_options); `backend` "flow" (max-min
    fair flows) or "packet" (the packet model) moves the transfers; `faults` (`fault_spec`'s text)
    takes links or NICs down or slows them during the run (docs/guides/goodput.md)."""
    doc = {
        "path": str(topology) if isinstance(topology, (str, os.PathLike)) else "topology",
        "algorithm": algorithm,
        "channels": channels,
        "seed": seed,
        "qps": qps,
        "routing": routing,
        "backend": backend,
    }
    if routes is not None:
        doc |= {"routes": read_text(routes, "routes file"), "routes_path": str(routes)}
    if faults is not None:
        doc["faults"] = faults
    switches = tuning_env(os.environ if env is None else env)
    if algorithm != "auto":
        switches.pop("algorithm", None)
    return doc | switches | on_platform_options(reduction, switch_reduce_gbps)


def fault_spec(faults: str | Sequence[str] | None) -> str | None:
    """Faults as the engine reads them: one text, items joined by commas (`--fault` may be given
    several times; each is `link:<a>-<b>@<time>[:<factor>]` or `nic:<node>@<time>[:<factor>]`,
    which the engine parses and checks: crates/engine/src/platform/fault.rs)."""
    if faults is None:
        return None
    items = [faults] if isinstance(faults, str) else list(faults)
    if not all(isinstance(f, str) for f in items):
        raise InputError(f"faults: expected text such as link:a-b@1ms, got {faults!r}")
    return ",".join(items) if items else None


def fault_report(
    faults: str,
    iteration_s: float,
    healthy_s: float,
    parts: Mapping[str, float],
    healthy_parts: Mapping[str, float],
) -> dict[str, Any]:
    """How much slower a run with `faults` is than the same run without (seconds each), and
    where: the faulted parts as given, and the parts of the iteration's breakdown (`parts`,
    seconds: compute, exposed communication per group, bubble) that changed, most grown first."""
    changed = [
        {"part": k, "seconds": v, "healthy_seconds": healthy_parts.get(k, 0.0)}
        for k, v in parts.items()
        if v != healthy_parts.get(k, 0.0)
    ]
    changed.sort(key=lambda c: c["healthy_seconds"] - c["seconds"])
    return {
        "faults": [f.strip() for f in faults.split(",")],
        "iteration_s": iteration_s,
        "healthy_iteration_s": healthy_s,
        "slower_by": iteration_s / healthy_s - 1.0 if healthy_s > 0 else 0.0,
        "changed": changed,
    }


def fault_line(report: dict[str, Any]) -> str:
    """`fault_report` in one line: how much slower, the faults, and the part grown most."""
    where = ", ".join(report["faults"])
    most = report["changed"][:1]
    grown = "".join(
        f"; {c['part']} {c['healthy_seconds'] * 1e3:.6g} -> {c['seconds'] * 1e3:.6g} ms" for c in most
    )
    return (
        f"faults          {report['slower_by'] * 100:+10.2f} % ({where}: {report['iteration_s']:.6g} s,"
        f" {report['healthy_iteration_s']:.6g} s without{grown})"
    )
