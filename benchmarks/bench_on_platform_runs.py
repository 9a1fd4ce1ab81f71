"""`train` with its all-reduces on reduction servers or reduced in the switches (CollNet).

Set-up: `examples/optcast_leaf_spine.platform` (8 one-GPU A100 clients on 2 leaves, 4 CPU
reduction servers on the 2 spines, 200 Gbit/s everywhere, non-blocking, 500 ns links) and the
seed's crossbar `examples/optcast_4x4.platform` (4 clients, 4 servers, one switch). A Llama-style
model of 8 layers (hidden 4096, FFN 11008, 32 heads, vocabulary 32000, sequence 2048), data
parallel over every client: DDP (gradient all-reduces, which go to the servers) and the
distributed optimizer (reduce-scatter + all-gather, which do not). The leaf-spine runs with ECMP
(per-flow hashing: ring flows collide on the uplinks) and with spraying (no collisions). Per case:
iteration time, exposed DP communication, and the median wall time of the `train` call over --runs.

    python3 benchmarks/bench_on_platform_runs.py [--runs 5] [--write]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from clustersim.api import train
from clustersim.reduction_server import ReductionServers
from results import run_header, write_section

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
MODEL = dict(layers=8, hidden=4096, ffn=11008, heads=32, vocab=32000, seq=2048, family="llama")
# (label, platform file, clients, routing)
FABRICS = [
    ("leaf-spine, 8 clients, ECMP", "optcast_leaf_spine.platform", 8, "ecmp"),
    ("leaf-spine, 8 clients, spraying", "optcast_leaf_spine.platform", 8, "spray"),
    ("crossbar, 4 clients", "optcast_4x4.platform", 4, "ecmp"),
]
HOW = [
    ("NCCL's tuner", {}),
    ("reduction servers (all 4)", {"reduction": ReductionServers()}),
    ("collnet_direct", {"algo": "collnet_direct"}),
]


def timed(runs: int, **kw: object) -> tuple[dict, float]:
    walls, data = [], {}
    for _ in range(runs):
        start = time.perf_counter()
        data = train(**kw).data  # type: ignore[arg-type]
        walls.append(time.perf_counter() - start)
    return data, statistics.median(walls)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--write", action="store_true", help="record the result in benchmarks/RESULTS.md")
    args = ap.parse_args()
    lines = [
        "| fabric | data parallel | " + " | ".join(how for how, _ in HOW) + " |",
        "|---|---|" + "---:|" * len(HOW),
    ]
    walls = []
    for label, file, gpus, routing in FABRICS:
        for dp, opt in (("DDP", {}), ("distributed optimizer", {"dist_opt": True})):
            cells = []
            for _how, extra in HOW:
                kw = dict(MODEL, gpus=gpus, gbs=gpus, gpu="a100", gpus_per_server=1, allow_oom=True)
                kw |= dict(topology=EXAMPLES / file, routing=routing, **opt, **extra)
                data, wall = timed(args.runs, **kw)
                walls.append(wall)
                dp_s = dict(data["breakdown_s"])["exposed DP comm"]
                cells.append(f"{data['iteration_s'] * 1e3:.2f} ({dp_s * 1e3:.2f})")
            lines.append(f"| {label} | {dp} | " + " | ".join(cells) + " |")
            print(lines[-1], flush=True)
    lines = [
        run_header(args.runs) + " Iteration ms (exposed DP comm ms) by where the all-reduces across"
        f" servers run; each `train` call ≤ {max(walls) * 1e3:.1f} ms wall.",
        "",
        *lines,
    ]
    body = "\n".join(lines)
    print(body)
    if args.write:
        write_section("on_platform_runs", body)


if __name__ == "__main__":
    main()
