"""Time `clustersim train` on Llama 3 405B, 16384 H100 (TP8 PP16, GBS 2048, seq 8192): 1F1B with
7 + 8 × 14 + 7 layers, and the Llama 3 paper's interleaved plan (VPP 8, the embedding and the
loss counted in the split: the same layers per stage, in chunks of one).

Whole process (start to result printed): CPU = user + sys and peak RSS from os.wait4 of the child,
median of --runs. Targets (issue 3): ≤ 2 s and ≤ 1 GB.

    python3 benchmarks/bench_train.py [--runs 5] [--write]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

from results import run_header, write_section

ROOT = Path(__file__).resolve().parents[1]
ARGS = [
    "train",
    "--model",
    "llama3-405b",
    "--gpus",
    "16384",
    "--gpu",
    "h100",
    "--tp",
    "8",
    "--pp",
    "16",
    "--first-stage-layers",
    "7",
    "--last-stage-layers",
    "7",
    "--gbs",
    "2048",
    "--seq",
    "8192",
    "--sp",
    "--dist-opt",
    "--recompute",
    "selective",
    # 89 GB with the middle stages' activations and the process headroom (issue 14 item 7): timed anyway.
    "--allow-oom",
    "--json",
]
# The published plan: interleaved, one layer a chunk, the first and last chunk one layer short.
ARGS_VPP = [a for a in ARGS if a not in ("--first-stage-layers", "--last-stage-layers", "7")] + [
    "--vpp",
    "8",
    "--account-for-embedding-in-pipeline-split",
    "--account-for-loss-in-pipeline-split",
]


def command() -> list[str]:
    script = Path(sysconfig.get_path("scripts")) / "clustersim"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "clustersim"]


def measure(cmd: list[str]) -> tuple[float, float, float]:
    """(CPU s, peak RSS MB, wall s) of one run of `cmd`."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr.read().decode() if proc.stderr else ''}")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1000, wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--write", action="store_true", help="record the result in benchmarks/RESULTS.md")
    args = ap.parse_args()
    rows = [run_header(args.runs), ""]
    rows += ["| case | CPU s | peak RSS MB | wall s | target ≤ 2 s, ≤ 1 GB |", "|---|---|---|---|---|"]
    for case in (ARGS, ARGS_VPP):
        cmd = command() + case
        measure(cmd)  # warm-up: page cache
        runs = [measure(cmd) for _ in range(args.runs)]
        cpu, rss, wall = (statistics.median(r[i] for r in runs) for i in range(3))
        mark = "✅ pass" if cpu <= 2 and rss <= 1000 else "❌ fail"
        rows.append(f"| `clustersim {' '.join(case)}` | {cpu:.3f} | {rss:.1f} | {wall:.3f} | {mark} |")
    table = "\n".join(rows)
    print(table)
    if args.write:
        write_section("train", table)


if __name__ == "__main__":
    main()
