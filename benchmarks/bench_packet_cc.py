"""DCQCN against HPCC (and TIMELY, DCTCP, none) on the same incast, packet backend.

Runs the cargo example `packet_incast` (the packet model alone): N hosts each send BYTES to one
host through one switch, 400 Gb/s links of 1 µs, SimAI.conf's shipped settings (PFC, ECN by RED,
windows) but for the congestion control. Reports the bottleneck queue (time-weighted mean and
largest), per-flow completion times (SimAI's FCT: start until the last ACK) and how busy the
bottleneck was until the last flow finished.

    python3 benchmarks/bench_packet_cc.py [--senders 16] [--bytes 8000000] [--write]
"""

from __future__ import annotations

import argparse
import json
import subprocess
from pathlib import Path

from results import run_header, write_section

ROOT = Path(__file__).resolve().parent.parent
CCS = ("dcqcn", "hpcc", "timely", "dctcp", "none")


def incast(senders: int, size: int) -> list[dict[str, float | str]]:
    cmd = ["cargo", "run", "-q", "--release", "-p", "clustersim-engine", "--example", "packet_incast"]
    out = subprocess.run(
        [*cmd, "--", str(senders), str(size), *CCS], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return [json.loads(line) for line in out.stdout.strip().splitlines()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--senders", type=int, default=16, help="hosts sending to one (default 16)")
    ap.add_argument("--bytes", type=int, default=8_000_000, help="bytes per sender (default 8 MB)")
    ap.add_argument("--write", action="store_true", help="record the result in benchmarks/RESULTS.md")
    args = ap.parse_args()
    rows = incast(args.senders, args.bytes)
    # A paragraph and a one-row table: the results page is near its line limit.
    parts = [
        f"{r['cc']} {float(r['queue_mean_bytes']) / 1e3:.0f} / {float(r['queue_max_bytes']) / 1e3:.0f} KB,"
        f" {float(r['fct_median_ns']) / 1e3:.0f} / {float(r['fct_p99_ns']) / 1e3:.0f} µs,"
        f" {100 * float(r['bottleneck_busy']):.1f} % busy, {r['ecn_marks']} marks, {r['pauses']} pauses,"
        f" {float(r['cpu_s']):.2f} CPU s"
        for r in rows
    ]
    lines = [
        f"{run_header()} {args.senders} → 1 incast, {args.bytes / 1e6:g} MB per sender,"
        " 400 Gb/s links of 1 µs, SimAI.conf as shipped but for CC_MODE. Per CC: bottleneck queue"
        " mean / largest, FCT median / p99, bottleneck busy until the last flow ends: "
        + "; ".join(parts)
        + ".",
        "| CC | " + " | ".join(str(r["cc"]) for r in rows) + " |",
        "|---" * (len(rows) + 1) + "|",
        "| queue mean KB · FCT p99 µs · busy | "
        + " | ".join(
            f"{float(r['queue_mean_bytes']) / 1e3:.0f} · {float(r['fct_p99_ns']) / 1e3:.0f}"
            f" · {100 * float(r['bottleneck_busy']):.0f} %"
            for r in rows
        )
        + " |",
    ]
    table = "\n".join(lines)
    print(table)
    if args.write:
        write_section("packet_cc", table)


if __name__ == "__main__":
    main()
