"""`clustersim graph`: run a workload graph (HCSim's Table 3) on a platform of typed devices, write
the paper's LLaMA2-13B workload graph, or any workload IR (a train plan) as a graph."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from clustersim import provenance
from clustersim.cli import platform as platform_cli
from clustersim.cli.common import (
    add_backend,
    add_json,
    add_progress,
    backend_spec,
    count,
    print_json,
    progress_for,
    wrote,
)
from clustersim.cli.platform import add_template_options
from clustersim.errors import InputError
from clustersim.files import atomic_outputs, write_text

EPILOG = """\
examples:
  clustersim graph llama2-13b --layers 4 -o results/llama-4.json
  clustersim graph run results/llama-4.json --platform hcsim-cxl --xpus 64 -r results/llama-4-cxl-
  clustersim graph run results/llama-4.json --platform hcsim-pcie --xpus 64 --json
  clustersim graph llama2-13b --layers 2 -o results/llama-2.graphml
  clustersim graph run results/llama-2.graphml --platform hcsim-cxl --xpus 16 --iterations 3 --access copy"""

RUN_EPILOG = """\
examples:
  clustersim graph llama2-13b --layers 2 -o results/llama-2.json
  clustersim graph run results/llama-2.json --platform hcsim-cxl --xpus 16 --iterations 2 -r results/llama-2-
  clustersim graph run results/llama-2.json --platform hcsim-pcie --mix h100:128,a100:128 --json"""

FROM_EPILOG = """\
examples:
  clustersim workload generate --model gpt-7b -g 16 --tp 2 --pp 2 --gbs 16 --ir -o results/gpt-7b.ir.json
  clustersim graph from-workload results/gpt-7b.ir.json --platform hcsim-cxl --xpus 16 -o results/gpt-7b.json
  clustersim graph run results/gpt-7b.json --platform hcsim-cxl --xpus 16 --json"""

LLAMA_EPILOG = """\
examples:
  clustersim graph llama2-13b -o results/llama2-13b.json
  clustersim graph llama2-13b --batch 2 --element-bytes 2 -o results/llama2-13b-b2.graphml --json"""


DESCRIPTION = (
    "Workload graphs as in the HCSim paper: compute vertices (FLOPs, bytes of memory and where"
    " they live, the XPU they run on) and communication vertices (collectives, point-to-point)"
    " joined by dependency edges, cycles closed by not_first edges, run for an iteration count."
    " Format: docs/workload-graph-format.md."
)


def arguments(p: argparse.ArgumentParser) -> None:
    commands = p.add_subparsers(dest="graph_command", required=True, metavar="ACTION")
    r = commands.add_parser(
        "run",
        help="run a workload graph on a platform",
        description=(
            "Run a workload graph (node-link JSON or GraphML) on a platform (hcsim-pcie, hcsim-cxl or a"
            " platform file) with the flow model: compute at the XPU's roofline, remote memory copied"
            " first (host DRAM) or read in place (CXL), collectives by NCCL's algorithms on the"
            " platform. Prints the iteration time and where the time went; -r PREFIX writes"
            " PREFIXsummary.json and PREFIXtrace.json (Chrome/Perfetto)."
        ),
        epilog=RUN_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    r.add_argument("graph", metavar="GRAPH", help="workload graph: .json (node-link) or .graphml")
    add_platform(r)
    r.add_argument("--iterations", type=count, help="iterations to run (default: the graph's, else 1)")
    r.add_argument(
        "--access",
        choices=("auto", "copy", "coherent"),
        default="auto",
        help="remote memory: auto (in place on CXL, copied from DRAM), always copy, always in place",
    )
    r.add_argument(
        "--algo",
        default="auto",
        help="collective algorithm (default auto: NCCL's tuner; names as clustersim collective --algo)",
    )
    r.add_argument(
        "--collectives",
        choices=("nccl", "cm02"),
        default="nccl",
        help="how collectives are priced: nccl (default: NCCL's latency and rates) or cm02 (SimGrid's,"
        " as HCSim: every step pays its path latency, then moves at link rate)",
    )
    r.add_argument(
        "--concurrent-collectives",
        action="store_true",
        help="start every communication vertex once its dependencies are met (HCSim's engine), not one"
        " at a time per participant set (NCCL's communicator order, the default)",
    )
    add_backend(r)
    r.add_argument("-r", "--result", metavar="PREFIX", help="write PREFIXsummary.json and PREFIXtrace.json")
    add_json(r, "the summary")
    add_progress(r)
    r.set_defaults(func=main_run)
    g = commands.add_parser(
        "llama2-13b",
        help="write the HCSim paper's LLaMA2-13B data-parallel workload graph",
        description=(
            "Write the LLaMA2-13B data-parallel training graph of the HCSim paper (Fig. 7): 40 decoders,"
            " hidden 5120, sequence 4096, batch b per XPU, FP32, every vertex on every XPU, one gradient"
            " all-reduce per decoder (--sync layer: per layer, as the paper); FLOPs and bytes per layer"
            " from the layer shapes"
            " (docs/workload-graph-format.md compares them with the paper's Table 4)."
        ),
        epilog=LLAMA_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    g.add_argument("-o", "--output", required=True, metavar="OUT", help="the graph: .json or .graphml")
    g.add_argument("--batch", type=count, default=1, help="micro-batch per XPU (default 1)")
    g.add_argument("--layers", type=count, default=40, help="decoders (default 40)")
    g.add_argument("--hidden", type=count, default=5120, help="hidden size (default 5120)")
    g.add_argument("--seq", type=count, default=4096, help="sequence length (default 4096)")
    g.add_argument("--heads", type=count, default=40, help="attention heads (default 40)")
    g.add_argument("--element-bytes", type=count, default=4, help="bytes per element: 4 FP32 (default), 2")
    g.add_argument("--iterations", type=count, default=1, help="the graph's iteration count (default 1)")
    g.add_argument(
        "--sync",
        choices=("decoder", "layer"),
        default="decoder",
        help="a gradient all-reduce per decoder (default) or per layer with parameters (the paper's)",
    )
    add_json(g, "the summary")
    g.set_defaults(func=main_llama)
    f = commands.add_parser(
        "from-workload",
        help="write a workload (a train plan's IR, a SimAI file's) as a workload graph",
        description=(
            "Write a workload IR (clustersim workload generate ... --ir, or workload export) as a workload"
            " graph on a platform that runs its ranks: a vertex per op of each rank (compute as FLOPs in"
            " --dtype at the XPU's peak, so it takes its time again), each collective once per group"
            " instance, each send/recv pair once; edges for the dependencies and each stream's order."
            " graph run on the same platform gives the plan's iteration time."
        ),
        epilog=FROM_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    f.add_argument("workload", metavar="IR", help="workload IR JSON (docs/workload-ir.md)")
    add_platform(f)
    f.add_argument("--dtype", default="bf16", help="data type of the compute vertices' FLOPs (default bf16)")
    f.add_argument("-o", "--output", required=True, metavar="OUT", help="the graph: .json or .graphml")
    add_json(f, "the summary")
    f.set_defaults(func=main_from_workload)


def add_platform(p: argparse.ArgumentParser) -> None:
    """The platform a graph runs on (or is written for): a file, or a template and its options."""
    p.add_argument(
        "--platform", required=True, metavar="TEMPLATE|FILE", help="hcsim-pcie, hcsim-cxl or a file"
    )
    add_template_options(p)


def platform_of(args: argparse.Namespace) -> tuple[Any, str, dict[str, Any] | None]:
    """The platform `--platform` names, through `clustersim platform`'s builder, its name and the
    template options it was built with."""
    platform, name = platform_cli.build(args)
    return platform, name, platform_cli.template_options(args)


def _ms(ns: float) -> str:
    return f"{ns / 1e6:.3f} ms"


def main_run(args: argparse.Namespace) -> int:
    from clustersim import workload_graph

    if not Path(args.graph).is_file():
        raise InputError(f"command line: GRAPH: '{args.graph}' is not a file")
    text = workload_graph.read_workload_graph(args.graph)
    platform, platform_name, platform_options = platform_of(args)
    backend = backend_spec(args)
    progress = progress_for(args)
    try:
        result = workload_graph.run(
            text,
            platform,
            name=args.graph,
            iterations=args.iterations,
            access=args.access,
            algorithm=args.algo,
            trace=args.result is not None,
            progress=progress,
            collectives=args.collectives,
            concurrent=args.concurrent_collectives,
            backend=backend,
        )
    finally:
        progress.close()
    trace = result.pop("trace", None)
    link_bytes = result.pop("link_bytes")
    ends = result["iteration_end_ns"]
    times = [e - (ends[i - 1] if i else 0.0) for i, e in enumerate(ends)]
    doc = {
        "graph": args.graph,
        "platform": platform_name,
        "platform_options": platform_options,
        "xpus": len(platform.placement[0]),
        "access": args.access,
        "algorithm": args.algo,
        "collectives": args.collectives,
        "concurrent": args.concurrent_collectives,
        "backend": backend,
        "iteration_ns": times[-1],
        "iteration_times_ns": times,
        "iterations_per_s": 1e9 / times[-1] if times[-1] > 0 else None,
        "busiest_link_bytes": max(link_bytes, default=0.0),
        **result,
    }
    doc["placed_bytes"] = dict(doc["placed_bytes"])
    options = dict(iterations=args.iterations, access=args.access, algorithm=args.algo)
    options |= dict(collectives=args.collectives, concurrent=args.concurrent_collectives)
    doc["provenance"] = provenance.record(
        command=provenance.call_text("workload_graph.run", {"graph": args.graph, **options}),
        plan=options | {"platform_options": platform_options},
        model=provenance.workload_file(args.graph, text),
        fabric={"name": platform_name, "sha256": provenance.platform_digest(platform)},
        backend=backend,
    )
    written: list[str] = []
    if args.result is not None:
        names = [args.result + "summary.json", args.result + "trace.json"]
        import json

        with atomic_outputs() as stage:
            write_text(stage(names[0]), json.dumps(doc, indent=2, allow_nan=False) + "\n")
            write_text(stage(names[1]), trace or "")
        written = names
    if args.json:
        print_json(doc | {"outputs": written})
        return 0
    how = f"access {args.access}, algorithm {args.algo}, {args.collectives} collectives"
    how += ", concurrent" if args.concurrent_collectives else ""
    print(
        f"{args.graph}: {doc['vertices']} vertices, {doc['edges']} edges, {doc['iterations']} iteration(s)"
        f" on {platform_name} ({doc['xpus']} XPUs, {how})"
    )
    last = len(times) - 1
    rate = f" ({doc['iterations_per_s']:.4g} iterations/s)" if doc["iterations_per_s"] else ""
    print(f"iteration time: {_ms(times[-1])} (iteration {last}){rate}; run ends at {_ms(doc['end_ns'])}")
    if len(times) > 1:
        print("iterations: " + ", ".join(_ms(t) for t in times))
    # Classes whose time went alike (a graph of one vertex per rank has a class per rank) share a line.
    alike: dict[str, list[dict[str, Any]]] = {}
    for c in doc["classes"]:
        line = (
            f"compute {_ms(c['compute_ns'])}, exposed reads {_ms(c['read_ns'])}, collectives"
            f" {_ms(c['collective_ns'])}, p2p {_ms(c['p2p_ns'])}, idle {_ms(c['idle_ns'])}"
        )
        alike.setdefault(line, []).append(c)
    for line, classes in alike.items():
        first = ", ".join(str(c["first_rank"]) for c in classes[:4]) + (", …" if len(classes) > 4 else "")
        print(f"  ranks {first} ({sum(c['ranks'] for c in classes)}): {line}")
    placed = doc["placed_bytes"]
    print(
        f"memory: HBM {placed['hbm'] / 1e9:.4g} GB, host DRAM {placed['dram'] / 1e9:.4g} GB,"
        f" CXL {placed['cxl'] / 1e9:.4g} GB ({doc['spilled_copies']} vertex copies spilled)"
    )
    print(f"simulated {doc['ops']} ops in {doc['simulate_seconds']:.3f} s")
    wrote(written)
    return 0


def main_llama(args: argparse.Namespace) -> int:
    import json

    from clustersim import workload_graph

    doc = workload_graph.llama2_13b(
        args.batch,
        layers=args.layers,
        hidden=args.hidden,
        seq=args.seq,
        heads=args.heads,
        element_bytes=args.element_bytes,
        iterations=args.iterations,
        sync=args.sync,
    )
    text = workload_graph.normalize(json.dumps(doc), args.output)
    out = workload_graph.graphml_text(text) if args.output.lower().endswith(".graphml") else text
    with atomic_outputs() as stage:
        write_text(stage(args.output), out)
    compute = [n for n in doc["nodes"] if n["kind"] == "compute"]
    summary = {
        "name": doc["graph"]["name"],
        "vertices": len(doc["nodes"]),
        "edges": len(doc["links"]),
        "flops_per_xpu": sum(n["flops"] for n in compute),
        "bytes_per_xpu": sum(n["bytes"] for n in compute),
        "allreduce_bytes": sum(n["bytes"] for n in doc["nodes"] if n["kind"] == "communication"),
        "outputs": [args.output],
    }
    if args.json:
        print_json(summary)
        return 0
    print(
        f"{summary['name']}: {summary['vertices']} vertices, {summary['edges']} edges;"
        f" per XPU and iteration {summary['flops_per_xpu'] / 1e12:.4g} TFLOP,"
        f" {summary['bytes_per_xpu'] / 1e9:.4g} GB of memory accessed,"
        f" {summary['allreduce_bytes'] / 1e9:.4g} GB all-reduced"
    )
    wrote([args.output])
    return 0


def main_from_workload(args: argparse.Namespace) -> int:
    import json

    from clustersim import workload_graph
    from clustersim.workload import Workload

    if not Path(args.workload).is_file():
        raise InputError(f"command line: IR: '{args.workload}' is not a file")
    workload = Workload.load(args.workload)
    platform, platform_name, platform_options = platform_of(args)
    text = workload_graph.from_workload(workload, platform, dtype=args.dtype, name=args.workload)
    out = workload_graph.graphml_text(text) if args.output.lower().endswith(".graphml") else text
    with atomic_outputs() as stage:
        write_text(stage(args.output), out)
    doc = json.loads(text)
    kinds = [n["kind"] for n in doc["nodes"]]
    summary = {
        "workload": args.workload,
        "platform": platform_name,
        "platform_options": platform_options,
        "vertices": len(kinds),
        "compute": kinds.count("compute"),
        "communication": kinds.count("communication"),
        "edges": len(doc["links"]),
        "outputs": [args.output],
    }
    if args.json:
        print_json(summary)
        return 0
    print(
        f"{args.workload} on {platform_name}: {summary['vertices']} vertices ({summary['compute']} compute,"
        f" {summary['communication']} communication), {summary['edges']} edges"
    )
    wrote([args.output])
    return 0
