"""`clustersim fabric`: build a fabric from any template (SimAI's gen_Topo_Template.py templates with
their flags, k-ary fat-trees, HCSim's systems) or read one from any file (SimAI topology file,
platform file, graph document in JSON, YAML or GraphML), summarise it, and write it in any format
(SimAI topology file, SimGrid XML, GraphML, JSON graph document). The engine builds, reads and
writes every one; this module only parses arguments.

`clustersim topo` and `clustersim platform` are this command under the names and options SimAI
users and earlier scripts rely on (cli/topo.py, cli/platform.py): each adds its subset of the
option groups below and sets a `style`, which decides only what it takes as FABRIC, its messages
and how it prints its summary.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from clustersim.cli.common import add_json, count, print_json, subcommand, wrote
from clustersim.errors import InputError

if TYPE_CHECKING:
    from clustersim.platform import Platform


EPILOG = """\
examples:
  clustersim fabric -topo AlibabaHPN -g 256 --dp --simai results/hpn.txt
  clustersim fabric fat-tree:8 -gps 8 --bisection --graphml results/fat-tree.graphml
  clustersim fabric hcsim-cxl --xpus 64 --simgrid results/hcsim-cxl-64.xml
  clustersim fabric results/hpn.txt --graph-json results/hpn.json --json

templates: Spectrum-X, AlibabaHPN, DCN+ (NAME[:GPUS]; none: gen_Topo_Template.py's custom fabric,
  shaped by --ro/--dt/--dp), fat-tree[:K], hcsim-pcie, hcsim-cxl"""

SIMGRID_FULL_HOSTS = 2000
"""Most hosts for which `--simgrid-routing auto` writes every route (Full); beyond, Dijkstra."""

# Option strings of gen_Topo_Template.py's parameters beyond `-flag --name` (the script's and ours),
# and their `dest` where it is not the parameter's name (the one other commands' options of the
# same flag have).
DESTS = {"gpu": "gpus", "gpu_per_server": "gpus_per_server"}
ALIASES = {
    "gpu": ("--gpus",),
    "gpu_per_server": ("-g_p_s", "--gpu_per_server", "--gpus-per-server"),
    "gpu_type": ("--gpu_type", "--gpu-type"),
}

# The options that shape an HCSim template (`dest` names), as `add_hcsim_options` adds them.
HCSIM_OPTIONS = (
    "xpus mix xpus_per_server servers_per_tor cpus_per_server nics_per_server pcie_uplinks link"
    " cxl_uplink dram cxl_memory dram_window cxl_window"
).split()
# Those of them a user gives (the others have defaults), with their flags.
HCSIM_SHAPING = {"xpus": "--xpus", "mix": "--mix", "link": "--link"}
HCSIM_SHAPING |= {"dram_window": "--dram-window", "cxl_window": "--cxl-window"}


def add(sub: argparse._SubParsersAction, help: str) -> None:
    p = subcommand(
        sub,
        "fabric",
        help=help,
        description=(
            "Build a fabric from a template or read one from a file, print a summary and write the exports"
            " asked for. SimAI's templates take gen_Topo_Template.py's flags (--simai writes the same file,"
            " line for line); HCSim's take the platform options. `clustersim topo` and `clustersim"
            " platform` are this command with their own flags."
        ),
        epilog=EPILOG,
    )
    p.add_argument(
        "fabric", nargs="?", metavar="TEMPLATE|FILE", help="a template (see below) or a fabric file"
    )
    p.add_argument(
        "-topo",
        "--topology",
        metavar="TEMPLATE|FILE",
        help="a template NAME[:GPUS] or a fabric file (FABRIC as gen_Topo_Template.py's -topo takes it)",
    )
    add_simai_options(p)
    add_hcsim_options(p)
    p.add_argument(
        "--simai",
        nargs="?",
        const="",
        metavar="OUT",
        help="write a SimAI topology file (default name: gen_Topo_Template.py's)",
    )
    add_exports(p)
    p.add_argument("--bisection", action="store_true", help="compute the bisection bandwidth (a max-flow)")
    add_json(p, "the summary")
    p.set_defaults(func=main, style="fabric")


# --- option groups ----------------------------------------------------------------------------


def add_simai_options(p: argparse.ArgumentParser) -> None:
    """gen_Topo_Template.py's flags (names, kinds and defaults from the engine), fat-trees, pods."""
    from clustersim.topology import PARAMETERS

    p.add_argument("--ro", action="store_true", help="rail-optimised (custom fabric)")
    p.add_argument("--dt", action="store_true", help="dual ToR (custom fabric, DCN+)")
    p.add_argument("--dp", action="store_true", help="dual plane (custom fabric, AlibabaHPN)")
    types = {"count": count, "whole": int}
    for name, flag, kind, help_ in PARAMETERS:
        p.add_argument(
            flag,
            *ALIASES.get(name, (f"--{name}",)),
            dest=DESTS.get(name, name),
            type=types.get(kind),
            help=help_,
        )
    p.add_argument("--fat-tree", type=count, metavar="K", help="a k-ary fat-tree of K-port switches instead")
    p.add_argument("--pods", type=count, default=1, help="pods of the template joined by a core tier")


def add_hcsim_options(p: argparse.ArgumentParser) -> None:
    """The options of HCSim's templates (hcsim-pcie, hcsim-cxl): every command that builds one."""
    p.add_argument(
        "--xpus", type=count, help="XPUs (templates; default 4096, the paper's system, or the --mix)"
    )
    p.add_argument(
        "--mix",
        metavar="TYPE:N,...",
        help="XPU types in rank order, assigned per ToR (default h100); a type without :N takes the rest",
    )
    p.add_argument("--xpus-per-server", type=count, default=8, help="XPUs per server (default 8)")
    p.add_argument("--servers-per-tor", type=count, default=16, help="servers per ToR (default 16)")
    p.add_argument("--cpus-per-server", type=count, default=2, help="CPUs per server (default 2)")
    p.add_argument("--nics-per-server", type=count, default=2, help="NICs per server (default 2)")
    p.add_argument("--pcie-uplinks", type=count, default=4, help="PCIe links CPU-PCIe switch (default 4)")
    p.add_argument(
        "--link",
        action="append",
        default=[],
        metavar="CLASS=RATE,LATENCY",
        help="override a link class's figures, e.g. cxl=256GB/s,1us (repeatable; classes: platform --help)",
    )
    p.add_argument("--cxl-uplink", metavar="RATE", help="CXL cascade link rate (default: non-blocking)")
    p.add_argument(
        "--dram", metavar="CAPACITY", help="extension memory per CPU, e.g. 1TiB (default unbounded)"
    )
    p.add_argument("--cxl-memory", metavar="CAPACITY", help="CXL Type-3 memory per XPU (default unbounded)")
    p.add_argument(
        "--dram-window",
        metavar="BYTES",
        help="bytes an XPU's DMA engine keeps in flight to extension memory, e.g. 384KiB (default: 768"
        " PCIe tags x 512 B reads; inf: no bound)",
    )
    p.add_argument(
        "--cxl-window",
        metavar="BYTES",
        help="bytes an XPU keeps in flight to its CXL memory, e.g. 1MiB (default: 16384 tags x 64 B"
        " lines; inf: no bound)",
    )


def add_exports(p: argparse.ArgumentParser) -> None:
    """The exports of a fabric of typed devices."""
    p.add_argument("--simgrid", metavar="OUT.xml", help="write the platform as a SimGrid platform file")
    p.add_argument(
        "--simgrid-routing",
        choices=("auto", "full", "floyd", "dijkstra"),
        default="auto",
        help=f"full: our routes between every pair of hosts (exact, n²); floyd/dijkstra: SimGrid routes"
        f" by hop count (compact); auto: full up to {SIMGRID_FULL_HOSTS} hosts, else dijkstra",
    )
    p.add_argument("--dtype", default="fp32", help="data type of the SimGrid host speeds (default fp32)")
    p.add_argument("--graphml", metavar="OUT", help="write the platform as GraphML")
    p.add_argument("--graph-json", metavar="OUT", help="write the platform as a JSON graph document")


def hcsim_templates() -> tuple[str, ...]:
    """HCSim's templates (imported when needed: start-up stays lean)."""
    from clustersim.platform import TEMPLATES

    return TEMPLATES


# --- option values ----------------------------------------------------------------------------


def parse_mix(text: str | None, xpus: int | None) -> list[tuple[str, int]]:
    """`h100:128,a100:128` (a type without a count takes what --xpus leaves) as (type, count)."""
    default = 4096 if xpus is None else xpus
    if text is None:
        return [("h100", default)]
    parts = [p.strip() for p in text.split(",")]
    out: list[tuple[str, int | None]] = []
    for part in parts:
        m = re.fullmatch(r"([A-Za-z0-9_.+-]+)(?::(\d+))?", part)
        if m is None or (m.group(2) is not None and int(m.group(2)) == 0):
            raise InputError(f"command line: --mix: '{part}' is not TYPE:COUNT (e.g. h100:128)")
        out.append((m.group(1), int(m.group(2)) if m.group(2) else None))
    open_ = [t for t, n in out if n is None]
    if len(open_) > 1:
        raise InputError("command line: --mix: at most one type may go without a count")
    fixed = sum(n for _, n in out if n is not None)
    if open_:
        if xpus is None or xpus <= fixed:
            raise InputError(f"command line: --mix: {open_[0]} without a count needs --xpus above {fixed}")
        return [(t, n if n is not None else xpus - fixed) for t, n in out]
    if xpus is not None and xpus != fixed:
        raise InputError(f"command line: --xpus {xpus} disagrees with --mix, which adds up to {fixed}")
    return [(t, n) for t, n in out if n is not None]


def _rate(option: str, text: str) -> float:
    """GB/s of a rate like 128GB/s or 400Gbps (the engine's reader)."""
    from clustersim._engine import parse_rate

    value = parse_rate(text.strip())
    if value is None or not value > 0:
        raise InputError(f"command line: {option}: '{text}' is not a rate like 128GB/s or 400Gbps")
    return value


def parse_links(items: list[str]) -> dict[str, tuple[float, float]]:
    """--link CLASS=RATE,LATENCY items as (GB/s, ns) by class (the engine's readers)."""
    from clustersim._engine import parse_time

    links = {}
    for item in items:
        name, _, figures = item.partition("=")
        rate, _, latency = figures.partition(",")
        if not name or not rate or not latency:
            raise InputError(
                f"command line: --link: '{item}' is not CLASS=RATE,LATENCY (e.g. cxl=256GB/s,1us)"
            )
        ns = parse_time(latency.strip())
        if ns is None:
            raise InputError(f"command line: --link {name}: '{latency}' is not a time like 200ns or 5us")
        links[name.strip()] = (_rate(f"--link {name}", rate), ns)
    return links


UNITS = {"": 1, "B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12, "PB": 1e15}
UNITS |= {"KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40, "PiB": 2**50}


def parse_capacity(option: str, text: str | None) -> float:
    if text is None or text.strip().lower() in ("inf", "unbounded"):
        return math.inf
    m = re.fullmatch(r"\s*([0-9.]+(?:[eE][+-]?\d+)?)\s*([A-Za-z]*)\s*", text)
    if m is None or m.group(2) not in UNITS:
        raise InputError(f"command line: {option}: '{text}' is not a capacity like 1TiB, 512GB or inf")
    return float(m.group(1)) * UNITS[m.group(2)]


def parse_window(option: str, text: str) -> float:
    """A read window: positive bytes like 1MiB, or inf (no bound)."""
    bytes_ = parse_capacity(option, text)
    if not bytes_ > 0:
        raise InputError(f"command line: {option}: read window '{text}' must be positive (or inf)")
    return bytes_


# --- building ---------------------------------------------------------------------------------


class Built(NamedTuple):
    """A fabric the arguments describe: the engine's platform, its name, what its template
    adjusted (`warnings`), and which family made it (simai, fat-tree, hcsim or file)."""

    platform: Platform
    name: str
    warnings: tuple[str, ...] = ()
    family: str = "file"


def simai_given(args: argparse.Namespace) -> dict[str, Any]:
    """gen_Topo_Template.py's parameters as given (None: not given), by name."""
    from clustersim.topology import FLAGS

    return {name: getattr(args, DESTS.get(name, name), None) for name in FLAGS}


def simai_shaping(args: argparse.Namespace) -> list[str]:
    """The SimAI template flags given, as the user spelled them (short flags)."""
    from clustersim.topology import FLAGS

    given = [FLAGS[n] for n, v in simai_given(args).items() if v is not None]
    flags = (("--ro", "ro"), ("--dt", "dt"), ("--dp", "dp"), ("--fat-tree", "fat_tree"))
    given += [f for f, dest in flags if getattr(args, dest, None)]
    return given + (["--pods"] if getattr(args, "pods", 1) > 1 else [])


def hcsim_shaping(args: argparse.Namespace) -> list[str]:
    """The HCSim template options given."""
    return [flag for dest, flag in HCSIM_SHAPING.items() if getattr(args, dest, None)]


def build_simai(args: argparse.Namespace, name: str | None, gpus: int | None) -> Built:
    """A SimAI template (None: the custom fabric) or, for --fat-tree or `fat-tree[:K]`, a fat-tree;
    `gpus` the count after NAME: (a fat-tree's K)."""
    from clustersim.topology import FLAGS, simai_template

    given = simai_given(args)
    spec = args.topology if args.topology is not None else getattr(args, "fabric", None)
    if gpus is not None:
        if given["gpu"] is not None and given["gpu"] != gpus:
            raise InputError(f"command line: -g {given['gpu']} disagrees with --topology {spec}")
        given["gpu"] = gpus
    fat_tree_k = args.fat_tree
    if name == "fat-tree":
        fat_tree_k, name = fat_tree_k or gpus or 4, None
        given["gpu"] = None
    if fat_tree_k is None:
        topo = simai_template(name, ro=args.ro, dt=args.dt, dp=args.dp, pods=args.pods, **given)
        return Built(topo.platform, topo.name, topo.warnings, "simai")
    shaped = [f for f, on in (("-topo", name), ("--pods", args.pods > 1)) if on]
    ignored = ("asw_switch_num", "nics_per_aswitch", "psw_switch_num", "asw_per_psw")
    shaped += [FLAGS[n] for n in ignored if given[n] is not None]
    if shaped:
        raise InputError(f"command line: --fat-tree: cannot be combined with {', '.join(shaped)}")
    k = fat_tree_k
    if given["gpu"] is not None and given["gpu"] != k**3 // 4:
        raise InputError(f"command line: -g: a k={k} fat-tree has {k**3 // 4} GPUs, not {given['gpu']}")
    from clustersim.topology import fat_tree

    topo = fat_tree(k, **{n: v for n, v in given.items() if v is not None and n not in ignored + ("gpu",)})
    return Built(topo.platform, topo.name, topo.warnings, "fat-tree")


def build_hcsim(args: argparse.Namespace, spec: str) -> Built:
    """One of HCSim's systems with the options given."""
    from clustersim import platform as plat

    mix = parse_mix(args.mix, args.xpus)
    params: dict[str, Any] = {
        "xpus_per_server": args.xpus_per_server,
        "servers_per_tor": args.servers_per_tor,
        "cpus_per_server": args.cpus_per_server,
        "nics_per_server": args.nics_per_server,
        "pcie_uplinks": args.pcie_uplinks,
        "dram_bytes": parse_capacity("--dram", args.dram),
        "cxl_memory_bytes": parse_capacity("--cxl-memory", args.cxl_memory),
    }
    if args.cxl_uplink is not None:
        params["cxl_uplink"] = _rate("--cxl-uplink", args.cxl_uplink)
    for option, key, text in (
        ("--dram-window", "dram_window_bytes", args.dram_window),
        ("--cxl-window", "cxl_window_bytes", args.cxl_window),
    ):
        if text is not None:
            params[key] = parse_window(option, text)
    return Built(plat.hcsim(spec, mix, parse_links(args.link), **params), spec, family="hcsim")


def read_fabric(spec: str, style: str) -> Built:
    """A fabric file of any format, named as the command names it."""
    import os

    from clustersim.platform import read_platform

    name = os.path.basename(spec) if style == "topo" else Path(spec).stem
    return Built(read_platform(spec), name)


def build(args: argparse.Namespace, style: str = "platform") -> Built:
    """The fabric the arguments describe. Styles: `fabric` (any template or file), `topo` (SimAI's
    templates and fat-trees, or a file; no FABRIC is the custom fabric), `platform` (HCSim's
    templates or a file; the spec in `args.platform`)."""
    from clustersim.fabric import template

    if style == "platform":
        spec = args.platform
    elif style == "topo":
        spec = args.topology
    else:
        if args.fabric is not None and args.topology is not None:
            raise InputError(
                f"command line: --topology {args.topology}: FABRIC {args.fabric} is given already"
            )
        spec = args.fabric if args.fabric is not None else args.topology
    hcsim = hcsim_templates()
    if style != "topo" and spec in hcsim:
        if style == "fabric" and simai_shaping(args):
            raise InputError(
                f"command line: {', '.join(simai_shaping(args))}: only for SimAI's templates and fat-trees"
            )
        return build_hcsim(args, spec)
    named = template(spec) if spec is not None and style != "platform" else None
    if named is not None or (spec is None and style != "platform"):
        if style == "fabric" and hcsim_shaping(args):
            raise InputError(
                f"command line: {', '.join(hcsim_shaping(args))}: only for HCSim's templates"
                f" ({', '.join(hcsim)})"
            )
        name, gpus = named if named is not None else (None, None)
        return build_simai(args, name, gpus)
    assert spec is not None
    if style == "topo" and not Path(spec).is_file():
        # Neither a template nor a file: the engine says which templates there are.
        return build_simai(args, spec, None)
    shaping = {"topo": simai_shaping, "platform": hcsim_shaping}.get(style, lambda a: [])(args)
    if style == "fabric":
        shaping = simai_shaping(args) + hcsim_shaping(args)
    if style == "topo" and shaping:
        raise InputError(f"command line: --topology {spec}: a file cannot be combined with template flags")
    if style == "platform" and shaping:
        raise InputError(f"command line: {', '.join(shaping)}: only for the templates ({', '.join(hcsim)})")
    if not Path(spec).is_file():
        if style == "platform":
            templates = ", ".join(hcsim)
            raise InputError(
                f"command line: platform: '{spec}' is neither a template ({templates}) nor a file"
            )
        from clustersim.topology import TEMPLATES

        names = ", ".join((*TEMPLATES, "fat-tree", *hcsim))
        raise InputError(f"command line: fabric: '{spec}' is neither a template ({names}) nor a file")
    if shaping:
        raise InputError(
            f"command line: {', '.join(shaping)}: a file cannot be combined with template options"
        )
    return read_fabric(spec, style)


# --- summaries --------------------------------------------------------------------------------


def summary(p: Platform, name: str) -> dict[str, Any]:
    """Counts by kind and type, link classes, memory and peak compute."""
    kinds = p.kinds
    specs = p.node_specs
    by_kind = Counter(kinds)
    by_type = Counter(specs[d][0] for d in p.placement[0])
    memory: dict[str, float] = {}
    for _, bytes_, mem, _ in specs:
        if mem:
            memory[mem] = memory.get(mem, 0.0) + bytes_
    src, dst, gbs, ns, _ = p.duplex_links() if _all_duplex(p) else (*p.links, None)
    classes: Counter[tuple[str, str, float, float]] = Counter()
    for a, b, bw, lat in zip(src, dst, gbs, ns, strict=True):
        ka, kb = sorted((kinds[a], kinds[b]))
        classes[(ka, kb, bw, lat)] += 1
    tiers = Counter(t for _, _, _, t in specs if t)
    return {
        "name": name,
        "xpus": len(p.placement[0]),
        "xpus_by_type": dict(sorted(by_type.items())),
        "scale_up_domains": len(set(p.placement[1])),
        "nodes": len(kinds),
        "nodes_by_kind": dict(sorted(by_kind.items())),
        "switch_tiers": dict(sorted(tiers.items())),
        "links": len(src),
        "link_classes": [
            {"between": f"{a}-{b}", "bandwidth_GBps": bw, "latency_ns": lat, "count": n}
            for (a, b, bw, lat), n in sorted(classes.items())
        ],
        "memory_bytes": {k: (v if math.isfinite(v) else "inf") for k, v in sorted(memory.items())},
    }


def _all_duplex(p: Platform) -> bool:
    try:
        p.duplex_links()
    except InputError:
        return False
    return True


def _bytes(v: float | str) -> str:
    return "unbounded" if v == "inf" else f"{float(v) / 1e12:g} TB"


def print_summary(doc: dict[str, Any]) -> None:
    types = ", ".join(f"{n} {t}" for t, n in doc["xpus_by_type"].items())
    print(f"{doc['name']}: {doc['xpus']} XPUs ({types}) in {doc['scale_up_domains']} scale-up domains")
    print("nodes: " + ", ".join(f"{n} {k}" for k, n in doc["nodes_by_kind"].items()))
    print("memory: " + ", ".join(f"{k} {_bytes(v)}" for k, v in doc["memory_bytes"].items()))
    print(f"links: {doc['links']}")
    for c in doc["link_classes"]:
        print(f"  {c['between']:<24} {c['bandwidth_GBps']:>10g} GB/s {c['latency_ns']:>8g} ns  x{c['count']}")
    if "bisection_bandwidth_Bps" in doc:
        print(f"bisection: {doc['bisection_bandwidth_Bps'] * 8 / 1e12:g} Tbps")


# --- the command ------------------------------------------------------------------------------


def simai_output(args: argparse.Namespace, built: Built) -> str | None:
    """Where the SimAI topology file goes: `topo`'s -o (default: gen_Topo_Template.py's name for
    a template), `fabric`'s --simai (no value: that name)."""
    if args.style == "topo":
        return args.output if args.output is not None or built.family == "file" else built.name
    if args.style == "fabric" and args.simai is not None:
        return args.simai or built.name
    return None


def exports(args: argparse.Namespace, built: Built) -> tuple[dict[str, str], str]:
    """The text of each export asked for, by path, and the SimGrid routing used."""
    from clustersim.platform import graphml_text

    platform = built.platform
    routing = getattr(args, "simgrid_routing", "auto")
    if getattr(args, "simgrid", None) is not None and routing == "auto":
        hosts = sum(k in ("gpu", "cpu", "memory") for k in platform.kinds)
        routing = "full" if hosts <= SIMGRID_FULL_HOSTS else "dijkstra"
    texts: dict[str, str] = {}
    simai = simai_output(args, built)
    if simai is not None:
        texts[simai] = platform.to_simai()
    for path, kind in (
        (getattr(args, "simgrid", None), "simgrid"),
        (getattr(args, "graphml", None), "graphml"),
        (getattr(args, "graph_json", None), "json"),
    ):
        if path is None:
            continue
        if kind == "simgrid":
            texts[path] = platform.to_simgrid(routing, args.dtype)
        elif kind == "graphml":
            texts[path] = graphml_text(platform)
        else:
            texts[path] = platform.to_graph_json(built.name)
    return texts, routing


def main(args: argparse.Namespace) -> int:
    from clustersim.files import atomic_outputs, write_text

    style = args.style
    built = build(args, style)
    for w in built.warnings:
        print(f"warning: {w}", file=sys.stderr)
    texts, routing = exports(args, built)
    with atomic_outputs() as stage:
        for path, text in texts.items():
            write_text(stage(path), text)
    if style == "topo":
        return print_topo(args, built, next(iter(texts), None))
    doc = summary(built.platform, built.name)
    if style == "fabric":
        doc["warnings"] = list(built.warnings)
        if args.bisection:
            from clustersim.topology import bisection_bandwidth

            doc["bisection_bandwidth_Bps"] = bisection_bandwidth(built.platform)
    if getattr(args, "simgrid", None) is not None:
        doc["simgrid_routing"] = routing
    doc["outputs"] = list(texts)
    if args.json:
        print_json(doc)
        return 0
    print_summary(doc)
    wrote(list(texts))
    return 0


def print_topo(args: argparse.Namespace, built: Built, output: str | None) -> int:
    """`clustersim topo`'s summary: SimAI's counts and the bisection bandwidth."""
    import json

    from clustersim.topology import Topology

    topo = Topology(built.platform, name=built.name, warnings=built.warnings)
    doc = topo.summary() | {"output": output}
    if args.json:
        print(json.dumps(doc, indent=2))
        return 0
    tbps = float(doc["bisection_bandwidth_Bps"]) * 8 / 1e12  # type: ignore[arg-type]
    print(
        f"{topo.name}: {topo.num_gpus} GPUs, {topo.num_nvswitches} NVSwitches, {topo.num_switches} "
        f"switches, {topo.num_links} links, bisection {tbps:g} Tbps"
    )
    wrote([output] if output else [])
    return 0
