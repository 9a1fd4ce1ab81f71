"""`clustersim replay`: a SimAI workload file's collectives and transfers run for real under
mpirun, checked and timed; rank 0 writes the simulator's EndToEnd.csv and summary.json."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

from clustersim.cli.analytical import report
from clustersim.cli.common import add_calibration, add_json, whole, wrote
from clustersim.errors import InputError
from clustersim.files import atomic_outputs, write_csv, write_text

if TYPE_CHECKING:
    from clustersim.measure.replay.plan import Plan


EPILOG = """\
examples:
  mpirun -np 4 clustersim replay -w tests/data/replay/tp2_dp2.txt -r results/replay-
  mpirun -np 8 clustersim replay -w workload.txt --scale 0.01 --compute skip --iterations 5
  clustersim replay -w examples/microAllReduce.txt --scale 0.01 --dry-run
Outputs (rank 0): <prefix>EndToEnd.csv and <prefix>summary.json, as `analytical` writes them,
from measured times (every op runs blocking: exposed comm = total comm); <prefix>replay.json,
every op's size and time; <prefix>trace.json, every rank's ops (Chrome / Perfetto); with
--compare-topology, <prefix>compare.csv."""


def positive(text: str) -> float:
    try:
        x = float(text)
    except ValueError:
        x = float("nan")
    if not 0 < x < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number, got '{text}'")
    return x


DESCRIPTION = (
    "Every rank reads the workload, builds its TP/DP/EP/DP_EP/PP communicators "
    "(MPI_Comm_split) and runs each row's collectives and the pipeline's transfers on NumPy buffers, "
    "checking every result like nccl-tests -c and timing every op (the slowest rank's time). Run "
    "under mpirun -np N with N the workload's GPUs."
)


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("-w", "--workload", required=True, help="SimAI workload file (.txt written by AICB)")
    p.add_argument("--scale", type=positive, default=1.0, help="factor on every message size (default 1)")
    p.add_argument(
        "--compute",
        choices=["sleep", "skip"],
        default="sleep",
        help="sleep: wait the rows' compute times (default); skip: communication only",
    )
    p.add_argument("--iterations", type=whole(1, 10**6), default=1, help="timed iterations (default 1)")
    p.add_argument("--warmup", type=whole(0, 10**6), default=1, help="untimed iterations first (default 1)")
    p.add_argument(
        "-r",
        "--result",
        dest="result",
        metavar="PREFIX",
        help="output prefix (default: results/<workload name>-replay-)",
    )
    p.add_argument(
        "-v", "--visual", nargs="?", type=whole(0, 1), const=1, default=0, help="also write charts"
    )
    p.add_argument(
        "--compare-topology",
        metavar="FABRIC",
        help="also simulate the same (scaled) workload on FABRIC (a SimAI topology file, a platform file or a"
        " template NAME[:GPUS]) with the flow model; writes <prefix>compare.csv, measured beside simulated",
    )
    add_calibration(p)
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print the plan (ranks, groups, ops, buffer memory per rank) and run nothing (no MPI)",
    )
    add_json(p)
    p.set_defaults(func=main)


def dry_run(plan: Plan, scale: float) -> None:
    need, step = plan.per_rank_bytes(scale)
    groups = ", ".join(f"{g} {plan.group_size(g)}" for g in sorted(plan.group_axes) if g != "NONE")
    colls = sum(1 for s in plan.steps if s.collective)
    pp = 2 * plan.header["ga"] if plan.header["pp"] > 1 and plan.header["pp_comm"] > 0 else 0
    print(f"# replay of {plan.path}: run under mpirun -np {plan.ranks}")
    print(f"groups (ranks each): {groups}")
    print(f"per iteration: {colls} collectives, {len(plan.steps) - colls} computes, {pp} PP transfers")
    where = "the PP transfers" if step is None else f"row {step.row + 1} ({plan.row_names[step.row]})"
    print(f"largest buffers: {need / 1e6:.6g} MB per rank at --scale {scale:g}, for {where}")


def main(args: argparse.Namespace) -> int:
    from clustersim.measure.replay import compare
    from clustersim.measure.replay import plan as plans
    from clustersim.measure.replay.execute import mpi, replay
    from clustersim.measure.replay.report import document, result, trace

    plan = plans.load(args.workload)  # every rank reads it, so every rank refuses it alike
    cal = None
    if args.calibration is not None:
        from clustersim.calibration import read_calibration

        if args.compare_topology is None:
            raise InputError(
                "command line: --calibration: calibrates the comparison; give --compare-topology"
            )
        cal = read_calibration(args.calibration)
    if args.dry_run:
        dry_run(plan, args.scale)
        return 0
    MPI = mpi()
    comm = MPI.COMM_WORLD
    plans.check_world(plan, comm.Get_size())
    node = comm.Split_type(MPI.COMM_TYPE_SHARED)
    simulated = None
    try:
        plans.check_memory(plan, args.scale, node.Get_size(), plans.available_bytes())
        if args.compare_topology is not None and comm.Get_rank() == 0:
            # Simulated first: a fabric the workload does not fit is refused before the replay runs.
            simulated = compare.simulate(plan, args.scale, args.compare_topology, cal)
        refusal = None
    except InputError as e:
        refusal = str(e)
    node.Free()
    # Nodes differ in memory, rank 0 alone simulates: the ranks agree, so all refuse or none
    # does (no rank left waiting).
    refusals = [r for r in comm.allgather(refusal) if r is not None]
    if refusals:
        raise InputError(refusals[0])
    start = time.perf_counter()
    measured = replay(
        plan, comm, scale=args.scale, compute=args.compute, iterations=args.iterations, warmup=args.warmup
    )
    if measured is None:  # ranks other than 0: rank 0 reports
        return 0
    prefix = args.result if args.result is not None else f"results/{Path(args.workload).stem}-replay-"
    got = result(plan, measured, run_name=Path(prefix).name, seconds=time.perf_counter() - start)
    doc = document(
        plan, measured, scale=args.scale, compute=args.compute, iterations=args.iterations, warmup=args.warmup
    )
    compared = None if simulated is None else compare.rows(got, simulated)
    report(args, got, prefix)
    with atomic_outputs() as stage:
        write_text(stage(prefix + "replay.json"), json.dumps(doc, indent=2, allow_nan=False) + "\n")
        write_text(stage(prefix + "trace.json"), trace(plan, measured))
        if compared is not None:
            write_csv(stage(prefix + "compare.csv"), compared)
    if not args.json:
        if compared is not None:
            print_compare(compared)
            print(f"(simulated on {args.compare_topology})")
        wrote(
            [prefix + "replay.json", prefix + "trace.json"]
            + ([prefix + "compare.csv"] if compared is not None else [])
        )
    return 0


def print_compare(rows: list[list[object]]) -> None:
    print(f"{'layer':<20}" + "".join(f"{str(h).split(' (')[0]:>24}" for h in rows[0][1:]))
    for r in rows[1:]:
        print(f"{str(r[0]):<20}" + "".join(f"{str(x):>24}" for x in r[1:]))
