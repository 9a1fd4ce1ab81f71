"""clustersim replay measured on this machine (Open MPI, host buffers): the wall time of the whole
`mpirun -np P clustersim replay` and the iteration it measures, for the small workload of
tests/data/replay (TP 2 × DP 2 at np 4; the same rows as TP 2 × DP 1 at np 2).

    python3 benchmarks/bench_replay.py [--runs 3] [--write]

Each case runs `--runs` times with `--iterations 5 --warmup 1`; the table gives medians.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results import run_header, write_section

ROOT = Path(__file__).resolve().parents[1]
WORKLOAD = ROOT / "tests" / "data" / "replay" / "tp2_dp2.txt"


def workload_for(np_: int, tmp: Path) -> Path:
    """The small workload for `np_` ranks: its rows, with all_gpus = np_ (TP 2, DP = np_ / 2)."""
    path = tmp / f"tp2-np{np_}.txt"
    path.write_text(WORKLOAD.read_text().replace("all_gpus: 4", f"all_gpus: {np_}"))
    return path


def replay(np_: int, workload: Path, compute: str, out: Path) -> tuple[float, dict]:
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        raise SystemExit("bench_replay: needs mpirun (apt-get install openmpi-bin) and mpi4py")
    cmd = [mpirun, "--allow-run-as-root", "--oversubscribe", "-np", str(np_), sys.executable, "-m"]
    cmd += ["clustersim", "replay", "-w", str(workload), "--iterations", "5", "--compute", compute]
    cmd += ["-r", str(out), "--json"]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return time.perf_counter() - t0, json.loads(proc.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--write", action="store_true", help="write the section of benchmarks/RESULTS.md")
    args = ap.parse_args()
    lines = [run_header(args.runs), ""]
    lines += [
        "| np | compute | wall (s) | iteration, Σ ops (ms) | exposed comm (ms) | compute (ms) |",
        "|---|---|---|---|---|---|",
    ]
    tmp = Path(tempfile.mkdtemp())
    for np_ in (2, 4):
        workload = workload_for(np_, tmp)
        for compute in ("skip", "sleep"):
            runs = [replay(np_, workload, compute, tmp / f"r{np_}-") for _ in range(args.runs)]
            s = [doc["summary_us"] for _, doc in runs]
            lines.append(
                f"| {np_} | {compute} | {statistics.median_high([w for w, _ in runs]):.2f} |"
                f" {statistics.median_high([x['total_us'] for x in s]) / 1e3:.3f} |"
                f" {statistics.median_high([x['exposed_comm_us'] for x in s]) / 1e3:.3f} |"
                f" {statistics.median_high([x['compute_us'] for x in s]) / 1e3:.3f} |"
            )
            print(lines[-1], flush=True)
    body = "\n".join(lines)
    if args.write:
        write_section("replay", body)
    else:
        print(body)


if __name__ == "__main__":
    main()
