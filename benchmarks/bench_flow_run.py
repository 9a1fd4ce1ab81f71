"""Time whole workloads on the flow backend (`clustersim run -n`, `clustersim.simulate(topology=)`).

Cases: SimAI's example workload (examples/workload_analytical.txt: TP 2, EP 16, PP 12, 24
micro-batches) at 384 and 1152 GPUs on Spectrum-X fabrics from the template (target at 1152:
≤ 60 s). Each run is a fresh subprocess: time is the simulate() call (reading the workload and the
topology file included, building the template excluded), RSS the child's peak. Median of --runs.

    python3 benchmarks/bench_flow_run.py [--runs 3] [--timeout S] [--write]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
from pathlib import Path

from results import measure_child, run_header, write_section

WORKLOAD = Path(__file__).resolve().parent.parent / "examples" / "workload_analytical.txt"

CHILD = """
import json, resource, sys, time
from clustersim import simulate
workload, fabric, gpus = json.loads(sys.argv[1])
start, cpu = time.perf_counter(), time.process_time()
r = simulate(workload, gpus=gpus, topology=fabric)
wall, cpu = time.perf_counter() - start, time.process_time() - cpu
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1000
print(json.dumps([wall, rss, r.iteration_time_us / 1e3, cpu]))
"""

# (label, template, GPUs, time target s)
CASES = [
    ("SimAI example, Spectrum-X 384 GPUs", "Spectrum-X", 384, None),
    ("SimAI example, Spectrum-X 1152 GPUs", "Spectrum-X", 1152, 60.0),
]


def main() -> None:
    from clustersim.topology import simai_template

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds before a run counts as too slow")
    ap.add_argument("--write", action="store_true", help="record the result in benchmarks/RESULTS.md")
    args = ap.parse_args()
    lines = [
        run_header(args.runs),
        "",
        "| case | wall s | CPU s | peak RSS MB | iteration ms | target |",
        "|---|---|---|---|---|---|",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        for label, name, gpus, t_max in CASES:
            fabric = Path(tmp) / f"{name}-{gpus}.txt"
            simai_template(name, gpu=gpus).write(fabric)
            try:
                runs = [
                    measure_child(CHILD, [str(WORKLOAD), str(fabric), gpus], timeout=args.timeout)
                    for _ in range(args.runs)
                ]
            except subprocess.TimeoutExpired:
                target = "—" if t_max is None else f"≤ {t_max:g} s ❌"
                lines.append(f"| {label} | > {args.timeout:g} (stopped) | — | — | — | {target} |")
                print(lines[-1], flush=True)
                continue
            wall, rss, iteration, cpu = (statistics.median(float(r[i]) for r in runs) for i in range(4))
            target = "—" if t_max is None else f"≤ {t_max:g} s " + ("✅" if wall <= t_max else "❌")
            lines.append(f"| {label} | {wall:.1f} | {cpu:.1f} | {rss:.0f} | {iteration:.1f} | {target} |")
            print(lines[-1], flush=True)
    table = "\n".join(lines)
    print(table)
    if args.write:
        write_section("flow_run", table)


if __name__ == "__main__":
    main()
