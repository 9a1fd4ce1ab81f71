"""The full fuzzing campaign of the Python readers (tests/fuzzing.py): N generated inputs per
reader, each from its own random source seeded by (reader, seed, case number), with counts of
accepted and refused inputs and one example per kind of failure. The engine's readers have their
own campaign (`scripts/fuzz.sh` runs both).

    python benchmarks/fuzz_campaign.py [--cases N] [--reader NAME] [--seed S]
        [--chunk C --log DIR]   # C inputs at a time, each chunk's counts appended to DIR: resumable
                                # (SIGTERM logs the inputs of the chunk under way, then stops)
        [--first F]             # from input F on (processes sharing a log split the range)
        [--report]              # the totals of the log's chunks, running nothing
        [--case K]              # one input of one reader again: its text and what the reader did

Everything runs in this one process (one core), inputs in memory; a reader that takes a path
reads one reused file in a memory-backed folder. Readers: topology, model, accelerator,
nccl-tests, bwtest, replay, calibration, platform-yaml, platform-graphml, graph-graphml.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

RUN_EVERY = 32
TOTALS: list[str] = []  # one markdown row per reader's campaign, for --write

from fuzzing import (  # noqa: E402 - tests/ is put on the path just above
    ACCELERATOR_WORDS,
    ACCELERATORS,
    BWTEST_JSON,
    BWTEST_WORDS,
    CALIBRATION_WORDS,
    CALIBRATIONS,
    GRAPH_GRAPHML_WORDS,
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
    graph_graphml_seeds,
    mutate,
    platform_graphml_seeds,
    read_accelerator,
    read_bwtest,
    read_calibration,
    read_graph_graphml,
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

    graphs = graph_graphml_seeds()

    def graph_graphml(rnd: random.Random) -> tuple[Callable[[str], object], str]:
        return (lambda t: read_graph_graphml(scratch, t)), mutate(rnd, graphs, GRAPH_GRAPHML_WORDS)

    return {
        "topology": lambda rnd: (read_topology, mutate(rnd, TOPOLOGIES, TOPOLOGY_WORDS)),
        "platform-yaml": lambda rnd: (read_platform_yaml, mutate(rnd, PLATFORM_YAML, PLATFORM_WORDS)),
        "platform-graphml": platform_graphml,
        "graph-graphml": graph_graphml,
        "nccl-tests": lambda rnd: (read_nccl, mutate(rnd, NCCL_LOGS, NCCL_WORDS)),
        "bwtest": lambda rnd: (read_bwtest, mutate(rnd, BWTEST_JSON, BWTEST_WORDS)),
        "replay": lambda rnd: (read_replay, mutate(rnd, REPLAY_JSON, REPLAY_WORDS)),
        "calibration": lambda rnd: (read_calibration, mutate(rnd, CALIBRATIONS, CALIBRATION_WORDS)),
        "model": model,
        "accelerator": accelerator,
    }


def kind_of(problem: str) -> str:
    """A failure's kind: its message without quoted values and numbers."""
    return re.sub(r"'[^']*'|\d+", "", problem)[:60]


STOP = []
"""Set by SIGTERM: the chunk under way ends at the input it is on, is logged, and the run stops."""


def chunk(name: str, make: Callable, seed: int, start: int, stop: int) -> dict:
    """Inputs start..stop-1 of one reader (fewer when stopped): counts, times and the first input of
    each kind of failure."""
    counts = {"accepted": 0, "refused": 0}
    failures: dict[str, dict] = {}
    wall, cpu = time.perf_counter(), time.process_time()
    case = start
    while case < stop and not STOP:
        rnd = random.Random(f"{name}:{seed}:{case}")
        read, text = make(rnd)
        try:
            counts[run_reader(read, text)] += 1
        except Failure as f:
            example = {"case": case, "input": text[:4000], "problem": str(f)[:600]}
            failures.setdefault(kind_of(str(f)), example)
        case += 1
    return {
        "reader": name, "seed": seed, "start": start, "stop": case, **counts,
        "failures": list(failures.values()),
        "wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu,
    }  # fmt: skip


def logged(log: str | None, name: str, seed: int) -> list[dict]:
    """The log's chunks of this reader and seed that overlap no earlier one, by start."""
    chunks: list[dict] = []
    if log is not None and os.path.exists(log):
        with open(log, encoding="utf-8") as f:
            for line in f:
                c = json.loads(line)
                if (c["reader"], c["seed"]) == (name, seed) and c["stop"] > c["start"]:
                    if all(c["stop"] <= d["start"] or d["stop"] <= c["start"] for d in chunks):
                        chunks.append(c)
    return sorted(chunks, key=lambda c: c["start"])


def gaps(chunks: list[dict], first: int, cases: int, size: int) -> list[tuple[int, int]]:
    """The inputs from `first` to `cases` no chunk holds, in pieces of at most `size`."""
    todo, at = [], first
    for c in [*chunks, {"start": cases, "stop": cases}]:
        while at < min(c["start"], cases):
            todo.append((at, min(at + size, c["start"], cases)))
            at = todo[-1][1]
        at = max(at, c["stop"])
    return todo


def campaign(
    name: str,
    make: Callable,
    cases: int,
    seed: int,
    size: int,
    log: str | None,
    first: int = 0,
    run: bool = True,
) -> int:
    """Inputs `first` to `cases` in chunks of at most `size`, skipping those the log holds; prints
    progress and the totals of all the log's inputs below `cases`; the number of kinds of failure."""
    started, mine = time.perf_counter(), []
    for start, stop in gaps(logged(log, name, seed), first, cases, size) if run else []:
        if STOP:
            break
        c = chunk(name, make, seed, start, stop)
        mine.append(c)
        if log is not None:  # one write of the whole line: processes sharing the log do not mix lines
            fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, (json.dumps(c) + "\n").encode())
            finally:
                os.close(fd)
        n = max(c["stop"] - start, 1)
        print(
            f"{name} seed {seed}: inputs {start}-{c['stop']}: {len(c['failures'])} failures, "
            f"{c['wall_s'] / n * 1e3:.2f} ms/input ({c['cpu_s'] / n * 1e3:.2f} ms CPU)",
            flush=True,
        )
    ran = [d for d in logged(log, name, seed) if d["stop"] <= cases] if log is not None else mine
    inputs = sum(d["stop"] - d["start"] for d in ran)
    failures: dict[str, dict] = {}
    for d in ran:
        for f in d["failures"]:
            failures.setdefault(kind_of(f["problem"]), f)
    accepted, refused = sum(d["accepted"] for d in ran), sum(d["refused"] for d in ran)
    wall, cpu = sum(d["wall_s"] for d in ran), sum(d["cpu_s"] for d in ran)
    TOTALS.append(
        f"| {name} | {inputs:,} | {accepted:,} | {refused:,} | {len(failures)}"
        f" | {cpu / max(inputs, 1) * 1e3:.2f} |"
    )
    print(
        f"fuzz {name} (seed {seed}): {inputs} inputs, {accepted} accepted, {refused} refused, "
        f"{len(failures)} kinds of failure, {wall:.1f} s ({wall / max(inputs, 1) * 1e3:.2f} ms/input, "
        f"{cpu / max(inputs, 1) * 1e3:.2f} ms CPU); this run {time.perf_counter() - started:.1f} s",
        flush=True,
    )
    for f in list(failures.values())[:12]:
        print(f"  case {f['case']}: input {f['input'][:600]!r}\n    {f['problem'][:400]}")
    return len(failures)


def replay(name: str, make: Callable, seed: int, case: int) -> None:
    """One input again: its text and what the reader did with it."""
    read, text = make(random.Random(f"{name}:{seed}:{case}"))
    print(f"input {text!r}")
    try:
        print(run_reader(read, text))
    except Failure as f:
        print(f"failure: {f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=1_000_000, help="inputs per reader (default 10⁶)")
    ap.add_argument("--reader", action="append", help="only these readers (default: all)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--chunk", type=int, default=10_000, help="inputs per chunk (progress, resuming)")
    ap.add_argument(
        "--first", type=int, default=0, help="start at this input (another process has those before)"
    )
    ap.add_argument("--log", metavar="DIR", help="append each chunk's counts to DIR/READER.jsonl; resume")
    ap.add_argument("--case", type=int, help="run this one input of the (one) reader and show it")
    ap.add_argument("--report", action="store_true", help="only the totals of the chunks in the log")
    ap.add_argument("--write", action="store_true", help="record the totals in benchmarks/RESULTS.md")
    args = ap.parse_args()
    scratch = Scratch()
    chosen = readers(scratch)
    names = args.reader or list(chosen)
    if args.case is not None:
        for name in names:
            replay(name, chosen[name], args.seed, args.case)
        return
    if args.log is not None:
        os.makedirs(args.log, exist_ok=True)
    signal.signal(signal.SIGTERM, lambda *_: STOP.append(True))
    failed = 0
    for name in names:
        log = os.path.join(args.log, f"{name}.jsonl") if args.log is not None else None
        failed += campaign(
            name, chosen[name], args.cases, args.seed, args.chunk, log, args.first, not args.report
        )
    if args.write:
        from results import run_header, write_section

        head = [f"{run_header()} Seed {args.seed}.", "", "| reader | inputs | accepted | refused"]
        head[-1] += " | kinds of failure | ms CPU per input |"
        write_section("fuzz", "\n".join([*head, "|---|---:|---:|---:|---:|---:|", *TOTALS]))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
