"""`clustersim report`: a sweep's store as one self-contained, offline HTML page."""

from __future__ import annotations

import argparse

from clustersim.cli.common import wrote
from clustersim.files import atomic_outputs

EPILOG = """\
examples:
  clustersim sweep examples/sweep_llama3_8b.yaml -o results/llama3-8b.sqlite
  clustersim report results/llama3-8b.sqlite -o results/llama3-8b.html
  clustersim report results/llama3-8b.sqlite -o results/by-memory.html --x memory.total_gb"""


DESCRIPTION = (
    "Write one self-contained HTML page (plotly.js embedded: it opens with no network) for the"
    " sweep in RESULTS: the Pareto plot of throughput against GPUs, the breakdown of where the"
    " time of each point goes, a sortable table of every point, and the sweep's spec."
)


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("results", metavar="RESULTS", help="the SQLite store of clustersim sweep")
    p.add_argument("-o", "--output", required=True, help="the HTML file to write")
    p.add_argument("--x", default="gpus", help="the Pareto plot's cost axis, lower is better (default gpus)")
    p.add_argument(
        "--y", default="throughput", help="its benefit axis, higher is better (default throughput)"
    )
    p.add_argument("--title", help="the page's title")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from clustersim.explore import report, store

    stored = store.read(args.results)
    with atomic_outputs() as stage:
        report.write(stored, stage(args.output), x=args.x, y=args.y, title=args.title)
    print(f"{len(stored.rows)} points of {stored.command}")
    wrote([args.output])
    return 0
