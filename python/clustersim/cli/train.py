"""`clustersim train`: one Megatron-Core training iteration from a model and a parallel plan."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from clustersim.cli.common import (
    add_backend,
    add_fabric,
    add_json,
    add_options,
    add_progress,
    add_result,
    add_routes,
    backend_spec,
    fabric_options,
    no_charts_without_prefix,
    option_values,
    print_json,
    progress_for,
    wrote,
)
from clustersim.errors import InputError
from clustersim.files import atomic_outputs, write_csv, write_text
from clustersim.plan import OPTIONS
from clustersim.provenance import comment_lines

if TYPE_CHECKING:
    from clustersim.api import TrainResult

EPILOG = """\
examples:
  clustersim train --model llama3-70b --gpus 1024 --gpu h100 --tp 8 --pp 4 --vpp 2 --gbs 1024 --seq 8192 --sp --dist-opt
  clustersim train --model llama3-8b --gpus 16 --tp 8 --gbs 16 --seq 2048 -n Spectrum-X:16 -r results/llama3-8b- -v
  clustersim train --model llama2-13b --gpus 256 --gpu h100:128,a100:128 --tp 8 --gbs 256 --seq 4096 --dist-opt"""  # noqa: E501


DESCRIPTION = (
    "Generate one Megatron-Core training iteration (TP, SP, PP with simulated 1F1B or interleaved"
    " schedules, DP/ZeRO, EP, CP, recompute) and simulate it on the analytical network model, or"
    " with -n on a fabric with the flow model. -r PREFIX writes PREFIXsummary.json,"
    " PREFIXlayers.csv and PREFIXtrace.json (Chrome/Perfetto)."
)


def arguments(p: argparse.ArgumentParser) -> None:
    add_options(p, OPTIONS)
    p.add_argument(
        "--allow-oom", action="store_true", help="simulate even if the plan does not fit in memory"
    )
    p.add_argument("-o", "--output", help="also write the result as JSON to OUTPUT")
    add_result(p, "none by default")
    add_fabric(p, required=False, what="run communication on this fabric (flows; --backend packet: packets)")
    add_backend(p)
    add_routes(p)
    add_json(p)
    add_progress(p)
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from clustersim.api import train
    from clustersim.training import chart_inputs, layers_rows, stage_table, stages_rows

    no_charts_without_prefix(args)
    fabric = args.topology is not None or args.calibration is not None
    flow = fabric_options(args) | {"routes": args.routes, "backend": backend_spec(args)}
    if not fabric and args.backend != "flow":
        raise InputError("command line: --backend: moves a fabric's transfers; give the fabric (-n)")
    if not fabric:
        # Reduction servers without a fabric are refused by train(); the rest is the fabric's.
        flow = {k: flow[k] for k in ("reduction", "switch_reduce_gbps")}
    progress = progress_for(args)
    try:
        result = train(
            allow_oom=args.allow_oom,
            trace=args.result is not None,
            progress=progress,
            **option_values(args, OPTIONS),
            **flow,
        )
    finally:
        progress.close()
    for w in result.data.get("warnings", []):
        print(f"warning: {w}", file=sys.stderr)
    doc = result.to_dict()
    text = json.dumps(doc, indent=2, allow_nan=False) + "\n"
    written = []
    with atomic_outputs() as stage:
        if args.output:
            write_text(stage(args.output), text)
            written.append(args.output)
        if args.result is not None:
            prefix = str(Path(args.result_folder) / args.result) if args.result_folder else args.result
            names = [prefix + n for n in ("summary.json", "layers.csv", "stages.csv", "trace.json")]
            write_text(stage(names[0]), text)
            made_by = comment_lines(result.provenance)
            write_csv(stage(names[1]), layers_rows(result.data), made_by)
            write_csv(stage(names[2]), stages_rows(result.data), made_by)
            write_text(stage(names[3]), result.trace or "")
            if args.visual:
                from clustersim import charts

                summary, layers = chart_inputs(result.data)
                title = f"{result.model} on {args.gpus} × {result.accelerator}"
                charts_at = {k: prefix + f"chart.{k}" for k in ("png", "svg", "html")}
                charts.write_all(
                    summary,
                    layers,
                    title,
                    stages=stage_table(result.data),
                    **{k: stage(v) for k, v in charts_at.items()},
                )
                names += list(charts_at.values())
            written += names
    if args.json:
        print_json(doc)
        return 0
    print_result(result)
    wrote(written)
    return 0


def print_result(result: TrainResult) -> None:
    from clustersim.training import stage_parts

    r = result.data
    acc = result.accelerator_spec or {}
    print(f"{result.model} on {result.gpus} × {result.accelerator}: {r['params'] / 1e9:.2f} B parameters")
    shape = f"{r['micro_batches']} micro-batches, DP {r['dp']}"
    print(f"iteration time  {r['iteration_s']:10.3f} s   ({shape})")
    print(f"throughput      {r['tokens_per_s']:10.0f} tokens/s")
    print(f"MFU             {r['mfu'] * 100:10.1f} %")
    if "faults" in r:
        from clustersim.fabric import fault_line

        print(fault_line(r["faults"]))
    for t in r.get("per_type", []):
        use = f"busy {t['busy'] * 100:5.1f} %, MFU {t['mfu'] * 100:5.1f} %"
        print(f"  {t['accelerator']:<12}{t['gpus']:>6} GPUs   {use}")
    if "kernels" in r:
        k = r["kernels"]
        counts = f"{k['measured']:>10} measured (table), {k['modelled']} modelled"
        print(f"kernels         {counts} (distinct kernels)")
    stages = r["stages"]
    # The headline is the critical stage's (the busiest: it bounds the iteration), with every
    # communication it waits on; in a mixed job, its slowest type's ranks.
    whose = [f"stage {r['breakdown_stage']}"] if len(stages) > 1 else []
    if "breakdown_accelerator" in r and len(stages) > 1:
        whose.append(f"{r['breakdown_accelerator']} ranks")
    if whose:
        print(f"where the time goes ({', '.join(whose)}, the busiest: it bounds the iteration):")
    else:
        print("where the time goes:")
    for part, seconds in r["breakdown_s"]:
        if seconds > 0:
            print(f"  {part:<26}{seconds:10.3f} s {seconds / r['iteration_s'] * 100:6.1f}%")
    if len(stages) > 1:
        print(
            f"critical stage  {r['critical_stage']:>10}     busiest; bounded by {r['critical_bound']}"
            f" ({max(s['busy_s'] for s in stages):.3f} s busy)"
        )
        # A mixed job lists each (stage, type) of ranks, and what the faster types wait for.
        typed = any("accelerator" in s for s in stages)
        head = f"   {'type':<10}" if typed else ""
        waits = "   waiting s" if typed else ""
        columns = f"layers   compute s   exposed comm s   bubble s{waits}   memory GB   largest exposed comm"
        print(f"  stage{head}   {columns}")
        for s in stages:
            compute, exposed, bubble, waiting = stage_parts(s)
            comm = [(v, k) for k, v in s["breakdown_s"] if k.startswith("exposed ") and v > 0]
            top = max(comm)[1].removeprefix("exposed ") if comm else "-"
            kind = f"   {s.get('accelerator', ''):<10}" if typed else ""
            times = f"{compute:11.3f} {exposed:16.3f} {bubble:10.3f}" + (f" {waiting:11.3f}" if typed else "")
            print(f"  {s['stage']:>5}{kind} {s['layers']:>8} {times} {s['memory_gb']:11.1f}   {top}")
    mem = r["memory"]
    fits = "fits" if r["memory_fits"] else "DOES NOT FIT"
    room = "every type's HBM" if "per_type" in r else f"{acc.get('hbm_gb')} GB"
    largest = f", stage {max(stages, key=lambda s: s['memory_gb'])['stage']}" if len(stages) > 1 else ""
    print(f"memory per GPU  {mem['total_gb']:10.1f} GB ({fits} in {room}{largest}):")
    for key, what in MEMORY_PARTS:
        print(f"  {what:<36}{mem[key]:8.2f} GB")


# The memory report's lines: tensors, then what a real process holds beside them.
MEMORY_PARTS = (
    ("params_gb", "weights"),
    ("grads_and_optimizer_gb", "gradients + optimizer"),
    ("activations_gb", "activations"),
    ("cuda_context_gb", "CUDA context"),
    ("nccl_buffers_gb", "NCCL buffers"),
    ("fragmentation_gb", "allocator fragmentation "),
)
