"""`clustersim goodput`: a long training run's effective training time and days to a token budget
under the failures of a catalog profile, with checkpoints, restarts and spare servers."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from clustersim.cli.common import (
    add_json,
    add_options,
    add_result,
    no_charts_without_prefix,
    option_values,
    print_json,
    whole,
    wrote,
)
from clustersim.files import atomic_outputs, write_csv, write_text
from clustersim.plan import GOODPUT_OPTIONS, OPTIONS

if TYPE_CHECKING:
    from clustersim.explore.goodput import GoodputResult


DESCRIPTION = (
    "Simulate one iteration of the plan (as `clustersim train`), then a seeded Monte Carlo of the"
    " whole run: interruptions drawn from a failure profile of the catalog (Llama 3's Table 5 by"
    " default), scaled to this job's GPUs, servers and NICs; the work since the last checkpoint"
    " lost, a restart and a restore paid, a spare server swapped in. Prints the effective training"
    " time over --days and the days to --tokens with their spread, and the checkpoint interval from"
    " Young's and Daly's formulas and from a simulated sweep. -r PREFIX writes PREFIXsummary.json,"
    " PREFIXsweep.csv and PREFIXtimeline.csv (-v: PREFIXchart.png, .svg, .html)."
)

EPILOG = """\
examples:
  clustersim goodput --model llama3-405b --gpus 16384 --tp 8 --pp 16 --vpp 8 --gbs 2048 --seq 8192 --sp --dist-opt --recompute selective --account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split --allow-oom --days 54
  clustersim goodput --model llama3-70b --gpus 1024 --tp 8 --pp 4 --gbs 1024 --seq 8192 --sp --dist-opt --tokens 15e12 --spare-servers 4 --checkpoint-interval-min 30 -r results/70b- -v"""  # noqa: E501


def arguments(p: argparse.ArgumentParser) -> None:
    add_options(p, OPTIONS)
    p.add_argument(
        "--allow-oom", action="store_true", help="simulate even if the plan does not fit in memory"
    )
    # A seed is a whole number from 0 to 2^64 − 1, as every command's --seed.
    add_options(p, GOODPUT_OPTIONS, {"seed": {"type": whole(0, 2**64 - 1)}})
    add_result(p, "none by default")
    add_json(p)
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from clustersim.explore.goodput import goodput

    no_charts_without_prefix(args)
    result = goodput(
        allow_oom=args.allow_oom, **option_values(args, OPTIONS), **option_values(args, GOODPUT_OPTIONS)
    )
    doc = result.to_dict()
    written: list[str] = []
    if args.result is not None:
        prefix = str(Path(args.result_folder) / args.result) if args.result_folder else args.result
        names = [prefix + n for n in ("summary.json", "sweep.csv", "timeline.csv")]
        with atomic_outputs() as stage:
            write_text(stage(names[0]), json.dumps(doc, indent=2, allow_nan=False) + "\n")
            write_csv(
                stage(names[1]),
                [["interval_min", "goodput_mean", "goodput_p5", "goodput_p95"], *result.sweep],
            )
            write_csv(stage(names[2]), [["day", "cause", "lost_min", "trained_days"], *result.timeline])
            if args.visual:
                from clustersim import charts

                charts_at = {k: prefix + f"chart.{k}" for k in ("png", "svg", "html")}
                categories = {c["name"]: c["category"] for c in result.causes}
                marks = {
                    "Young": result.young_min,
                    "Daly": result.daly_min,
                    "simulated best": result.simulated_optimum_min,
                }
                charts.write_goodput(
                    (result.timeline, categories, result.days, result.sweep, marks),
                    f"{result.model} on {result.gpus} × {result.accelerator}:"
                    f" goodput ({result.failures} failures)",
                    summary_rows(result),
                    **{k: stage(v) for k, v in charts_at.items()},
                )
                names += list(charts_at.values())
        written += names
    if args.json:
        print_json(doc)
        return 0
    for label, value in summary_rows(result):
        print(f"{label:<38} {value}")
    wrote(written)
    return 0


def summary_rows(r: GoodputResult) -> list[tuple[str, str]]:
    """The result's key numbers as (label, value) lines."""
    rate = sum(c["per_day"] for c in r.causes)
    rows = [
        ("Model", f"{r.model} ({r.params / 1e9:.1f}B parameters) on {r.gpus} × {r.accelerator}"),
        ("Iteration", f"{r.iteration_s:.3f} s, {r.tokens_per_s:,.0f} tokens/s"),
        (
            "Failures",
            f"{r.failures}: {rate:.2f} interruptions/day (MTBF {24 / rate:.2f} h)" if rate else r.failures,
        ),
        (
            "Checkpoint",
            f"{r.checkpoint_bytes / 1e12:.2f} TB: write {r.checkpoint_write_s:.1f} s,"
            f" restore {r.restore_s:.1f} s; restart {r.restart_s / 60:.1f} min",
        ),
        (
            "Checkpoint interval, min",
            f"{r.checkpoint_interval_min:.1f} used; Young {r.young_min:.1f}, Daly {r.daly_min:.1f},"
            f" exact {r.optimum_min:.1f}, simulated {r.simulated_optimum_min:.1f}",
        ),
    ]
    if r.effective_training_time is not None and r.interruptions is not None and r.wall_fractions is not None:
        e, n = r.effective_training_time, r.interruptions
        rows += [
            (
                f"Effective training time, {r.days:g} days",
                f"{e.mean:.2%} (5–95 %: {e.p5:.2%} – {e.p95:.2%}; closed form {r.expected_goodput:.2%})",
            ),
            ("Interruptions", f"{n.mean:.1f} (5–95 %: {n.p5:.0f} – {n.p95:.0f})"),
            (
                "Wall time lost to",
                ", ".join(f"{k} {v:.2%}" for k, v in r.wall_fractions.items() if k != "training"),
            ),
        ]
    if r.days_to_budget is not None and r.ideal_days is not None:
        d = r.days_to_budget
        rows.append(
            (
                f"Days to {r.tokens:.3g} tokens",
                f"{d.mean:.2f} (5–95 %: {d.p5:.2f} – {d.p95:.2f}; {r.ideal_days:.2f} without failures)"
                + (f"; {r.unfinished} trials unfinished" if r.unfinished else ""),
            )
        )
    rows.append(("Trials", f"{r.trials}, seed {r.seed}"))
    return rows
