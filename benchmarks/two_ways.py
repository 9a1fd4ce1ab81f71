"""The same iteration reached two ways: `train`, and `workload generate` then `analytical` in the
default mode, on the same plan; compute and exposed communication per group, in seconds.

`analytical` runs twice: with SimAI's size-efficiency tables (its default) and with tables of
ones (the plain bus bandwidths `train` prices with). The bubble and PP transfers are a closed form
in `analytical` (one SimAI file is one stage), shown for reference.

    python3 benchmarks/two_ways.py [--write]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from clustersim.analytical import simulate
from clustersim.training import train, workload_text
from results import run_header, write_section

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "crates" / "engine" / "data" / "ratio"

PLANS = {
    "Llama 3 70B, 1024 H100, TP8 PP4 SP dist-opt, GBS 512": dict(
        model="llama3-70b", gpus=1024, tp=8, pp=4, gbs=512, sp=True, dp="distributed_optimizer"
    ),
    "GPT-175B, 1024 H100, TP8 PP8 DDP, GBS 256": dict(
        model="gpt-175b", gpus=1024, tp=8, pp=8, gbs=256, seq=2048
    ),
    "Mixtral 8x7B, 64 H100, TP2 EP8 SP, GBS 64": dict(
        model="mixtral-8x7b", gpus=64, tp=2, ep=8, gbs=64, seq=4096, sp=True
    ),
}
# (train breakdown keys, analytical summary keys) per column.
COLUMNS = {
    "compute": (["compute"], ["compute_us"]),
    "exposed TP": (["exposed TP comm"], ["exposed_tp_us"]),
    "exposed EP": (["exposed EP comm"], ["exposed_ep_us"]),
    "exposed DP": (["exposed DP comm", "exposed DP_EP comm"], ["exposed_dp_us", "exposed_dp_ep_us"]),
    "exposed PP": (["exposed PP comm"], ["exposed_pp_us"]),
    "bubble": (["bubble"], ["bubble_us"]),
}


def ones(folder: Path) -> Path:
    for src in SHIPPED.glob("*_ratio.csv"):
        lines = src.read_text().splitlines()
        rows = [",".join([c[0]] + ["1"] * (len(c) - 1)) for c in (line.split(",") for line in lines[1:])]
        (folder / src.name).write_text("\n".join([lines[0], *rows]) + "\n")
    return folder


def cells(summary: dict[str, float]) -> list[float]:
    return [sum(summary[k] for k in keys[1]) / 1e6 for keys in COLUMNS.values()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--write", action="store_true", help="record the result in benchmarks/RESULTS.md")
    args = ap.parse_args()
    lines = [
        run_header(),
        "",
        "| plan | path | " + " | ".join(COLUMNS) + " |",
        "|---|---|" + "---|" * len(COLUMNS),
    ]
    pivot = [
        run_header() + " Each cell: `train` / `workload generate` → `analytical` with ratio tables of ones /"
        " with SimAI's ratio tables.",
        "",
        "| plan | " + " | ".join(COLUMNS) + " |",
        "|---|" + "---|" * len(COLUMNS),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        ratio = ones(Path(tmp))
        for name, p in PLANS.items():
            plan = dict(p)
            model = plan.pop("model")
            t = dict(train(model, allow_oom=True, **plan)["breakdown_s"])
            path = Path(tmp) / "w.txt"
            path.write_text(workload_text(model, **plan))
            net = dict(gpus=plan["gpus"], nvlink_busbw=370.8, nic_busbw=48.5, nics_per_server=8)
            runs = {
                "train": [sum(t[k] for k in keys[0]) for keys in COLUMNS.values()],
                "generate → analytical (SimAI ratios)": cells(simulate(path, **net).summary),
                "generate → analytical (ratios 1)": cells(simulate(path, ratio_dir=ratio, **net).summary),
            }
            for label, row in runs.items():
                lines.append(f"| {name} | {label} | " + " | ".join(f"{c:.3f}" for c in row) + " |")
            ways = [
                runs["train"],
                runs["generate → analytical (ratios 1)"],
                runs["generate → analytical (SimAI ratios)"],
            ]
            by_part = (" / ".join(f"{w[i]:.3f}" for w in ways) for i in range(len(COLUMNS)))
            pivot.append(f"| {name} | " + " | ".join(by_part) + " |")
    print("\n".join(lines))
    if args.write:
        write_section("two_ways", "\n".join(pivot))


if __name__ == "__main__":
    main()
