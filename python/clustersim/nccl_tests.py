"""nccl-tests-shaped sweeps of one collective on the flow model (`clustersim collective`).

Sizes follow nccl-tests (shared/reference/hardware.md §3): S bytes, algbw = S/t, busbw = algbw ×
the collective's factor. NCCL_ALGO and NCCL_PROTO, and SimAI's AS_SEND_LAT, AS_NVLS_ENABLE,
AS_PXN_ENABLE and AS_NVLSTREE_ENABLE (formats.md §7), are read from the environment.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from clustersim import _engine
from clustersim.errors import InputError
from clustersim.fabric import gpu_count, load_topology, qps_option, tuning_env
from clustersim.reduction_server import on_platform_options
from clustersim.table import Table

if TYPE_CHECKING:
    from clustersim.platform import Platform
    from clustersim.reduction_server import ReductionServers
    from clustersim.topology import Topology

OPS = ("allreduce", "allgather", "reducescatter", "alltoall", "broadcast", "reduce")
SUFFIX = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
FLOAT_BYTES = 4


def busbw_factor(op: str, n: int) -> float:
    """nccl-tests' busbw / algbw for `op` on n ranks (the engine's)."""
    return _engine.busbw_factor(op, n)


def in_network_factor(n: int) -> float:
    """nccl-tests' busbw / algbw for an all-reduce reduced in the network on n ranks (the engine's)."""
    return _engine.in_network_busbw_factor(n)


def parse_size(text: str) -> int:
    """Bytes from '16M', '1G', '4096' (K/M/G are powers of two, as in nccl-tests)."""
    m = re.fullmatch(r"\s*(\d+)\s*([KMGkmg]?)[Bb]?\s*", text)
    if not m:
        raise InputError(f"size '{text}': expected a whole number of bytes with an optional K, M or G suffix")
    return int(m.group(1)) * SUFFIX[m.group(2).upper()]


def sizes(begin: int, end: int, factor: int) -> list[int]:
    """nccl-tests' -b/-e/-f: begin, begin·f, … up to end."""
    if begin < 1:
        raise InputError(f"-b: the smallest size must be at least 1 byte, got {begin}")
    if begin > end:
        raise InputError(f"-b {begin} is larger than -e {end}")
    if factor < 2:
        raise InputError(f"-f: the step factor must be at least 2, got {factor}")
    out = [begin]
    while out[-1] * factor <= end:
        out.append(out[-1] * factor)
    return out


def sweep(
    topology: Platform | Topology | str,
    op: str,
    sizes_bytes: list[int],
    *,
    algorithm: str = "auto",
    protocol: str = "auto",
    channels: int = 0,
    gpus: int | None = None,
    seed: int = 0,
    env: Mapping[str, str] | None = None,
    qps: int | None = None,
    routing: str = "ecmp",
    progress: Callable[[float], None] | None = None,
    reduction: ReductionServers | str | None = None,
    switch_reduce_gbps: float | None = None,
    backend: str = "flow",
) -> Table:
    """Run `op` once per S in `sizes_bytes` on the flow model; nccl-tests' columns as a Table.
    `topology` is the engine's Platform (passed to it as it is), a Topology view, a SimAI or
    platform file or a template spec; `env` (default os.environ)
    supplies NCCL_ALGO / NCCL_PROTO (where `algorithm` / `protocol` are "auto"), SimAI's AS_*
    switches and NCCL_IB_QPS_PER_CONNECTION (`qps`, queue pairs per connection, each its own ECMP
    hash, overrides it); `routing` is "ecmp" (per-flow hashing) or "spray" (per-packet spraying).
    `progress(fraction)` is called after each size (each size runs on its own idle network).
    `reduction` runs all-reduce on reduction servers of the platform (`clustersim.reduction_server`);
    `switch_reduce_gbps` is a switch's reduction throughput for collnet_direct / collnet_chain, whose
    busbw takes nccl-tests' in-network factor (n−1)/(n+1) (doc/PERFORMANCE.md). `backend` is
    "flow" (max-min fair flows) or "packet" (the packet model, SimAI.conf's shipped settings)."""
    if op not in OPS:
        raise InputError(f"unknown collective '{op}' (valid: {', '.join(OPS)})")
    topo = load_topology(topology)
    n = gpus if gpus is not None else gpu_count(topo)
    switches = tuning_env(os.environ if env is None else env)
    if algorithm != "auto":
        switches["algorithm"] = algorithm
    if protocol != "auto":
        switches["protocol"] = protocol
    switches |= {"qps": qps_option(qps, env), "routing": routing, "backend": backend}
    switches |= on_platform_options(reduction, switch_reduce_gbps)
    runs = []
    for i, size in enumerate(sizes_bytes):
        runs += _engine.collective_sweep(
            topo, op, [size], channels=channels, ranks=gpus, seed=seed, **switches
        )
        if progress is not None:
            progress((i + 1) / len(sizes_bytes))
    factor = busbw_factor(op, n)
    time_us = [ns / 1e3 for ns, _, _ in runs]
    algbw = [s / (ns if ns > 0 else float("nan")) for s, (ns, _, _) in zip(sizes_bytes, runs, strict=True)]
    reduces = op in ("allreduce", "reducescatter", "reduce")
    return Table(
        {
            "size": list(sizes_bytes),
            "count": [s // FLOAT_BYTES for s in sizes_bytes],
            "type": ["float"] * len(runs),
            "redop": ["sum" if reduces else "none"] * len(runs),
            "time_us": time_us,
            "algbw_GBps": algbw,
            "busbw_GBps": [
                b * (in_network_factor(n) if a.startswith("collnet") else factor)
                for b, (_, a, _) in zip(algbw, runs, strict=True)
            ],
            "algorithm": [a for _, a, _ in runs],
            "protocol": [p for _, _, p in runs],
        }
    )


def seed_table(seeds: list[int], tables: list[Table]) -> Table:
    """Sweeps over ECMP seeds as one table: each seed's rows (column `seed`), then per size the
    mean, min and max of its time (`seed` = mean, min, max), each with the bandwidths of that
    time, so that every row reads as nccl-tests' do (busbw = S / time · factor; the min row is
    the fastest)."""
    rows = [{"seed": str(s)} | r for s, t in zip(seeds, tables, strict=True) for r in t.rows()]
    for what, pick in (("mean", lambda v: sum(v) / len(v)), ("min", min), ("max", max)):
        for i, r in enumerate(tables[0].rows()):
            row = {"seed": what} | r
            row["time_us"] = pick([t["time_us"][i] for t in tables])
            row["algbw_GBps"] = r["size"] / (row["time_us"] * 1e3) if row["time_us"] > 0 else float("nan")
            row["busbw_GBps"] = row["algbw_GBps"] * (r["busbw_GBps"] / r["algbw_GBps"])
            row["algorithm"] = "/".join(sorted({t["algorithm"][i] for t in tables}))
            rows.append(row)
    return Table({k: [r[k] for r in rows] for k in rows[0]})
