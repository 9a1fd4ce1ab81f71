"""Time the goodput Monte Carlo: 10⁴ trials of a 54-day run of 16,384 GPUs (8 a server, one NIC
per GPU) at the Llama 3 profile's rates (≈ 466 interruptions a trial), a 5.7 TB checkpoint at
2 TB/s, Daly's interval, 10 min restarts, spare servers always free. CPU = process time of
`GoodputRun.simulate` alone (the engine, one thread), median of --runs. Target (issue 31): ≤ 5 s.

    python3 benchmarks/bench_goodput.py [--runs 3] [--trials 10000] [--write]
"""

from __future__ import annotations

import argparse
import statistics
import time

from clustersim import _engine
from results import run_header, write_section

DAY_S = 86400.0


def run(trials: int) -> _engine.GoodputRun:
    profile = next(p for p in _engine.failure_profiles() if p.name == "llama3-405b")
    per_hour = _engine.failure_rates_per_hour(
        profile="llama3-405b", gpus=16384, gpus_per_server=8, nics_per_server=8
    )
    write_s = _engine.checkpoint_bytes(405_853_388_800) / 2e12
    # Daly's M: the mean time between interruptions that lose work (planned stops lose none).
    mtbf_s = 3600.0 / sum(r for r, c in zip(per_hour, profile.causes, strict=True) if c.effect != "planned")
    _, _, daly_s, _ = _engine.goodput_closed_form(
        interval_s=1.0, checkpoint_s=write_s, restart_s=600.0 + write_s, mtbf_s=mtbf_s
    )
    return _engine.GoodputRun(
        names=[c.name for c in profile.causes],
        effects=[c.effect for c in profile.causes],
        rates_per_s=[r / 3600.0 for r in per_hour],
        interval_s=daly_s,
        checkpoint_s=write_s,
        restart_s=600.0,
        restore_s=write_s,
        spare_servers=None,
        repair_s=0.0,
        window_s=54 * DAY_S,
        work_s=float("inf"),
        trials=trials,
        seed=0,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--trials", type=int, default=10_000)
    ap.add_argument("--write", action="store_true", help="record the result in benchmarks/RESULTS.md")
    args = ap.parse_args()
    r = run(args.trials)
    cpus = []
    for _ in range(args.runs):
        start = time.process_time()
        trials = r.simulate()
        cpus.append(time.process_time() - start)
    cpu = statistics.median(cpus)
    n = trials.spread("interruptions")
    g = trials.spread("goodput")
    mark = "✅ pass" if cpu <= 5 else "❌ fail"
    rows = [run_header(args.runs), ""]
    rows += [
        "| trials | interruptions a trial (mean) | effective training time (mean) | CPU s | target ≤ 5 s |",
        "|---|---|---|---|---|",
        f"| {args.trials:,} | {n[0]:.1f} | {g[0]:.4f} | {cpu:.3f} | {mark} |",
    ]
    table = "\n".join(rows)
    print(table)
    if args.write:
        write_section("goodput", table)


if __name__ == "__main__":
    main()
