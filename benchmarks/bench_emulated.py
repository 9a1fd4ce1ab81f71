"""Measured against simulated on the emulated cluster (issue 12): 4 hosts at 1 Gbit/s
(scripts/emulated_cluster.sh), calibrated on one set of sizes, compared on others
(tests/emulated.py says which). Needs root, iproute2, Open MPI and mpi4py.

    sudo python3 benchmarks/bench_emulated.py [--write] [--keep DIR]
    python3 benchmarks/bench_emulated.py --from DIR [--write]   # the files a --keep run kept

Prints, and with --write puts in benchmarks/RESULTS.md: the calibration (link class and
per-collective factors), each calibration series' residuals, and the compared table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import emulated  # noqa: E402 - tests/ is put on the path just above
from results import write_section  # noqa: E402


def tables(report: dict, rows: list[dict], conditions: dict) -> str:
    lost = ", ".join(f"{k} {v}" for k, v in conditions["network"].items())
    fitted = [
        f"{c} links × {f['bandwidth_efficiency']:.3f} bandwidth, latency × {f['latency_factor']:.1f}"
        for c, f in report["classes"].items()
    ]
    fitted += [
        f"{op} ÷ {f['bandwidth_efficiency']:.3f}, {f['call_latency_us']:+.0f} µs per call"
        for op, f in report["collectives"].items()
    ]
    worst = max(abs(r["error_after"]) for r in rows)
    lines = [
        f"Run of {conditions['utc']} on {platform.machine()}, {os.cpu_count()} cores; one run, each bwtest"
        f" and replayed op the mean of its {emulated.ITERATIONS} timed iterations; load average (1 min)"
        f" {conditions['load_before']:.1f} at the start, {conditions['load_after']:.1f} at the end;"
        f" network: {lost}. Fitted: {'; '.join(fitted)}. Worst error after calibration: {worst:.1%}.",
        "",
        "| compared pattern | sizes (B) | unit | error uncalibrated | error calibrated |",
        "|---|---|---|---|---|",
    ]
    patterns: dict[str, list[dict]] = {}
    for r in rows:
        patterns.setdefault(r["what"], []).append(r)
    for what, group in patterns.items():
        sizes = ", ".join(str(r["bytes"]) for r in group)
        before = ", ".join(f"{r['error_before']:+.1%}" for r in group)
        after = ", ".join(f"{r['error_after']:+.1%}" for r in group)
        lines.append(f"| {what} | {sizes} | {group[0]['unit']} | {before} | {after} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--write", action="store_true", help="write the tables into benchmarks/RESULTS.md")
    ap.add_argument("--keep", metavar="DIR", help="keep the measured files in DIR")
    ap.add_argument(
        "--from", dest="source", metavar="DIR", help="calibrate and compare the files kept in DIR (no MPI)"
    )
    args = ap.parse_args()
    if args.source is not None:
        where = Path(args.source)
        with tempfile.TemporaryDirectory() as tmp:
            cal, report = emulated.calibrate(emulated.calibration_files(where), Path(tmp))
            rows = emulated.compare(cal, where)
        conditions = json.loads((where / "conditions.json").read_text())
    else:
        report, rows, conditions = measure(args.keep)
    text = tables(report, rows, conditions)
    print(text)
    if args.write:
        write_section("emulated", text)


def measure(keep: str | None) -> tuple[dict, list[dict], dict]:
    reason = emulated.why_not()
    if reason is not None:
        raise SystemExit(f"bench_emulated: {reason}")
    emulated.up()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            where = Path(keep) if keep else Path(tmp)
            where.mkdir(parents=True, exist_ok=True)
            report, rows, conditions = emulated.experiment(where)
            (where / "conditions.json").write_text(json.dumps(conditions, indent=1) + "\n")
    finally:
        emulated.down()
    return report, rows, conditions


if __name__ == "__main__":
    main()
