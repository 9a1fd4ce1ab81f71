"""Time the workload IR's Python paths: a front end's workload into Python columns, to IR JSON
and back, and building one in bulk from Python.

Cases: the SimAI example workload (9216 ranks); a Megatron iteration (Llama 3 70B, TP 8, PP 4,
1024 GPUs, GBS 512); a Python-built workload of 10^6 ops (one program: compute and TP all-reduce
pairs, 1024 ranks). Each run is a fresh subprocess; each step is timed on its own. Median of
--runs. No targets are set for these paths yet; the numbers say what converting costs.

    python3 benchmarks/bench_workload_ir.py [--runs 3] [--write]
"""

from __future__ import annotations

import argparse
import statistics

from results import measure_child, run_header, write_section

CHILD = """
import json, sys, time
from clustersim import Workload
case = json.loads(sys.argv[1])
t0 = time.perf_counter()
if case == "simai":
    w = Workload.from_simai("examples/workload_analytical.txt")
elif case == "megatron":
    w = Workload.from_training("llama3-70b", gpus=1024, tp=8, pp=4, gbs=512, seq=8192, allow_oom=True)
else:
    n = 500_000
    w = Workload(ranks=1024)
    tp = w.group("TP", [list(range(i, i + 8)) for i in range(0, 1024, 8)])
    p = w.program()
    w.assign(p, range(1024))
    kind = ["COMP", "COMM_COLL"] * n
    deps = [[]] + [[i] for i in range(2 * n - 1)]
    w.add_ops(p, kind, ns=[1000.0, 0.0] * n, collective=["allreduce"] * (2 * n), group=[tp] * (2 * n),
              bytes=[0, 1 << 20] * n, deps=deps)
t1 = time.perf_counter()
text = w.to_json()
t2 = time.perf_counter()
back = Workload.from_json(text)
t3 = time.perf_counter()
assert back == w
print(json.dumps([t1 - t0, t2 - t1, t3 - t2, w.counts()["ops"], len(text)]))
"""

CASES = [
    ("SimAI example, 9216 ranks", "simai"),
    ("Megatron Llama 3 70B, 1024 GPUs, TP 8 PP 4", "megatron"),
    ("Python-built, 10^6 ops", "bulk"),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--write", action="store_true", help="record the result in benchmarks/RESULTS.md")
    args = ap.parse_args()
    lines = [
        run_header(args.runs),
        "",
        "| case | ops | JSON MB | build or import s | to_json s | from_json s |",
        "|---|---|---|---|---|---|",
    ]
    for label, case in CASES:
        runs = [measure_child(CHILD, case, timeout=600) for _ in range(args.runs)]
        build, write, read = (statistics.median(float(r[i]) for r in runs) for i in range(3))
        ops, size = runs[0][3], runs[0][4] / 1e6
        lines.append(f"| {label} | {ops} | {size:.1f} | {build:.3f} | {write:.3f} | {read:.3f} |")
        print(lines[-1], flush=True)
    table = "\n".join(lines)
    print(table)
    if args.write:
        write_section("workload_ir", table)


if __name__ == "__main__":
    main()
