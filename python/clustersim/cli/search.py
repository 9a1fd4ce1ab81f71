"""`clustersim search`: every valid parallel plan of a model on a cluster, the best ones first."""

from __future__ import annotations

import argparse
import re
from typing import TYPE_CHECKING, Any

from clustersim.cli.common import (
    add_json,
    add_options,
    add_progress,
    count,
    option_values,
    print_json,
    progress_for,
    wrote,
)
from clustersim.files import atomic_outputs, write_csv
from clustersim.plan import OPTIONS
from clustersim.provenance import comment_lines

if TYPE_CHECKING:
    from clustersim.explore.search import SearchResult

# The overlaps' short names in the table.
OVERLAPS = {"overlap_grad_reduce": "grad", "overlap_param_gather": "param", "tp_comm_overlap": "tp"}

# The plan options search holds fixed (clustersim.plan), and its own words for some of them.
FIXED = [o for o in OPTIONS if o.search == "fixed"]
CHANGES = {
    "model": {"required": True, "help": "catalog name, a YAML/JSON model file, or a HF config.json"},
    "gpu": {"help": "accelerator name from the catalog (default h100)"},
    "gbs": {"required": False, "help": "global batch size in sequences, the same for every plan"},
}


EPILOG = """\
examples:
  clustersim search --model gpt-175b --gpus 1024 --gpu a100 --gbs 1536
  clustersim search --model gpt-7b --gpus 16 --gpu h100 --gbs 32 --only pp=1 --exclude tp=1 --top 5
  clustersim search --model turing-530b --gpus 5128 --gpu a100 --max-gbs 2520 --csv plans.csv
  clustersim search --model llama3-405b --gpus 16384 --gbs 2048 --time-budget 5 --json"""


DESCRIPTION = (
    "Search every plan `train` accepts (TP, PP, VPP, EP, CP, micro-batch size, SP, recompute,"
    " DDP / distributed optimizer / ZeRO-1-3, the gradient, parameter-gather and TP communication"
    " overlaps), drop those that do not fit in memory (train's memory model), and rank the rest"
    " by tokens/s on the analytical backend. Branch and bound: each plan gets a lower bound on its"
    " iteration time (never above its simulated time); plans are simulated best bound first, and"
    " a plan whose bound cannot beat the k-th best so far is never simulated, so the top k (--top)"
    " are exactly those of simulating every plan, in the same order. --only / --exclude AXIS=V,…"
    " narrow an axis; --time-budget or Ctrl-C stop with the best found so far."
)


def arguments(p: argparse.ArgumentParser) -> None:
    # The batch is --gbs or --max-gbs.
    at = [o.name for o in FIXED].index("gbs")
    add_options(p, FIXED[:at], CHANGES)
    batch = p.add_mutually_exclusive_group(required=True)
    add_options(batch, FIXED[at : at + 1], CHANGES)
    batch.add_argument(
        "--max-gbs",
        type=count,
        metavar="N",
        help="global batch at most N: each plan takes the largest multiple of its DP (Calculon's rule)",
    )
    add_options(p, FIXED[at + 1 :], CHANGES)
    p.add_argument(
        "--memory-gb", type=float, help="usable memory per GPU in GB (default: the accelerator's HBM)"
    )
    axes = (
        "tp, pp, vpp, ep, cp, mbs (sizes), sp, overlap_grad_reduce, overlap_param_gather,"
        " tp_comm_overlap (on, off), recompute (none, selective, full),"
        " optimizer (ddp, distributed_optimizer, zero1, zero2, zero3)"
    )
    p.add_argument(
        "--only",
        type=only,
        action="append",
        default=[],
        metavar="AXIS=V,…",
        help=f"search only these values of an axis (repeatable): {axes}; default: every valid value",
    )
    p.add_argument(
        "--exclude",
        type=only,
        action="append",
        default=[],
        metavar="AXIS=V,…",
        help="leave these values of an axis out (repeatable; the axes of --only)",
    )
    p.add_argument(
        "-k",
        "--top",
        type=count,
        default=10,
        help="plans to show, ranked exactly as simulating every plan would (default 10)",
    )
    p.add_argument(
        "--exhaustive",
        action="store_true",
        help="simulate every plan that fits (no pruning: the whole table is ranked)",
    )
    p.add_argument(
        "--time-budget",
        type=float,
        metavar="SECONDS",
        help="stop after this long with the best plans found so far, saying how many were left unexplored",
    )
    p.add_argument("--csv", metavar="FILE", help="write every simulated plan, best first, as CSV")
    add_json(p, "the counts and the top plans")
    add_progress(p)
    p.set_defaults(func=main)


def only(text: str) -> tuple[str, list[Any]]:
    """argparse type: AXIS=V1,V2,… with AXIS an axis of the search and values of its kind."""
    from clustersim.explore.search import AXES, OPTIMIZERS, RECOMPUTE, SPACE_AXES, SWITCHES

    axis, _, values = text.partition("=")
    axis, parts = axis.strip(), [x.strip() for x in values.split(",")]
    kinds = {"recompute": RECOMPUTE, "optimizer": OPTIMIZERS} | {s: ("on", "off") for s in SWITCHES}
    if axis in AXES:
        if not all(re.fullmatch(r"[1-9]\d*", x) for x in parts):
            raise argparse.ArgumentTypeError(
                f"{axis}: must be whole numbers ≥ 1 separated by commas, got '{values}'"
            )
        return axis, [int(x) for x in parts]
    if axis not in kinds:
        raise argparse.ArgumentTypeError(f"unknown axis '{axis}' (valid: {', '.join(SPACE_AXES)})")
    bad = [x for x in parts if x not in kinds[axis]]
    if bad:
        raise argparse.ArgumentTypeError(f"{axis}: '{bad[0]}' is not one of {', '.join(kinds[axis])}")
    return axis, [x == "on" for x in parts] if axis in SWITCHES else parts


def main(args: argparse.Namespace) -> int:
    from clustersim.explore.search import search

    choices: dict[str, list[Any]] = {}
    for axis, values in args.only:
        choices[axis] = [*choices.get(axis, []), *values]
    exclude: dict[str, list[Any]] = {}
    for axis, values in args.exclude:
        exclude[axis] = [*exclude.get(axis, []), *values]
    progress = progress_for(args, "searching")
    try:
        result = search(
            progress=progress,
            max_gbs=args.max_gbs,
            memory_gb=args.memory_gb,
            top=None if args.exhaustive else args.top,
            exclude=exclude,
            time_budget=args.time_budget,
            **choices,
            **option_values(args, FIXED),
        )
    finally:
        progress.close()
    written = []
    if args.csv:
        with atomic_outputs() as stage:
            table = result.plans
            rows: list[list[Any]] = [["rank", *table.columns]]
            rows += [[i + 1, *row.values()] for i, row in enumerate(table.rows())]
            write_csv(stage(args.csv), rows, comment_lines(result.provenance))
        written.append(args.csv)
    # Stopped by Ctrl-C: the best so far, then the exit status of an interrupted command.
    status = 130 if result.stopped == "interrupted" else 0
    if args.json:
        print_json(result.to_dict(top=args.top))
        return status
    print_result(result, args.top)
    wrote(written)
    return status


def print_result(result: SearchResult, top: int) -> None:
    from clustersim.explore.search import part_column

    print(result.summary())
    table = result.top(top)
    parts = [p for p in result.parts if any(table[part_column(p)])]
    header = ["#", "TP", "PP", "VPP", "DP", "EP", "CP", "MBS", "GBS", "SP", "recompute", "optimizer"]
    header += ["overlaps", "mem GB", "iter s", "tokens/s", "MFU %"]
    header += [p.removeprefix("exposed ") + " s" for p in parts]
    rows = [header]
    for i, r in enumerate(table.rows()):
        plan = [r[k] for k in ("tp", "pp", "vpp", "dp", "ep", "cp", "mbs", "gbs")]
        on = [name for k, name in OVERLAPS.items() if r[k]]
        rows.append(
            [i + 1, *plan, "on" if r["sp"] else "off", r["recompute"], r["optimizer"], "+".join(on) or "-"]
            + [f"{r['memory_gb']:.1f}", f"{r['iteration_s']:.3f}", f"{r['tokens_per_s']:.0f}"]
            + [f"{r['mfu'] * 100:.1f}"]
            + [f"{r[part_column(p)]:.3f}" for p in parts]
        )
    widths = [max(len(str(row[c])) for row in rows) for c in range(len(header))]
    for row in rows:
        print("  ".join(str(v).rjust(w) for v, w in zip(row, widths, strict=True)))
    print(result.why())
