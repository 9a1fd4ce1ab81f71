"""`clustersim topo`: write a fabric as a SimAI topology file (gen_Topo_Template.py's flags,
fat-trees, pods), or summarise one."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clustersim.cli.common import add_json, count, subcommand, wrote
from clustersim.errors import InputError

if TYPE_CHECKING:
    from clustersim.topology import Topology

EPILOG = """\
examples:
  clustersim topo -topo AlibabaHPN -g 256 --dp -o results/hpn.txt
  clustersim topo -topo Spectrum-X -g 256 --pods 4 -o results/cluster.txt
  clustersim topo --fat-tree 8 -gps 8 --json -o results/fat-tree.txt
  clustersim topo --topology results/cluster.txt"""

# gen_Topo_Template.py's parameter (topology.params.FLAGS) → this command's option dest, where they differ.
DESTS = {"gpu": "gpus", "gpu_per_server": "gpus_per_server"}


HELP = "write a fabric as a SimAI topology file (gen_Topo_Template.py's flags, fat-trees, pods)"


def add(sub: argparse._SubParsersAction) -> None:
    from clustersim.topology import TEMPLATES

    p = subcommand(
        sub,
        "topo",
        help=HELP,
        description=(
            "Build a fabric from a template and write it as a SimAI topology file, line for line what"
            " SimAI's gen_Topo_Template.py writes for the same flags. Beyond SimAI: --fat-tree K builds a"
            " k-ary fat-tree of k^3/4 GPUs, --pods N joins N pods of a template with a core tier. Given a"
            " topology file instead of a template, it is read, checked and summarised."
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
    p.add_argument("--ro", action="store_true", help="rail-optimised (custom fabric)")
    p.add_argument("--dt", action="store_true", help="dual ToR (custom fabric, DCN+)")
    p.add_argument("--dp", action="store_true", help="dual plane (custom fabric, AlibabaHPN)")
    p.add_argument("-g", "--gpus", type=count, help="GPUs per pod (default: the template's; 32 custom)")
    p.add_argument("-er", "--error_rate", help="per-packet error rate of every link (default 0)")
    p.add_argument(
        "-gps", "-g_p_s", "--gpu_per_server", "--gpus-per-server", dest="gpus_per_server", type=count,
        help="GPUs per server (default 8)",
    )  # fmt: skip
    p.add_argument(
        "-gt", "--gpu_type", "--gpu-type", dest="gpu_type", help="GPU type in the header (default H100)"
    )
    p.add_argument("-nsps", "--nv_switch_per_server", type=int, help="NVSwitches per server (default 1)")
    p.add_argument("-nvbw", "--nvlink_bw", help="GPU-NVSwitch rate (default 2880Gbps)")
    p.add_argument("-nl", "--nv_latency", help="GPU-NVSwitch delay (default 0.000025ms)")
    p.add_argument("-l", "--latency", help="NIC and switch-switch delay (default 0.0005ms)")
    p.add_argument("-bw", "--bandwidth", help="NIC-ASW rate (default 400Gbps; 200Gbps AlibabaHPN, DCN+ --dt)")
    p.add_argument("-asn", "--asw_switch_num", type=int, help="ASW count (recomputed from the GPU count)")
    p.add_argument("-npa", "--nics_per_aswitch", type=count, help="NICs per ASW (default 64)")
    p.add_argument("-psn", "--psw_switch_num", type=int, help="PSW count per pod (default 64)")
    p.add_argument("-apbw", "--ap_bandwidth", help="switch-switch rate (default 400Gbps)")
    p.add_argument("-app", "--asw_per_psw", type=count, help="ASWs one pod can hold (default 64)")
    p.add_argument("--fat-tree", type=count, metavar="K", help="a k-ary fat-tree of K-port switches instead")
    p.add_argument("--pods", type=count, default=1, help="pods of the template joined by a core tier")
    p.add_argument("-o", "--output", help="file to write (default: gen_Topo_Template.py's file name)")
    add_json(p, "the summary")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from clustersim.fabric import template
    from clustersim.topology import read_simai, simai_template
    from clustersim.topology.params import FLAGS

    given = {name: getattr(args, DESTS.get(name, name)) for name in FLAGS}
    shaping = [FLAGS[n] for n, v in given.items() if v is not None] + [
        f
        for f, on in (("--ro", args.ro), ("--dt", args.dt), ("--dp", args.dp), ("--pods", args.pods > 1))
        if on
    ]
    spec = args.topology
    named = template(spec) if spec is not None else None
    if spec is not None and named is None and Path(spec).is_file():
        # A topology file: read, checked and summarised (and copied to -o if given).
        if shaping or args.fat_tree is not None:
            raise InputError(
                f"command line: --topology {spec}: a file cannot be combined with template flags"
            )
        topo = read_simai(spec)
        output = args.output
    else:
        # A template, or a name that is neither (simai_template says which templates there are).
        name, gpus = named if named is not None else (spec, None)
        if gpus is not None:
            if given["gpu"] is not None and given["gpu"] != gpus:
                raise InputError(f"command line: -g {given['gpu']} disagrees with --topology {spec}")
            given["gpu"] = gpus
        if name == "fat-tree":
            args.fat_tree, name = args.fat_tree or gpus or 4, None
            given["gpu"] = None
        if args.fat_tree is not None:
            topo = build_fat_tree(args.fat_tree, name, args.pods, given)
        else:
            topo = simai_template(name, ro=args.ro, dt=args.dt, dp=args.dp, pods=args.pods, **given)
        output = args.output or topo.name
    for w in topo.warnings:
        print(f"warning: {w}", file=sys.stderr)
    if output is not None:
        topo.write(output)
    summary = topo.summary() | {"output": output}
    tbps = float(summary["bisection_bandwidth_Bps"]) * 8 / 1e12  # type: ignore[arg-type]
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(
            f"{topo.name}: {topo.num_gpus} GPUs, {topo.num_nvswitches} NVSwitches, {topo.num_switches} "
            f"switches, {topo.num_links} links, bisection {tbps:g} Tbps"
        )
        wrote([output] if output else [])
    return 0


def build_fat_tree(k: int, name: str | None, pods: int, given: dict[str, Any]) -> Topology:
    """--fat-tree K with the template flags that apply to it (the others are refused)."""
    from clustersim.topology import fat_tree
    from clustersim.topology.params import FLAGS

    shaped = [f for f, on in (("-topo", name), ("--pods", pods > 1)) if on]
    ignored = ("asw_switch_num", "nics_per_aswitch", "psw_switch_num", "asw_per_psw")
    shaped += [FLAGS[n] for n in ignored if given[n] is not None]
    if shaped:
        raise InputError(f"command line: --fat-tree: cannot be combined with {', '.join(shaped)}")
    if given["gpu"] is not None and given["gpu"] != k**3 // 4:
        raise InputError(f"command line: -g: a k={k} fat-tree has {k**3 // 4} GPUs, not {given['gpu']}")
    keep = ("gpu_per_server", "nv_switch_per_server", "gpu_type", "nvlink_bw", "nv_latency")
    keep += ("bandwidth", "ap_bandwidth", "latency", "error_rate")
    return fat_tree(k, **{n: given[n] for n in keep if given[n] is not None})
