"""Iterations with and without Megatron-Core's overlaps (issue 14 item 2): time, MFU and the
exposed data-parallel and TP communication of the breakdown stage, per plan and overlap set.

    python3 benchmarks/overlap_iterations.py
"""

from __future__ import annotations

import argparse
from typing import Any

from clustersim import api
from results import run_header, write_section

LLAMA_405B: dict[str, Any] = dict(
    model="llama3-405b",
    gpus=16384,
    tp=8,
    pp=16,
    first_stage_layers=7,
    last_stage_layers=7,
    gbs=2048,
    seq=8192,
    sp=True,
    dist_opt=True,
    recompute="selective",
    allow_oom=True,
)
PLANS: list[tuple[str, dict[str, Any]]] = [
    ("Llama 3 405B, 16384 GPUs, TP8 PP16 (7+…+7), SP, dist-opt, selective (bench_train)", LLAMA_405B),
    (
        "Llama 3 70B, 1024 GPUs, TP8 PP4 VPP5, SP, dist-opt",
        dict(model="llama3-70b", gpus=1024, tp=8, pp=4, vpp=5, gbs=512, seq=8192, sp=True, dist_opt=True),
    ),
    (
        "Llama 3 8B, 64 GPUs, DP 64, dist-opt",
        dict(model="llama3-8b", gpus=64, gbs=256, seq=4096, dist_opt=True),
    ),
    (
        "Llama 3 8B, 64 GPUs, TP4 DP16, SP, DDP",
        dict(model="llama3-8b", gpus=64, tp=4, gbs=256, seq=4096, sp=True),
    ),
]
GRAD = dict(overlap_grad_reduce=True)
BOTH = dict(overlap_grad_reduce=True, overlap_param_gather=True)
SETS: list[tuple[str, dict[str, Any]]] = [
    ("defaults (Megatron-LM's: off)", {}),
    ("--overlap-grad-reduce", GRAD),
    ("--overlap-grad-reduce --overlap-param-gather", BOTH),
    ("both, --tp-comm-overlap", dict(BOTH, tp_comm_overlap=True)),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--write", action="store_true", help="record the table in benchmarks/RESULTS.md")
    args = ap.parse_args()
    labels = [label for label, _ in SETS]
    lines = ["| plan | " + " | ".join(labels) + " |", "|---|" + "---|" * len(labels)]
    print("| plan | overlaps | iteration s | MFU % | exposed DP s | exposed TP s |")
    print("|---|---|---|---|---|---|")
    for name, plan in PLANS:
        cells = []
        for label, flags in SETS:
            if ("param_gather" in str(flags) and not plan.get("dist_opt")) or (
                "tp_comm" in str(flags) and not plan.get("sp")
            ):
                cells.append("–")
                continue
            r = api.train(gpu="h100", **plan, **flags)
            b = r.breakdown_s
            dp = b["exposed DP comm"] + b["exposed DP_EP comm"]
            print(
                f"| {name} | {label} | {r.iteration_s:.3f} | {100 * r.mfu:.1f} | {dp:.3f} "
                f"| {b['exposed TP comm']:.3f} |"
            )
            cells.append(f"{r.iteration_s:.3f} ({dp:.3f}, {b['exposed TP comm']:.3f})")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    if args.write:
        head = run_header() + " Iteration s (exposed DP s, exposed TP s); –: the option needs SP or dist-opt."
        write_section("overlap_iterations", "\n".join([head, "", *lines]))


if __name__ == "__main__":
    main()
