"""Template-building time: `clustersim.topology.simai_template("Spectrum-X", gpu=G)` for G = 2048 and
16384 (the engine's checks included), then writing its SimAI text (`.to_simai()`), each in a fresh
process (CPU time of each call, imports excluded), median of --runs.

    python3 benchmarks/bench_topology.py [--runs 3] [--write]
"""

from __future__ import annotations

import argparse
import statistics

from results import measure_child, run_header, write_section

CODE = """import json, sys, time
from clustersim.topology import simai_template
gpus = json.loads(sys.argv[1])
t = time.process_time()
topo = simai_template("Spectrum-X", gpu=gpus, nics_per_aswitch=max(64, gpus // 64))
built = time.process_time()
topo.to_simai()
print(json.dumps([built - t, time.process_time() - built]))
"""
SIZES = (2048, 16384)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--write", action="store_true", help="record the result in benchmarks/RESULTS.md")
    args = parser.parse_args()
    lines = [
        run_header(args.runs),
        "",
        "| Spectrum-X template | build CPU s | SimAI text CPU s |",
        "|---|---|---|",
    ]
    for gpus in SIZES:
        runs = [measure_child(CODE, gpus, 600) for _ in range(args.runs)]
        build, write = (statistics.median(r[i] for r in runs) for i in (0, 1))
        lines.append(f"| {gpus} GPUs | {build:.3f} | {write:.3f} |")
        print(lines[-1], flush=True)
    if args.write:
        write_section("topology", "\n".join(lines))


if __name__ == "__main__":
    main()
