"""`clustersim collective`: nccl-tests' table for one collective over a fabric, on the flow model."""

from __future__ import annotations

import argparse
import json
import sys

from clustersim.cli.common import (
    add_ecmp_seeds,
    add_fabric,
    add_json,
    add_progress,
    count,
    fabric_options,
    progress_for,
    subcommand,
)
from clustersim.table import Table

EPILOG = """\
examples:
  clustersim collective allreduce -b 16M -e 512M -f 2 -n Spectrum-X:32
  clustersim collective alltoall -b 1M -e 4M -f 4 -n DCN+:64 --ecmp-seeds 3 --csv results/alltoall.csv"""


HELP = "nccl-tests-style sweep of one collective on the flow model"


def add(sub: argparse._SubParsersAction) -> None:
    from clustersim.sweep import OPS

    p = subcommand(
        sub,
        "collective",
        help=HELP,
        description="Time one collective over every GPU of a fabric (or the first -g) for each size, "
        "each on an idle network, and print nccl-tests' table. NCCL_ALGO and NCCL_PROTO are honoured "
        "as by NCCL, NCCL_P2P_PXN_LEVEL too (default 2: all-to-all between servers through PXN), "
        "AS_SEND_LAT, AS_NVLS_ENABLE, AS_PXN_ENABLE and AS_NVLSTREE_ENABLE as in SimAI.",
        epilog=EPILOG,
    )
    p.add_argument("op", help=", ".join(OPS))
    p.add_argument("-b", "--minbytes", default="32M", help="smallest size (K/M/G suffixes; default 32M)")
    p.add_argument("-e", "--maxbytes", default="32M", help="largest size (default 32M)")
    p.add_argument("-f", "--stepfactor", type=int, default=2, help="size multiplier (default 2)")
    add_fabric(p, required=True, what="the fabric")
    p.add_argument("--proto", default="auto", help="auto (NCCL's choice per size) or LL, LL128, Simple")
    p.add_argument("-g", "--gpus", type=count, help="ranks: the first N GPUs (default all)")
    add_ecmp_seeds(p)
    add_json(p, "the table")
    p.add_argument("--csv", metavar="FILE", help="also write the table to this CSV file")
    add_progress(p)
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from clustersim.api import collective

    progress = progress_for(args, args.op)
    try:
        table = collective(
            args.op,
            minbytes=args.minbytes,
            maxbytes=args.maxbytes,
            stepfactor=args.stepfactor,
            proto=args.proto,
            gpus=args.gpus,
            ecmp_seeds=args.ecmp_seeds,
            progress=progress,
            **fabric_options(args),
        )
    finally:
        progress.close()
    if args.csv:
        from clustersim.output import atomic_outputs, write_csv

        with atomic_outputs() as stage:
            write_csv(stage(args.csv), [table.columns, *(row.values() for row in table.rows())])
    if args.json:
        print(json.dumps(table.to_dict()))
        return 0
    print_table(table)
    if args.csv:
        print(f"# wrote {args.csv}")
    return 0


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
