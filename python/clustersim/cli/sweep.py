"""`clustersim sweep`: every point of a sweep spec simulated, each stored as it finishes (resumable)."""

from __future__ import annotations

import argparse
from pathlib import Path

from clustersim.cli.common import add_progress, count, progress_for, wrote
from clustersim.files import atomic_outputs

EPILOG = """\
examples:
  clustersim sweep examples/sweep_llama3_8b.yaml -o results/llama3-8b.sqlite --workers 2 --csv results/llama3-8b.csv
  clustersim report results/llama3-8b.sqlite -o results/llama3-8b.html"""  # noqa: E501


DESCRIPTION = (
    "Simulate every point of SPEC (YAML: a command — train, run, collective, analytical or goodput —, the"
    " options every point shares, and a grid, a list or a seeded random sample over the others)"
    " and store each point in a SQLite store as it finishes. Run again after an interruption"
    " (kill -9 included): the points already stored are kept and only the others simulated."
)


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("spec", metavar="SPEC", help="the sweep spec (YAML)")
    p.add_argument(
        "-o", "--output", metavar="STORE", help="the SQLite store (default: SPEC with the suffix .sqlite)"
    )
    p.add_argument("--workers", type=count, default=1, help="worker processes (default 1: this one)")
    p.add_argument(
        "--ray",
        metavar="ADDRESS",
        help="run the points on a Ray cluster: HOST:PORT, auto, or local (start one here of --workers CPUs);"
        " needs clustersim[ray]",
    )
    p.add_argument("--csv", metavar="FILE", help="also write every stored point to this CSV file")
    p.add_argument(
        "--parquet", metavar="FILE", help="also write every stored point to this Parquet file (pyarrow)"
    )
    add_progress(p)
    p.set_defaults(func=main, interrupted=kept)


def kept(args: argparse.Namespace) -> str:
    """What an interrupted sweep kept: the points stored so far."""
    path = args.output or str(Path(args.spec).with_suffix(".sqlite"))
    return f"the points simulated so far are kept in {path}; run the same sweep again to resume"


def main(args: argparse.Namespace) -> int:
    from clustersim.explore import export, store
    from clustersim.explore.execute import sweep
    from clustersim.explore.spec import load_spec

    spec = load_spec(args.spec)
    path = args.output or str(Path(args.spec).with_suffix(".sqlite"))
    if args.parquet:
        export.need_pyarrow(args.parquet)
    progress = progress_for(args, "sweeping")
    try:
        done = sweep(spec, path, workers=args.workers, ray=args.ray, progress=progress)
    finally:
        progress.close()
    infeasible = f" ({done.infeasible} infeasible)" if done.infeasible else ""
    print(
        f"{done.points} points of {spec.command}: {done.skipped} already stored, {done.simulated} simulated"
        f"{infeasible}"
    )
    stored = store.read(path)
    table = export.table(stored)
    ok = [r for r in table.rows() if r["status"] == "ok"]
    if ok:
        best = max(ok, key=lambda r: r["throughput"])
        plan = " ".join(f"{k}={best[k]}" for k in stored.varying)
        print(
            f"best: point {best['seq']} ({plan}), {export.THROUGHPUT[spec.command]} {best['throughput']:.6g}"
        )
    written = [path]
    if args.csv or args.parquet:
        with atomic_outputs() as stage:
            if args.csv:
                export.write_csv(table, stage(args.csv), sweep_comments(args, stored.command))
                written.append(args.csv)
            if args.parquet:
                export.write_parquet(table, stage(args.parquet))
                written.append(args.parquet)
    wrote(written)
    return 0


def sweep_comments(args: argparse.Namespace, command: str) -> list[str]:
    """What made a sweep's CSV: the sweep's command and version; each row's own provenance
    (model, fabric, backend) is in its `provenance.` columns, its plan in its options."""
    from clustersim import __version__
    from clustersim.provenance import call_text

    return [
        f"# command: {call_text('sweep', {'spec': args.spec, 'output': args.output})}",
        f"# version: {__version__}",
        f"# spec: {args.spec} ({command}); each row: its options, and what made it (provenance. columns)",
    ]
