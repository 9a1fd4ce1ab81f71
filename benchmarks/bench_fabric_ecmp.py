"""SimAI's DCN+ vs Spectrum-X experiment (seed 000) as SimAI ran it, over ECMP seeds.

256 H100 GPUs, TP 8, so each all-reduce of the workload's wg column runs over a data-parallel group
of 32 GPUs, one per server, on one rail; AS_SEND_LAT=2. Fabrics from SimAI's commands:

    clustersim topo -topo DCN+ -g 256 -psn 64 -bw 400Gbps    (single ToR, not rail-optimised)
    clustersim topo -topo Spectrum-X -g 256                  (single ToR, rail-optimised)

Each case is one `clustersim run --ecmp-seeds N` in a fresh process; the table gives the all-reduce
time (exposed DP communication) as mean, min and max over the N seeds, and the share of seeds
whose ECMP hash put two rings on one ToR uplink. Variants at 512 MiB show what the penalty depends
on: channels (NCCL duplicates a one-GPU-per-node ring into 2), queue pairs per connection
(NCCL_IB_QPS_PER_CONNECTION), the old default of 8 channels, and spraying.

    python3 benchmarks/bench_fabric_ecmp.py [--seeds 64] [--write]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results import run_header, write_section

HEADER = (
    "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 8 ep: 1 pp: 1 vpp: 8 ga: 1 all_gpus: 256 "
    "checkpoints: 0 checkpoint_initiates: 0"
)
ROW = "embedding_layer     -1 556000         NONE 0        1      NONE   0      1 ALLREDUCE   {bytes}      1"
SIZES = [16 << 20, 64 << 20, 256 << 20, 512 << 20, 1 << 30]
FABRICS = {
    "DCN+": ["-topo", "DCN+", "-g", "256", "-psn", "64", "-bw", "400Gbps"],
    "Spectrum-X": ["-topo", "Spectrum-X", "-g", "256"],
}
# (label, fabric, extra `clustersim run` flags) at 512 MiB.
VARIANTS = [
    ("DCN+, 2 channels (NCCL's ring count for one GPU per node)", "DCN+", ["--channels", "2"]),
    ("DCN+, 2 channels, 4 QPs per connection", "DCN+", ["--channels", "2", "--qps", "4"]),
    ("DCN+, 1 channel, 8 QPs per connection", "DCN+", ["--qps", "8"]),
    ("DCN+, 8 channels (clustersim's old default)", "DCN+", ["--channels", "8"]),
    ("DCN+, spraying", "DCN+", ["--routing", "spray"]),
    ("Spectrum-X, spraying", "Spectrum-X", ["--routing", "spray"]),
]


def clustersim(args: list[str], env: dict[str, str]) -> str:
    out = subprocess.run(
        [sys.executable, "-m", "clustersim", *args], capture_output=True, text=True, env=env, check=False
    )
    if out.returncode != 0:
        raise SystemExit(f"clustersim {' '.join(args)} failed: {out.stderr}")
    return out.stdout


def run(work: Path, fabric: str, size: int, seeds: int, extra: list[str]) -> dict[str, float]:
    """One `clustersim run` over `seeds` ECMP seeds: DP all-reduce ms (mean, min, max), the share
    of seeds slower than the fastest by more than 1 %, and the wall time."""
    workload = work / f"wl_{size}.txt"
    workload.write_text(f"{HEADER}\n1\n{ROW.format(bytes=size)}\n", encoding="utf-8")
    env = dict(os.environ, AS_SEND_LAT="2")
    cmd = ["run", "-w", str(workload), "-n", str(work / f"{fabric}.txt"), "-r", str(work / "r-")]
    start = time.perf_counter()
    doc = json.loads(clustersim([*cmd, "--ecmp-seeds", str(seeds), "--json", *extra], env))
    wall = time.perf_counter() - start
    stats = doc["ecmp_seeds"]
    dp = stats["exposed_dp_us"]
    per_seed = [r["exposed_dp_us"] for r in stats["rows"]]
    slow = sum(t > 1.01 * dp["min"] for t in per_seed) / len(per_seed)
    ms = {k: dp[k] / 1e3 for k in ("mean", "min", "max")}
    return ms | {"slow": slow, "wall": wall}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=64, help="ECMP seeds per case (default 64)")
    ap.add_argument("--write", action="store_true", help="record the result in benchmarks/RESULTS.md")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for name, flags in FABRICS.items():
            clustersim(["topo", *flags, "-o", str(work / f"{name}.txt")], dict(os.environ))
        lines = [
            run_header(1).replace("median of 1 runs", f"{args.seeds} ECMP seeds per case, one run each"),
            "",
            "| all-reduce S | Spectrum-X ms | DCN+ ms: mean | min | max | seeds with a collision"
            " | DCN+ / Spectrum-X (mean) | wall s (DCN+, all seeds) |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for size in SIZES:
            spx = run(work, "Spectrum-X", size, args.seeds, [])
            dcn = run(work, "DCN+", size, args.seeds, [])
            lines.append(
                f"| {size >> 20} MiB | {spx['mean']:.3f} (± {spx['max'] - spx['min']:.3f})"
                f" | {dcn['mean']:.3f} | {dcn['min']:.3f} | {dcn['max']:.3f} | {dcn['slow']:.0%}"
                f" | {dcn['mean'] / spx['mean']:.2f}× | {dcn['wall']:.1f} |"
            )
            print(lines[-1], flush=True)
        base = run(work, "Spectrum-X", 512 << 20, args.seeds, [])
        variants = []
        for label, fabric, extra in VARIANTS:
            r = run(work, fabric, 512 << 20, args.seeds, extra)
            variants.append(f"{label} {r['mean'] / base['mean']:.2f}× ({r['slow']:.0%} of seeds collide)")
            print(variants[-1], flush=True)
        lines[0] += " At 512 MiB, mean over seeds / Spectrum-X: " + "; ".join(variants) + "."
    body = "\n".join(lines)
    print(body)
    if args.write:
        write_section("fabric_ecmp", body)


if __name__ == "__main__":
    main()
