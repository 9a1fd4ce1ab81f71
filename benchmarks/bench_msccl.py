"""Time MSCCL algorithm files (`--algo msccl:FILE.xml`): reading, checking and levelising the
program, then one nccl-tests size on the flow model, against the built-in ring.

Cases: the public example files (tests/data/msccl, 8 GPUs, 19–60 KB) and generated one-channel
ring all-reduces of 64 and 256 GPUs (2(n − 1) steps per GPU: 8 K and 130 K steps, 1 MB and
17 MB of XML), each as an all-reduce (all-gather) of 64 MiB on a Spectrum-X template of its
GPUs; the ring cases beside the built-in ring on one channel. Each run is a fresh subprocess:
time is the sweep call, which reads the file once. Median of --runs.

    python3 benchmarks/bench_msccl.py [--runs 3] [--write]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from results import measure_child, run_header, write_section

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from test_msccl import ring_xml  # noqa: E402 - tests/ is put on the path just above

EXAMPLES = Path(__file__).resolve().parents[1] / "tests" / "data" / "msccl"

CHILD = """
import json, sys, time
from clustersim.nccl_tests import sweep
from clustersim.topology import simai_template
gpus, op, algo, proto = json.loads(sys.argv[1])
topo = simai_template("Spectrum-X", gpu=gpus)
start = time.perf_counter()
t = sweep(topo, op, [64 << 20], algorithm=algo, protocol=proto, channels=1, env={})
print(json.dumps([time.perf_counter() - start, t["time_us"][0]]))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--write", action="store_true", help="record the result in benchmarks/RESULTS.md")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp())
    cases = []
    for path in sorted(EXAMPLES.glob("*.xml")):
        op = "allgather" if "allgather" in path.name else "allreduce"
        cases.append((path.name, 8, op, f"msccl:{path}", "auto", path.stat().st_size))
    for n in (64, 256):
        path = tmp / f"ring{n}.xml"
        path.write_text(ring_xml(n, "Simple"))
        cases.append((f"MSCCL ring, {n} GPUs", n, "allreduce", f"msccl:{path}", "auto", path.stat().st_size))
        cases.append((f"built-in ring, {n} GPUs (Simple, 1 channel)", n, "allreduce", "ring", "Simple", 0))
    lines = [
        run_header(args.runs),
        "",
        "| case | XML size | sweep s (read + run) | simulated time, µs"
        " | built-in ring, Simple, 1 channel: µs (s) |",
        "|---|---:|---:|---:|---:|",
    ]
    for label, gpus, op, algo, proto, size in cases:
        runs = [measure_child(CHILD, [gpus, op, algo, proto], timeout=600) for _ in range(args.runs)]
        wall = statistics.median(float(r[0]) for r in runs)
        xml = f"{size / 1e3:,.0f} KB" if size else "–"
        if label.startswith("built-in"):
            lines[-1] = lines[-1][:-1] + f"{float(runs[0][1]):,.1f} ({wall:.3f} s) |"
            continue
        lines.append(f"| {label} | {xml} | {wall:.3f} | {float(runs[0][1]):,.1f} | |")
    body = "\n".join(lines)
    print(body)
    if args.write:
        write_section("msccl", body)


if __name__ == "__main__":
    main()
