"""`clustersim compare`: two runs side by side, with their differences."""

from __future__ import annotations

import argparse

EPILOG = """\
examples:
  clustersim train --model llama3-8b --gpus 16 --tp 2 --gbs 32 --dist-opt -o results/a.json
  clustersim train --model llama3-8b --gpus 16 --tp 4 --gbs 32 --dist-opt -o results/b.json
  clustersim compare results/a.json results/b.json
  clustersim sweep examples/sweep_llama3_8b.yaml -o results/llama3-8b.sqlite
  clustersim compare results/llama3-8b.sqlite:3 results/llama3-8b.sqlite:7 --differences"""


DESCRIPTION = (
    "Print what differs between two runs (fabric, plan, model, backend, version), then their"
    " results side by side (JSON results, or points STORE:N of sweeps)."
)


def arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("a", metavar="A", help="a JSON result of train, run or analytical, or STORE:N")
    p.add_argument("b", metavar="B", help="the other run")
    p.add_argument("--differences", action="store_true", help="only the fields that differ")
    p.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from clustersim.explore.compare import compare, load
    from clustersim.provenance import differences

    (a, made_a), (b, made_b) = load(args.a), load(args.b)
    # What made them first (which fabric, plan, model, backend, version differ), then the numbers.
    for line in differences(made_a, made_b):
        print(line)
    print()
    rows = compare(a, b)
    if args.differences:
        rows = [r for r in rows if r[3]]
    head = ("field", "A", "B", "B − A", "change")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(5)]
    for r in [head, *rows]:
        print(
            "  ".join(
                v.ljust(w) if i == 0 else v.rjust(w) for i, (v, w) in enumerate(zip(r, widths, strict=True))
            )
        )
    return 0
