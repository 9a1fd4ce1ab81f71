"""`clustersim platform`: build a platform of typed devices (HCSim's templates) or read one (graph
document, platform file, SimAI file), summarise it, and export it (SimGrid XML, GraphML, a JSON
graph document)."""

from __future__ import annotations

import argparse
import math
import re
from collections import Counter
from typing import TYPE_CHECKING, Any

from clustersim.cli.common import add_json, count, print_json, subcommand, wrote
from clustersim.errors import InputError

if TYPE_CHECKING:
    from clustersim.platform import Platform

HELP = "build, inspect and export platforms of typed devices (HCSim's systems, graph files)"

EPILOG = """\
examples:
  clustersim platform hcsim-cxl --xpus 64 --simgrid results/hcsim-cxl-64.xml
  clustersim platform hcsim-pcie --mix h100:128,a100:128 --link nic_tor=25GB/s,2us
  clustersim platform hcsim-cxl --xpus 1024 --link cxl=256GB/s,1us --graph-json results/cxl.json
  clustersim platform results/cxl.json --graphml results/cxl.graphml --json

link classes (Table 5 of the HCSim paper; dram is ours): tor_core 12.5GB/s,5us  nic_tor 12.5GB/s,5us
  upi 62.4GB/s,100ns  pcie 128GB/s,250ns  xpu 900GB/s,100ns  cxl 128GB/s,200ns  dram 512GB/s,100ns"""

SIMGRID_FULL_HOSTS = 2000
"""Most hosts for which `--simgrid-routing auto` writes every route (Full); beyond, Dijkstra."""


def add(sub: argparse._SubParsersAction) -> None:
    p = subcommand(
        sub,
        "platform",
        help=HELP,
        description=(
            "Build one of the HCSim paper's systems (hcsim-pcie: Fig. 6a; hcsim-cxl: Fig. 6b, with a CXL"
            " fabric and a CXL Type-3 expander per XPU) or read a platform (a graph document in JSON, YAML"
            " or GraphML with Table 2's attributes, a platform file or a SimAI topology file); print a"
            " summary and write the exports asked for."
        ),
        epilog=EPILOG,
    )
    p.add_argument("platform", metavar="TEMPLATE|FILE", help="hcsim-pcie, hcsim-cxl, or a platform file")
    add_template_options(p)
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
    add_json(p, "the summary")
    p.set_defaults(func=main)


# The options that shape a template (`dest` names), as `add_template_options` adds them.
TEMPLATE_OPTIONS = (
    "xpus mix xpus_per_server servers_per_tor cpus_per_server nics_per_server pcie_uplinks link"
    " cxl_uplink dram cxl_memory dram_window cxl_window"
).split()


def add_template_options(p: argparse.ArgumentParser) -> None:
    """The options of a template platform (hcsim-pcie, hcsim-cxl): every command that builds one."""
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


def template_options(args: argparse.Namespace) -> dict[str, Any] | None:
    """The template options a command ran with (what its outputs record beside the template);
    None for a platform file."""
    from clustersim.platform import TEMPLATES

    return {k: getattr(args, k) for k in TEMPLATE_OPTIONS} if args.platform in TEMPLATES else None


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
    """GB/s of a rate like 128GB/s or 400Gbps."""
    from clustersim._engine import parse_rate

    value = parse_rate(text.strip())
    if value is None or not value > 0:
        raise InputError(f"command line: {option}: '{text}' is not a rate like 128GB/s or 400Gbps")
    return value


def parse_links(items: list[str]) -> dict[str, tuple[float, float]]:
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


def build(args: argparse.Namespace) -> tuple[Platform, str]:
    """The platform the arguments describe, and its name."""
    from pathlib import Path

    from clustersim import platform as plat

    spec = args.platform
    if spec in plat.TEMPLATES:
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
        return plat.hcsim(spec, mix, parse_links(args.link), **params), spec
    shaping = [
        o
        for o, v in (
            ("--xpus", args.xpus),
            ("--mix", args.mix),
            ("--link", args.link),
            ("--dram-window", args.dram_window),
            ("--cxl-window", args.cxl_window),
        )
        if v
    ]
    if shaping:
        raise InputError(
            f"command line: {', '.join(shaping)}: only for the templates ({', '.join(plat.TEMPLATES)})"
        )
    if not Path(spec).is_file():
        raise InputError(
            f"command line: platform: '{spec}' is neither a template ({', '.join(plat.TEMPLATES)}) nor a file"
        )
    return plat.read_platform(spec), Path(spec).stem


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
    doc = {
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
    return doc


def _all_duplex(p: Platform) -> bool:
    try:
        p.duplex_links()
    except InputError:
        return False
    return True


def _bytes(v: float | str) -> str:
    return "unbounded" if v == "inf" else f"{float(v) / 1e12:g} TB"


def main(args: argparse.Namespace) -> int:
    from clustersim.files import atomic_outputs, write_text
    from clustersim.platform import graphml_text

    platform, name = build(args)
    doc = summary(platform, name)
    routing = args.simgrid_routing
    if args.simgrid is not None and routing == "auto":
        hosts = sum(k in ("gpu", "cpu", "memory") for k in platform.kinds)
        routing = "full" if hosts <= SIMGRID_FULL_HOSTS else "dijkstra"
    outputs = [(args.simgrid, "simgrid"), (args.graphml, "graphml"), (args.graph_json, "json")]
    texts = {}
    for path, kind in outputs:
        if path is None:
            continue
        if kind == "simgrid":
            texts[path] = platform.to_simgrid(routing, args.dtype)
        elif kind == "graphml":
            texts[path] = graphml_text(platform)
        else:
            texts[path] = platform.to_graph_json(name)
    with atomic_outputs() as stage:
        for path, text in texts.items():
            write_text(stage(path), text)
    if args.simgrid is not None:
        doc["simgrid_routing"] = routing
    doc["outputs"] = list(texts)
    if args.json:
        print_json(doc)
        return 0
    types = ", ".join(f"{n} {t}" for t, n in doc["xpus_by_type"].items())
    print(f"{name}: {doc['xpus']} XPUs ({types}) in {doc['scale_up_domains']} scale-up domains")
    print("nodes: " + ", ".join(f"{n} {k}" for k, n in doc["nodes_by_kind"].items()))
    print("memory: " + ", ".join(f"{k} {_bytes(v)}" for k, v in doc["memory_bytes"].items()))
    print(f"links: {doc['links']}")
    for c in doc["link_classes"]:
        print(f"  {c['between']:<24} {c['bandwidth_GBps']:>10g} GB/s {c['latency_ns']:>8g} ns  x{c['count']}")
    wrote(list(texts))
    return 0
