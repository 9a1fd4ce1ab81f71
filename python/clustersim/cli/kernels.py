"""`clustersim kernels measure`: time every distinct kernel of one training iteration and write a
kernel table that `train --kernels TABLE` reads."""

from __future__ import annotations

import argparse
import sys

from clustersim.cli.common import add_json, add_options, count, option_values, print_json, subcommand, wrote
from clustersim.files import atomic_outputs, write_csv
from clustersim.plan import OPTIONS

EPILOG = """\
examples:
  clustersim kernels measure --layers 2 --hidden 256 --heads 4 --ffn 1024 --vocab 1000 --seq 128 --gpus 1 --gbs 2 --device cpu --repeats 1 -o results/tiny-kernels.csv
  clustersim train --layers 2 --hidden 256 --heads 4 --ffn 1024 --vocab 1000 --seq 128 --gpus 1 --gbs 2 --kernels results/tiny-kernels.csv
on a GPU (PyTorch): clustersim kernels measure --model llama3-8b --gpus 8 --gbs 8 -o llama3-8b-kernels.csv"""  # noqa: E501


DESCRIPTION = "Kernel tables: the kernels of an iteration timed on a real device."


def arguments(p: argparse.ArgumentParser) -> None:
    ksub = p.add_subparsers(dest="kernels_command", required=True, metavar="ACTION")
    m = subcommand(
        ksub,
        "measure",
        help="time every distinct kernel of one iteration (PyTorch on a GPU, or a NumPy stand-in on the CPU)",
        description=(
            "List every distinct kernel of one iteration of the plan (GEMMs of each shape, attention,"
            " norms, activations, optimizer: the op lists the simulator times), time each on the"
            " device and write a kernel table (CSV: kernel, shape, dtype, device, measured_us,"
            " model_us). --device cuda times with PyTorch on the GPU; --device cpu runs a NumPy"
            " stand-in in float32, which tests the plumbing and measures no GPU."
        ),
        epilog=EPILOG,
    )
    add_options(m, OPTIONS)
    m.add_argument(
        "--device", choices=["cpu", "cuda"], help="where to time (default cuda when PyTorch sees one)"
    )
    m.add_argument("--repeats", type=count, default=5, help="timed runs per kernel, median taken (default 5)")
    m.add_argument("-o", "--output", required=True, help="the kernel table (CSV) to write")
    add_json(m, "the table")
    m.set_defaults(func=measure)


def measure(args: argparse.Namespace) -> int:
    from clustersim.kernel_table import rows_text
    from clustersim.measure.kernels import measure as measure_kernels
    from clustersim.measure.kernels.timing import STAND_IN

    def progress(done: int, total: int) -> None:
        print(f"\rtiming kernels: {done}/{total}", end="" if done < total else "\n", file=sys.stderr)

    options = option_values(args, OPTIONS)
    rows = measure_kernels(
        options.pop("model"), device=args.device, repeats=args.repeats, progress=progress, **options
    )
    with atomic_outputs() as stage:
        write_csv(stage(args.output), rows_text(rows))
    if args.json:
        print_json(rows)
        return 0
    device = rows[0]["device"] if rows else "-"
    print(f"{len(rows)} distinct kernels timed on {STAND_IN if device == 'cpu-numpy' else device}")
    print(f"  {'kernel':<22}{'shape':<28}{'measured µs':>12}{'model µs':>12}")
    for r in rows:
        measured = "too large" if r["measured_us"] is None else f"{r['measured_us']:.1f}"
        print(f"  {r['kernel']:<22}{r['shape']:<28}{measured:>12}{r['model_us']:12.1f}")
    wrote([args.output])
    return 0
