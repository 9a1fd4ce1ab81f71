"""MSCCL++'s README comparison, simulated on Azure NDv4: NCCL's all-gather, all-reduce and
all-to-all against MSCCL++-style all-pairs algorithms, on 1 node × 8 GPUs, 2 nodes × 1 GPU and
2 nodes × 8 GPUs; latency at 1 KB and nccl-tests busbw at 1 GB and 4 GB, on the flow model.

NDv4 (ND A100 v4): 8 × A100 per server on NVSwitch (NVLink 3: 600 GB/s both ways, 2400 Gbit/s per
direction), one 200 Gbit/s HDR InfiniBand NIC per GPU, rail-optimised. It is SimAI's custom
template with --ro, -gt A100, -nvbw 2400Gbps and -bw 200Gbps; its delays are the template's
(25 ns NVLink, 500 ns per network hop). 2 nodes × 1 GPU is two servers of one GPU each.

Rows: NCCL's tuner (`auto`), the same tuner also weighing the all-pairs family (`auto+extra`), and
each all-pairs algorithm forced where it runs. MSCCL++'s own figures are not beside ours: the seed
(shared/seeds/001) withholds its README tables because the simulators are checked against them.

    python3 benchmarks/bench_mscclpp.py [--runs 3] [--write]
"""

from __future__ import annotations

import argparse
import statistics
import time

from clustersim.errors import InputError
from clustersim.nccl_tests import sweep
from clustersim.topology import simai_template
from clustersim.topology.model import Topology
from results import run_header, write_section

SIZES = [1 << 10, 1 << 30, 4 << 30]
# (label, GPUs, GPUs per server)
SHAPES = [("1 node × 8 GPUs", 8, 8), ("2 nodes × 1 GPU", 2, 1), ("2 nodes × 8 GPUs", 16, 8)]
# (collective, algorithm) rows
ROWS = [
    ("allgather", "auto"),
    ("allgather", "all_pairs"),
    ("allgather", "hier_all_pairs"),
    ("allgather", "auto+extra"),
    ("allreduce", "auto"),
    ("allreduce", "one_shot"),
    ("allreduce", "two_shot"),
    ("allreduce", "hier_all_pairs"),
    ("allreduce", "auto+extra"),
    ("alltoall", "auto"),
]


def ndv4(gpus: int, per_server: int) -> Topology:
    return simai_template(
        None, ro=True, gpu=gpus, gpu_per_server=per_server, gpu_type="A100", nvlink_bw="2400Gbps",
        bandwidth="200Gbps",
    )  # fmt: skip


def cell(op: str, algo: str, gpus: int, per_server: int) -> list[str] | None:
    """[1 KB µs, 1 GB busbw, 4 GB busbw], each with the pick of a tuner; None where it cannot run."""
    try:
        t = sweep(ndv4(gpus, per_server), op, SIZES, algorithm=algo, env={})
    except InputError as e:
        if "cannot run" in str(e):  # the algorithm does not run on this shape
            return None
        raise
    values = [f"{t['time_us'][0]:.1f}", f"{t['busbw_GBps'][1]:.1f}", f"{t['busbw_GBps'][2]:.1f}"]
    if algo.startswith("auto"):
        values = [f"{v} ({a} {p})" for v, a, p in zip(values, t["algorithm"], t["protocol"], strict=True)]
    return values


def table() -> str:
    head = "| collective | algorithm | " + " | ".join(
        f"{label}: 1 KB µs | 1 GB busbw | 4 GB busbw" for label, _, _ in SHAPES
    )
    lines = [head + " |", "|---|---" + "|---" * 3 * len(SHAPES) + "|"]
    for op, algo in ROWS:
        cells = []
        for _, gpus, per_server in SHAPES:
            got = cell(op, algo, gpus, per_server)
            cells += got if got is not None else ["—"] * 3
        lines.append(f"| {op} | {algo} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--write", action="store_true", help="record the result in benchmarks/RESULTS.md")
    args = ap.parse_args()
    walls = []
    for _ in range(args.runs):
        start = time.perf_counter()
        body = table()
        walls.append(time.perf_counter() - start)
    text = (
        run_header(args.runs) + " Flow model, deterministic; busbw in GB/s as nccl-tests reports it; —: the"
        " algorithm does not run on that shape; the table takes"
        f" {statistics.median(walls):.2f} s to compute.\n\n" + body
    )
    print(text)
    if args.write:
        write_section("mscclpp", text)


if __name__ == "__main__":
    main()
