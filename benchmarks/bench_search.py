"""Time `clustersim search` on Calculon's study: Turing-530B on 5128 A100-80GB, global batch at
most 2520 (calculon-ai/calculon README: `llm-optimal-execution models/turing-530B.json 5128 2520
float16 systems/a100_80g.json`), and on larger spaces.

5128 = 8 · 641 with 641 prime, so TP·PP·CP divides 8 and PP must also divide the 105 layers: PP
is 1, and DP is 5128, 2564, 1282 or 641 for TP 1, 2, 4, 8. A global batch of exactly 2520 is no
multiple of any of those DPs, so, as Calculon does, each plan takes the largest multiple of its DP
not above 2520 (`--max-gbs 2520`): 1282 for TP 4 and 1923 for TP 8 (DP above 2520 has none).
Calculon's space is TP, PP, DP, micro-batch, recompute, SP and optimizer sharding (plus knobs we
do not model: offloading to a second memory, TP communication kinds, overlap, which network each
group uses); ours adds VPP and the ZeRO stages, and CP and EP when asked (`study (all axes)`).

Each run is a fresh process: `search` timed inside it (enumeration and simulation, after
`import clustersim`): wall seconds, and CPU seconds of all its threads (robust to other load on
a shared machine), median of --runs.

    python3 benchmarks/bench_search.py [--runs 3] [--write]
"""

from __future__ import annotations

import argparse
import statistics

from results import measure_child, run_header, write_section

CHILD = """
import json, resource, sys, time
from clustersim import search
spec = json.loads(sys.argv[1])
cpu = lambda: sum(resource.getrusage(resource.RUSAGE_SELF)[:2])
start, start_cpu = time.perf_counter(), cpu()
r = search(**spec)
seconds, cpu_s = time.perf_counter() - start, cpu() - start_cpu
print(json.dumps({"seconds": seconds, "cpu_s": cpu_s, "candidates": r.candidates, "feasible": r.feasible,
                  "best": r.best, "why": r.why(), "simulated": len(r.plans)}))
"""

STUDY = dict(model="turing-530b", gpus=5128, gpu="a100", max_gbs=2520)
CASES = {
    "Calculon's study (TP, PP, DP, MBS, recompute, SP, optimizer; VPP)": STUDY | dict(cp=[1]),
    "study (all axes: CP too)": STUDY,
    "GPT-3 175B, 1024 A100, GBS 1536; TP 8, SP, selective recompute, distributed optimizer": dict(
        model="gpt-175b",
        gpus=1024,
        gpu="a100",
        gbs=1536,
        tp=[8],
        cp=[1],
        sp=[True],
        recompute=["selective"],
        optimizer=["distributed_optimizer"],
    ),
}
# calculon-ai/calculon on this machine, as issue 15 states it.
CALCULON = {"candidates": 8112, "feasible": 1080, "seconds": 103.0}


def plan_text(best: dict) -> str:
    sizes = " ".join(f"{k.upper()} {best[k]}" for k in ("tp", "pp", "vpp", "dp", "cp", "mbs", "gbs"))
    sp = "SP" if best["sp"] else "no SP"
    recompute = "no recompute" if best["recompute"] == "none" else f"{best['recompute']} recompute"
    return f"{sizes}, {sp}, {recompute}, {best['optimizer']}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--write", action="store_true", help="record the result in benchmarks/RESULTS.md")
    args = ap.parse_args()
    rows = [
        "| space | candidates (valid plans) | simulated | search s (wall) | plans/s |"
        " CPU s | plans per CPU s | best plan | tokens/s | MFU |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    whys = []
    for name, spec in CASES.items():
        runs = [measure_child(CHILD, spec, timeout=1800) for _ in range(args.runs)]
        seconds = statistics.median(r["seconds"] for r in runs)
        cpu = statistics.median(r["cpu_s"] for r in runs)
        r = runs[0]
        assert all(x["best"] == r["best"] for x in runs), "same inputs, same best plan"
        best = r["best"]
        rows.append(
            f"| {name} | {r['candidates']} | {r['feasible']} | {seconds:.3f} |"
            f" {r['candidates'] / seconds:.0f} | {cpu:.3f} | {r['candidates'] / cpu:.0f} |"
            f" {plan_text(best)} | {best['tokens_per_s']:.0f} |"
            f" {best['mfu'] * 100:.1f} % |"
        )
        whys.append(f"- {name}: {r['why']}")
        print(rows[-1], flush=True)
    c = CALCULON
    rows.append(
        f"| Calculon `llm-optimal-execution` (issue 15) | {c['candidates']} | {c['feasible']} |"
        f" {c['seconds']:.0f} | {c['candidates'] / c['seconds']:.0f} | | | (quoted, not run here) | | |"
    )
    print("\n".join(whys))
    body = "\n".join([run_header(args.runs), "", *rows])
    print(body)
    if args.write:
        write_section("bench_search", body)


if __name__ == "__main__":
    main()
