"""Time all-to-all-heavy runs on the flow model (issue 9, item 7).

Cases: `clustersim collective alltoall -b 64M -e 64M --topology Spectrum-X:N` for N = 256, 512 and
1024 with direct sends (NCCL_P2P_PXN_LEVEL=0: every pair its own flow over the spine, the hard
case; target at 1024: ≤ 5 s) and at 1024 with NCCL's default PXN, and a DeepSeek-V3 iteration with
EP 64 on 2048 H100 (PP 16, first/last stages of 3 and 2 layers, full recompute) through
`clustersim train -n` on a 2048-GPU Spectrum-X fabric (target ≤ 60 s). Each run is a fresh
subprocess: time is the sweep call (template building excluded) or the `train` CLI call (reading
the fabric file included), wall and CPU (the child's own CPU time, which other load on the machine
inflates less), RSS the child's peak. A run past --timeout is recorded as such. Median of --runs;
--no-train leaves DeepSeek out.

Exactness: `network::flow::reference_tests::the_fast_paths_match_the_plain_per_flow_solve` holds
the flow model with every fast path on to a plain per-flow max-min reference (all-to-all with
ECMP collisions, random leaf-spines), and
`network::flow::tests::coalesced_instants_match_the_per_event_solve` the coalesced event instants
to solving each distinct time alone.

    python3 benchmarks/bench_alltoall.py [--runs 3] [--timeout 600] [--no-train] [--write]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
from pathlib import Path

from results import measure_child, run_header, write_section

SWEEP_CHILD = """
import json, resource, sys, time
from clustersim.nccl_tests import sweep
from clustersim.topology import simai_template
name, gpus, pxn_level = json.loads(sys.argv[1])
topo = simai_template(name, gpu=gpus)
start, cpu = time.perf_counter(), time.process_time()
t = sweep(topo, "alltoall", [64 << 20], env={"NCCL_P2P_PXN_LEVEL": pxn_level})
wall, cpu = time.perf_counter() - start, time.process_time() - cpu
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1000
print(json.dumps([wall, rss, t["time_us"][-1], t["algorithm"][-1], cpu]))
"""

TRAIN_CHILD = """
import contextlib, io, json, resource, sys, time
from clustersim.cli import main
args = json.loads(sys.argv[1])
out = io.StringIO()
start, cpu = time.perf_counter(), time.process_time()
with contextlib.redirect_stdout(out):
    rc = main(args)
wall, cpu = time.perf_counter() - start, time.process_time() - cpu
if rc != 0:
    raise SystemExit(f"train exited {rc}")
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1000
print(json.dumps([wall, rss, json.loads(out.getvalue())["iteration_s"], "auto", cpu]))
"""

# NCCL's default NCCL_P2P_PXN_LEVEL=2: the iteration's all-to-alls go through PXN.
DEEPSEEK = (
    "--model deepseek-v3 --gpus 2048 --gpu h100 --tp 1 --pp 16 --ep 64 --first-stage-layers 3"
    " --last-stage-layers 2 --gbs 2048 --seq 4096 --recompute full --dist-opt --json"
).split()


def main() -> None:
    from clustersim.topology import simai_template

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds before a run counts as too slow")
    ap.add_argument("--no-train", action="store_true", help="only the all-to-all sweeps")
    ap.add_argument("--write", action="store_true", help="record the result in benchmarks/RESULTS.md")
    args = ap.parse_args()
    lines = [
        run_header(args.runs),
        "",
        "| case | wall s | CPU s | peak RSS MB | simulated | algorithm | target |",
        "|---|---|---|---|---|---|---|",
    ]
    with tempfile.TemporaryDirectory() as tmp:
        fabric = Path(tmp) / "Spectrum-X-2048.txt"
        simai_template("Spectrum-X", gpu=2048).write(fabric)
        cases: list[tuple[str, str, object, float | None, str]] = [
            (f"all-to-all 64 MiB, Spectrum-X {n} GPUs, direct", SWEEP_CHILD, ["Spectrum-X", n, "0"], t, "µs")
            for n, t in [(256, None), (512, None), (1024, 5.0)]
        ]
        pxn = ["Spectrum-X", 1024, "2"]
        cases.append(("all-to-all 64 MiB, Spectrum-X 1024 GPUs, PXN", SWEEP_CHILD, pxn, 5.0, "µs"))
        cmd = ["train", *DEEPSEEK, "-n", str(fabric)]
        if not args.no_train:
            cases.append(("DeepSeek-V3 EP 64, 2048 GPUs, `train -n` Spectrum-X", TRAIN_CHILD, cmd, 60.0, "s"))
        for label, child, spec, t_max, unit in cases:
            try:
                runs = [measure_child(child, spec, timeout=args.timeout) for _ in range(args.runs)]
            except subprocess.TimeoutExpired:
                target = "—" if t_max is None else f"≤ {t_max:g} s ❌"
                lines.append(f"| {label} | > {args.timeout:g} | — | — | — | — | {target} |")
                print(lines[-1], flush=True)
                continue
            wall, rss, cpu = (statistics.median(float(r[i]) for r in runs) for i in (0, 1, 4))
            target = "—" if t_max is None else f"≤ {t_max:g} s " + ("✅" if wall <= t_max else "❌")
            sim = f"{float(runs[0][2]):.1f} {unit}"
            row = [label, f"{wall:.2f}", f"{cpu:.2f}", f"{rss:.0f}", sim, runs[0][3], target]
            lines.append("| " + " | ".join(row) + " |")
            print(lines[-1], flush=True)
    table = "\n".join(lines)
    print(table)
    if args.write:
        write_section("alltoall", table)


if __name__ == "__main__":
    main()
