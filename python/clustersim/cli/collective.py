"""`clustersim collective`: nccl-tests' table for one collective over a fabric, on the flow model."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from clustersim.cli.common import (
    add_backend,
    add_ecmp_seeds,
    add_fabric,
    add_json,
    add_progress,
    backend_spec,
    fabric_options,
    gpu_count,
    progress_for,
)
from clustersim.errors import InputError
from clustersim.files import atomic_outputs, write_csv
from clustersim.provenance import comment_lines
from clustersim.table import Table

if TYPE_CHECKING:
    from clustersim.api import CollectiveResult

EPILOG = """\
examples:
  clustersim collective allreduce -b 16M -e 512M -f 2 -n Spectrum-X:32
  clustersim collective alltoall -b 1M -e 4M -f 4 -n DCN+:64 --ecmp-seeds 3 --csv results/alltoall.csv
  clustersim collective allreduce -n examples/optcast_4x4.platform --reduction-servers all --cost 32,4,1"""


DESCRIPTION = (
    "Time one collective over every GPU of a fabric (or the first -g) for each size, "
    "each on an idle network, and print nccl-tests' table. NCCL_ALGO and NCCL_PROTO are honoured "
    "as by NCCL, NCCL_P2P_PXN_LEVEL too (default 2: all-to-all between servers through PXN), "
    "AS_SEND_LAT, AS_NVLS_ENABLE, AS_PXN_ENABLE and AS_NVLSTREE_ENABLE as in SimAI. In-network"
    " reduction (--algo collnet_direct / collnet_chain, SHARP) reports busbw with nccl-tests'"
    " in-network factor (n-1)/(n+1)."
)


def arguments(p: argparse.ArgumentParser) -> None:
    from clustersim.nccl_tests import OPS

    p.add_argument("op", help=", ".join(OPS))
    p.add_argument("-b", "--minbytes", default="32M", help="smallest size (K/M/G suffixes; default 32M)")
    p.add_argument("-e", "--maxbytes", default="32M", help="largest size (default 32M)")
    p.add_argument("-f", "--stepfactor", type=int, default=2, help="size multiplier (default 2)")
    add_fabric(p, required=True, what="the fabric")
    add_backend(p)
    p.add_argument("--proto", default="auto", help="auto (NCCL's choice per size) or LL, LL128, Simple")
    p.add_argument("-g", "--gpus", type=gpu_count, help="ranks: the first N GPUs (default all)")
    add_ecmp_seeds(p)
    add_json(p, "the table")
    p.add_argument("--csv", metavar="FILE", help="also write the table to this CSV file")
    add_progress(p)
    add_cost(p)
    p.set_defaults(func=main)


def add_cost(p: argparse.ArgumentParser) -> None:
    """The seed's cost report for reduction servers (add_fabric's --reduction-servers)."""
    p.add_argument(
        "--cost",
        metavar="P_GPU,P_SERVER[,W]",
        help="also run without the reduction servers and print the seed's cost report: GPU instance and"
        " server prices per hour, W GPU instances (default: one per scale-up domain of the ranks)",
    )


def main(args: argparse.Namespace) -> int:
    from clustersim.api import collective

    progress = progress_for(args, args.op)
    fabric = fabric_options(args)
    if args.cost and fabric["reduction"] is None:
        raise InputError("command line: --cost: compares against reduction servers; give --reduction-servers")
    sweep = dict(
        minbytes=args.minbytes,
        maxbytes=args.maxbytes,
        stepfactor=args.stepfactor,
        proto=args.proto,
        gpus=args.gpus,
        ecmp_seeds=args.ecmp_seeds,
        backend=backend_spec(args),
    )
    try:
        table = collective(args.op, progress=progress, **sweep, **fabric)
        base = None
        if args.cost:
            base = collective(args.op, **sweep, **(fabric | dict(reduction=None)))
    finally:
        progress.close()
    if args.csv:
        with atomic_outputs() as stage:
            rows = [table.columns, *(row.values() for row in table.rows())]
            write_csv(stage(args.csv), rows, comment_lines(table.provenance))
    if args.json:
        print(json.dumps(table.to_dict()))
        return 0
    print(heading(table))
    print_table(table)
    if base is not None:
        print_cost(args, table, base)
    if args.csv:
        print(f"# wrote {args.csv}")
    return 0


def heading(table: CollectiveResult) -> str:
    """What the table is of: the collective, its ranks, the fabric, the algorithm and protocol
    choice and the model."""
    made_by = table.provenance or {}
    plan, fabric = made_by.get("plan") or {}, made_by.get("fabric") or {}
    algo, proto = plan.get("algo", "auto"), plan.get("proto", "auto")
    choice = "auto (NCCL's tuner, per size: the algorithm column)" if algo == "auto" else algo
    where = f"{fabric.get('name')} (sha256 {str(fabric.get('sha256'))[:16]})" if fabric else "the fabric"
    return (
        f"# {table.op} on {table.ranks} ranks of {where}: algorithm {choice}, protocol {proto},"
        f" {made_by.get('backend', 'flow')} model"
    )


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


def print_cost(args: argparse.Namespace, table: Table, base: Table) -> None:
    """The seed's cost report per size: the all-reduce's time reduction against the break-even x."""
    from clustersim.fabric import load_topology
    from clustersim.reduction_server import cost_report

    parts = args.cost.split(",")
    try:
        prices = [float(v) for v in parts[:2]]
        workers = int(parts[2]) if len(parts) > 2 else None
    except ValueError:
        prices, workers = [], None
    if len(prices) != 2 or len(parts) > 3:
        raise InputError(f"command line: --cost: expected P_GPU,P_SERVER[,W], got '{args.cost}'")
    topo = load_topology(args.topology)
    n = args.gpus if args.gpus is not None else topo.ranks
    if workers is None:
        workers = len(set(topo.placement[1][:n]))
    servers = server_count(topo, args.reduction_servers)
    print(f"# cost: {workers} GPU instances at {prices[0]:g}/h, {servers} servers at {prices[1]:g}/h")
    seeded = "seed" in table.columns
    for r, b in zip(table.rows(), base.rows(), strict=True):
        if seeded and r["seed"] != "mean":
            continue
        c = cost_report(b["time_us"], r["time_us"], workers, prices[0], servers, prices[1])
        verdict = "pays off" if c.pays_off else "does not pay off"
        print(
            f"# {r['size']:>13} B: {b['algorithm']} {c.base_us:.1f} us, servers {c.servers_us:.1f} us:"
            f" x = {c.reduction:.3f} vs break-even {c.break_even:.3f}"
            f" ({verdict} if all-reduce is all of the run)"
        )


def server_count(topo, servers: str) -> int:  # noqa: ANN001 (the engine's Platform)
    """How many servers `--reduction-servers` names (the engine has checked them)."""
    text = servers.strip()
    if text.isdigit():
        return int(text)
    if text.lower() != "all":
        return len([s for s in text.split(",") if s.strip()])
    kinds = topo.kinds
    src, dst, _, _ = topo.links
    return len({a for a, b in zip(src, dst, strict=True) if kinds[a] == "cpu" and kinds[b] == "nic"})
