"""`clustersim run`: a SimAI workload file on a fabric with the flow model."""

from __future__ import annotations

import argparse

from clustersim.cli.analytical import add_workload_options, output_prefix, report, simulate_options
from clustersim.cli.common import (
    add_backend,
    add_ecmp_seeds,
    add_fabric,
    add_routes,
    backend_spec,
    fabric_options,
    progress_for,
)

EPILOG = """\
examples:
  clustersim run -w examples/microAllReduce.txt -n Spectrum-X:8 -r results/micro-
  clustersim topo -topo DCN+ -g 16 -o results/dcn16.txt
  clustersim run -w examples/microAllReduce.txt -g 16 -n results/dcn16.txt --ecmp-seeds 2 -r results/micro-dcn-"""  # noqa: E501


DESCRIPTION = (
    "Simulate one training iteration of a SimAI/AICB workload with every collective turned into"
    " transfers on a fabric, links shared max-min fairly. Writes <prefix>EndToEnd.csv,"
    " <prefix>summary.json, <prefix>links.csv (per-link utilisation) and <prefix>trace.json"
    " (Chrome/Perfetto)."
)


def arguments(p: argparse.ArgumentParser) -> None:
    add_workload_options(p)
    add_fabric(p, required=True, what="the fabric")
    add_backend(p)
    add_routes(p)
    add_ecmp_seeds(p)
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from clustersim.api import run

    prefix = output_prefix(args)
    progress = progress_for(args)
    try:
        result = run(
            args.workload,
            routes=args.routes,
            ecmp_seeds=args.ecmp_seeds,
            progress=progress,
            backend=backend_spec(args),
            **fabric_options(args),
            **simulate_options(args, prefix),
        )
    finally:
        progress.close()
    report(args, result, prefix)
    return 0
