"""Time one iteration of the HCSim paper's LLaMA2-13B data-parallel workload graph (batch 1 per
XPU, FP32, 40 decoders) on its coherent system (`hcsim-cxl`, Fig. 6b) at 1024 and 4096 XPUs —
HCSim took 756.6 s for 1024 (Li et al. 2025, §3.2) — with NCCL's choice (auto: the ring) and
each all-reduce algorithm asked for; wall and CPU seconds, since the machine may be loaded.
The graph all-reduces each decoder's gradients (sync decoder, 40 all-reduces) or, as the paper
builds it, each layer's (sync layer, 320), priced by NCCL's model or SimGrid's CM02 (HCSim's).

Each case is a fresh subprocess: build the platform, generate and check the graph
(`clustersim.workload_graph.llama2_13b`), run it (`clustersim.workload_graph.run`: lowering,
memory placement, the executor on the flow model). Peak RSS is the child's. Median of --runs.

    python3 benchmarks/bench_graph.py [--runs 3] [--ring] [--algorithm A] [--sync S] [--collectives C]
        [--write]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess

from results import measure_child, run_header, write_section

CHILD = """
import json, resource, sys, time
from clustersim import workload_graph as wg
from clustersim.platform import hcsim
xpus, algorithm, sync, collectives = json.loads(sys.argv[1])
start = time.perf_counter()
p = hcsim("hcsim-cxl", [("h100", xpus)])
built = time.perf_counter()
text = wg.normalize(json.dumps(wg.llama2_13b(1, sync=sync)))
made = time.perf_counter()
cpu = time.process_time()
r = wg.run(text, p, algorithm=algorithm, collectives=collectives)
ran = time.perf_counter()
cpu = time.process_time() - cpu
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1000
print(json.dumps([built - start, made - built, ran - made, cpu, r["end_ns"] / 1e6, r["events"], rss]))
"""

# (XPUs, all-reduce, sync, collectives)
CASES = [
    (1024, "auto", "decoder", "nccl"),
    (1024, "halving_doubling", "decoder", "nccl"),
    (1024, "hierarchical", "decoder", "nccl"),
    (4096, "auto", "decoder", "nccl"),
    (4096, "halving_doubling", "decoder", "nccl"),
    (4096, "hierarchical", "decoder", "nccl"),
    (1024, "auto", "decoder", "cm02"),
    (4096, "auto", "decoder", "cm02"),
    (1024, "auto", "layer", "nccl"),
    (4096, "auto", "layer", "nccl"),
    (1024, "auto", "layer", "cm02"),
    (4096, "auto", "layer", "cm02"),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--ring", action="store_true", help="also the ring forced at 1024 XPUs, once")
    ap.add_argument("--algorithm", help="only this all-reduce (auto, halving_doubling, hierarchical)")
    ap.add_argument("--sync", choices=("decoder", "layer"), help="only the graphs synchronised so")
    ap.add_argument("--collectives", choices=("nccl", "cm02"), help="only collectives priced so")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds before a run counts as too slow")
    ap.add_argument("--write", action="store_true", help="record the result in benchmarks/RESULTS.md")
    args = ap.parse_args()
    lines = [
        run_header(args.runs),
        "",
        "| hcsim-cxl XPUs | all-reduce | sync | collectives | platform s | graph s | run s | run CPU s |"
        " iteration ms | executor events | peak RSS MB |",
        "|---:|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    cases = CASES + ([(1024, "ring", "decoder", "nccl")] if args.ring else [])
    cases = [
        c
        for c in cases
        if args.algorithm in (None, c[1]) and args.sync in (None, c[2]) and args.collectives in (None, c[3])
    ]
    for xpus, algorithm, sync, collectives in cases:
        runs = 1 if algorithm == "ring" else args.runs
        spec = [xpus, algorithm, sync, collectives]
        try:
            measured = [measure_child(CHILD, spec, timeout=args.timeout) for _ in range(runs)]
        except subprocess.TimeoutExpired:
            lines.append(
                f"| {xpus} | {algorithm} | {sync} | {collectives} | | |"
                f" > {args.timeout:g} (stopped) | | | | |"
            )
            print(lines[-1], flush=True)
            continue
        med = [statistics.median(float(r[i]) for r in measured) for i in range(len(measured[0]))]
        build, graph, run, cpu, iteration_ms, events, rss = med
        note = " (1 run)" if runs == 1 else ""
        lines.append(
            f"| {xpus} | {algorithm}{note} | {sync} | {collectives} | {build:.3f} | {graph:.3f} | {run:.2f} |"
            f" {cpu:.2f} | {iteration_ms:.1f} | {events:.0f} | {rss:.0f} |"
        )
        print(lines[-1], flush=True)
    body = "\n".join(lines)
    print(body)
    if args.write:
        write_section("graph", body)


if __name__ == "__main__":
    main()
