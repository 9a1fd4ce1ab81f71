"""Plans per second of `clustersim search` on bench_search.py's spaces, for this checkout and (with
--base) another installed clustersim, measured two ways, runs of the builds interleaved so that
load from other processes hits each alike:

- *command*: the `clustersim search …` command as a user runs it, a fresh process from spawn to
  exit (interpreter start-up, imports, catalog, enumeration, simulation, printing the table):
  wall seconds and CPU seconds of all its threads (os.wait4). `python -c pass` is measured beside
  it: the interpreter's own start-up, which no change to clustersim can remove.
- *in process*: a fresh process that imports clustersim and searches the same space twice, each
  search timed inside it: *cold*, the first search (it also reads the catalog), and *warm*, the
  second (what every further search in a session, sweep or notebook costs).

Candidates are the valid plans the search enumerates; median of --runs. The best plan must be the
same for every build and run.

    python3 benchmarks/bench_search_speed.py [--runs 5] [--base /path/to/other/venv/bin/python] [--write]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench_search import CASES
from results import run_header, write_section

CHILD = """
import json, resource, sys, time
from clustersim import search
spec = json.loads(sys.argv[1])
cpu = lambda: sum(resource.getrusage(resource.RUSAGE_SELF)[:2])
out = []
for _ in range(2):
    start, start_cpu = time.perf_counter(), cpu()
    r = search(**spec)
    out.append({"seconds": time.perf_counter() - start, "cpu_s": cpu() - start_cpu})
print(json.dumps({"cold": out[0], "warm": out[1], "candidates": r.candidates, "simulated": len(r.plans),
                  "best": r.best}))
"""


def in_process(python: str, spec: dict) -> dict:
    """One fresh `python` process searching `spec` twice."""
    out = subprocess.run(
        [python, "-c", CHILD, json.dumps(spec)], capture_output=True, text=True, check=False, timeout=1800
    )
    if out.returncode != 0:
        raise SystemExit(f"{python} {spec} failed: {out.stderr}")
    return json.loads(out.stdout)


def command_line(spec: dict) -> list[str]:
    """`clustersim search`'s arguments for the API keywords of `spec`."""
    args = ["search", "--model", spec["model"], "--gpus", str(spec["gpus"]), "--gpu", spec["gpu"]]
    for key in ("gbs", "max_gbs"):
        if key in spec:
            args += [f"--{key.replace('_', '-')}", str(spec[key])]
    for axis in ("tp", "pp", "vpp", "ep", "cp", "mbs", "sp", "recompute", "optimizer"):
        if axis in spec:
            values = ["on" if v is True else "off" if v is False else str(v) for v in spec[axis]]
            args += ["--only", f"{axis}={','.join(values)}"]
    return args


def spawned(cmd: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds (all threads) of one run of `cmd`, output discarded; it must succeed."""
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        actions = [(os.POSIX_SPAWN_DUP2, null, 1), (os.POSIX_SPAWN_DUP2, null, 2)]
        start = time.perf_counter()
        pid = os.posix_spawn(cmd[0], cmd, os.environ, file_actions=actions)
        _, status, usage = os.wait4(pid, 0)
        wall = time.perf_counter() - start
    finally:
        os.close(null)
    if status != 0:
        raise SystemExit(f"{' '.join(cmd)} failed")
    return wall, usage.ru_utime + usage.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--base", help="another venv's python with clustersim installed (e.g. main's build)")
    ap.add_argument("--label", default="this branch", help="name of this checkout's row")
    ap.add_argument("--base-label", default="base", help="name of --base's row")
    ap.add_argument("--only", help="only the spaces whose name contains this")
    ap.add_argument("--write", action="store_true", help="record the result in benchmarks/RESULTS.md")
    args = ap.parse_args()
    builds = [(args.label, sys.executable)] + ([(args.base_label, args.base)] if args.base else [])
    rows = [
        "| space | build | candidates | simulated | command s (wall) | command CPU s | command plans/s |"
        " cold s (wall) | cold CPU s | cold plans/s | warm s (wall) | warm CPU s | warm plans/s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    start_up = [spawned([sys.executable, "-c", "pass"]) for _ in range(args.runs)]
    for name, spec in CASES.items():
        if args.only and args.only not in name:
            continue
        commands = {
            label: [str(Path(python).parent / "clustersim"), *command_line(spec)] for label, python in builds
        }
        runs: dict[str, list[dict]] = {label: [] for label, _ in builds}
        timed: dict[str, list[tuple[float, float]]] = {label: [] for label, _ in builds}
        for _ in range(args.runs):
            for label, python in builds:
                runs[label].append(in_process(python, spec))
                timed[label].append(spawned(commands[label]))
            start_up.append(spawned([sys.executable, "-c", "pass"]))
        best = runs[args.label][0]["best"]
        for label, _ in builds:
            for x in runs[label]:
                assert x["best"] == best, f"{label}: the best plan differs: {x['best']} vs {best}"
            med = {
                (k, f): statistics.median(x[k][f] for x in runs[label])
                for k in ("cold", "warm")
                for f in ("seconds", "cpu_s")
            }
            wall = statistics.median(w for w, _ in timed[label])
            cpu = statistics.median(c for _, c in timed[label])
            n, simulated = runs[label][0]["candidates"], runs[label][0]["simulated"]
            cells = [name, label, n, simulated, f"{wall:.3f}", f"{cpu:.3f}", f"{n / wall:.0f}"]
            for k in ("cold", "warm"):
                s = med[k, "seconds"]
                cells += [f"{s:.3f}", f"{med[k, 'cpu_s']:.3f}", f"{n / s:.0f}"]
            rows.append("| " + " | ".join(map(str, cells)) + " |")
            print(rows[-1], flush=True)
    wall = statistics.median(w for w, _ in start_up)
    cpu = statistics.median(c for _, c in start_up)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    body = "\n".join(
        [
            run_header(args.runs) + f" Load average at the end: {load}."
            f" `python -c pass` (the interpreter's start-up, in every command): {wall:.3f} s wall,"
            f" {cpu:.3f} s CPU.",
            "",
            *rows,
        ]
    )
    print(body)
    if args.write:
        write_section("bench_search_speed", body)


if __name__ == "__main__":
    main()
