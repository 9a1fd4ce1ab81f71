"""`clustersim collective`: nccl-tests-shaped sweeps of one collective on the flow model.

Sizes follow nccl-tests (shared/reference/hardware.md §3): S bytes, algbw = S/t, busbw = algbw ×
the collective's factor. NCCL_ALGO and NCCL_PROTO, and SimAI's AS_SEND_LAT, AS_NVLS_ENABLE,
AS_PXN_ENABLE and AS_NVLSTREE_ENABLE (formats.md §7), are read from the environment.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from clustersim import _engine
from clustersim.errors import InputError
from clustersim.table import Table
from clustersim.topology import TEMPLATES, Topology, fat_tree, read_simai, simai_template

OPS = ("allreduce", "allgather", "reducescatter", "alltoall", "broadcast", "reduce")
SUFFIX = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
FLOAT_BYTES = 4


def busbw_factor(op: str, n: int) -> float:
    """nccl-tests' busbw / algbw for `op` on n ranks."""
    if op == "allreduce":
        return 2 * (n - 1) / n
    if op in ("allgather", "reducescatter", "alltoall"):
        return (n - 1) / n
    return 1.0


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


def tuning_env(env: Mapping[str, str]) -> dict[str, object]:
    """NCCL's NCCL_ALGO / NCCL_PROTO (one name each) and SimAI's AS_* switches from `env`, as
    keyword arguments of the engine (names are checked there)."""
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


# NCCL's most queue pairs per connection (NCCL_IB_MAX_QPS); each QP becomes a flow of its own.
MAX_QPS = 128
# Most ECMP seeds one run may go over: each is a whole simulation.
MAX_ECMP_SEEDS = 1024
# ECMP seeds are the engine's unsigned 64-bit numbers.
SEED_MAX = (1 << 64) - 1


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
    if seed + n - 1 > SEED_MAX:
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


def load_topology(spec: str) -> Topology:
    """A SimAI topology file, or a template: NAME[:GPUS] with NAME one of the SimAI templates,
    or fat-tree:K (a k-ary fat-tree)."""
    name, _, count = spec.partition(":")
    names = {t.lower(): t for t in TEMPLATES}
    if name.lower() in names or name.lower() in ("fat-tree", "fattree"):
        if count and not count.isdigit():
            raise InputError(f"--topology {spec}: the part after ':' must be a whole number")
        if name.lower() in names:
            return simai_template(names[name.lower()], **({"gpu": int(count)} if count else {}))
        return fat_tree(int(count) if count else 4)
    if not Path(spec).is_file():
        raise InputError(
            f"--topology {spec}: no such file"
            f" (or give a template: {', '.join(TEMPLATES)}, fat-tree, as NAME[:GPUS])"
        )
    return read_simai(spec)


def sweep(
    topology: Topology | str,
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
) -> Table:
    """Run `op` once per S in `sizes_bytes` on the flow model; nccl-tests' columns as a Table.
    `topology` is a Topology, a SimAI file or a template spec; `env` (default os.environ)
    supplies NCCL_ALGO / NCCL_PROTO (where `algorithm` / `protocol` are "auto"), SimAI's AS_*
    switches and NCCL_IB_QPS_PER_CONNECTION (`qps`, queue pairs per connection, each its own ECMP
    hash, overrides it); `routing` is "ecmp" (per-flow hashing) or "spray" (per-packet spraying)."""
    if op not in OPS:
        raise InputError(f"unknown collective '{op}' (valid: {', '.join(OPS)})")
    topo = load_topology(topology) if isinstance(topology, str) else topology
    n = gpus if gpus is not None else topo.num_gpus
    switches = tuning_env(os.environ if env is None else env)
    if algorithm != "auto":
        switches["algorithm"] = algorithm
    if protocol != "auto":
        switches["protocol"] = protocol
    switches |= {"qps": qps_option(qps, env), "routing": routing}
    runs = _engine.collective_sweep(
        topo.to_simai(), op, sizes_bytes, channels=channels, ranks=gpus, seed=seed, **switches
    )
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
            "busbw_GBps": [b * factor for b in algbw],
            "algorithm": [a for _, a, _ in runs],
            "protocol": [p for _, _, p in runs],
        }
    )


def add_seed_argument(p: argparse.ArgumentParser) -> None:
    """--seed, the first (or only) ECMP seed."""
    p.add_argument("--seed", type=whole(0, SEED_MAX), default=0, help="ECMP seed (default 0)")


def add_ecmp_arguments(p: argparse.ArgumentParser) -> None:
    """How the fabric spreads flows (`run` and `collective`)."""
    p.add_argument(
        "--qps",
        type=whole(1, MAX_QPS),
        help="queue pairs per connection, each its own ECMP hash, bytes split evenly"
        " (default: NCCL_IB_QPS_PER_CONNECTION, else 1)",
    )
    p.add_argument(
        "--routing",
        choices=["ecmp", "spray"],
        default="ecmp",
        help="ecmp: per-flow hashing (default); spray: per-packet spraying / adaptive routing (Spectrum-X)",
    )
    p.add_argument(
        "--ecmp-seeds",
        type=whole(1, MAX_ECMP_SEEDS),
        default=1,
        metavar="N",
        help="run ECMP seeds --seed … --seed+N−1 and report mean, min, max and each seed",
    )


def whole(lo: int, hi: int) -> Callable[[str], int]:
    """argparse type: a whole number from `lo` to `hi`."""

    def parse(text: str) -> int:
        if not re.fullmatch(r"\s*(0|[1-9]\d*)\s*", text) or not lo <= int(text) <= hi:
            raise argparse.ArgumentTypeError(f"must be a whole number from {lo} to {hi}, got '{text}'")
        return int(text)

    return parse


def add_collective(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "collective",
        help="nccl-tests-style sweep of one collective on the flow model",
        description="Time one collective over every GPU of a fabric (or the first -g) for each size, "
        "each on an idle network, and print nccl-tests' table. NCCL_ALGO and NCCL_PROTO are honoured "
        "as by NCCL, AS_SEND_LAT, AS_NVLS_ENABLE, AS_PXN_ENABLE and AS_NVLSTREE_ENABLE as in SimAI.",
        epilog="example: clustersim collective allreduce -b 16M -e 512M -f 2 --topology Spectrum-X:32",
        allow_abbrev=False,
    )
    p.add_argument("op", help=", ".join(OPS))
    p.add_argument("-b", "--minbytes", default="32M", help="smallest size (K/M/G suffixes; default 32M)")
    p.add_argument("-e", "--maxbytes", default="32M", help="largest size (default 32M)")
    p.add_argument("-f", "--stepfactor", type=int, default=2, help="size multiplier (default 2)")
    p.add_argument(
        "--topology", required=True, help="SimAI topology file, or NAME[:GPUS] (Spectrum-X:32, fat-tree:4)"
    )
    p.add_argument("--algo", default="auto", help="auto (NCCL's tuner) or ring, tree, nvls, … (default auto)")
    p.add_argument("--proto", default="auto", help="auto (NCCL's choice per size) or LL, LL128, Simple")
    p.add_argument(
        "--channels",
        type=int,
        default=0,
        help="channels (default: group ranks per server, at most NICs per server)",
    )
    p.add_argument("-g", "--gpus", type=int, help="ranks: the first N GPUs (default all)")
    add_seed_argument(p)
    add_ecmp_arguments(p)
    p.add_argument("--json", action="store_true", help="print the table as JSON")
    p.add_argument("--csv", help="also write the table to this CSV file")
    p.set_defaults(func=run_collective)


def run_collective(args: argparse.Namespace) -> int:
    op = args.op.lower().replace("_", "")
    if op not in OPS:
        raise InputError(f"unknown collective '{args.op}' (valid: {', '.join(OPS)})")
    if args.channels < 0:
        raise InputError(f"--channels: must be 0 (auto) or more, got {args.channels}")
    todo = sizes(parse_size(args.minbytes), parse_size(args.maxbytes), args.stepfactor)
    seeds = ecmp_seeds(args.seed, args.ecmp_seeds)
    tables = [
        sweep(
            args.topology,
            op,
            todo,
            algorithm=args.algo,
            protocol=args.proto,
            channels=args.channels,
            gpus=args.gpus,
            seed=seed,
            qps=args.qps,
            routing=args.routing,
        )
        for seed in seeds
    ]
    table = tables[0] if len(seeds) == 1 else seed_table(seeds, tables)
    if args.csv:
        write_csv(table, args.csv)
    if args.json:
        print(json.dumps(table.to_dict()))
    else:
        print_table(table)
    return 0


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


def write_csv(table: Table, path: str) -> None:
    from clustersim.output import atomic_outputs, write_text

    lines = [",".join(table.columns)] + [",".join(str(v) for v in row.values()) for row in table.rows()]
    with atomic_outputs() as stage:
        write_text(stage(path), "\n".join(lines) + "\n")


def print_table(table: Table) -> None:
    """nccl-tests' layout: one line per size, then the average bus bandwidth."""
    seeded = "seed" in table.columns
    head, pad = (f"{'seed':>6}", " " * 6) if seeded else ("", "")
    cols = f"{'type':>7}{'redop':>7}{'time':>11}{'algbw':>9}{'busbw':>9}"
    print(f"#{head}{'size':>13}{'count':>13}{cols}  algorithm  protocol")
    print(f"#{pad}{'(B)':>13}{'(elements)':>13}{'':>7}{'':>7}{'(us)':>11}{'(GB/s)':>9}{'(GB/s)':>9}")
    for r in table.rows():
        lead = f"{r['seed']:>6}" if seeded else ""
        print(
            f" {lead}{r['size']:>13}{r['count']:>13}{r['type']:>7}{r['redop']:>7}{r['time_us']:>11.1f}"
            f"{r['algbw_GBps']:>9.2f}{r['busbw_GBps']:>9.2f}  {r['algorithm']:<9}  {r['protocol']}"
        )
    busbw = [b for i, b in enumerate(table["busbw_GBps"]) if not seeded or table["seed"][i] == "mean"]
    print(f"# Avg bus bandwidth    : {sum(busbw) / len(busbw):g}")
    sys.stdout.flush()
