"""`clustersim analytical`: a SimAI workload file on the analytical network model, with
SimAI_analytical's flags as they are. The options and outputs here are shared with `run`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from clustersim.analytical import AnalyticalResult, simulate
from clustersim.cli.common import (
    add_calibration,
    add_json,
    add_platform,
    add_progress,
    add_result,
    gpu_count,
    print_json,
    progress_for,
    wrote,
)
from clustersim.files import atomic_outputs, write_csv, write_text
from clustersim.provenance import comment_lines
from clustersim.table import Table

EPILOG = """\
SimAI_analytical's flags are accepted as they are, e.g.
  clustersim analytical -w examples/workload_analytical.txt -g 9216 -g_p_s 8 -r results/test- -busbw examples/busbw.yaml
  clustersim analytical -w examples/workload_analytical.txt -g 9216 -nv 360 -nic 48.5 -n_p_s 8 -g_p_s 8 -r results/example-
Outputs: <prefix>EndToEnd.csv (SimAI's layout, times in µs) and <prefix>summary.json;
with -v also <prefix>chart.png, .svg and .html. --json prints the summary as JSON.
Without --compat simai, SimAI's known quirks are corrected (docs/guides/simai.md lists each)."""  # noqa: E501


DESCRIPTION = "Simulate one training iteration of a SimAI/AICB workload on the analytical backend."


def arguments(p: argparse.ArgumentParser) -> None:
    add_workload_options(p)
    add_calibration(p, "the NVLink and NIC bandwidths times the fitted scale-up and scale-out efficiencies")
    p.set_defaults(func=main, topology=None)


def add_workload_options(p: argparse.ArgumentParser) -> None:
    """SimAI_analytical's flags and ours, shared by `analytical` and `run`."""
    p.add_argument("-w", "--workload", required=True, help="SimAI workload file (.txt written by AICB)")
    p.add_argument("-g", "--gpus", type=gpu_count, help="number of GPUs (default: the header's all_gpus)")
    add_platform(p)
    p.add_argument(
        "-g_type", "--gpu-type", default="H100", help="A100, A800, H100, H800 or H20 (default H100)"
    )
    p.add_argument("-nic_t", "--nic-type", default="cx7", help="cx6, cx7 or bf3 (default cx7)")
    p.add_argument(
        "-nv", "--nvlink-busbw", type=float, help="NVLink bus bandwidth per GPU, GB/s (overrides -g_type)"
    )
    p.add_argument("-nic", "--nic-busbw", type=float, help="bus bandwidth per NIC, GB/s (overrides -nic_t)")
    p.add_argument("-busbw", "--busbw", help="SimAI busbw.yaml with measured bus bandwidths per group")
    add_result(p, "default: results/<workload name>-")
    for name, what, default in (
        ("dp", "data-parallel", "0"),
        ("tp", "tensor-parallel", "0"),
        ("ep", "expert-parallel", "0"),
        ("pp", "pipeline", "1 with --compat simai, else 0"),
    ):
        p.add_argument(
            f"-{name}_o",
            f"--{name}-overlap",
            type=float,
            help=f"fraction of {what} communication hidden behind compute (default {default})",
        )
    p.add_argument(
        "--compat", choices=["simai"], help="reproduce SimAI-Analytical's numbers, quirks included"
    )
    p.add_argument("--ratio-dir", help="folder with nvlink_ratio.csv, nic_ratio.csv, ata_ratio.csv")
    p.add_argument(
        "--lenient", action="store_true", help="accept a row count on line 2 that disagrees with the file"
    )
    add_json(p)
    add_progress(p)


def output_prefix(args: argparse.Namespace) -> str:
    prefix = args.result if args.result is not None else f"results/{Path(args.workload).stem}-"
    if args.result_folder:
        prefix = str(Path(args.result_folder) / prefix)
    return prefix


def simulate_options(args: argparse.Namespace, prefix: str) -> dict[str, object]:
    """`clustersim.simulate`'s keyword arguments from the options of `add_workload_options`."""
    return dict(
        gpus=args.gpus,
        gpus_per_server=args.gpus_per_server,
        nics_per_server=args.nics_per_server,
        gpu_type=args.gpu_type,
        nic_type=args.nic_type,
        nvlink_busbw=args.nvlink_busbw,
        nic_busbw=args.nic_busbw,
        busbw=args.busbw,
        compat=args.compat,
        dp_overlap=args.dp_overlap or 0.0,
        tp_overlap=args.tp_overlap or 0.0,
        ep_overlap=args.ep_overlap or 0.0,
        pp_overlap=args.pp_overlap,
        run_name=Path(prefix).name,
        lenient=args.lenient,
        ratio_dir=args.ratio_dir,
    )


def main(args: argparse.Namespace) -> int:
    prefix = output_prefix(args)
    progress = progress_for(args)
    try:
        options = simulate_options(args, prefix)
        result = simulate(args.workload, progress=progress, calibration=args.calibration, **options)
    finally:
        progress.close()
    report(args, result, prefix)
    return 0


def report(args: argparse.Namespace, result: AnalyticalResult, prefix: str) -> None:
    """Write a SimAI-workload run's files (all or none), then print its summary and what was written."""
    for w in result.warnings:
        print(f"warning: {w}", file=sys.stderr)
    outputs = {"csv": prefix + "EndToEnd.csv", "json": prefix + "summary.json"}
    if result.links is not None:
        outputs.update(links=prefix + "links.csv", trace=prefix + "trace.json")
    stats = result.ecmp_seeds
    if stats is not None:
        outputs.update(seeds=prefix + "seeds.csv")
    if args.visual:
        outputs.update(png=prefix + "chart.png", svg=prefix + "chart.svg", html=prefix + "chart.html")
    doc = result.to_dict() | {"outputs": outputs}
    with atomic_outputs() as stage:
        write_text(stage(outputs["csv"]), result.csv)
        write_text(stage(outputs["json"]), json.dumps(doc, indent=2, allow_nan=False) + "\n")
        # The CSVs of clustersim's own (SimAI's EndToEnd.csv keeps SimAI's layout) say what made them.
        made_by = comment_lines(result.provenance)
        if result.links is not None:
            write_csv(stage(outputs["links"]), links_rows(result.links), made_by)
            write_text(stage(outputs["trace"]), result.trace or "")
        if stats is not None:
            write_csv(stage(outputs["seeds"]), seeds_rows(stats), made_by)
        if args.visual:
            from clustersim import charts

            title = f"{result.run_name} ({result.mode})"
            charts.write_all(
                result.summary,
                result.layers,
                title,
                png=stage(outputs["png"]),
                svg=stage(outputs["svg"]),
                html=stage(outputs["html"]),
            )
    if args.json:
        print_json(doc)
        return
    print_summary(result)
    if stats is not None:
        t = stats["total_us"]
        n = len(stats["seeds"])
        print(
            f"over {n} ECMP seeds: iteration time mean {t['mean'] / 1000:.3f} ms,"
            f" min {t['min'] / 1000:.3f} ms, max {t['max'] / 1000:.3f} ms (per seed: {outputs['seeds']})"
        )
    wrote(list(outputs.values()))


LABELS = {
    "compute_us": "compute",
    "exposed_tp_us": "exposed TP comm",
    "exposed_ep_us": "exposed EP comm",
    "exposed_dp_us": "exposed DP comm",
    "exposed_dp_ep_us": "exposed DP_EP comm",
    "exposed_pp_us": "exposed PP comm",
    "bubble_us": "pipeline bubble",
}


def print_summary(result: AnalyticalResult) -> None:
    summary, pct = result.summary, result.breakdown()
    print(f"iteration time  {summary['total_us'] / 1000:12.3f} ms")
    for key, label in LABELS.items():
        print(f"  {label:<20}{summary[key] / 1000:12.3f} ms {pct[key.removesuffix('_us') + '_pct']:6.2f}%")
    if result.faults is not None:
        from clustersim.fabric import fault_line

        print(fault_line(result.faults))


def links_rows(links: Table) -> list[list[object]]:
    """Per-link traffic, busiest first, header first."""
    order = sorted(range(len(links)), key=lambda i: -links["bytes"][i])
    rows: list[list[object]] = [["src", "dst", "bandwidth_gbps", "bytes", "utilisation"]]
    for i in order:
        rows.append(
            [links["src"][i], links["dst"][i]]
            + [f"{links[k][i]:.6g}" for k in ("bandwidth_gbps", "bytes", "utilisation")]
        )
    return rows


def seeds_rows(stats: dict[str, Any]) -> list[list[object]]:
    """One row per ECMP seed, then the mean, min and max rows."""
    keys: list[str] = stats["columns"]
    rows: list[list[object]] = [["seed", *keys]]
    for row in stats["rows"]:
        rows.append([row["seed"]] + [f"{row[k]:.6g}" for k in keys])
    for what in ("mean", "min", "max"):
        rows.append([what] + [f"{stats[k][what]:.6g}" for k in keys])
    return rows
