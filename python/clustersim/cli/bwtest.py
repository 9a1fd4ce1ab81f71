"""`clustersim bwtest`: the bisection bandwidth tester, under mpirun or on the flow model."""

from __future__ import annotations

import argparse

from clustersim.cli.common import add_calibration, add_json, count, print_json, whole
from clustersim.errors import InputError

EPILOG = """\
examples:
  mpirun -np 4 clustersim bwtest -g 2 --count 65536 --iters 20 -o results/bwtest.json
  clustersim bwtest --simulate -n fat-tree:4 -np 16 -g 4 --count 1048576
  mpirun -np 8 clustersim bwtest -g 4 --buffers device -n dgx_a100.platform"""


DESCRIPTION = (
    "Groups of -g consecutive ranks; every rank exchanges --count 32-byte words with its "
    "counterpart in every other group (MPI_Comm_split, no self-traffic); one warm-up, then --iters "
    "iterations, each after a barrier. Prints each group's aggregate bidirectional bandwidth and the "
    "latency, and writes JSON (rank 0). With -n, also the platform's bound (its cut between a group "
    "and the rest); with --simulate, runs the pattern on that platform's flow model instead of MPI."
)


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("-g", "--group-size", type=count, required=True, help="ranks per group")
    p.add_argument("--count", type=count, default=1 << 16, help="32-byte words per pair (default 65536)")
    p.add_argument("--iters", type=whole(1, 10**6), default=10, help="timed iterations (default 10)")
    p.add_argument(
        "--buffers",
        choices=["host", "device", "staged"],
        default="host",
        help="host: NumPy (CPU MPI, default); device: CuPy on the GPU (GPU-aware MPI);"
        " staged: CuPy, copied through host memory",
    )
    p.add_argument("--simulate", action="store_true", help="run on the flow model of -n instead of MPI")
    p.add_argument(
        "-n",
        "--topology",
        metavar="FABRIC",
        help="the platform: a SimAI topology file, a platform file or a template NAME[:GPUS]",
    )
    add_calibration(p)
    p.add_argument("-np", "--ranks", type=count, help="with --simulate: ranks (default: all of -n)")
    p.add_argument(
        "--routing",
        choices=["spray", "ecmp"],
        default="spray",
        help="with --simulate: spray (each transfer over every shortest path, as NVLink stripes over"
        " its switches; default) or ecmp (one hashed path per transfer)",
    )
    p.add_argument("--seed", type=whole(0, 2**64 - 1), default=0, help="ECMP seed (default 0)")
    p.add_argument("-o", "--output", default="results/bwtest.json", help="JSON file (default %(default)s)")
    add_json(p, "the JSON document")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from clustersim.measure.bwtest import report
    from clustersim.measure.bwtest.bound import group_bounds_GBps
    from clustersim.measure.bwtest.pattern import Pattern
    from clustersim.measure.bwtest.simulate import platform_of, rank_devices, simulate

    if args.calibration is not None and not args.simulate:
        raise InputError("command line: --calibration: calibrates the simulation; give --simulate")
    if args.simulate:
        if args.topology is None:
            raise InputError("command line: --simulate: give the platform with -n/--topology")
        platform = platform_of(args.topology)
        if args.calibration is not None:
            from clustersim.calibration import calibrated, read_calibration

            platform = calibrated(args.topology, read_calibration(args.calibration))
        ranks = args.ranks or len(platform.placement[0])
        comm = None
    else:
        if args.ranks is not None:
            raise InputError("command line: -np: the MPI world sets the ranks; -np is for --simulate")
        from clustersim.measure.bwtest.measure import mpi

        comm = mpi().COMM_WORLD
        ranks = comm.Get_size()
        platform = None if args.topology is None else platform_of(args.topology)
    pattern = Pattern.of(ranks, args.group_size, args.count)
    bounds = None
    if platform is not None:
        bounds = group_bounds_GBps(pattern, platform, rank_devices(platform, ranks, args.topology))
    if comm is None:
        group_s, step_s = simulate(pattern, platform, args.topology, routing=args.routing, seed=args.seed)
        timing = dict(group_s=group_s, iteration_s=step_s, min_iteration_s=step_s)
        mode, buffers, hosts = "simulate", "none", None
    else:
        from clustersim.measure.bwtest.measure import measure

        got = measure(pattern, args.iters, args.buffers, comm)
        if got is None:  # ranks other than 0: rank 0 reports
            return 0
        timing = dict(group_s=got.group_s, iteration_s=got.iteration_s, min_iteration_s=got.min_iteration_s)
        mode, buffers, hosts = "mpi", args.buffers, got.hosts
    doc = report.document(
        pattern,
        mode=mode,
        buffers=buffers,
        iterations=args.iters,
        hosts=hosts,
        topology=None if args.topology is None else str(args.topology),
        bounds_GBps=bounds,
        **timing,
    )
    report.write(doc, args.output)
    if args.json:
        print_json(doc)
    else:
        report.print_table(doc)
        print(f"# wrote {args.output}")
    return 0
