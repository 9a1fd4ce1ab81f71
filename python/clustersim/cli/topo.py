"""`clustersim topo`: `clustersim fabric` under gen_Topo_Template.py's flags — write a fabric as a
SimAI topology file (SimAI's templates, fat-trees, pods), or summarise one (cli/fabric.py)."""

from __future__ import annotations

import argparse

from clustersim.cli import fabric
from clustersim.cli.common import add_json, subcommand

EPILOG = """\
examples:
  clustersim topo -topo AlibabaHPN -g 256 --dp -o results/hpn.txt
  clustersim topo -topo Spectrum-X -g 256 --pods 4 -o results/cluster.txt
  clustersim topo --fat-tree 8 -gps 8 --json -o results/fat-tree.txt
  clustersim topo --topology results/cluster.txt"""


def add(sub: argparse._SubParsersAction, help: str) -> None:
    from clustersim.topology import TEMPLATES

    p = subcommand(
        sub,
        "topo",
        help=help,
        description=(
            "Build a fabric from a template and write it as a SimAI topology file, line for line what"
            " SimAI's gen_Topo_Template.py writes for the same flags. Beyond SimAI: --fat-tree K builds a"
            " k-ary fat-tree of k^3/4 GPUs, --pods N joins N pods of a template with a core tier. Given a"
            " topology file instead of a template, it is read, checked and summarised. The same as"
            " `clustersim fabric` with gen_Topo_Template.py's flags."
        ),
        epilog=EPILOG,
    )
    p.add_argument(
        "-topo",
        "--topology",
        metavar="FABRIC",
        help=f"a template NAME[:GPUS] ({', '.join(TEMPLATES)}; default: a custom fabric) or a SimAI"
        " topology file to summarise",
    )
    fabric.add_simai_options(p)
    p.add_argument("-o", "--output", help="file to write (default: gen_Topo_Template.py's file name)")
    add_json(p, "the summary")
    p.set_defaults(func=fabric.main, style="topo")


main = fabric.main
