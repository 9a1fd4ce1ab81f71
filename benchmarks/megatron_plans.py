"""The search against Megatron-LM's published A100 plans (tests/test_search.py holds the same rows).

Part 1: for each published run, the search over the options Megatron-LM then offered
(`test_search.megatron_space`), its best plan beside the published one, and where each spends its
iteration. Part 2: Narayanan et al.'s weak-scaling rows simulated with the micro-batch and
interleaving of the paper's own scripts (NVIDIA/Megatron-LM examples/sc21/run_table_1.sh, commit
de7dc40) and without the P2P overlap (Megatron-LM then had none), as calibrate.py now runs them,
beside micro-batch 1 without interleaving (calibrate.py's rule before).

    python3 benchmarks/megatron_plans.py
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from pathlib import Path

from calibrate import DATA, SC21, hardware_flops
from clustersim.explore.search import part_column, search
from clustersim.training import train
from results import run_header, write_section

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from test_search import MEGATRON, megatron_space  # noqa: E402


def plan(r: dict) -> str:
    return f"TP {r['tp']} PP {r['pp']} MBS {r['mbs']} VPP {r['vpp']}"


def parts(r: dict, names: list[str]) -> str:
    return ", ".join(f"{p} {r[part_column(p)]:.2f}" for p in names if r[part_column(p)])


def search_rows() -> list[str]:
    lines = [
        "| run | plans (fit) | search s | best plan | s/iter | published plan | s/iter | best faster by |",
        "|---|---|---|---|---|---|---|---|",
    ]
    notes = []
    for row, (model, gpus, gbs, _, _, published) in MEGATRON.items():
        start = time.perf_counter()
        result = search(
            model, gpus=gpus, gbs=gbs, gpu="a100", no_flash_attn=True, top=None, **megatron_space(row)
        )
        seconds = time.perf_counter() - start
        rows = [r for r in result.plans.rows() if r["vpp"] == 1 or r["pp"] > 2 or row.startswith("K")]
        best = rows[0]
        theirs = next(r for r in rows if (r["tp"], r["pp"], r["mbs"], r["vpp"]) == published)
        gain = best["tokens_per_s"] / theirs["tokens_per_s"] - 1
        lines.append(
            f"| {row} | {result.candidates} ({result.feasible}) | {seconds:.1f} | {plan(best)} |"
            f" {best['iteration_s']:.3f} | {plan(theirs)} | {theirs['iteration_s']:.3f} |"
            f" {gain * 100:+.1f} % |"
        )
        notes.append(f"- {row} best: {parts(best, result.parts)}; published: {parts(theirs, result.parts)}")
        print(lines[-1], flush=True)
    return lines + ["", "Seconds per iteration:", "", *notes]


def weak_scaling_rows() -> list[str]:
    lines = [
        "| row | TP×PP×DP | published TFLOP/s | MBS 1, no VPP | MBS, VPP of run_table_1.sh (calibrate.py) |",
        "|---|---|---|---|---|",
    ]
    for row in csv.DictReader(DATA.open()):
        if row["row_id"] not in SC21:
            continue
        h, gbs, gpus = int(row["hidden"]), int(row["global_batch"]), int(row["gpus"])
        model = {"name": row["model"], "family": "gpt", "layers": int(row["layers"]), "hidden": h}
        model |= {"heads": int(row["heads"]), "ffn": 4 * h, "vocab": int(row["vocab"]), "seq_len": 2048}
        published = float(row["tflops_per_gpu"])
        cells = []
        for mbs, vpp in [(1, 1), SC21[row["row_id"]]]:
            r = train(
                model,
                gpus=gpus,
                accelerator="a100",
                tp=int(row["tp"]),
                pp=int(row["pp"]),
                vpp=vpp,
                mbs=mbs,
                gbs=gbs,
                overlap={"p2p": False} if vpp > 1 else None,
                recompute="full",
                flash_attention=False,
                allow_oom=True,
            )
            tflops = hardware_flops(row, gbs) / r["iteration_s"] / gpus / 1e12
            cells.append(f"{tflops:.0f} ({(tflops / published - 1) * 100:+.1f} %), MBS {mbs} VPP {vpp}")
        layout = f"{row['tp']}×{row['pp']}×{row['dp']}"
        lines.append(f"| {row['row_id']} | {layout} | {published:.0f} | {cells[0]} | {cells[1]} |")
        print(lines[-1], flush=True)
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--write", action="store_true", help="record the search table in benchmarks/RESULTS.md")
    args = ap.parse_args()
    searched = search_rows()
    body = "\n".join([*searched, "", *weak_scaling_rows()])
    print(body)
    if args.write:
        table = searched[: searched.index("")]
        write_section("megatron_plans", "\n".join([run_header(), "", *table]))


if __name__ == "__main__":
    main()
