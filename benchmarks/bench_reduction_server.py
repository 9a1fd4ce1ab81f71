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
        run_header(args.runs),
        "",
        "4 one-GPU clients + 4 CPU servers (cpu behind a nic), 200 Gbit/s NICs on one switch, all-reduce"
        " of 32 MiB on the flow model (`benchmarks/bench_reduction_server.py`). Model"
        " (`collective/reduction_server.rs`): k = S/c chunks, t = α + max(u/B_w, n·b/min(B_s, R), n·b/B_s),"
        " T = (k+1)·t with ≥ 2 requests in flight. Ideal: ring 133.33 Gbit/s = 200·4/(2·3) as the seed"
        " says; reduction server 200·k/(k+1) (196.92 at 64 chunks of 512 KiB; 160 with Optcast's 8M"
        " chunks, k = 4), ratio 1.477 (1.5 in the limit). NCCL overheads: NCCL's latency constants"
        " (not the seed's measurements, which our copy withholds) on 1 µs links; R (the servers'"
        " reduction throughput) is assumed: below B·n/(2(n−1)) ≈ 16.7 GB/s the ring wins."
        " collnet_direct: the same switch reduces (SHARP), no servers needed; its busbw in"
        " `clustersim collective` takes nccl-tests' in-network factor (n−1)/(n+1).",
        "",
        "| overheads | algorithm | time (µs) | algbw (Gbit/s) | vs ring | sim wall (ms) |",
        "|---|---|---|---|---|---|",
    ]
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
        for name, us, wall in rows:
            gbps = MIB32 * 8 / (us * 1e3)
            lines.append(
                f"| {label} | {name} | {us:.1f} | {gbps:.2f} | {ring_us / us:.3f} | {wall * 1e3:.1f} |"
            )
    x = break_even(1, 32.0, 2, 4.0)
    lines += [
        "",
        f"Break-even (seed's prices: one p4d.24xlarge $32/h matched by two c7gn.16xlarge $4/h): x = {x:.3f};"
        " with the seed's 4 one-GPU clients priced at $32/h each and 4 servers: "
        f"x = {break_even(4, 32.0, 4, 4.0):.3f}.",
    ]
    body = "\n".join(lines)
    print(body)
    if args.write:
        write_section("reduction-server", body, title="## Reduction servers: seed 004's Optcast set-up")


if __name__ == "__main__":
    main()
