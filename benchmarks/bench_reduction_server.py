"""Seed 004's Optcast set-up on the flow model: reduction servers against the ring all-reduce.

Set-up (shared/seeds/004): 4 GPU clients and 4 CPU reduction servers, every NIC 200 Gbit/s, one
switch (`clustersim.reduction_server.crossbar_text`); all-reduce of 32 MiB. The seed's ideal
figures: ring 200·4/(2·3) = 133.33 Gbit/s, reduction server 200 Gbit/s. Rows:

- ideal: bare schedules (AS_SEND_LAT = 0, links without latency): bytes on links only;
- NCCL overheads: NCCL's latency model as clustersim prices it (per-call base and per-hop
  latencies; the reduction server as two network hops of NCCL's point-to-point latencies) on
  links of 1 µs each way (EFA-like, UNVERIFIED);
- the same with the servers' reduction throughput R below their NIC (R assumed, not measured).

The seed's measured bandwidths are withheld from our copy of it, so no row is fitted to them.
Each case is one in-process sweep call; time is its median wall over --runs.

    python3 benchmarks/bench_reduction_server.py [--runs 3] [--write]
"""

from __future__ import annotations

import argparse
import statistics
import time

from clustersim.api import collective
from clustersim.reduction_server import ReductionServers, break_even, crossbar_text, platform
from results import run_header, write_section

MIB32 = 32 << 20
OPTCAST = dict(chunk_bytes=float(8 << 20), nsplit=4, nreq=4)
# (overheads label, link latency ns, env, reduction throughput GB/s or None)
SETTINGS = [
    ("ideal", 0.0, {"AS_SEND_LAT": "0"}, None),
    ("NCCL overheads", 1000.0, {}, None),
    ("NCCL overheads, R = 20 GB/s", 1000.0, {}, 20.0),
    ("NCCL overheads, R = 12.5 GB/s", 1000.0, {}, 12.5),
]


def run(
    latency: float, env: dict[str, str], reduction: ReductionServers | None, runs: int, algo: str = "ring"
) -> tuple[float, float]:
    """(time µs, median wall s) of one 32 MiB all-reduce on the seed's set-up."""
    topo = platform(crossbar_text(latency_ns=latency))
    walls, us = [], 0.0
    for _ in range(runs):
        start = time.perf_counter()
        t = collective(
            "allreduce",
            topo,
            minbytes=MIB32,
            maxbytes=MIB32,
            algo=algo if reduction is None else "auto",
            env=env,
            reduction=reduction,
        )
        walls.append(time.perf_counter() - start)
        us = t["time_us"][0]
    return us, statistics.median(walls)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--write", action="store_true", help="record the result in benchmarks/RESULTS.md")
    args = ap.parse_args()
    lines = [
        "| overheads | ring: µs, Gbit/s | servers, 512 KiB chunks: µs, Gbit/s, × ring"
        " | servers, Optcast 8M/4/4 | collnet_direct (switch reduces) |",
        "|---|---|---|---|---|",
    ]
    walls = []
    for label, latency, env, reduce in SETTINGS:
        ring_us, wall = run(latency, env, None, args.runs)
        rows = [("ring", ring_us, wall)]
        for name, split in (
            ("reduction server, 512 KiB chunks", {}),
            ("reduction server, Optcast 8M/4/4", OPTCAST),
        ):
            rs = ReductionServers("all", reduce, **split)  # type: ignore[arg-type]
            us, wall = run(latency, env, rs, args.runs)
            rows.append((name, us, wall))
        if reduce is None:
            # In-network reduction (SHARP) on the same switch, for comparison.
            us, wall = run(latency, env, None, args.runs, "collnet_direct")
            rows.append(("collnet_direct (switch reduces)", us, wall))
        cells = []
        for name, us, wall in rows:
            gbps = MIB32 * 8 / (us * 1e3)
            cells.append(f"{us:.1f}, {gbps:.2f}" + ("" if name == "ring" else f", {ring_us / us:.3f}×"))
            walls.append(wall)
        lines.append(f"| {label} | " + " | ".join(cells + ["–"] * (4 - len(cells))) + " |")
        print(lines[-1], flush=True)
    x = break_even(1, 32.0, 2, 4.0)
    lines = [
        run_header(args.runs) + " NCCL overheads: NCCL's latency constants on 1 µs links; R: the servers'"
        f" assumed reduction throughput. Each simulation ≤ {max(walls) * 1e3:.1f} ms wall."
        " Break-even (seed's prices: one p4d.24xlarge $32/h matched by two c7gn.16xlarge $4/h):"
        f" x = {x:.3f}; 4 one-GPU clients at $32/h each and 4 servers:"
        f" x = {break_even(4, 32.0, 4, 4.0):.3f}.",
        "",
        *lines,
    ]
    body = "\n".join(lines)
    print(body)
    if args.write:
        write_section("reduction_server", body)


if __name__ == "__main__":
    main()
