"""`clustersim study hcsim STUDY`: the HCSim paper's studies (Fig. 8, 10, 11, Table 6) on its
LLaMA2-13B workload graph and systems, each as a table (printed, CSV) and a plot (HTML)."""

from __future__ import annotations

import argparse
from typing import Any

from clustersim._engine import parse_rate, parse_time
from clustersim.cli.common import add_json, count, print_json, wrote
from clustersim.cli.platform import parse_window
from clustersim.errors import InputError
from clustersim.files import atomic_outputs, write_csv, write_text

EPILOG = """\
examples:
  clustersim study hcsim scale --layers 4 --servers-per-tor 1 --xpu-counts 8,16 -o results/hcsim
  clustersim study hcsim cxl-bandwidth --layers 4 --xpu-counts 8 --bandwidths 32,128,512
  clustersim study hcsim cxl-latency --layers 4 --xpu-counts 8 --latencies 100ns,10us,100us
  clustersim study hcsim coherent-ring --layers 4 --xpu-counts 8 --json

The paper's set-up (40 decoders, 16 servers of 8 per ToR, 64 ... 1024 XPUs) is the default and takes
minutes per point at 1024 XPUs: benchmarks/study_hcsim.py runs it. Each writes, with -o DIR,
DIR/hcsim-STUDY.csv and DIR/hcsim-STUDY.html (the plot and the paper's claims checked on the
rows). Throughput is the paper's batch/s: XPUs × batch / iteration time."""


def _list(kind: Any, what: str) -> Any:
    def parse(text: str) -> list[Any]:
        try:
            values = [kind(x.strip()) for x in text.split(",") if x.strip()]
        except (InputError, ValueError):
            raise argparse.ArgumentTypeError(f"'{text}' is not a comma-separated list of {what}") from None
        if not values:
            raise argparse.ArgumentTypeError(f"'{text}' lists no {what}")
        return values

    return parse


def _gbps(text: str) -> float:
    value = parse_rate(text if not text.replace(".", "", 1).isdigit() else text + "GB/s")
    if value is None or not value > 0:
        raise ValueError(text)
    return float(value)


def _ns(text: str) -> float:
    value = parse_time(text)
    if value is None or value < 0:
        raise ValueError(text)
    return float(value)


DESCRIPTION = "The HCSim paper's studies: coherent vs not, CXL bandwidth and latency, coherent ring."


def arguments(p: argparse.ArgumentParser) -> None:
    papers = p.add_subparsers(dest="paper", required=True, metavar="PAPER")
    h = papers.add_parser(
        "hcsim",
        help="HCSim (Li et al. 2025): LLaMA2-13B data parallel on hcsim-pcie / hcsim-cxl",
        description=(
            "The HCSim paper's studies on its LLaMA2-13B data-parallel workload graph (40 decoders, FP32,"
            " batch 1 per XPU) and systems (Fig. 6a hcsim-pcie, Fig. 6b hcsim-cxl; Table 5's links, CXL"
            " 128 GB/s and 200 ns unless swept). scale: Fig. 8 (mixes per ToR: H100 under the first, the"
            " other type beyond); cxl-bandwidth: Fig. 10; cxl-latency: Fig. 11; coherent-ring: Table 6."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    from clustersim.explore.hcsim import MIXES, STUDIES

    h.add_argument("study", choices=STUDIES, help="which study")
    h.add_argument(
        "--xpu-counts",
        type=_list(count, "XPU counts"),
        help="XPU counts (default: scale 64,128,256,512,1024; sweeps 64,256; coherent-ring Table 6's)",
    )
    h.add_argument(
        "--mixes",
        type=_list(str, "mixes"),
        help=f"mixes ({', '.join(MIXES)}); scale: all (default), sweeps: h100 (one)",
    )
    h.add_argument("--bandwidths", type=_list(_gbps, "rates"), help="cxl-bandwidth: CXL rates (GB/s)")
    h.add_argument(
        "--latencies", type=_list(_ns, "times"), help="cxl-latency: CXL latencies (e.g. 100ns,10us)"
    )
    h.add_argument("--ring-latency", type=_ns, help="coherent-ring: the CXL latency (default 200ns)")
    h.add_argument("--layers", type=count, default=40, help="decoders in the graph (default 40)")
    h.add_argument("--batch", type=count, default=1, help="batch per XPU (default 1)")
    h.add_argument("--servers-per-tor", type=count, default=16, help="servers per ToR (default 16)")
    h.add_argument(
        "--algo",
        help="the all-reduce of every study but coherent-ring (default ring, the paper's)",
    )
    h.add_argument(
        "--model",
        choices=("clustersim", "hcsim"),
        default="clustersim",
        help="clustersim (default): an all-reduce per decoder, NCCL's pipelined collectives, reads"
        " bounded by their window; hcsim: HCSim's own (an all-reduce per layer, CM02 collectives paying"
        " every step's latency, unbounded reads); the options below override either",
    )
    h.add_argument(
        "--sync", choices=("decoder", "layer"), help="a gradient all-reduce per decoder or per layer"
    )
    h.add_argument(
        "--collectives",
        choices=("nccl", "cm02"),
        help="nccl: NCCL's latency and rates; cm02: every step pays its path latency, at link rate",
    )
    h.add_argument(
        "--concurrent-collectives",
        action="store_true",
        help="start every all-reduce once its gradients are ready (HCSim's engine starts every ready"
        " vertex), not one at a time on the job's communicator (NCCL's order, the default in both models)",
    )
    for memory, default in (("cxl", "16384 x 64 B"), ("dram", "768 x 512 B")):
        h.add_argument(
            f"--{memory}-window",
            metavar="BYTES",
            help=f"bytes an XPU keeps in flight to {memory.upper()} memory, e.g. 4MiB, or inf for no bound"
            f" (HCSim's flows); reads run at most window / round trip (clustersim's default {default})",
        )
    h.add_argument("-o", "--output", metavar="DIR", help="write DIR/hcsim-STUDY.csv and .html")
    add_json(h, "the rows and the findings")
    h.set_defaults(func=main)


# Options that one study alone uses (the others would ignore them).
ONE_STUDY = {"bandwidths": "cxl-bandwidth", "latencies": "cxl-latency", "ring_latency": "coherent-ring"}


def refuse_what_the_study_does_not_use(args: argparse.Namespace) -> None:
    for key, study in ONE_STUDY.items():
        if getattr(args, key) is not None and args.study != study:
            flag = "--" + key.replace("_", "-")
            raise InputError(f"command line: {flag}: an option of {study}; {args.study} has no use for it")
    if args.algo is not None and args.study == "coherent-ring":
        raise InputError(
            "command line: --algo: coherent-ring runs the ring and the coherent ring, no other all-reduce"
        )
    if args.study in ("cxl-bandwidth", "cxl-latency") and len(args.mixes or []) > 1:
        raise InputError(f"command line: --mixes: {args.study} sweeps one mix, got {len(args.mixes)}")


def main(args: argparse.Namespace) -> int:
    import sys

    from clustersim.explore import hcsim as h

    refuse_what_the_study_does_not_use(args)
    chosen = {
        f"{m}_window_bytes": parse_window(f"--{m}-window", text)
        for m, text in (("cxl", args.cxl_window), ("dram", args.dram_window))
        if text is not None
    }
    chosen |= {k: v for k, v in (("sync", args.sync), ("collectives", args.collectives)) if v is not None}
    if args.concurrent_collectives:
        chosen["concurrent"] = True
    setup = h.Setup(
        layers=args.layers,
        batch=args.batch,
        servers_per_tor=args.servers_per_tor,
        algorithm=args.algo or "ring",
        **(h.MODELS[args.model] | chosen),
    )
    for m in args.mixes or []:
        h.mix_of(m, 1, 1)  # a bad name is refused before anything runs
    xpus = args.xpu_counts

    def progress(row: dict[str, Any]) -> None:
        if not args.json:
            print(
                f"  {row['system']} {row['mix']} {row['xpus']} XPUs, CXL {row['cxl_GBps']:g} GB/s"
                f" {row['cxl_latency_ns']:g} ns, {row['algorithm']}: {row['batch_per_s']:.4g} batch/s",
                file=sys.stderr,
                flush=True,
            )

    one_mix = (args.mixes or ["h100"])[0]
    if args.study == "scale":
        t = h.scale(setup, xpus or h.SCALES, args.mixes or tuple(h.MIXES), progress)
        findings = h.scale_findings(t, setup.per_tor)
    elif args.study == "cxl-bandwidth":
        t = h.cxl_bandwidth(setup, xpus or (64, 256), args.bandwidths or h.BANDWIDTHS_GBPS, one_mix, progress)
        findings = h.bandwidth_findings(t)
    elif args.study == "cxl-latency":
        t = h.cxl_latency(setup, xpus or (64, 256), args.latencies or h.LATENCIES_NS, one_mix, progress)
        findings = h.latency_findings(t)
    else:
        systems = h.RING_SYSTEMS
        if xpus or args.mixes:
            systems = tuple((m, n) for m in (args.mixes or ["h100"]) for n in (xpus or [64, 256]))
        latency = h.CXL_NS if args.ring_latency is None else args.ring_latency
        t = h.coherent_ring(setup, systems, latency, progress)
        findings = h.ring_findings(t)
    written: list[str] = []
    if args.output is not None:
        base = f"{args.output.rstrip('/')}/hcsim-{args.study}"
        written = [base + ".csv", base + ".html"]
        with atomic_outputs() as stage:
            write_csv(stage(written[0]), h.csv_rows(t), study_comments(args))
            write_text(stage(written[1]), h.html(args.study, t, findings))
    if args.json:
        print_json(
            {
                "study": args.study,
                "rows": list(t.rows()),
                "findings": [{"claim": c, "holds": ok, "detail": d} for c, ok, d in findings],
                "outputs": written,
            }
        )
        return 0
    print(h.text_table(t))
    for claim, ok, detail in findings:
        print(f"{'holds' if ok else 'does not hold'}: {claim} ({detail})")
    wrote(written)
    return 0


def study_comments(args: argparse.Namespace) -> list[str]:
    """What made a study's CSV: its command and version; each row is one simulated iteration of
    the system its columns name (HCSim's platforms, built per row), on the flow model."""
    from clustersim import __version__
    from clustersim.provenance import call_text

    return [
        f"# command: {call_text('study', {'study': args.study})}",
        f"# version: {__version__}",
        "# each row: one iteration of the system its columns name (HCSim's platforms), flow model",
    ]
