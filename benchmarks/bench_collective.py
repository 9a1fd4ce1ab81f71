"""Time `clustersim.nccl_tests.sweep` (nccl-tests sweeps on the flow model).

Cases (targets from the issue): all-reduce 16M..512M ×2 on 32-GPU Spectrum-X (≤ 1 s); the same on
256 GPUs, Spectrum-X and DCN+ (≤ 5 s each); 1 GiB ring all-reduce on 4096 ranks (≤ 2 s, ≤ 500 MB
RSS) and on 16384 ranks (4 Spectrum-X pods, ≤ 20 s). Each run is a fresh subprocess: time is the
sweep call (topology conversion included, template building excluded), RSS the child's peak from
resource.getrusage. Median of --runs.

    python3 benchmarks/bench_collective.py [--runs 3] [--write]
"""

from __future__ import annotations

import argparse
import statistics

from results import measure_child, run_header, write_section

CHILD = """
import json, resource, sys, time
from clustersim.nccl_tests import sweep
from clustersim.topology import simai_template
name, gpus, pods, algo, sizes = json.loads(sys.argv[1])
topo = simai_template(name, gpu=gpus, pods=pods)
start = time.perf_counter()
t = sweep(topo, "allreduce", sizes, algorithm=algo, env={})
wall = time.perf_counter() - start
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1000
print(json.dumps([wall, rss, t["busbw_GBps"][-1], t["algorithm"][-1]]))
"""

SWEEP = [(16 << 20) << i for i in range(6)]
# (label, template, GPUs per pod, pods, algorithm, sizes, time target s, RSS target MB)
CASES = [
    ("Spectrum-X 32 GPUs, 16M..512M", "Spectrum-X", 32, 1, "auto", SWEEP, 1.0, None),
    ("Spectrum-X 256 GPUs, 16M..512M", "Spectrum-X", 256, 1, "auto", SWEEP, 5.0, None),
    ("DCN+ 256 GPUs, 16M..512M", "DCN+", 256, 1, "auto", SWEEP, 5.0, None),
    ("ring 1 GiB, Spectrum-X 4096 ranks", "Spectrum-X", 4096, 1, "ring", [1 << 30], 2.0, 500.0),
    ("ring 1 GiB, 4 Spectrum-X pods, 16384 ranks", "Spectrum-X", 4096, 4, "ring", [1 << 30], 20.0, None),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--write", action="store_true", help="record the result in benchmarks/RESULTS.md")
    args = ap.parse_args()
    lines = [
        run_header(args.runs),
        "",
        "| case | sweep s | peak RSS MB | busbw at largest S, GB/s | algorithm | target |",
        "|---|---|---|---|---|---|",
    ]
    for label, name, gpus, pods, algo, sizes, t_max, rss_max in CASES:
        runs = [measure_child(CHILD, [name, gpus, pods, algo, sizes], timeout=600) for _ in range(args.runs)]
        wall, rss = (statistics.median(float(r[i]) for r in runs) for i in range(2))
        ok = wall <= t_max and (rss_max is None or rss <= rss_max)
        target = f"≤ {t_max:g} s" + (f", ≤ {rss_max:g} MB" if rss_max else "")
        mark = "✅" if ok else "❌"
        lines.append(
            f"| {label} | {wall:.3f} | {rss:.1f} | {runs[0][2]:.1f} | {runs[0][3]} | {target} {mark} |"
        )
        print(lines[-1], flush=True)
    table = "\n".join(lines)
    print(table)
    if args.write:
        write_section("collective", table)


if __name__ == "__main__":
    main()
