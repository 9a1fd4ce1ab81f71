"""Time building and exporting HCSim's Fig. 6b system (`clustersim platform hcsim-cxl`).

Each case is a fresh subprocess: the build (`clustersim.platform.hcsim`, catalog read included),
then each export from the built platform — the JSON graph document, GraphML (NetworkX's writer)
and the SimGrid XML (Dijkstra routing: links and one route per link, linear in size; Full routing,
one route per ordered pair of hosts, for the sizes where n² routes are reasonable). Peak RSS is
the child's (resource.getrusage). Median of --runs.

    python3 benchmarks/bench_platform.py [--runs 3] [--write]
"""

from __future__ import annotations

import argparse
import statistics

from results import measure_child, run_header, write_section

CHILD = """
import json, resource, sys, time
from clustersim.platform import graphml_text, hcsim
xpus, routing = json.loads(sys.argv[1])
start = time.perf_counter()
p = hcsim("hcsim-cxl", [("h100", xpus)])
out = [time.perf_counter() - start, len(p.kinds), len(p.links[0])]
exports = [lambda: p.to_graph_json("x"), lambda: p.to_simgrid(routing, "fp32"), lambda: graphml_text(p)]
for export in exports:
    start = time.perf_counter()
    text = export()
    out += [time.perf_counter() - start, len(text) / 1e6]
out.append(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1000)
print(json.dumps(out))
"""

# (XPUs, SimGrid routing)
CASES = [(64, "full"), (256, "full"), (1024, "dijkstra"), (4096, "dijkstra")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--write", action="store_true", help="record the result in benchmarks/RESULTS.md")
    args = ap.parse_args()
    lines = [
        run_header(args.runs),
        "",
        "| hcsim-cxl XPUs | nodes | directed links | build s | JSON s (MB) | SimGrid routing |"
        " SimGrid s (MB) | GraphML s (MB) | peak RSS MB |",
        "|---:|---:|---:|---:|---:|---|---:|---:|---:|",
    ]
    for xpus, routing in CASES:
        runs = [measure_child(CHILD, [xpus, routing], timeout=1200) for _ in range(args.runs)]
        med = [statistics.median(float(r[i]) for r in runs) for i in range(len(runs[0]))]
        build, nodes, links, js, jmb, sg, sgmb, gm, gmmb, rss = med
        lines.append(
            f"| {xpus} | {nodes:.0f} | {links:.0f} | {build:.3f} | {js:.3f} ({jmb:.1f}) | {routing} |"
            f" {sg:.3f} ({sgmb:.1f}) | {gm:.2f} ({gmmb:.1f}) | {rss:.0f} |"
        )
        print(lines[-1], flush=True)
    body = "\n".join(lines)
    print(body)
    if args.write:
        write_section("platform", body)


if __name__ == "__main__":
    main()
