"""`clustersim workload`: generate, check, rewrite or export workloads (SimAI files, IR JSON)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from clustersim import _engine
from clustersim.cli.common import add_json, add_options, add_platform, count, option_values, subcommand, wrote
from clustersim.errors import InputError
from clustersim.files import atomic_outputs, read_text, write_text
from clustersim.plan import OPTIONS

if TYPE_CHECKING:
    from clustersim.workload import Workload

EPILOG = """\
examples:
  clustersim workload check examples/workload_analytical.txt
  clustersim workload generate --model gpt-175b --gpus 1024 --tp 8 --pp 8 --sp --gbs 1024 --seq 2048 -o results/gpt175b.txt
  clustersim workload rewrite results/gpt175b.txt -o results/gpt175b-again.txt
  clustersim workload export examples/workload_analytical.txt -o results/example-ir.json"""  # noqa: E501


DESCRIPTION = "Generate, check, rewrite or export workloads (SimAI files, IR JSON)."


def arguments(p: argparse.ArgumentParser) -> None:
    wsub = p.add_subparsers(dest="workload_command", required=True, metavar="ACTION")
    c = subcommand(
        wsub,
        "check",
        help="read a workload (SimAI file or IR JSON) and report what it holds",
        description="A SimAI workload file: its header and row count. Workload IR JSON"
        " (docs/workload-ir.md): every invariant checked, then its ranks, groups and ops counted.",
        epilog="example: clustersim workload check examples/workload_analytical.txt --json",
    )
    c.add_argument("file")
    add_lenient(c)
    add_json(c)
    c.set_defaults(func=check)
    r = subcommand(
        wsub,
        "rewrite",
        help="read a workload file and write it back in its header variant",
        description="Read a SimAI workload file and write it back in its own header variant.",
        epilog="example: clustersim workload rewrite examples/microAllReduce.txt -o results/micro.txt",
    )
    r.add_argument("file")
    r.add_argument("-o", "--output", required=True, help="where to write")
    add_lenient(r)
    add_json(r, "what was written")
    r.set_defaults(func=rewrite)
    g = subcommand(
        wsub,
        "generate",
        help="write one training iteration as a SimAI workload file (no GPU needed)",
        description=(
            "Write one pipeline stage of a Megatron-Core iteration as a SimAI workload file: the"
            " collectives Megatron issues, or with --aicb-compat exactly the rows AICB writes."
            " Compute times come from clustersim's per-kernel compute model."
        ),
        epilog="example: clustersim workload generate --model gpt-175b --gpus 1024 --tp 8 --pp 8 --sp "
        "--gbs 1024 --seq 2048 -o results/gpt175b.txt",
    )
    add_options(g, OPTIONS)
    g.add_argument(
        "--aicb-compat", action="store_true", help="AICB's rows and quirks (to compare with SimAI)"
    )
    g.add_argument("-o", "--output", required=True, help="where to write the workload file")
    g.add_argument(
        "--ir",
        action="store_true",
        help="write the whole iteration (every stage) as workload IR JSON (docs/workload-ir.md) instead",
    )
    add_json(g, "what was written")
    g.set_defaults(func=generate)
    x = subcommand(
        wsub,
        "export",
        help="write the IR a SimAI workload file becomes as workload IR JSON",
        description="Build the IR of a SimAI workload file as `clustersim analytical` does in its default"
        " mode and write it as workload IR JSON (docs/workload-ir.md).",
        epilog="example:\n  clustersim workload export examples/workload_analytical.txt -o results/example-ir.json",  # noqa: E501
    )
    x.add_argument("file")
    x.add_argument("-o", "--output", required=True, help="where to write the IR JSON")
    x.add_argument("-g", "--gpus", type=count, help="number of GPUs (default: the header's all_gpus)")
    add_platform(x, nics=False)
    add_lenient(x)
    add_json(x, "what was written")
    x.set_defaults(func=export)


def add_lenient(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--lenient", action="store_true", help="accept a row count on line 2 that disagrees with the file"
    )


def ir_summary(w: Workload) -> dict[str, Any]:
    """What `workload check` and `export` report of an IR workload."""
    return {"ranks": w.ranks, "groups": [g["name"] for g in w.groups]} | w.counts()


def print_fields(info: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps(info, indent=2))
    else:
        for k, v in info.items():
            print(f"{k:>20}: {v}")


def check(args: argparse.Namespace) -> int:
    from clustersim.workload import Workload

    text = read_text(args.file, "workload")
    if text.lstrip().startswith("{"):
        info = {"format": "workload IR JSON"} | ir_summary(Workload.from_json(text, args.file))
        print_fields(info, args.json)
        return 0
    info = _engine.inspect_workload(args.file, text, lenient=args.lenient)
    for w in info.pop("warnings"):
        print(f"warning: {w}", file=sys.stderr)
    names = info.pop("row_names")
    info["distinct_row_names"] = sorted(set(names))
    print_fields(info, args.json)
    return 0


def export(args: argparse.Namespace) -> int:
    from clustersim.workload import Workload

    w = Workload.from_simai(
        args.file, gpus=args.gpus, gpus_per_server=args.gpus_per_server, lenient=args.lenient
    )
    w.save(args.output)
    print_fields({"output": args.output} | ir_summary(w), args.json)
    return 0


def rewrite(args: argparse.Namespace) -> int:
    text, warnings = _engine.rewrite_workload(
        args.file, read_text(args.file, "workload"), lenient=args.lenient
    )
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)
    with atomic_outputs() as stage:
        write_text(stage(args.output), text)
    if args.json:
        print(json.dumps({"input": args.file, "output": args.output}))
    else:
        wrote([args.output])
    return 0


def generate(args: argparse.Namespace) -> int:
    from clustersim.training import plan_warnings, resolve_plan, workload_text
    from clustersim.workload import Workload

    options = option_values(args, OPTIONS)
    model, _, plan, _ = resolve_plan(options.pop("model"), options)
    for w in plan_warnings(**plan):
        print(f"warning: {w}", file=sys.stderr)
    if args.ir:
        if args.aicb_compat:
            raise InputError("command line: --ir: AICB's rows are a SimAI file only; drop --aicb-compat")
        w = Workload.from_training(model, **plan)
        w.save(args.output)
        print_fields({"output": args.output} | ir_summary(w), args.json)
        return 0
    text = workload_text(model, aicb_compat=args.aicb_compat, **plan)
    with atomic_outputs() as stage:
        write_text(stage(args.output), text)
    rows = int(text.split("\n", 2)[1])
    if args.json:
        print(json.dumps({"output": args.output, "rows": rows, "aicb_compat": args.aicb_compat}))
    else:
        print(f"wrote {args.output}: {rows} rows ({'AICB rows' if args.aicb_compat else 'Megatron-Core'})")
    return 0
