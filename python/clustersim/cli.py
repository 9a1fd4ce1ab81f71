"""The `clustersim` command."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from clustersim.collective import (
    add_collective,
    add_ecmp_arguments,
    add_seed_argument,
    ecmp_seeds,
    qps_option,
    seed_stats,
)
from clustersim.errors import EnginePanic, InputError, InternalError
from clustersim.table import Table
from clustersim.workload import Workload

EPILOG_ANALYTICAL = """\
SimAI_analytical's flags are accepted as they are, e.g.
  clustersim analytical -w workload.txt -g 9216 -g_p_s 8 -r test- -busbw busbw.yaml
  clustersim analytical -w workload.txt -g 9216 -nv 360 -nic 48.5 -n_p_s 8 -g_p_s 8 -r example-
Outputs: <prefix>EndToEnd.csv (SimAI's layout, times in µs) and <prefix>summary.json;
with -v also <prefix>chart.png and <prefix>chart.html. --json prints the summary as JSON.
Without --compat simai, SimAI's known quirks are corrected (see the README)."""


# Exit status of an internal error (a bug in clustersim), as sysexits.h's EX_SOFTWARE.
EX_SOFTWARE = 70


class Parser(argparse.ArgumentParser):
    """argparse, with usage errors on one line like every other clustersim error."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"clustersim: error: {message} (see {self.prog} --help)\n")


def count(text: str) -> int:
    """argparse type: a GPU or NIC count (1 … 2^32 − 1)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: '{text}'") from None
    if not 1 <= value <= 2**32 - 1:
        raise argparse.ArgumentTypeError(f"must be from 1 to {2**32 - 1}, got {value}")
    return value


class Progress:
    """A progress line on stderr for runs that take long enough to need one."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.start = time.monotonic()
        self.shown = False

    def __call__(self, fraction: float) -> None:
        if time.monotonic() - self.start < 1.0 or not sys.stderr.isatty():
            return
        self.shown = True
        bar = "#" * int(fraction * 30)
        sys.stderr.write(f"\r{self.label} [{bar:<30}] {fraction * 100:5.1f}%")
        sys.stderr.flush()

    def close(self) -> None:
        if self.shown:
            sys.stderr.write("\n")


def add_analytical(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "analytical",
        help="simulate a SimAI workload file with the analytical network model (SimAI_analytical's flags)",
        description="Simulate one training iteration of a SimAI/AICB workload on the analytical backend.",
        epilog=EPILOG_ANALYTICAL,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    add_workload_run_arguments(p)
    p.set_defaults(func=run_analytical, topology=None)
    r = sub.add_parser(
        "run",
        help="simulate a SimAI workload file on a fabric (-n topology) with the flow model",
        description=(
            "Simulate one training iteration of a SimAI/AICB workload with every collective turned into"
            " transfers on the fabric of a SimAI topology file (clustersim topo writes them), links shared"
            " max-min fairly. Writes <prefix>EndToEnd.csv, <prefix>summary.json, <prefix>links.csv"
            " (per-link utilisation) and <prefix>trace.json (Chrome/Perfetto)."
        ),
        epilog="example: clustersim topo -topo Spectrum-X -g 128 -o fabric.txt && "
        "clustersim run -w examples/workload_analytical.txt -g 128 -n fabric.txt",
        allow_abbrev=False,
    )
    add_workload_run_arguments(r)
    r.add_argument("-n", "--topology", required=True, help="SimAI topology file (see clustersim topo)")
    add_fabric_arguments(r)
    add_ecmp_arguments(r)
    r.set_defaults(func=run_analytical)


def add_fabric_arguments(p: argparse.ArgumentParser) -> None:
    """How collectives run on the fabric (flow backend); SimAI's AS_* variables are honoured."""
    p.add_argument("--algo", default="auto", help="collective algorithm, or auto (NCCL's tuner; default)")
    p.add_argument(
        "--channels",
        type=int,
        default=0,
        help="rings/trees per collective (default: one per group rank of a server, at most one per NIC)",
    )
    add_seed_argument(p)
    p.add_argument(
        "--routes",
        help="routes file: one route per line, the nodes of its path from source to destination;"
        " flows between those end nodes take it instead of ECMP",
    )


def add_workload_run_arguments(p: argparse.ArgumentParser) -> None:
    """SimAI_analytical's flags and ours, shared by `analytical` and `run`."""
    p.add_argument("-w", "--workload", required=True, help="SimAI workload file (.txt written by AICB)")
    p.add_argument("-g", "--gpus", type=count, help="number of GPUs (default: the header's all_gpus)")
    p.add_argument("-g_p_s", "--gpus-per-server", type=count, default=8, help="GPUs per server (default 8)")
    p.add_argument(
        "-n_p_s", "--nics-per-server", type=count, help="NICs per server (default: GPUs per server)"
    )
    p.add_argument(
        "-g_type", "--gpu-type", default="H100", help="A100, A800, H100, H800 or H20 (default H100)"
    )
    p.add_argument("-nic_t", "--nic-type", default="cx7", help="cx6, cx7 or bf3 (default cx7)")
    p.add_argument(
        "-nv", "--nvlink-busbw", type=float, help="NVLink bus bandwidth per GPU, GB/s (overrides -g_type)"
    )
    p.add_argument("-nic", "--nic-busbw", type=float, help="bus bandwidth per NIC, GB/s (overrides -nic_t)")
    p.add_argument("-busbw", "--busbw", help="SimAI busbw.yaml with measured bus bandwidths per group")
    p.add_argument("-r", "--result", help="output prefix (default: results/<workload name>-)")
    p.add_argument("-r_f", "--result-folder", help="folder to put the output prefix in")
    p.add_argument(
        "-v", "--visual", nargs="?", type=int, const=1, default=0, help="also write charts (PNG, HTML)"
    )
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
    p.add_argument("--json", action="store_true", help="print the result as JSON on stdout")


def flow_options(args: argparse.Namespace) -> dict[str, Any]:
    """The flow backend's keyword arguments of `simulate` (none for `analytical`)."""
    if args.topology is None:
        return {}
    return dict(
        topology=args.topology,
        algorithm=args.algo,
        channels=args.channels,
        seed=args.seed,
        routes=args.routes,
    ) | ({"qps": qps_option(args.qps), "routing": args.routing} if hasattr(args, "qps") else {})


def links_csv(links: Table) -> str:
    """Per-link traffic, busiest first."""
    order = sorted(range(len(links)), key=lambda i: -links["bytes"][i])
    lines = ["src,dst,bandwidth_gbps,bytes,utilisation"]
    for i in order:
        lines.append(
            f"{links['src'][i]},{links['dst'][i]},{links['bandwidth_gbps'][i]:.6g},"
            f"{links['bytes'][i]:.6g},{links['utilisation'][i]:.6g}"
        )
    return "\n".join(lines) + "\n"


def output_prefix(args: argparse.Namespace) -> str:
    prefix = args.result if args.result is not None else f"results/{Path(args.workload).stem}-"
    if args.result_folder:
        prefix = str(Path(args.result_folder) / prefix)
    return prefix


def run_analytical(args: argparse.Namespace) -> int:
    from clustersim.analytical import simulate
    from clustersim.output import atomic_outputs, write_text

    prefix = output_prefix(args)
    flow = flow_options(args)
    seeds = ecmp_seeds(args.seed, getattr(args, "ecmp_seeds", 1)) if flow else [0]
    progress = Progress("simulating")
    try:
        results = [
            simulate(
                args.workload,
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
                progress=progress,
                **(flow | {"seed": seed} if flow else {}),
            )
            for seed in seeds
        ]
    finally:
        progress.close()
    result = results[0]
    for w in result.warnings:
        print(f"warning: {w}", file=sys.stderr)
    outputs = {"csv": prefix + "EndToEnd.csv", "json": prefix + "summary.json"}
    if result.links is not None:
        outputs.update(links=prefix + "links.csv", trace=prefix + "trace.json")
    if len(seeds) > 1:
        outputs.update(seeds=prefix + "seeds.csv")
    if args.visual:
        outputs.update(png=prefix + "chart.png", html=prefix + "chart.html")
    doc = result.to_dict() | {"outputs": outputs}
    stats = None
    if len(seeds) > 1:
        rows = [{"seed": seed} | r.summary for seed, r in zip(seeds, results, strict=True)]
        stats = seed_stats(rows, [k for k in result.summary if k.endswith("_us")])
        doc["ecmp_seeds"] = stats
    with atomic_outputs() as stage:
        write_text(stage(outputs["csv"]), result.csv)
        write_text(stage(outputs["json"]), json.dumps(doc, indent=2, allow_nan=False) + "\n")
        if result.links is not None:
            write_text(stage(outputs["links"]), links_csv(result.links))
            write_text(stage(outputs["trace"]), result.trace or "")
        if stats is not None:
            write_text(stage(outputs["seeds"]), seeds_csv(stats))
        if args.visual:
            from clustersim import charts

            title = f"{result.run_name} ({result.mode})"
            charts.write_png(result.summary, result.layers, title, stage(outputs["png"]))
            charts.write_html(result.summary, result.layers, title, stage(outputs["html"]))
    if args.json:
        print(json.dumps(doc, indent=2, allow_nan=False))
    else:
        print_summary(result.summary, result.breakdown(), outputs)
        if stats is not None:
            t = stats["total_us"]
            print(
                f"over {len(seeds)} ECMP seeds: iteration time mean {t['mean'] / 1000:.3f} ms,"
                f" min {t['min'] / 1000:.3f} ms, max {t['max'] / 1000:.3f} ms (per seed: {outputs['seeds']})"
            )
    return 0


def seeds_csv(stats: dict[str, Any]) -> str:
    """One row per ECMP seed, then the mean, min and max rows."""
    keys = list(stats["columns"])
    lines = [",".join(["seed", *keys])]
    for row in stats["rows"]:
        lines.append(",".join([str(row["seed"])] + [f"{row[k]:.6g}" for k in keys]))
    for what in ("mean", "min", "max"):
        lines.append(",".join([what] + [f"{stats[k][what]:.6g}" for k in keys]))
    return "\n".join(lines) + "\n"


def print_summary(summary: dict[str, float], pct: dict[str, float], outputs: dict[str, str]) -> None:
    labels = {
        "compute_us": "compute",
        "exposed_tp_us": "exposed TP comm",
        "exposed_ep_us": "exposed EP comm",
        "exposed_dp_us": "exposed DP comm",
        "exposed_dp_ep_us": "exposed DP_EP comm",
        "exposed_pp_us": "exposed PP comm",
        "bubble_us": "pipeline bubble",
    }
    print(f"iteration time  {summary['total_us'] / 1000:12.3f} ms")
    for key, label in labels.items():
        print(f"  {label:<20}{summary[key] / 1000:12.3f} ms {pct[key]:6.2f}%")
    print("wrote " + ", ".join(outputs.values()))


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="clustersim",
        description="Simulate AI training clusters: how long one iteration takes, and where the time goes.",
        allow_abbrev=False,
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_analytical(sub)
    add_train(sub)
    add_workload(sub)
    add_topo(sub)
    add_collective(sub)
    return parser


def add_train(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "train",
        help="simulate one training iteration of a model with a parallel plan (Megatron-Core)",
        description=(
            "Generate one Megatron-Core training iteration (TP, SP, PP with simulated 1F1B or interleaved"
            " schedules, DP/ZeRO, EP, CP, recompute) and simulate it on the analytical network model."
        ),
        epilog="example: clustersim train --model llama3-70b --gpus 1024 --gpu h100 --tp 8 --pp 4 --vpp 2 "
        "--gbs 1024 --seq 8192 --sp --dist-opt",
        allow_abbrev=False,
    )
    add_plan_arguments(p)
    p.add_argument(
        "--allow-oom", action="store_true", help="simulate even if the plan does not fit in memory"
    )
    p.add_argument("-o", "--output", help="also write the result as JSON to OUTPUT")
    p.add_argument(
        "-r",
        "--result-prefix",
        help="write PREFIXsummary.json, PREFIXlayers.csv and PREFIXtrace.json (Chrome/Perfetto)",
    )
    p.add_argument("-v", "--visual", action="store_true", help="with -r: also PREFIXchart.png and .html")
    p.add_argument(
        "-n", "--topology", help="run communication on this fabric (SimAI topology file) with the flow model"
    )
    add_fabric_arguments(p)
    p.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    p.set_defaults(func=run_train)


def add_plan_arguments(p: argparse.ArgumentParser) -> None:
    """Model, accelerator and parallel plan: shared by `train` and `workload generate`."""
    p.add_argument("--model", required=True, help="catalog name, a YAML/JSON model file, or a HF config.json")
    p.add_argument("--gpus", type=count, required=True, help="number of GPUs")
    p.add_argument("--gpu", default="h100", help="accelerator name from the catalog (default h100)")
    p.add_argument("--accelerators", help="YAML file of extra accelerator descriptions")
    for name, what in (("tp", "tensor"), ("pp", "pipeline"), ("ep", "expert"), ("cp", "context")):
        p.add_argument(f"--{name}", type=count, default=1, help=f"{what}-parallel size (default 1)")
    p.add_argument("--vpp", type=count, default=1, help="virtual pipeline stages per GPU (interleaving)")
    p.add_argument("--mbs", type=count, default=1, help="micro-batch size in sequences (default 1)")
    p.add_argument("--gbs", type=count, required=True, help="global batch size in sequences")
    p.add_argument("--seq", type=count, help="sequence length (default: the model's)")
    p.add_argument("--sp", action="store_true", help="sequence parallelism")
    p.add_argument(
        "--first-stage-layers", type=count, help="layers of the first pipeline stage (uneven pipelines)"
    )
    p.add_argument(
        "--last-stage-layers", type=count, help="layers of the last pipeline stage (uneven pipelines)"
    )
    dp = p.add_mutually_exclusive_group()
    dp.add_argument("--dist-opt", action="store_true", help="Megatron's distributed optimizer")
    dp.add_argument("--zero", type=int, choices=[1, 2, 3], help="DeepSpeed ZeRO stage")
    p.add_argument("--recompute", choices=["none", "selective", "full"], default="none")
    p.add_argument("--no-flash-attn", action="store_true", help="unfused attention (s×s scores in HBM)")
    p.add_argument("--gpus-per-server", type=count, default=8)
    p.add_argument("--nics-per-server", type=count, help="default: one per GPU")
    p.add_argument("--nic-busbw", type=float, help="bus bandwidth per NIC, GB/s (default: the accelerator's)")
    for flag in ("layers", "hidden", "heads", "kv-heads", "ffn", "vocab", "experts", "topk"):
        p.add_argument(f"--{flag}", type=count, help=f"override the model's {flag.replace('-', ' ')}")


def plan_from_args(args: argparse.Namespace) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(model, accelerator, plan keyword arguments) from `add_plan_arguments`' flags."""
    from clustersim.catalog import lookup
    from clustersim.models import resolve

    model = resolve(
        args.model,
        {
            "layers": args.layers,
            "hidden": args.hidden,
            "heads": args.heads,
            "kv_heads": args.kv_heads,
            "ffn": args.ffn,
            "vocab": args.vocab,
        },
    )
    if args.experts or args.topk:
        moe = dict(model.get("moe") or {"expert_ffn": model["ffn"], "topk": 1, "experts": 1})
        moe.update({k: v for k, v in (("experts", args.experts), ("topk", args.topk)) if v})
        model["moe"] = moe
    accelerator = lookup("accelerators", args.gpu, args.accelerators)
    dp = "distributed_optimizer" if args.dist_opt else f"zero{args.zero}" if args.zero else "ddp"
    plan = dict(
        gpus=args.gpus,
        accelerator=accelerator,
        tp=args.tp,
        pp=args.pp,
        vpp=args.vpp,
        ep=args.ep,
        cp=args.cp,
        mbs=args.mbs,
        gbs=args.gbs,
        seq=args.seq,
        sp=args.sp,
        dp=dp,
        recompute=args.recompute,
        flash_attention=not args.no_flash_attn,
        gpus_per_server=args.gpus_per_server,
        nics_per_server=args.nics_per_server,
        nic_busbw=args.nic_busbw,
        first_stage_layers=args.first_stage_layers,
        last_stage_layers=args.last_stage_layers,
    )
    return model, accelerator, plan


def run_train(args: argparse.Namespace) -> int:
    from clustersim.output import atomic_outputs, write_text
    from clustersim.training import chart_inputs, layers_csv, train

    if args.visual and not args.result_prefix:
        raise InputError("-v/--visual: charts are written next to the other results; give -r PREFIX too")
    model, accelerator, plan = plan_from_args(args)
    progress = Progress("simulating")
    try:
        result = train(
            model,
            allow_oom=args.allow_oom,
            trace=bool(args.result_prefix),
            progress=progress,
            **plan,
            **flow_options(args),
        )
    finally:
        progress.close()
    trace = result.pop("trace", None)
    doc = {"model": model["name"], "accelerator": accelerator["name"], "gpus": args.gpus} | result
    text = json.dumps(doc, indent=2, allow_nan=False) + "\n"
    with atomic_outputs() as stage:
        if args.output:
            write_text(stage(args.output), text)
        if args.result_prefix:
            prefix = args.result_prefix
            write_text(stage(prefix + "summary.json"), text)
            write_text(stage(prefix + "layers.csv"), layers_csv(result))
            write_text(stage(prefix + "trace.json"), trace or "")
            if args.visual:
                from clustersim import charts

                summary, layers = chart_inputs(result)
                title = f"{model['name']} on {args.gpus} × {accelerator['name']}"
                charts.write_png(summary, layers, title, stage(prefix + "chart.png"))
                charts.write_html(summary, layers, title, stage(prefix + "chart.html"))
    if args.json:
        print(json.dumps(doc, indent=2, allow_nan=False))
        return 0
    print(
        f"{model['name']} on {args.gpus} × {accelerator['name']}: {result['params'] / 1e9:.2f} B parameters"
    )
    shape = f"{result['micro_batches']} micro-batches, DP {result['dp']}"
    print(f"iteration time  {result['iteration_s']:10.3f} s   ({shape})")
    print(f"throughput      {result['tokens_per_s']:10.0f} tokens/s")
    print(f"MFU             {result['mfu'] * 100:10.1f} %")
    for part, seconds in result["breakdown_s"]:
        if seconds > 0:
            print(f"  {part:<22}{seconds:10.3f} s {seconds / result['iteration_s'] * 100:6.1f}%")
    mem = result["memory"]
    fits = "fits" if result["memory_fits"] else "DOES NOT FIT"
    print(
        f"memory per GPU  {mem['total_gb']:10.1f} GB ({fits} in {accelerator['hbm_gb']} GB): weights "
        f"{mem['params_gb']:.1f}, gradients + optimizer {mem['grads_and_optimizer_gb']:.1f}, "
        f"activations {mem['activations_gb']:.1f}"
    )
    return 0


def add_workload(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "workload",
        help="generate, check, rewrite or export workloads (SimAI files, IR JSON)",
        allow_abbrev=False,
    )
    wsub = p.add_subparsers(dest="workload_command", required=True, metavar="ACTION")
    c = wsub.add_parser(
        "check",
        help="read a workload (SimAI file or IR JSON) and report what it holds",
        description="A SimAI workload file: its header and row count. Workload IR JSON"
        " (docs/workload-ir.md): every invariant checked, then its ranks, groups and ops counted.",
    )
    c.add_argument("file")
    c.add_argument("--lenient", action="store_true", help="accept a wrong row count on line 2")
    c.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    c.set_defaults(func=run_workload_check)
    r = wsub.add_parser("rewrite", help="read a workload file and write it back in its header variant")
    r.add_argument("file")
    r.add_argument("-o", "--output", required=True, help="where to write")
    r.add_argument("--lenient", action="store_true", help="accept a wrong row count on line 2")
    r.add_argument("--json", action="store_true", help="print what was written as JSON on stdout")
    r.set_defaults(func=run_workload_rewrite)
    g = wsub.add_parser(
        "generate",
        help="write one training iteration as a SimAI workload file (no GPU needed)",
        description=(
            "Write one pipeline stage of a Megatron-Core iteration as a SimAI workload file: the"
            " collectives Megatron issues, or with --aicb-compat exactly the rows AICB writes."
            " Compute times come from clustersim's roofline model."
        ),
        epilog="example: clustersim workload generate --model gpt-175b --gpus 1024 --tp 8 --pp 8 --sp "
        "--gbs 1024 --seq 2048 -o gpt175b.txt",
        allow_abbrev=False,
    )
    add_plan_arguments(g)
    g.add_argument(
        "--aicb-compat", action="store_true", help="AICB's rows and quirks (to compare with SimAI)"
    )
    g.add_argument("-o", "--output", required=True, help="where to write the workload file")
    g.add_argument(
        "--ir",
        action="store_true",
        help="write the whole iteration (every stage) as workload IR JSON (docs/workload-ir.md) instead",
    )
    g.add_argument("--json", action="store_true", help="print what was written as JSON on stdout")
    g.set_defaults(func=run_workload_generate)
    x = wsub.add_parser(
        "export",
        help="write the IR a SimAI workload file becomes as workload IR JSON",
        description="Build the IR of a SimAI workload file as `clustersim analytical` does in its default"
        " mode and write it as workload IR JSON (docs/workload-ir.md).",
        allow_abbrev=False,
    )
    x.add_argument("file")
    x.add_argument("-o", "--output", required=True, help="where to write the IR JSON")
    x.add_argument("-g", "--gpus", type=count, help="number of GPUs (default: the header's all_gpus)")
    x.add_argument("-g_p_s", "--gpus-per-server", type=count, default=8, help="GPUs per server (default 8)")
    x.add_argument("--lenient", action="store_true", help="accept a wrong row count on line 2")
    x.add_argument("--json", action="store_true", help="print what was written as JSON on stdout")
    x.set_defaults(func=run_workload_export)


def ir_summary(w: Workload) -> dict[str, Any]:
    """What `workload check` and `export` report of an IR workload."""
    return {"ranks": w.ranks, "groups": [g["name"] for g in w.groups]} | w.counts()


def print_fields(info: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps(info, indent=2))
    else:
        for k, v in info.items():
            print(f"{k:>20}: {v}")


def run_workload_check(args: argparse.Namespace) -> int:
    from clustersim import _engine
    from clustersim.analytical import read_text

    text = read_text(args.file, "workload")
    if text.lstrip().startswith("{"):
        info = {"format": "workload IR JSON"} | ir_summary(Workload.from_json(text, args.file))
        print_fields(info, args.json)
        return 0
    info = _engine.inspect_workload(args.file, text, lenient=args.lenient)
    for w in info.pop("warnings"):
        print(f"warning: {w}", file=sys.stderr)
    names = info.pop("row_names")
    info["distinct_row_names"] = sorted(set(names))
    print_fields(info, args.json)
    return 0


def run_workload_export(args: argparse.Namespace) -> int:
    w = Workload.from_simai(
        args.file, gpus=args.gpus, gpus_per_server=args.gpus_per_server, lenient=args.lenient
    )
    w.save(args.output)
    print_fields({"output": args.output} | ir_summary(w), args.json)
    return 0


def run_workload_rewrite(args: argparse.Namespace) -> int:
    from clustersim import _engine
    from clustersim.analytical import read_text
    from clustersim.output import atomic_outputs, write_text

    text, warnings = _engine.rewrite_workload(
        args.file, read_text(args.file, "workload"), lenient=args.lenient
    )
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)
    with atomic_outputs() as stage:
        write_text(stage(args.output), text)
    if args.json:
        print(json.dumps({"input": args.file, "output": args.output}))
    return 0


def run_workload_generate(args: argparse.Namespace) -> int:
    from clustersim.output import atomic_outputs, write_text
    from clustersim.training import workload_text

    model, _, plan = plan_from_args(args)
    if args.ir:
        if args.aicb_compat:
            raise InputError("command line: --ir: AICB's rows are a SimAI file only; drop --aicb-compat")
        w = Workload.from_training(model, **plan)
        w.save(args.output)
        print_fields({"output": args.output} | ir_summary(w), args.json)
        return 0
    text = workload_text(model, aicb_compat=args.aicb_compat, **plan)
    with atomic_outputs() as stage:
        write_text(stage(args.output), text)
    rows = int(text.split("\n", 2)[1])
    if args.json:
        print(json.dumps({"output": args.output, "rows": rows, "aicb_compat": args.aicb_compat}))
    else:
        print(f"wrote {args.output}: {rows} rows ({'AICB rows' if args.aicb_compat else 'Megatron-Core'})")
    return 0


def add_topo(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "topo",
        help="write a fabric as a SimAI topology file (gen_Topo_Template.py's flags, fat-trees, pods)",
        description=(
            "Build a fabric from a template and write it as a SimAI topology file, line for line what"
            " SimAI's gen_Topo_Template.py writes for the same flags. Beyond SimAI: --fat-tree K builds a"
            " k-ary fat-tree of k^3/4 GPUs, --pods N joins N pods of a template with a core tier."
        ),
        epilog="examples: clustersim topo -topo AlibabaHPN -g 2048 --dp\n"
        "          clustersim topo -topo Spectrum-X -g 4096 --pods 4 -o cluster.txt\n"
        "          clustersim topo --fat-tree 16 -gps 8 --json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    from clustersim.topology import TEMPLATES

    p.add_argument("-topo", "--topology", help=f"{', '.join(TEMPLATES)} (default: a custom fabric)")
    p.add_argument("--ro", action="store_true", help="rail-optimised (custom fabric)")
    p.add_argument("--dt", action="store_true", help="dual ToR (custom fabric, DCN+)")
    p.add_argument("--dp", action="store_true", help="dual plane (custom fabric, AlibabaHPN)")
    p.add_argument("-g", "--gpu", type=count, help="GPUs per pod (default: the template's; 32 custom)")
    p.add_argument("-er", "--error_rate", help="per-packet error rate of every link (default 0)")
    p.add_argument("-gps", "--gpu_per_server", type=count, help="GPUs per server (default 8)")
    p.add_argument("-gt", "--gpu_type", help="GPU type written in the header (default H100)")
    p.add_argument("-nsps", "--nv_switch_per_server", type=int, help="NVSwitches per server (default 1)")
    p.add_argument("-nvbw", "--nvlink_bw", help="GPU-NVSwitch rate (default 2880Gbps)")
    p.add_argument("-nl", "--nv_latency", help="GPU-NVSwitch delay (default 0.000025ms)")
    p.add_argument("-l", "--latency", help="NIC and switch-switch delay (default 0.0005ms)")
    p.add_argument("-bw", "--bandwidth", help="NIC-ASW rate (default 400Gbps; 200Gbps AlibabaHPN, DCN+ --dt)")
    p.add_argument("-asn", "--asw_switch_num", type=int, help="ASW count (recomputed from the GPU count)")
    p.add_argument("-npa", "--nics_per_aswitch", type=count, help="NICs per ASW (default 64)")
    p.add_argument("-psn", "--psw_switch_num", type=int, help="PSW count per pod (default 64)")
    p.add_argument("-apbw", "--ap_bandwidth", help="switch-switch rate (default 400Gbps)")
    p.add_argument("-app", "--asw_per_psw", type=count, help="ASWs one pod can hold (default 64)")
    p.add_argument("--fat-tree", type=count, metavar="K", help="a k-ary fat-tree of K-port switches instead")
    p.add_argument("--pods", type=count, default=1, help="pods of the template joined by a core tier")
    p.add_argument("-o", "--output", help="file to write (default: gen_Topo_Template.py's file name)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")
    p.set_defaults(func=run_topo)


def run_topo(args: argparse.Namespace) -> int:
    from clustersim.topology import fat_tree, simai_template
    from clustersim.topology.params import FLAGS

    given = {name: getattr(args, name) for name in FLAGS}
    if args.fat_tree is not None:
        shaped = [f for f, on in (("-topo", args.topology), ("--pods", args.pods > 1)) if on]
        ignored = ("asw_switch_num", "nics_per_aswitch", "psw_switch_num", "asw_per_psw")
        shaped += [FLAGS[name] for name in ignored if given[name] is not None]
        if shaped:
            raise InputError(f"command line: --fat-tree: cannot be combined with {', '.join(shaped)}")
        k = args.fat_tree
        if given["gpu"] is not None and given["gpu"] != k**3 // 4:
            raise InputError(f"command line: -g: a k={k} fat-tree has {k**3 // 4} GPUs, not {given['gpu']}")
        keep = ("gpu_per_server", "nv_switch_per_server", "gpu_type", "nvlink_bw", "nv_latency")
        keep += ("bandwidth", "ap_bandwidth", "latency", "error_rate")
        topo = fat_tree(k, **{name: given[name] for name in keep if given[name] is not None})
    else:
        topo = simai_template(args.topology, ro=args.ro, dt=args.dt, dp=args.dp, pods=args.pods, **given)
    for w in topo.warnings:
        print(f"warning: {w}", file=sys.stderr)
    output = args.output or topo.name
    topo.write(output)
    summary = topo.summary() | {"output": output}
    tbps = float(summary["bisection_bandwidth_Bps"]) * 8 / 1e12  # type: ignore[arg-type]
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(
            f"{topo.name}: {topo.num_gpus} GPUs, {topo.num_nvswitches} NVSwitches, {topo.num_switches} "
            f"switches, {len(topo.links)} links, bisection {tbps:g} Tbps;"
            f" wrote {output}"
        )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        return func(args)
    except InputError as e:
        print(f"clustersim: error: {e}", file=sys.stderr)
        return 2
    except (InternalError, EnginePanic) as e:
        what = str(e) if isinstance(e, InternalError) else f"internal error: the engine panicked: {e}"
        print(f"clustersim: {what}", file=sys.stderr)
        print(
            "clustersim: this is a bug in clustersim; please report it with the command that caused it",
            file=sys.stderr,
        )
        return EX_SOFTWARE
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
