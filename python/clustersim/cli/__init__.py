"""The `clustersim` command: one module per subcommand, the options they share in `common`. A
module gives its `DESCRIPTION` and `EPILOG` (examples), `arguments(p)` adds its options to the
parser built here (its one-line help is in `COMMANDS`), and `main(args)` runs it through the API
(`clustersim.api`).

Exit status: 0 success; 2 bad input or usage (one line naming file, line and field); 70 a fault
of clustersim itself (sysexits.h's EX_SOFTWARE), reported as a bug; 130 interrupted.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable

from clustersim import __version__
from clustersim.cli.common import Parser, subcommand
from clustersim.errors import EnginePanic, InputError, InternalError

EX_SOFTWARE = 70
# Each subcommand (its module in this package) and its one-line help, in the order `--help` lists
# them. A module is imported only when its own parser is built: running one command imports no other.
COMMANDS: dict[str, str] = {
    "analytical": (
        "simulate a SimAI workload file with the analytical network model (SimAI_analytical's flags)"
    ),
    "run": "simulate a SimAI workload file on a fabric (-n topology) with the flow model",
    "train": "simulate one training iteration of a model with a parallel plan (Megatron-Core)",
    "search": "search every parallel plan of a model on a cluster for the fastest (analytical backend)",
    "goodput": "a long run's goodput: failures, checkpoints, restarts, spares (Monte Carlo)",
    "workload": "generate, check, rewrite or export workloads (SimAI files, IR JSON)",
    "fabric": (
        "build, read, summarise and export fabrics: SimAI's templates, fat-trees, HCSim's systems, files"
    ),
    "topo": "write a fabric as a SimAI topology file (gen_Topo_Template.py's flags, fat-trees, pods)",
    "platform": "build, inspect and export platforms of typed devices (HCSim's systems, graph files)",
    "graph": (
        "run workload graphs (HCSim's compute/communication vertices) on platforms; write LLaMA2-13B's,"
        " or any workload's (a train plan's)"
    ),
    "collective": "nccl-tests-style sweep of one collective on the flow model",
    "sweep": "simulate every point of a sweep spec (grid, list or random sample over a command's options)",
    "study": "the HCSim paper's studies: coherent vs not, CXL bandwidth and latency, coherent ring",
    "report": "write a sweep's results as one interactive HTML page (table, Pareto plot, breakdown)",
    "compare": (
        "print what differs between two runs (fabric, plan, model, backend, version), then their"
        " results side by side (JSON results, or points STORE:N of sweeps)"
    ),
    "bwtest": "bisection bandwidth tester: measured over MPI, or simulated on a fabric",
    "replay": "replay a SimAI workload's communication for real over MPI, checked and timed",
    "calibrate": "fit latency and bandwidth per link class to nccl-tests logs, bwtest and replay JSON",
    "kernels": "time the kernels of a training iteration on a device and write a kernel table",
}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole parser. With `only` (the first argument): a command builds its subcommand alone;
    anything else (`--help`, a typo) lists every subcommand by its one-line help without building
    their options or importing what those need."""
    parser = Parser(
        prog="clustersim",
        description="Simulate AI training clusters: how long one iteration takes, and where the time goes.",
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="version", version=f"clustersim {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, help in COMMANDS.items():
        if only in COMMANDS and only != name:
            continue  # running `only`: the other subcommands' parsers would only cost start-up
        if only not in (None, name):
            sub.add_parser(name, help=help)
            continue
        command = importlib.import_module(f"clustersim.cli.{name}")
        if hasattr(command, "add"):  # fabric, topo and platform build their parser themselves
            command.add(sub, help)
        else:
            p = subcommand(sub, name, help=help, description=command.DESCRIPTION, epilog=command.EPILOG)
            command.arguments(p)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(argv[0] if argv else None).parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    from clustersim.provenance import command_line  # after parsing: `--help` needs none of it

    try:
        with command_line(argv):  # results record the command that made them
            code = func(args)
        sys.stdout.flush()  # a closed pipe shows here, not at exit
        return code
    except InputError as e:
        print(f"clustersim: error: {e}", file=sys.stderr)
        return 2
    except (InternalError, EnginePanic) as e:
        what = str(e) if isinstance(e, InternalError) else f"internal error: the engine panicked: {e}"
        print(f"clustersim: {what}", file=sys.stderr)
        print(
            "clustersim: this is a bug in clustersim; please report it with the command that caused it",
            file=sys.stderr,
        )
        return EX_SOFTWARE
    except KeyboardInterrupt:
        print(f"clustersim: interrupted: {interrupted_note(args)}", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`clustersim … | head`): as a Unix filter, stop quietly. Point
        # stdout at /dev/null so the interpreter's final flush does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


def interrupted_note(args: argparse.Namespace) -> str:
    """What an interrupted command kept: what the command says (its parser's `interrupted`
    default, e.g. a sweep's stored points), else nothing (results are written whole or not at all)."""
    kept: Callable[[argparse.Namespace], str] | None = getattr(args, "interrupted", None)
    if kept is not None:
        return kept(args)
    return "no result file was written (results are written whole, at the end, or not at all)"
