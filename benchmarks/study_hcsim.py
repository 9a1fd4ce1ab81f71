"""The HCSim paper's four studies (Li et al. 2025: Fig. 8, 10, 11 and Table 6) on its LLaMA2-13B
graph and systems, each through `clustersim study hcsim STUDY --json -o DIR` in its own process:
the rows, the paper's claims checked on them, the wall time of the study; tables (CSV) and plots
(HTML) under DIR.

    python3 benchmarks/study_hcsim.py [--out results/hcsim] [--jobs 2] [--quick] [--model hcsim] [--write]

--quick runs each study at small scale (8 decoders, 8-XPU ToRs) in seconds; the default is the
paper's set-up. --scale-xpus and --sweep-xpus change the XPU counts of Fig. 8 and Fig. 10/11.
--model hcsim runs HCSim's own modelling (`clustersim study hcsim --help`); it has its own section.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from results import run_header, write_section


def study(name: str, args: list[str]) -> tuple[str, dict[str, Any], float]:
    start = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "clustersim", "study", "hcsim", name, "--json", *args],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise SystemExit(f"{name}: exit {out.returncode}: {out.stderr.strip()}")
    return name, json.loads(out.stdout), time.perf_counter() - start


def markdown(name: str, doc: dict[str, Any]) -> list[str]:
    rows = doc["rows"]
    if name == "scale":
        mixes = list(dict.fromkeys(r["mix"] for r in rows))
        scales = sorted({r["xpus"] for r in rows})
        got = {(r["system"], r["mix"], r["xpus"]): r["batch_per_s"] for r in rows}
        head = "| XPUs | " + " | ".join(f"{m} pcie | {m} cxl | cxl/pcie" for m in mixes) + " |"
        lines = [head, "|---:|" + "---:|---:|---:|" * len(mixes)]
        for n in scales:
            cells = []
            for m in mixes:
                p, c = got["hcsim-pcie", m, n], got["hcsim-cxl", m, n]
                cells.append(f"{p:.4g} | {c:.4g} | {c / p:.3f}")
            lines.append(f"| {n} | " + " | ".join(cells) + " |")
    elif name in ("cxl-bandwidth", "cxl-latency"):
        x = "cxl_GBps" if name == "cxl-bandwidth" else "cxl_latency_ns"
        unit = "GB/s" if name == "cxl-bandwidth" else "ns"
        scales = sorted({r["xpus"] for r in rows})
        xs = sorted({r[x] for r in rows})
        got = {(r["xpus"], r[x]): r for r in rows}
        lines = [
            f"| CXL {unit} | " + " | ".join(f"{n} XPUs batch/s (vs first)" for n in scales) + " |",
            "|---:|" + "---:|" * len(scales),
        ]
        for v in xs:
            ys = [(got[n, v]["batch_per_s"], got[n, xs[0]]["batch_per_s"]) for n in scales]
            cells = [f"{y:.4g} ({y / first:.3f})" for y, first in ys]
            lines.append(f"| {v:g} | " + " | ".join(cells) + " |")
    else:
        got = {(r["mix"], r["xpus"], r["algorithm"]): r for r in rows}
        systems = list(dict.fromkeys((r["mix"], r["xpus"]) for r in rows))
        lines = [
            "| system | ring batch/s | coherent ring batch/s | gain | exposed all-reduce s (ring → coh.) |",
            "|---|---:|---:|---:|---:|",
        ]
        for m, n in systems:
            a, b = got[m, n, "ring"], got[m, n, "coherent_ring"]
            lines.append(
                f"| {m} × {n} | {a['batch_per_s']:.4g} | {b['batch_per_s']:.4g} |"
                f" {(b['batch_per_s'] / a['batch_per_s'] - 1) * 100:+.2f} % |"
                f" {a['exposed_collective_s']:.3f} → {b['exposed_collective_s']:.3f} |"
            )
    lines.append("")
    lines += [
        f"- {'holds' if f['holds'] else '**does not hold**'}: {f['claim']} ({f['detail']})"
        for f in doc["findings"]
    ]
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="results/hcsim", help="folder of the CSV and HTML files")
    ap.add_argument("--jobs", type=int, default=2, help="studies run at once")
    ap.add_argument("--quick", action="store_true", help="small scale: 8 decoders, ToRs of 8 XPUs")
    ap.add_argument("--scale-xpus", default="64,128,256,512,1024", help="Fig. 8's XPU counts")
    ap.add_argument("--sweep-xpus", default="64,256", help="Fig. 10 and 11's XPU counts")
    ap.add_argument("--model", choices=("clustersim", "hcsim"), default="clustersim", help="whose modelling")
    ap.add_argument("--write", action="store_true", help="record the result in benchmarks/RESULTS.md")
    args = ap.parse_args()
    common = ["-o", args.out, "--model", args.model]
    scale_xpus, sweep_xpus, ring = args.scale_xpus, args.sweep_xpus, []
    if args.quick:
        common += ["--layers", "8", "--servers-per-tor", "1"]
        scale_xpus, sweep_xpus = "8,16,32,64", "8,64"
        ring = ["--xpu-counts", "8,32", "--mixes", "h100,h100+a100,h100+v100"]
    cases = [
        ("scale", [*common, "--xpu-counts", scale_xpus]),
        ("cxl-bandwidth", [*common, "--xpu-counts", sweep_xpus]),
        ("cxl-latency", [*common, "--xpu-counts", sweep_xpus]),
        ("coherent-ring", [*common, *ring]),
    ]
    with ThreadPoolExecutor(args.jobs) as pool:
        done = list(pool.map(lambda c: study(*c), cases))
    lines = [run_header(), ""]
    for name, doc, wall in done:
        lines += [f"**{name}** (wall {wall:.1f} s, {len(doc['rows'])} points):", "", *markdown(name, doc), ""]
    print("\n".join(lines).rstrip())
    if args.write:
        marker = "study_hcsim" + ("_hcsim_model" if args.model == "hcsim" else "")
        write_section(marker, claims(done, f"`{args.out}/` (arguments: `{' '.join(sys.argv[1:])}`)"))


def claims(done: list[tuple[str, dict[str, Any], float]], where: str) -> str:
    """The section of RESULTS.md: per study, the paper's claims that hold and those that do not."""
    lines = [
        run_header() + f" Rows and plots in {where}.",
        "",
        "| study | points | wall s | holds | does not hold |",
        "|---|---:|---:|---|---|",
    ]
    for name, doc, wall in done:
        found = doc["findings"]
        holds = "; ".join(f["claim"] for f in found if f["holds"]) or "–"
        fails = "; ".join(f"{f['claim']} ({f['detail']})" for f in found if not f["holds"]) or "–"
        lines.append(f"| {name} | {len(doc['rows'])} | {wall:.1f} | {holds} | {fails} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
