"""The `clustersim` command: one module per subcommand, the options they share in `common`. A
module gives its one-line `HELP`, `DESCRIPTION` and `EPILOG` (examples), `arguments(p)` adds its
options to the parser built here, and `main(args)` runs it through the API (`clustersim.api`).

Exit status: 0 success; 2 bad input or usage (one line naming file, line and field); 70 a fault
of clustersim itself (sysexits.h's EX_SOFTWARE), reported as a bug; 130 interrupted.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable

from clustersim import __version__
from clustersim.cli import (
    analytical,
    bwtest,
    calibrate,
    collective,
    compare,
    fabric,
    goodput,
    graph,
    kernels,
    platform,
    replay,
    report,
    run,
    search,
    study,
    sweep,
    topo,
    train,
    workload,
)
from clustersim.cli.common import Parser, subcommand
from clustersim.errors import EnginePanic, InputError, InternalError
from clustersim.provenance import command_line

EX_SOFTWARE = 70
COMMANDS = (
    analytical,
    run,
    train,
    search,
    goodput,
    workload,
    fabric,
    topo,
    platform,
    graph,
    collective,
    sweep,
    study,
    report,
    compare,
    bwtest,
    replay,
    calibrate,
    kernels,
)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole parser; with `only`, the other subcommands get just their one-line help (their
    options, and what building them imports, are not needed to run `only`)."""
    parser = Parser(
        prog="clustersim",
        description="Simulate AI training clusters: how long one iteration takes, and where the time goes.",
        allow_abbrev=False,
    )
    parser.add_argument("--version", action="version", version=f"clustersim {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        name = command.__name__.rsplit(".", 1)[1]
        if only not in (None, name):
            sub.add_parser(name, help=command.HELP)
        elif hasattr(command, "add"):  # topo and platform build their parser themselves
            command.add(sub)
        else:
            p = subcommand(
                sub, name, help=command.HELP, description=command.DESCRIPTION, epilog=command.EPILOG
            )
            command.arguments(p)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(argv[0] if argv else None).parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
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
    """What an interrupted command kept: a sweep, the points stored so far (run it again to
    resume); every other command, nothing (results are written whole or not at all)."""
    if args.command == "sweep":
        from pathlib import Path

        path = args.output or str(Path(args.spec).with_suffix(".sqlite"))
        return f"the points simulated so far are kept in {path}; run the same sweep again to resume"
    return "no result file was written (results are written whole, at the end, or not at all)"
