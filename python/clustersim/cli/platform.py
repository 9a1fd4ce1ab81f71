"""`clustersim platform`: `clustersim fabric` under its earlier name and options — build a platform of
typed devices (HCSim's templates) or read one (graph document, platform file, SimAI file),
summarise it, and export it (SimGrid XML, GraphML, a JSON graph document) (cli/fabric.py)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from clustersim.cli import fabric
from clustersim.cli.common import add_json, subcommand
from clustersim.cli.fabric import HCSIM_OPTIONS, parse_window, summary
from clustersim.cli.fabric import add_hcsim_options as add_template_options

if TYPE_CHECKING:
    from clustersim.platform import Platform

__all__ = ["add", "add_template_options", "build", "main", "parse_window", "summary", "template_options"]


EPILOG = """\
examples:
  clustersim platform hcsim-cxl --xpus 64 --simgrid results/hcsim-cxl-64.xml
  clustersim platform hcsim-pcie --mix h100:128,a100:128 --link nic_tor=25GB/s,2us
  clustersim platform hcsim-cxl --xpus 1024 --link cxl=256GB/s,1us --graph-json results/cxl.json
  clustersim platform results/cxl.json --graphml results/cxl.graphml --json

link classes (Table 5 of the HCSim paper; dram is ours): tor_core 12.5GB/s,5us  nic_tor 12.5GB/s,5us
  upi 62.4GB/s,100ns  pcie 128GB/s,250ns  xpu 900GB/s,100ns  cxl 128GB/s,200ns  dram 512GB/s,100ns"""


def add(sub: argparse._SubParsersAction, help: str) -> None:
    p = subcommand(
        sub,
        "platform",
        help=help,
        description=(
            "Build one of the HCSim paper's systems (hcsim-pcie: Fig. 6a; hcsim-cxl: Fig. 6b, with a CXL"
            " fabric and a CXL Type-3 expander per XPU) or read a platform (a graph document in JSON, YAML"
            " or GraphML with Table 2's attributes, a platform file or a SimAI topology file); print a"
            " summary and write the exports asked for. The same as `clustersim fabric` with HCSim's"
            " templates."
        ),
        epilog=EPILOG,
    )
    p.add_argument("platform", metavar="TEMPLATE|FILE", help="hcsim-pcie, hcsim-cxl, or a platform file")
    add_template_options(p)
    fabric.add_exports(p)
    add_json(p, "the summary")
    p.set_defaults(func=fabric.main, style="platform")


main = fabric.main


def build(args: argparse.Namespace) -> tuple[Platform, str]:
    """The platform `args.platform` names (an HCSim template with its options, or a file) and its
    name: what every command that takes `--platform TEMPLATE|FILE` builds."""
    built = fabric.build(args, "platform")
    return built.platform, built.name


def template_options(args: argparse.Namespace) -> dict[str, Any] | None:
    """The template options a command ran with (what its outputs record beside the template);
    None for a platform file."""
    return {k: getattr(args, k) for k in HCSIM_OPTIONS} if args.platform in fabric.hcsim_templates() else None
