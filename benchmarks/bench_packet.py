"""The packet backend: how fast it moves packets, and how close it comes to SimAI's ns-3.

Part 1 runs the cargo example `packet_permutation` (the packet model alone, no executor): on a
k-ary fat-tree of k³/4 hosts every host sends BYTES to another host of a seeded permutation;
it prints data packets, events, CPU seconds and peak RSS. Part 2 runs `clustersim.collective`
with `backend="packet"` and `"flow"` on scenarios of tests/data/ns3 (their topology file, ring
all-reduce or direct all-to-all, AS_SEND_LAT=3, NVLS and PXN off, as the reference runs were
made) and sets busbw beside ns-3's (from its EndToEnd time, rank 0: the README table), and the
packet backend's CPU seconds beside ns-3's user seconds (run.txt). Part 3 runs `clustersim
collective allreduce -n Spectrum-X:256 -b 512M --backend packet` (SimAI's template, the same
AS_* settings) in a child process: its CPU seconds (user + system) and peak RSS.

    python3 benchmarks/bench_packet.py [--k 32] [--bytes 2000000] [--runs 3] \
        [--scenarios spx16_ar_16m,...] [--write]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

from results import run_header, write_section

ROOT = Path(__file__).resolve().parent.parent
NS3 = ROOT / "tests" / "data" / "ns3"
ENV = {"AS_SEND_LAT": "3", "AS_NVLS_ENABLE": "0", "AS_PXN_ENABLE": "0"}
OPS = {"ar": "allreduce", "ag": "allgather", "rs": "reducescatter", "a2a": "alltoall"}
# SimAI's ns-3 runs (PXN off) use NCCL's ring, and direct sends for all-to-all.
ALGO = {"alltoall": "direct"}


def permutation(k: int, size: int, cc: str) -> dict[str, float]:
    cmd = ["cargo", "run", "-q", "--release", "-p", "clustersim-engine", "--example", "packet_permutation"]
    out = subprocess.run(
        [*cmd, "--", str(k), str(size), cc], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def big_allreduce(gpus: int, size: str) -> tuple[float, float, float]:
    """(busbw GB/s, CPU s, peak RSS MB) of `clustersim collective allreduce` on Spectrum-X:`gpus`
    with the packet backend, in a child process (os.wait4 gives its CPU and peak RSS)."""
    cmd = [sys.executable, "-m", "clustersim", "collective", "allreduce", "-n", f"Spectrum-X:{gpus}"]
    cmd += ["-b", size, "-e", size, "--algo", "ring", "--backend", "packet", "--no-progress", "--json"]
    child = subprocess.Popen(cmd, cwd=ROOT, env={**os.environ, **ENV}, stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    out = child.stdout.read()
    _, status, ru = os.wait4(child.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed")
    busbw = float(json.loads(out)["busbw_GBps"][0])
    return busbw, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1000


def ns3_user_seconds(name: str) -> float:
    """ns-3's user CPU seconds for scenario `name` (its run.txt)."""
    text = (NS3 / name / "run.txt").read_text(encoding="utf-8")
    m = re.search(r"^user seconds: ([0-9.]+)$", text, re.M)
    if m is None:
        raise SystemExit(f"{name}: no user seconds in run.txt")
    return float(m.group(1))


def ns3_row(name: str) -> dict[str, str]:
    """The README table's row of scenario `name`."""
    text = (NS3 / "README.md").read_text(encoding="utf-8")
    head = next(line for line in text.splitlines() if line.startswith("| scenario |"))
    keys = [c.strip() for c in head.strip("|").split("|")]
    for line in text.splitlines():
        if line.startswith(f"| `{name}` |"):
            return dict(zip(keys, (c.strip() for c in line.strip("|").split("|")), strict=True))
    raise SystemExit(f"{name}: not in {NS3 / 'README.md'}")


def scenario(name: str, backend: str) -> tuple[float, float]:
    """(busbw GB/s, CPU s) of the scenario's collective on `backend`."""
    from clustersim import api

    folder = NS3 / name
    topology = next(p for p in folder.iterdir() if re.match(r"(Spectrum-X|AlibabaHPN|DCN\+)", p.name))
    size = re.search(r"_(\d+)m", name)
    assert size is not None
    op = OPS[name.split("_")[1]]
    cpu = time.process_time()
    size_b = int(size.group(1)) << 20
    result = api.collective(
        op,
        str(topology),
        minbytes=size_b,
        maxbytes=size_b,
        algo=ALGO.get(op, "ring"),
        env=ENV,
        backend=backend,
    )
    return float(next(result.rows())["busbw_GBps"]), time.process_time() - cpu


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--k", type=int, default=32, help="fat-tree ports (k³/4 hosts; default 32: 8192)")
    ap.add_argument("--bytes", type=int, default=2_000_000, help="bytes per host (default 2 MB)")
    ap.add_argument(
        "--runs", type=int, default=3, help="runs of the permutation and the 256-GPU all-reduce (median)"
    )
    ap.add_argument(
        "--scenarios",
        default="spx16_ar_1m,spx16_ar_16m,spx32_ar_1m,spx32_ag_16m,dcn32_ar_16m,spx16_a2a_16m,spx32_a2a_16m,spx64_a2a_16m,dcn32_a2a_16m,dcn64_a2a_16m",
    )
    ap.add_argument("--write", action="store_true", help="record the result in benchmarks/RESULTS.md")
    args = ap.parse_args()
    perm = []
    for cc in ("none", "dcqcn"):
        runs = [permutation(args.k, args.bytes, cc) for _ in range(args.runs)]
        r = runs[0]
        cpu = statistics.median(x["cpu_s"] for x in runs)
        rss = max(x["peak_rss_mb"] for x in runs)
        perm.append(
            f"CC {cc} {cpu:.1f} CPU s = {r['data_packets'] / max(cpu, 1e-9):.3g} data packets / CPU s"
            f" ({r['data_packets']} packets, {r['events']} events, peak RSS {rss:.0f} MB)"
        )
        print(perm[-1], flush=True)
    big = [big_allreduce(256, "512M") for _ in range(args.runs)]
    big_cpu = statistics.median(x[1] for x in big)
    big_rss = max(x[2] for x in big)
    big_line = (
        f"Spectrum-X:256 (SimAI's template), 512 MiB ring all-reduce, packet backend: {big_cpu:.1f} CPU s"
        f" (target ≤ 30: {'pass' if big_cpu <= 30 else 'fail'}), peak RSS {big_rss:.0f} MB"
        f" (target ≤ 500: {'pass' if big_rss <= 500 else 'fail'}), busbw {big[0][0]:.2f} GB/s."
    )
    print(big_line, flush=True)
    first = (
        f"{run_header(args.runs)} Fat-tree k = {args.k} ({args.k**3 // 4} hosts),"
        f" {args.bytes / 1e6:g} MB per host: " + "; ".join(perm) + ". " + big_line
    )
    names = [s for s in args.scenarios.split(",") if s]
    rows: dict[str, list[str]] = {
        "ns-3 busbw GB/s (rank 0)": [],
        "packet busbw (vs ns-3)": [],
        "flow busbw (vs ns-3)": [],
        "ns-3 user CPU s": [],
        "packet CPU s (ns-3 / packet)": [],
    }
    for name in names:
        ref = float(ns3_row(name)["busbw GB/s"])
        packet, packet_cpu = scenario(name, "packet")
        flow, _ = scenario(name, "flow")
        rows["ns-3 busbw GB/s (rank 0)"].append(f"{ref:.2f}")
        rows["packet busbw (vs ns-3)"].append(f"{packet:.2f} ({100 * (packet / ref - 1):+.1f} %)")
        rows["flow busbw (vs ns-3)"].append(f"{flow:.2f} ({100 * (flow / ref - 1):+.1f} %)")
        ns3_cpu = ns3_user_seconds(name)
        rows["ns-3 user CPU s"].append(f"{ns3_cpu:.1f}")
        rows["packet CPU s (ns-3 / packet)"].append(f"{packet_cpu:.2f} ({ns3_cpu / packet_cpu:.0f}×)")
        print(name, {k: v[-1] for k, v in rows.items()}, flush=True)
    lines = [first, "", "| scenario | " + " | ".join(f"`{n}`" for n in names) + " |"]
    lines.append("|---" * (len(names) + 1) + "|")
    lines += [f"| {k} | " + " | ".join(v) + " |" for k, v in rows.items()]
    table = "\n".join(lines)
    print(table)
    if args.write:
        write_section("packet", table)


if __name__ == "__main__":
    main()
