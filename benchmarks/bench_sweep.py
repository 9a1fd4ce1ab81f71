"""Points per second of `clustersim sweep` on a train grid, and what storing and resuming cost.

The grid: Llama 3 8B on 16 H100, sequence 2048, distributed optimizer, GBS 32 … 640 (20 values)
× TP 1, 2, 4, 8 × micro-batch 1, 2 = 160 points. Each case runs in a fresh process (wall: imports
excluded, worker start-up included; CPU s: the process's and its workers', imports included):
the API called point after point with nothing stored (`direct`, the floor), the sweep on this
process (`--workers 1`) and on 2 spawned worker processes, and the same sweep again once every
point is stored (resuming: reading the spec, opening the store and finding nothing to do).
Median of --runs.

    python3 benchmarks/bench_sweep.py [--runs 5] [--write]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from results import measure_child, run_header, write_section

SPEC = """\
command: train
fixed: {model: llama3-8b, gpus: 16, seq: 2048, dist-opt: true}
grid:
  gbs: [32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448, 480, 512, 544, 576, 608, 640]
  tp: [1, 2, 4, 8]
  mbs: [1, 2]
"""

CHILD = """
import json, resource, sys, time
from clustersim import api
from clustersim.errors import InputError
from clustersim.explore.execute import sweep
from clustersim.explore.spec import load_spec
mode, spec, store, workers = json.loads(sys.argv[1])
start = time.perf_counter()
points = load_spec(spec).points
if mode == "direct":
    for p in points:
        try:
            api.train(**p.options)
        except InputError:
            pass
else:
    sweep(load_spec(spec), store, workers=workers)
usage = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
print(json.dumps([time.perf_counter() - start, len(points), sum(u.ru_utime + u.ru_stime for u in usage)]))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--write", action="store_true", help="record the result in benchmarks/RESULTS.md")
    args = ap.parse_args()
    lines = [run_header(args.runs), ""]
    lines += ["| case | wall s | points/s | CPU s |", "|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "grid.yaml"
        spec.write_text(SPEC)
        cases = [("API, point after point, nothing stored", "direct", 1), ("sweep --workers 1", "sweep", 1)]
        cases += [("sweep --workers 2", "sweep", 2)]
        for label, mode, workers in cases:
            runs = [
                measure_child(
                    CHILD, [mode, str(spec), str(Path(tmp) / f"{mode}-{workers}-{run}.sqlite"), workers], 600
                )
                for run in range(args.runs)
            ]
            wall, points, cpu = (statistics.median(r[i] for r in runs) for i in range(3))
            lines.append(f"| {label} ({points} points) | {wall:.3f} | {points / wall:.0f} | {cpu:.2f} |")
            print(lines[-1], flush=True)
        # Resuming a finished sweep: everything is stored, nothing is simulated.
        store = Path(tmp) / "sweep-1-0.sqlite"
        runs = [measure_child(CHILD, ["sweep", str(spec), str(store), 1], 600) for _ in range(args.runs)]
        wall, cpu = statistics.median(r[0] for r in runs), statistics.median(r[2] for r in runs)
        lines.append(f"| resume, all {points} points stored | {wall:.3f} | — | {cpu:.2f} |")
        print(lines[-1], flush=True)
    table = "\n".join(lines)
    print(table)
    if args.write:
        write_section("sweep", table)


if __name__ == "__main__":
    main()
