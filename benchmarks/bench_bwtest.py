"""bwtest measured on this machine (Open MPI, host buffers) for np 2 and 4, and calibrate's α–β
fits of those runs and of the real nccl-tests logs in tests/data/nccl-tests/, with residuals.

    python3 benchmarks/bench_bwtest.py [--runs 3] [--write]

Each configuration runs `mpirun -np P clustersim bwtest -g G --count N --iters 20` `--runs` times;
the table gives the median over runs of the step's mean iteration time and the group bandwidth.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from results import run_header, write_section

ROOT = Path(__file__).resolve().parents[1]
# The two logs it has always fitted (the rest of the corpus in that folder is tests/test_nccl_corpus.py's).
LOGS = [
    ROOT / "tests" / "data" / "nccl-tests" / n
    for n in ("all_gather_2x1_b200.txt", "all_reduce_16x_a100_sharp.txt")
]
CONFIGS = [(2, 1), (4, 1), (4, 2)]
COUNTS = [1, 16, 256, 4096, 65536, 262144]  # 32 B … 8 MiB per pair


def clustersim(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "clustersim", *map(str, args)], capture_output=True, text=True, check=True
    )


def bwtest(np_: int, g: int, count: int, out: Path) -> dict:
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        raise SystemExit("bench_bwtest: needs mpirun (apt-get install openmpi-bin) and mpi4py")
    cmd = [
        mpirun,
        "--allow-run-as-root",
        "--oversubscribe",
        "-np",
        str(np_),
        sys.executable,
        "-m",
        "clustersim",
    ]
    cmd += ["bwtest", "-g", str(g), "--count", str(count), "--iters", "20", "-o", str(out)]
    subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(out.read_text())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--write", action="store_true", help="write the section of benchmarks/RESULTS.md")
    args = ap.parse_args()
    lines = [run_header(args.runs), ""]
    lines += [
        "| np | g | bytes per pair | iteration (µs) | group GB/s | aggregate GB/s |",
        "|---|---|---|---|---|---|",
    ]
    tmp = Path(tempfile.mkdtemp())
    medians: dict[tuple[int, int, int], Path] = {}
    for np_, g in CONFIGS:
        for count in COUNTS:
            docs = [bwtest(np_, g, count, tmp / f"run-{np_}-{g}-{count}-{k}.json") for k in range(args.runs)]
            docs.sort(key=lambda d: d["aggregate"]["time_s"])
            mid = docs[len(docs) // 2]
            path = tmp / f"bw-{np_}-{g}-{count}.json"
            path.write_text(json.dumps(mid))
            medians[np_, g, count] = path
            a = mid["aggregate"]
            lines.append(
                f"| {np_} | {g} | {mid['message_bytes']} | {a['time_s'] * 1e6:.1f} |"
                f" {a['group_bandwidth_GBps']:.3f} | {a['bandwidth_GBps']:.3f} |"
            )
            print(lines[-1], flush=True)
    fits = [lines[0] + " calibrate's α–β fits (β on the largest third of the sizes, α on the smallest)."]
    fits += ["", "| measurement | α (µs) | bandwidth (GB/s) | fit residual rms / max |", "|---|---|---|---|"]
    series = [[medians[np_, g, c] for c in COUNTS] for np_, g in CONFIGS]
    for files in [*series, *([log] for log in LOGS)]:
        out = tmp / "cal-"
        clustersim("calibrate", *files, "-o", out)
        for s in json.loads((tmp / "cal-calibration.json").read_text())["series"]:
            what = f"bwtest np {s['ranks']} g {s['group_size']} (per-rank GB/s each way)"
            if s["group_size"] is None:
                what = f"{Path(s['source'].rsplit(':', 1)[0]).name} ({s['kind']}, {s['ranks']} ranks, busbw)"
            r = s["fit_residual"]
            fitted = f"{s['alpha_us']:.2f} | {s['bandwidth_GBps']:.3f}"
            fits.append(f"| {what} | {fitted} | {r['rms']:.1%} / {r['max_abs']:.1%} |")
            print(fits[-1], flush=True)
    if args.write:
        write_section("bwtest", "\n".join(fits))


if __name__ == "__main__":
    main()
