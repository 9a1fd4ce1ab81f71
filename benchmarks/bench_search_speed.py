"""Plans per second of `clustersim search` on bench_search.py's spaces, cold and warm, for this
checkout and (with --base) another installed clustersim, so that the cost of one simulation can be
compared before and after a change on the same machine at the same time.

Each run is a fresh process that searches the same space twice: *cold*, the first search after
`import clustersim` (it also reads the shipped catalog and imports PyYAML, about 30 ms of CPU),
as bench_search.py times it; *warm*, the second (what every further search in a session, sweep
or notebook costs). Wall seconds and CPU seconds of all threads, median of --runs; the best plan
must be the same for every interpreter and run.

    python3 benchmarks/bench_search_speed.py [--runs 3] [--base /path/to/other/python] [--write]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

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


def measure(python: str, spec: dict) -> dict:
    """One fresh `python` process searching `spec` twice."""
    out = subprocess.run(
        [python, "-c", CHILD, json.dumps(spec)], capture_output=True, text=True, check=False, timeout=1800
    )
    if out.returncode != 0:
        raise SystemExit(f"{python} {spec} failed: {out.stderr}")
    return json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--base", help="another Python with clustersim installed (e.g. main's build)")
    ap.add_argument("--label", default="this branch", help="name of this checkout's row")
    ap.add_argument("--base-label", default="base", help="name of --base's row")
    ap.add_argument("--write", action="store_true", help="record the result in benchmarks/RESULTS.md")
    args = ap.parse_args()
    pythons = [(args.label, sys.executable)] + ([(args.base_label, args.base)] if args.base else [])
    rows = [
        "| space | build | candidates | simulated | cold s (wall) | cold CPU s | cold plans/s |"
        " warm s (wall) | warm CPU s | warm plans/s | warm plans per CPU s |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, spec in CASES.items():
        best = None
        for label, python in pythons:
            runs = [measure(python, spec) for _ in range(args.runs)]
            r = runs[0]
            for x in runs:
                best = best or x["best"]
                assert x["best"] == best, f"{label}: the best plan differs: {x['best']} vs {best}"
            med = {
                (k, f): statistics.median(x[k][f] for x in runs)
                for k in ("cold", "warm")
                for f in ("seconds", "cpu_s")
            }
            n = r["candidates"]
            rows.append(
                f"| {name} | {label} | {n} | {r['simulated']} | {med['cold', 'seconds']:.3f} |"
                f" {med['cold', 'cpu_s']:.3f} | {n / med['cold', 'seconds']:.0f} |"
                f" {med['warm', 'seconds']:.3f} | {med['warm', 'cpu_s']:.3f} |"
                f" {n / med['warm', 'seconds']:.0f} | {n / med['warm', 'cpu_s']:.0f} |"
            )
            print(rows[-1], flush=True)
    body = "\n".join([run_header(args.runs), "", *rows])
    print(body)
    if args.write:
        write_section(
            "bench_search_speed", body, title="## Plan search: one simulation made cheaper (issue 15)"
        )


if __name__ == "__main__":
    main()
