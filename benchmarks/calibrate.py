"""Predicted vs published Megatron-LM results on A100 (shared/data/calibration/megatron_a100.csv).

Each row is simulated with `clustersim.training.train` on the shipped A100 description. Rows with a
published iteration time compare times; rows with published TFLOP/s per GPU (Narayanan) compare
TFLOP/s (hardware FLOPs, recomputation included); rows with only MFU compare MFU. Unpublished
details are fixed by one rule for every row: micro-batch 1, Megatron's DDP, no interleaving.

    python3 benchmarks/calibrate.py [--write]
"""

from __future__ import annotations

import argparse
import csv
import math
from pathlib import Path

from clustersim.training import train
from results import write_section

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "calibration" / "megatron_a100.csv"


def hardware_flops(row: dict[str, str], gbs: int) -> float:
    """Narayanan's FLOPs per iteration with full recompute: 96·B·s·L·h²(1 + s/6h + V/16Lh)."""
    s, layers, h, v = (int(row[k]) for k in ("seq_len", "layers", "hidden", "vocab"))
    return 96 * gbs * s * layers * h * h * (1 + s / (6 * h) + v / (16 * layers * h))


def predict(row: dict[str, str]) -> tuple[str, float, float] | None:
    """(metric, predicted, published) for one row, or None for rows without a whole iteration."""
    if not row["gpus"]:
        return None
    h, layers, heads = int(row["hidden"]), int(row["layers"]), int(row["heads"])
    tp, pp, dp = int(row["tp"]), int(row["pp"]), int(row["dp"])
    gbs = int(row["global_batch"]) if row["global_batch"] else 280 * dp
    model = {
        "name": row["model"],
        "family": "gpt",
        "layers": layers,
        "hidden": h,
        "heads": heads,
        "ffn": 4 * h,
        "vocab": int(row["vocab"]),
        "seq_len": int(row["seq_len"]),
    }
    r = train(
        model,
        gpus=int(row["gpus"]),
        accelerator="a100",
        tp=tp,
        pp=pp,
        mbs=1,
        gbs=gbs,
        sp=row["sequence_parallel"] == "yes",
        recompute=row["recompute"],
        flash_attention=False,
        allow_oom=True,
    )
    if row["iteration_time_s"]:
        return "iteration s", r["iteration_s"], float(row["iteration_time_s"])
    if row["tflops_per_gpu"]:
        tflops = hardware_flops(row, gbs) / r["iteration_s"] / int(row["gpus"]) / 1e12
        return "TFLOP/s per GPU", tflops, float(row["tflops_per_gpu"])
    return "MFU %", 100 * r["mfu"], float(row["mfu_pct"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--write", action="store_true", help="write the table into benchmarks/RESULTS.md")
    args = ap.parse_args()
    lines = [
        "| row | model | TP×PP×DP | metric | predicted | published | error |",
        "|---|---|---|---|---|---|---|",
    ]
    errors = []
    for row in csv.DictReader(DATA.open()):
        got = predict(row)
        if got is None:
            continue
        metric, pred, pub = got
        err = (pred - pub) / pub * 100
        errors.append(abs(err))
        layout = f"{row['tp']}×{row['pp']}×{row['dp']}"
        lines.append(
            f"| {row['row_id']} | {row['model']} ({row['recompute']}) | {layout} | {metric} | "
            f"{pred:.3g} | {pub:.3g} | {err:+.1f}% |"
        )
    mae = sum(errors) / len(errors)
    worst = max(errors)
    lines.append("")
    lines.append(f"Mean absolute error {mae:.1f}% (target ≤ 5%); worst {worst:.1f}% (target ≤ 10%).")
    table = "\n".join(lines)
    print(table)
    if args.write:
        write_section(
            "calibration", table, title="## Calibration: Megatron-LM on A100 (issue 3, in progress)"
        )
    if not math.isfinite(mae):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
