"""The full fuzzing campaign of the Python readers (tests/fuzzing.py): N generated inputs per
reader, seeded by case number, with counts of accepted and refused inputs and one example per
kind of failure. The engine's readers have their own campaign (`scripts/fuzz.sh` runs both).

    python benchmarks/fuzz_campaign.py [--cases N] [--reader NAME] [--seed S]

Readers: topology, model, accelerator, nccl-tests, bwtest, replay, calibration, platform-yaml,
platform-graphml.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

RUN_EVERY = 32

from fuzzing import (  # noqa: E402 - tests/ is put on the path just above
    ACCELERATOR_WORDS,
    ACCELERATORS,
    BWTEST_JSON,
    BWTEST_WORDS,
    CALIBRATION_WORDS,
    CALIBRATIONS,
    MODEL_JSON,
    MODEL_WORDS,
    MODEL_YAML,
    NCCL_LOGS,
    NCCL_WORDS,
    PLATFORM_GRAPHML_WORDS,
    PLATFORM_WORDS,
    PLATFORM_YAML,
    REPLAY_JSON,
    REPLAY_WORDS,
    TOPOLOGIES,
    TOPOLOGY_WORDS,
    Failure,
    Scratch,
    mutate,
    platform_graphml_seeds,
    read_accelerator,
    read_bwtest,
    read_calibration,
    read_model,
    read_nccl,
    read_platform_graphml,
    read_platform_yaml,
    read_replay,
    read_topology,
    run_reader,
)


def readers(scratch: Scratch) -> dict[str, Callable[[random.Random], tuple[Callable[[str], object], str]]]:
    """Each reader: from a random source, (the reader, its input). A model or accelerator is read
    and checked every time, and run through a layer's simulation one time in RUN_EVERY."""

    def model(rnd: random.Random) -> tuple[Callable[[str], object], str]:
        run = rnd.randrange(RUN_EVERY) == 0
        if rnd.random() < 0.5:
            return (lambda t: read_model(scratch, t, ".yaml", run=run)), mutate(rnd, MODEL_YAML, MODEL_WORDS)
        return (lambda t: read_model(scratch, t, ".json", run=run)), mutate(rnd, MODEL_JSON, MODEL_WORDS)

    def accelerator(rnd: random.Random) -> tuple[Callable[[str], object], str]:
        run = rnd.randrange(RUN_EVERY) == 0
        return (lambda t: read_accelerator(scratch, t, run=run)), mutate(rnd, ACCELERATORS, ACCELERATOR_WORDS)

    graphml = platform_graphml_seeds()

    def platform_graphml(rnd: random.Random) -> tuple[Callable[[str], object], str]:
        return (lambda t: read_platform_graphml(scratch, t)), mutate(rnd, graphml, PLATFORM_GRAPHML_WORDS)

    return {
        "topology": lambda rnd: (read_topology, mutate(rnd, TOPOLOGIES, TOPOLOGY_WORDS)),
        "platform-yaml": lambda rnd: (read_platform_yaml, mutate(rnd, PLATFORM_YAML, PLATFORM_WORDS)),
        "platform-graphml": platform_graphml,
        "nccl-tests": lambda rnd: (read_nccl, mutate(rnd, NCCL_LOGS, NCCL_WORDS)),
        "bwtest": lambda rnd: (read_bwtest, mutate(rnd, BWTEST_JSON, BWTEST_WORDS)),
        "replay": lambda rnd: (read_replay, mutate(rnd, REPLAY_JSON, REPLAY_WORDS)),
        "calibration": lambda rnd: (read_calibration, mutate(rnd, CALIBRATIONS, CALIBRATION_WORDS)),
        "model": model,
        "accelerator": accelerator,
    }


def campaign(name: str, make: Callable, cases: int, seed: int) -> int:
    """Run `cases` inputs; print counts and failures; the number of kinds of failure."""
    counts = {"accepted": 0, "refused": 0}
    failures: dict[str, tuple[str, str]] = {}
    start = time.perf_counter()
    for case in range(cases):
        rnd = random.Random(f"{name}:{seed}:{case}")
        read, text = make(rnd)
        try:
            counts[run_reader(read, text)] += 1
        except Failure as f:
            kind = re.sub(r"'[^']*'|\d+", "", str(f))[:60]
            failures.setdefault(kind, (text, str(f)))
    seconds = time.perf_counter() - start
    print(
        f"fuzz {name}: {cases} inputs, {counts['accepted']} accepted, {counts['refused']} refused, "
        f"{len(failures)} kinds of failure, {seconds:.1f} s",
        flush=True,
    )
    for text, problem in list(failures.values())[:12]:
        print(f"  input {text[:600]!r}\n    {problem[:400]}")
    return len(failures)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=1_000_000, help="inputs per reader (default 10⁶)")
    ap.add_argument("--reader", action="append", help="only these readers (default: all)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    scratch = Scratch()
    chosen = readers(scratch)
    failed = 0
    for name in args.reader or list(chosen):
        failed += campaign(name, chosen[name], args.cases, args.seed)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
