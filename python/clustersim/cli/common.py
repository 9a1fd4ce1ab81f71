"""What the subcommands share: the parser, argument types, the options that several commands take
(each defined once here, so a flag means the same thing everywhere), progress bars and the list
of files written."""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NoReturn

from clustersim.errors import InputError
from clustersim.plan import BY_NAME, MAX_GPUS, Option

MAX_COUNT = 2**32 - 1


class Parser(argparse.ArgumentParser):
    """argparse, with usage errors on one line like every other clustersim error."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"clustersim: error: {message} (see {self.prog} --help)\n")


def whole(lo: int, hi: int) -> Callable[[str], int]:
    """argparse type: a whole number from `lo` to `hi`."""

    def parse(text: str) -> int:
        if not re.fullmatch(r"\s*(0|[1-9]\d*)\s*", text) or not lo <= int(text) <= hi:
            raise argparse.ArgumentTypeError(f"must be a whole number from {lo} to {hi}, got '{text}'")
        return int(text)

    parse.__name__ = "whole number"
    return parse


# A GPU, NIC or size count.
count = whole(1, MAX_COUNT)
# A count of GPUs (ranks): at most what the engine simulates, the limit it would name itself.
gpu_count = whole(1, MAX_GPUS)


def subcommand(sub: argparse._SubParsersAction, name: str, **kw: Any) -> argparse.ArgumentParser:
    """A subcommand's parser: help epilogs (examples) kept verbatim, no abbreviated options."""
    return sub.add_parser(
        name, formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False, **kw
    )


def add_json(p: argparse.ArgumentParser, what: str = "the result") -> None:
    p.add_argument("--json", action="store_true", help=f"print {what} as JSON on stdout")


def add_progress(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress bar on stderr (default: on a terminal only, for runs longer than a second)",
    )


def add_result(p: argparse.ArgumentParser, default: str) -> None:
    """-r PREFIX, -r_f FOLDER, -v: where results go and whether charts are drawn (SimAI's flags)."""
    p.add_argument(
        "-r",
        "--result",
        "--result-prefix",
        dest="result",
        metavar="PREFIX",
        help=f"output prefix ({default})",
    )
    p.add_argument("-r_f", "--result-folder", metavar="FOLDER", help="folder to put the output prefix in")
    p.add_argument(
        "-v",
        "--visual",
        nargs="?",
        type=whole(0, 1),
        const=1,
        default=0,
        help="also write charts: <prefix>chart.png, .svg and .html (-v or -v 1; -v 0: none)",
    )


def add_options(
    p: argparse.ArgumentParser | argparse._ActionsContainer,
    options: Iterable[Option],
    changes: Mapping[str, Mapping[str, Any]] | None = None,
) -> None:
    """One argument per plan option (clustersim.plan): its flags, and argparse's type, range,
    choices, default and help from its type, default, choices and help; options of one `group`
    exclude each other. `changes` gives a command's own words for some (search's --model is
    required there)."""
    groups: dict[str, Any] = {}
    for o in options:
        kw: dict[str, Any] = {"help": o.help}
        if o.type is bool:
            kw["action"] = "store_true" if o.default is False else argparse.BooleanOptionalAction
        else:
            if o.type is not str:
                kw["type"] = whole(1, o.maximum) if o.type is int and o.count else o.type
            if o.choices is not None:
                kw["choices"] = list(o.choices)
            if o.required:
                kw["required"] = True
            elif o.default is not None:
                kw["default"] = o.default
            if o.metavar is not None:
                kw["metavar"] = o.metavar
        kw.update((changes or {}).get(o.name, {}))
        into = p if o.group is None else groups.get(o.group)
        if into is None:
            into = groups[o.group] = p.add_mutually_exclusive_group()
        into.add_argument(*o.flags, **kw)


def option_values(args: argparse.Namespace, options: Iterable[Option]) -> dict[str, Any]:
    """The API's keyword arguments for the options of `add_options`."""
    return {o.name: getattr(args, o.name) for o in options}


def add_platform(p: argparse.ArgumentParser, *, nics: bool = True) -> None:
    """Server shape: GPUs and NICs per server."""
    add_options(p, [BY_NAME["gpus_per_server"], *([BY_NAME["nics_per_server"]] if nics else [])])


def add_fabric(p: argparse.ArgumentParser, *, required: bool, what: str) -> None:
    """-n/--topology and how collectives run on it (flow backend; SimAI's AS_* variables honoured)."""
    p.add_argument(
        "-n",
        "--topology",
        required=required,
        metavar="FABRIC",
        help=f"{what}: a SimAI topology file (clustersim topo writes them) or a template NAME[:GPUS]"
        " (Spectrum-X:64, AlibabaHPN, DCN+, fat-tree:8)",
    )
    p.add_argument(
        "--algo",
        default="auto",
        help="collective algorithm (ring, tree, direct, all_pairs, one_shot, two_shot, hier_all_pairs,"
        " coherent_ring on a CXL-coherent platform, ...),"
        " msccl:FILE.xml (an MSCCL algorithm file), auto (NCCL's tuner; default) or auto+extra (NCCL's"
        " tuner also weighing the algorithms NCCL lacks: MSCCL++'s all-pairs family). A NAME forces every"
        " collective, except one defined for a single kind (coherent_ring, tree, collnet_direct, ...),"
        " which takes that kind alone; KIND=NAME items pick per kind, with or beside it:"
        " all_reduce=coherent_ring,all_gather=ring or ring,all_reduce=collnet_direct",
    )
    p.add_argument(
        "--channels",
        type=whole(0, 1024),
        default=0,
        help="rings/trees per collective (default 0: one per group rank of a server, at most one per NIC)",
    )
    p.add_argument("--seed", type=whole(0, 2**64 - 1), default=0, help="ECMP seed (default 0)")
    p.add_argument(
        "--qps",
        type=whole(1, 128),
        help="queue pairs per connection, each its own ECMP hash, bytes split evenly"
        " (default: NCCL_IB_QPS_PER_CONNECTION, else 1)",
    )
    p.add_argument(
        "--routing",
        choices=["ecmp", "spray"],
        default="ecmp",
        help="ecmp: per-flow hashing (default); spray: per-packet spraying / adaptive routing (Spectrum-X)",
    )
    p.add_argument(
        "--fault",
        action="append",
        metavar="SPEC",
        help="a link or NIC down or slower from a time on: link:A-B@TIME[:FACTOR] (both directions"
        " of every link between nodes A and B) or nic:NODE@TIME[:FACTOR] (all its ports but NVLink);"
        " TIME with a unit (ns, us, ms, s), FACTOR the share of bandwidth kept (default 0: down);"
        " repeat for several. Traffic moves to the surviving paths; where none is left the run stops"
        " naming the group. The result says how much slower the run is than without (flow backend)",
    )
    add_calibration(p)
    add_on_platform(p)


def add_backend(p: argparse.ArgumentParser) -> None:
    """--backend, and the packet model's --cc and --simai-conf: what moves the fabric's transfers
    (for the commands that take it). `backend_spec` joins them into the API's `backend`."""
    p.add_argument(
        "--backend",
        choices=["flow", "packet"],
        default="flow",
        help="flow: max-min fair flows (default); packet: RoCE packets with PFC, ECN and congestion"
        " control at SimAI.conf's shipped settings (docs/guides/packet.md; much slower)",
    )
    p.add_argument(
        "--cc",
        choices=["none", "dcqcn", "hpcc", "timely", "dctcp"],
        help="with --backend packet: the congestion control (default: the SimAI.conf's CC_MODE;"
        " DCQCN as shipped)",
    )
    p.add_argument(
        "--simai-conf",
        metavar="FILE",
        help="with --backend packet: SimAI's ns-3 configuration file (SimAI.conf) to run with, read as SimAI"
        " reads it (default: SimAI 1.6's shipped settings)",
    )


def backend_spec(args: argparse.Namespace) -> str:
    """The API's `backend` for `add_backend`'s flags: flow, or packet[:cc=NAME][:conf=PATH]."""
    if args.backend != "packet":
        for flag, value in (("--cc", args.cc), ("--simai-conf", args.simai_conf)):
            if value is not None:
                raise InputError(f"command line: {flag}: applies to --backend packet only")
        return args.backend
    spec = "packet"
    if args.cc is not None:
        spec += f":cc={args.cc}"
    if args.simai_conf is not None:
        spec += f":conf={args.simai_conf}"
    return spec


def add_on_platform(p: argparse.ArgumentParser) -> None:
    """Reduction servers (Optcast) and in-network reduction (CollNet): they take the all-reduces
    across servers, every other collective runs as --algo says."""
    g = p.add_argument_group(
        "reduction servers and in-network reduction (all-reduces across servers; other collectives as --algo)"
    )
    g.add_argument(
        "--reduction-servers",
        metavar="SERVERS",
        help="run all-reduce on reduction servers: all (every cpu node with a NIC), a count N (the first N"
        " cpu nodes) or cpu node names joined by commas",
    )
    g.add_argument(
        "--reduce-gbps", type=float, help="a server's reduction throughput, GB/s (default: its NIC rate)"
    )
    g.add_argument("--rs-chunk", default="512K", help="Optcast's chunk size (K/M/G suffixes; default 512K)")
    g.add_argument(
        "--rs-nsplit", type=whole(0, 1 << 16), default=0, help="shards per chunk (default 0: one per server)"
    )
    g.add_argument(
        "--rs-nreq", type=whole(1, 1 << 16), default=2, help="requests in flight per worker (default 2)"
    )
    g.add_argument(
        "--switch-reduce-gbps",
        type=float,
        help="with --algo collnet_direct or collnet_chain (all-reduce reduced in the switches, SHARP):"
        " a switch's reduction throughput, GB/s (default: as fast as its links)",
    )


def reduction_options(args: argparse.Namespace):  # noqa: ANN201 (ReductionServers | None)
    """The reduction servers of `add_on_platform`'s flags, or None."""
    if args.reduction_servers is None:
        if args.reduce_gbps is not None:
            raise InputError(
                "command line: --reduce-gbps: applies to reduction servers only; give --reduction-servers"
            )
        return None
    # Imported only when asked for: most runs have none, and start-up stays lean.
    from clustersim.nccl_tests import parse_size
    from clustersim.reduction_server import ReductionServers

    return ReductionServers(
        args.reduction_servers,
        args.reduce_gbps,
        float(parse_size(args.rs_chunk)),
        args.rs_nsplit,
        args.rs_nreq,
    )


def add_calibration(
    p: argparse.ArgumentParser,
    what: str = "the fabric's link classes rescaled to the measured bandwidth and latency, measured"
    " collectives' own fits applied",
) -> None:
    p.add_argument(
        "--calibration",
        metavar="FILE",
        help=f"calibration file of `clustersim calibrate` (PREFIXcalibration.json): {what}",
    )


def add_routes(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--routes",
        metavar="FILE",
        help="routes file: one route per line, the nodes of its path from source to destination;"
        " flows between those end nodes take it instead of ECMP",
    )


def add_ecmp_seeds(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--ecmp-seeds",
        type=whole(1, 1024),
        default=1,
        metavar="N",
        help="run ECMP seeds --seed … --seed+N−1 and report mean, min, max and each seed",
    )


def fabric_options(args: argparse.Namespace) -> dict[str, Any]:
    """The API's keyword arguments for the fabric options of `add_fabric`."""
    return dict(
        topology=args.topology,
        algo=args.algo,
        channels=args.channels,
        seed=args.seed,
        qps=args.qps,
        routing=args.routing,
        calibration=args.calibration,
        reduction=reduction_options(args),
        switch_reduce_gbps=args.switch_reduce_gbps,
        faults=args.fault,
    )


class Progress:
    """A tqdm progress bar on stderr, fed fractions 0 … 1. `enabled` None: on a terminal, and only
    once a run has taken a second (tqdm is imported then, never for quick runs); True: always."""

    def __init__(self, label: str, enabled: bool | None) -> None:
        self.label = label
        self.forced = bool(enabled)
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.start = time.monotonic()
        self.bar: Any = None

    def __call__(self, fraction: float, note: str | None = None) -> None:
        """Show `fraction` done, and `note` (what it is doing, counts so far) after the bar."""
        if not self.enabled or (not self.forced and time.monotonic() - self.start < 1.0):
            return
        if self.bar is None:
            from tqdm import tqdm

            self.bar = tqdm(
                total=100,
                desc=self.label,
                unit="%",
                file=sys.stderr,
                bar_format="{l_bar}{bar}| {elapsed}{postfix}",
            )
        if note is not None:
            self.bar.set_postfix_str(note, refresh=False)
        self.bar.update(round(fraction * 100, 1) - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def progress_for(args: argparse.Namespace, label: str = "simulating") -> Progress:
    return Progress(label, getattr(args, "progress", None))


def wrote(paths: list[str]) -> None:
    """The files a command wrote, listed last."""
    if paths:
        print("wrote " + ", ".join(paths))


def print_json(doc: Any) -> None:
    import json

    print(json.dumps(doc, indent=2, allow_nan=False))


def no_charts_without_prefix(args: argparse.Namespace) -> None:
    if args.visual and args.result is None:
        raise InputError("command line: -v/--visual: charts go next to the other results; give -r PREFIX too")
