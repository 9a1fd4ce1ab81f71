"""Print the headline numbers of every SimAI ns-3 reference run as Markdown table rows.

Documentation helper for tests/data/ns3/README.md (not run by CI or tests):
``python3 tests/data/ns3/summarize.py``.
"""

from __future__ import annotations

import csv
import gzip
import re
import statistics
from pathlib import Path

HERE = Path(__file__).resolve().parent


def read(path: Path) -> str:
    gz = path.with_name(path.name + ".gz")
    return gzip.decompress(gz.read_bytes()).decode() if gz.exists() else path.read_text()


def quantile(xs: list[float], q: float) -> float:
    """Nearest-rank quantile (the smallest value with at least q of the data at or below it)."""
    s = sorted(xs)
    k = max(0, min(len(s) - 1, int(-(-q * len(s) // 1)) - 1))
    return s[k]


def row(folder: Path) -> str:
    run = dict(line.split(": ", 1) for line in (folder / "run.txt").read_text().splitlines() if ": " in line)
    lines = (folder / "workload.txt").read_text().splitlines()
    head = lines[0].split()
    n = int(head[head.index("all_gpus:") + 1])
    fields = lines[2].split()
    coll, size = fields[9], int(fields[10])
    conf = (folder / "SimAI.conf").read_text()
    cc = {"1": "DCQCN", "3": "HPCC"}[re.search(r"^CC_MODE (\d+)", conf, re.M)[1]]
    topo = run["command"].split(" -n ")[-1].split(" -c ")[0]
    last = list(csv.reader(read(folder / "ncclFlowModel_EndToEnd.csv").splitlines()))[-1]
    t_us = float(last[5])
    fl = [line.split() for line in read(folder / "fct.txt").splitlines()]
    fct = [int(f[6]) / 1000 for f in fl]
    slow = [int(f[6]) / int(f[7]) for f in fl]
    end_us = max(int(f[5]) + int(f[6]) for f in fl) / 1000
    factor = 2 * (n - 1) / n if coll == "ALLREDUCE" else (n - 1) / n
    busbw = size / (t_us * 1e-6) / 1e9 * factor
    pfc = read(folder / "pfc.txt").splitlines()
    pauses = sum(1 for p in pfc if p.split()[4] == "1")
    rss_gb = int(run["max RSS kB"]) / 1e6
    return (
        f"| `{folder.name}` | `{topo}` | {n} | {coll.lower()} {size >> 20} MiB | {cc} "
        f"| {t_us:.3f} | {end_us:.3f} | {busbw:.2f} | {len(fl)} "
        f"| {statistics.median(fct):.3f} / {quantile(fct, 0.99):.3f} "
        f"| {statistics.median(slow):.3f} / {quantile(slow, 0.99):.3f} | {pauses} "
        f"| {float(run['wall seconds']):.0f} | {rss_gb:.2f} |"
    )


def main() -> None:
    print(
        "| scenario | topology file | GPUs | collective | CC | EndToEnd µs (rank 0) "
        "| last flow end µs | busbw GB/s | flows | FCT µs median / p99 "
        "| fct/standalone median / p99 | PFC pauses | wall s | peak RSS GB |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for folder in sorted(p for p in HERE.iterdir() if (p / "run.txt").exists()):
        print(row(folder))


if __name__ == "__main__":
    main()
