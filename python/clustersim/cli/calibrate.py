"""`clustersim calibrate`: fit the network model to nccl-tests logs, bwtest and replay measurements."""

from __future__ import annotations

import argparse
import json

from clustersim.cli.common import add_json, print_json
from clustersim.files import atomic_outputs, write_text

EPILOG = """\
examples:
  clustersim bwtest --simulate -n fat-tree:4 -g 4 --count 1024 -o results/bw-1k.json
  clustersim bwtest --simulate -n fat-tree:4 -g 4 --count 1048576 -o results/bw-1m.json
  clustersim calibrate results/bw-1k.json results/bw-1m.json -n fat-tree:4 -o results/cal-

nccl-tests logs are read as they are: clustersim calibrate all_reduce_perf.log alltoall_perf.log -n FABRIC"""


DESCRIPTION = (
    "Fit t = α + β·x to each measured series (x: nccl-tests' bus bytes, or bwtest's bytes "
    "per rank each way): β by least squares on the largest sizes, α on the smallest; print the measured "
    "and fitted times side by side. With -n, also simulate each series on that fabric, rescale its link "
    "classes (scale-up: NVLink; scale-out: NICs and switches) to the fits, and print the simulated times "
    "before and after, and fit each measured collective's own bandwidth efficiency and latency per "
    "call on the rescaled links. Writes PREFIXcalibration.json (the calibration file: --calibration of "
    "run, collective, train, bwtest --simulate, replay --compare-topology), PREFIXbusbw.yaml "
    "(SimAI's format; clustersim analytical -busbw) and, with -n, PREFIXtopology.txt (the "
    "recalibrated fabric, for -n of run, collective, train)."
)


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "files", nargs="+", metavar="FILE", help="nccl-tests logs, bwtest and replay JSON documents (*.json)"
    )
    p.add_argument(
        "-n",
        "--topology",
        metavar="FABRIC",
        help="the measured machine: a SimAI topology file, a platform file or a template NAME[:GPUS]",
    )
    p.add_argument("-o", "--output", default="results/calibrated-", metavar="PREFIX", help="output prefix")
    add_json(p, "the calibration report")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from clustersim.calibration import FORMAT, editable
    from clustersim.measure.calibrate import model, report, series
    from clustersim.measure.calibrate.fit import fit

    found = series.read_series(args.files)
    fits = [fit(s.x, s.times_s, s.source) for s in found]
    classes = [s.link_class for s in found]
    before = after = [None] * len(found)
    cal = None
    if args.topology is not None:
        cal = model.calibrate(found, fits, editable(args.topology), str(args.topology))
        classes, before, after = cal.classes, cal.before, cal.corrected
    docs = [report.series_doc(*row) for row in zip(found, fits, classes, before, after, strict=True)]
    doc = {
        "format": FORMAT,
        "topology": args.topology,
        "series": docs,
        "classes": {},
        "collectives": {},
    }
    if cal is not None:
        doc["classes"] = {
            c: {"bandwidth_efficiency": e, "latency_factor": k, "inert": sorted(cal.inert[c])}
            for c, (e, k) in cal.factors.items()
        }
        doc["collectives"] = {
            op: {"bandwidth_efficiency": e, "call_latency_us": a * 1e6}
            for op, (e, a) in cal.collectives.items()
        }
    written = [f"{args.output}calibration.json"]
    busbw = report.busbw_yaml(docs, args.files)
    with atomic_outputs() as stage:
        write_text(stage(written[0]), json.dumps(doc, indent=2, allow_nan=False) + "\n")
        if busbw is not None:
            written.append(f"{args.output}busbw.yaml")
            write_text(stage(written[-1]), busbw)
        if cal is not None:
            written.append(f"{args.output}topology.txt")
            write_text(stage(written[-1]), cal.topology.to_simai())
    if args.json:
        print_json(doc)
        return 0
    for d in docs:
        report.print_series(d)
    for c, f in doc["classes"].items():
        inert = f" (the model does not respond to: {', '.join(f['inert'])}; left at 1)" if f["inert"] else ""
        e, k = f["bandwidth_efficiency"], f["latency_factor"]
        print(f"# {c} links: bandwidth × {e:.4f}, latency × {k:.4f}{inert}")
    for op, f in doc["collectives"].items():
        e, a = f["bandwidth_efficiency"], f["call_latency_us"]
        print(f"# {op} on the rescaled links: {a:.2f} us + time / {e:.4f}")
    print("# wrote " + ", ".join(written))
    return 0
