"""Branch-and-bound plan search over whole spaces (issue 30): the `clustersim search` command as a
user runs it (replacing bench_search_speed.py's command timings of smaller spaces), every plan
dimension open, a fresh process from spawn to exit (interpreter start-up, imports, enumeration,
bounds, simulations, printing): wall seconds and CPU seconds of all its threads (os.wait4),
median of --runs.

Spaces:
- GPT-3 175B on 1024 A100s, global batch 1536 (Narayanan et al. 2021, Table 1's GPT-3 175B
  row; issue 30's example). Target ≤ 10 s CPU.
- Llama 3 405B on 16,384 H100s, global batch 2048 sequences of 8192 tokens (Dubey et al. 2024,
  "The Llama 3 Herd of Models", Table 4: 16,384 GPUs, 16 M tokens per batch). Target ≤ 60 s CPU.
- Calculon's Turing-530B study: 5128 A100-80GB, global batch at most 2520 (calculon-ai/calculon
  README: `llm-optimal-execution models/turing-530B.json 5128 2520 float16
  systems/a100_80g.json`; Isaev et al., SC '23). Target ≤ 1 s.

Candidates are the valid plans (train's rules), feasible those that fit in the GPU's memory;
reached (memory checked) and pruned (by the bound alone) split the valid ones. With --check
Calculon's study, the one space here small enough to simulate whole, is also searched with
`--exhaustive` (every plan that fits simulated) and the two top-10s must be the same (the
exhaustive GPT-3 and Llama spaces hold 458,000 and tens of thousands of plans that fit: hours;
tests/test_search_exact.py makes the same comparison on five smaller spaces).

    python3 benchmarks/bench_search_bound.py [--runs 3] [--check] [--only NAME] [--write]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results import run_header, write_section

CASES = {
    "GPT-3 175B, 1024 A100, GBS 1536": (
        ["--model", "gpt-175b", "--gpus", "1024", "--gpu", "a100", "--gbs", "1536"],
        10.0,
    ),
    "Llama 3 405B, 16384 H100, GBS 2048": (
        ["--model", "llama3-405b", "--gpus", "16384", "--gpu", "h100", "--gbs", "2048"],
        60.0,
    ),
    "Calculon's Turing-530B study, 5128 A100, GBS ≤ 2520": (
        ["--model", "turing-530b", "--gpus", "5128", "--gpu", "a100", "--max-gbs", "2520"],
        1.0,
    ),
}


def command(args: list[str]) -> list[str]:
    return [str(Path(sys.executable).parent / "clustersim"), "search", *args, "--json", "--top", "10"]


def spawned(cmd: list[str]) -> tuple[float, float, dict]:
    """Wall and CPU seconds (all threads) of one run of `cmd`, and its JSON output."""
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode})")
        out.seek(0)
        return wall, usage.ru_utime + usage.ru_stime, json.loads(out.read())


def plan_text(best: dict) -> str:
    sizes = " ".join(f"{k.upper()} {best[k]}" for k in ("tp", "pp", "vpp", "dp", "cp", "ep", "mbs"))
    on = [k for k in ("overlap_grad_reduce", "overlap_param_gather", "tp_comm_overlap") if best[k]]
    sp = "SP" if best["sp"] else "no SP"
    overlaps = ", ".join(on) or "none"
    return f"{sizes}, {sp}, {best['recompute']} recompute, {best['optimizer']}, overlaps: {overlaps}"


def top10(doc: dict) -> list[tuple]:
    return [(tuple(sorted((k, v) for k, v in r.items())),) for r in doc["plans"][:10]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--check", action="store_true", help="also run --exhaustive and compare the top 10")
    ap.add_argument("--only", help="only the spaces whose name contains this")
    ap.add_argument("--write", action="store_true", help="record the result in benchmarks/RESULTS.md")
    args = ap.parse_args()
    rows = [
        "| space | target CPU s | valid plans | reached | simulated | pruned | wall s | CPU s |"
        " candidates per CPU s | µs CPU per candidate | best plan | tokens/s | MFU |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    checks = []
    load_start = os.getloadavg()[0]
    for name, (argv, target) in CASES.items():
        if args.only and args.only not in name:
            continue
        runs = [spawned(command(argv)) for _ in range(args.runs)]
        wall = statistics.median(w for w, _, _ in runs)
        cpu = statistics.median(c for _, c, _ in runs)
        doc = runs[0][2]
        assert all(top10(d) == top10(doc) for _, _, d in runs), "same inputs, same top 10"
        assert doc["stopped"] is None
        best = doc["plans"][0]
        n = doc["candidates"]
        rows.append(
            f"| {name} | {target:g} | {n} | {doc['checked']} | {doc['simulated']} | {doc['pruned']} |"
            f" {wall:.2f} | {cpu:.2f} | {n / cpu:.0f} | {cpu / n * 1e6:.1f} | {plan_text(best)} |"
            f" {best['tokens_per_s']:.0f} | {best['mfu'] * 100:.1f} % |"
        )
        print(rows[-1], flush=True)
        if args.check and "Calculon" in name:
            _, cpu_all, every = spawned(command([*argv, "--exhaustive"]))
            same = top10(every) == top10(doc)
            checks.append(
                f"Check, {name}: the exhaustive search simulated {every['simulated']} plans in"
                f" {cpu_all:.1f} s CPU; top 10 {'identical' if same else 'DIFFERENT'}."
            )
            print(checks[-1], flush=True)
            assert same, name
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    body = "\n".join(
        [
            " ".join(
                [
                    run_header(args.runs),
                    f"Load average at the start {load_start:.1f}, at the end: {load}.",
                    *checks,
                ]
            ),
            "",
            *rows,
        ]
    )
    print(body)
    if args.write:
        write_section("search_bound", body)


if __name__ == "__main__":
    main()
