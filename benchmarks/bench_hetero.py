"""Heterogeneous jobs and the coherent ring all-reduce (HCSim, Li et al. 2025, §3.2–§3.3).

Cases:
- `clustersim.api.train` of LLaMA2-13B (TP 8, distributed optimizer, seq 4096, global batch 1024)
  on 1024 GPUs of the analytical model: all H100, all A100, and the mix h100:512,a100:512 in
  rank order. The mix runs at the A100s' pace; the wall time shows what the extra rank classes
  cost.
- One all-reduce of 256 MiB (LLaMA2-13B's gradient in fp32 is 52 GB; 256 MiB is one bucket) on
  HCSim's coherent system (`hcsim-cxl`, Fig. 6b) of 64, 256 and 1024 XPUs on the flow model,
  the ring against the coherent ring: simulated time and the wall time of the sweep call.

Each run is a fresh subprocess (imports excluded, platform building included for the sweeps);
median of --runs.

    python3 benchmarks/bench_hetero.py [--runs 3] [--write]
"""

from __future__ import annotations

import argparse
import statistics

from results import measure_child, run_header, write_section

TRAIN = """
import json, sys, time
from clustersim.api import train
gpu = json.loads(sys.argv[1])
start = time.perf_counter()
r = train("llama2-13b", gpus=1024, gpu=gpu, tp=8, gbs=1024, seq=4096, dist_opt=True)
wall = time.perf_counter() - start
use = {t["accelerator"]: t["mfu"] for t in r.data.get("per_type", [])}
print(json.dumps([wall, r.iteration_s, r.mfu, use]))
"""

RING = """
import json, sys, time
from clustersim.platform import hcsim
from clustersim.nccl_tests import sweep
xpus, algo = json.loads(sys.argv[1])
start = time.perf_counter()
t = sweep(hcsim("hcsim-cxl", [("H100", xpus)]), "allreduce", [256 << 20], algorithm=algo, env={})
wall = time.perf_counter() - start
print(json.dumps([wall, t["time_us"][0]]))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--write", action="store_true", help="record the result in benchmarks/RESULTS.md")
    args = ap.parse_args()
    lines = [
        run_header(args.runs),
        "",
    ]
    jobs = []
    for gpu in ("h100", "a100", "h100:512,a100:512"):
        runs = [measure_child(TRAIN, gpu, timeout=600) for _ in range(args.runs)]
        wall = statistics.median(r[0] for r in runs)
        _, iteration, mfu, use = runs[0]
        per_type = ", ".join(f"{k} {v * 100:.1f}" for k, v in use.items()) or "-"
        jobs.append(
            f"`--gpu {gpu}` {iteration:.3f} s, MFU {mfu * 100:.1f} % (per type: {per_type}),"
            f" {wall:.3f} s wall"
        )
        print(jobs[-1], flush=True)
    lines[0] += " LLaMA2-13B, 1024 GPUs, TP 8, DP 128, dist-opt, analytical network: " + "; ".join(jobs) + "."
    lines += [
        "| 256 MiB all-reduce on hcsim-cxl (H100), flow model: XPUs | ring µs | coherent ring µs"
        " | coherent / ring | wall s (ring, coherent) |",
        "|---|---|---|---|---|",
    ]
    for xpus in (64, 256, 1024):
        got = {}
        for algo in ("ring", "coherent_ring"):
            runs = [measure_child(RING, [xpus, algo], timeout=600) for _ in range(args.runs)]
            got[algo] = (statistics.median(r[0] for r in runs), runs[0][1])
        (w_ring, t_ring), (w_coh, t_coh) = got["ring"], got["coherent_ring"]
        lines.append(
            f"| {xpus} | {t_ring:.1f} | {t_coh:.1f} | {t_coh / t_ring:.3f} | {w_ring:.3f}, {w_coh:.3f} |"
        )
        print(lines[-1], flush=True)
    table = "\n".join(lines)
    print(table)
    if args.write:
        write_section("hetero", table)


if __name__ == "__main__":
    main()
