"""NCCL's own tuning-model prediction of a collective's time: an independent oracle.

Written from the description of NVIDIA/nccl `src/graph/tuning.cc` (NCCL 2.30) in
shared/reference/hardware.md §4, without clustersim's code: for every algorithm and protocol NCCL
fills a latency `lat` (µs) and a bandwidth `bw` (GB/s) and predicts `lat + bytes / (1000 · bw)`,
taking the minimum. `bus_gbps` is the per-GPU bus bandwidth NCCL's topology search finds (NVLink
inside one server, the GPU's NIC share across servers).
"""

from __future__ import annotations

import math

# (LL, LL128, Simple) base latency and per-hop latency by link, µs.
BASE = {"ring": (6.6, 14.0, 8.4), "tree": (6.8, 14.0, 8.4), "nvls": (0.0, 0.0, 0.0)}
HW_NVLINK = {"ring": (0.6, 1.9, 3.4), "tree": (0.6, 1.25, 4.0), "nvls": (None, None, 25.0)}
HW_NET = {"ring": (2.7, 4.0, 14.0), "tree": (5.0, 8.5, 14.0), "nvls": (None, None, 18.0)}
PROTOCOLS = ("LL", "LL128", "Simple")


def predict_us(
    op: str, nbytes: int, nodes: int, ppn: int, bus_gbps: float, *, nvls: bool = False
) -> tuple[float, str, str]:
    """(µs, algorithm, protocol) NCCL's tuner predicts for `op` of `nbytes` on nodes × ppn GPUs."""
    n = nodes * ppn
    nsteps = 2 * (n - 1) if op == "allreduce" else n - 1
    n_inter = (2 if op == "allreduce" else 1) * (nodes - 1)
    algorithms = ["ring"]
    if op == "allreduce":
        algorithms.append("tree")
        if nvls and nodes == 1:
            algorithms.append("nvls")
    best = (math.inf, "", "")
    for algo in algorithms:
        for i, proto in enumerate(PROTOCOLS):
            if algo == "nvls" and proto != "Simple":
                continue
            intra, inter = HW_NVLINK[algo][i], HW_NET[algo][i]
            if algo == "ring":
                if nodes > 1:
                    intra = max(intra, 1.0 * (3 if proto == "Simple" else 1))
                lat = BASE[algo][i] + (nsteps - n_inter) * intra + n_inter * inter
                if nodes > 1 and proto == "Simple" and op == "allreduce":
                    lat *= 1.4
                eff = {"LL": 0.5, "LL128": 0.92, "Simple": 1.0}[proto]
                algbw = bus_gbps * eff * n / nsteps
            elif algo == "tree":
                lat = BASE[algo][i] + 2 * ((ppn - 1) * intra + math.log2(nodes) * inter)
                bus = 0.92 * bus_gbps
                ll128 = bus * (7 / 9 if nodes == 1 else 120 / 128)
                bus = {"LL": bus / 3.8, "LL128": ll128, "Simple": bus}[proto]
                algbw = bus * 0.5
            else:
                lat = intra
                channels = 16
                algbw = bus_gbps * 0.85 * (channels - 1) / channels * 2 * n / nsteps
            t = lat + nbytes / (1000 * algbw)
            if t < best[0]:
                best = (t, algo, proto)
    return best
