"""What the benchmark scripts share: measuring a child Python, the run header, and the results page.

benchmarks/RESULTS.md holds today's numbers only: one section per benchmark script, in the order
of `BENCHMARKS`, each between `<!-- MARKER:begin -->` and `<!-- MARKER:end -->`. A script's
`--write` replaces its own section through `write_section` and keeps everything else; the section's
title, what it measures, its target and the command that regenerates it are written here, once, so
that every section reads alike. History stays in git (`git log -p benchmarks/RESULTS.md`).

    python3 benchmarks/results.py --check    # every section present and complete, page ≤ 400 lines
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "RESULTS.md"
MAX_LINES = 400


@dataclass(frozen=True)
class Benchmark:
    """One section of the page: the script that writes it and what it is held to."""

    marker: str
    script: str
    title: str
    what: str
    command: str


BENCHMARKS: tuple[Benchmark, ...] = (
    Benchmark(
        "startup",
        "bench_startup.py",
        "Start-up of the `clustersim` command",
        "CPU (user + sys) of whole `clustersim` processes, run as installed and under `python -S` (no "
        "`site`: this sandbox's `.pth` hook imports certifi in every process); the instructions one run "
        "executes (valgrind), which load from other machines does not change; whether a heavy library "
        "is imported. Target (issues 10, 26): ≤ 0.1 s CPU for `analytical`, no heavy library.",
        "python3 benchmarks/bench_startup.py --runs 31 --write",
    ),
    Benchmark(
        "analytical",
        "bench_analytical.py",
        "`clustersim analytical` on SimAI's 9216-GPU example",
        "Whole process (CPU, peak RSS) and the simulation alone (the engine's `simulate_seconds`, "
        "`clustersim.simulate()` in process) for the built-in bandwidths and a `busbw.yaml`, default "
        "and `--compat simai`. Targets: ≤ 0.1 s CPU, ≤ 100 MB, simulation ≤ 10 ms; every "
        "`--compat simai` CSV byte-identical to SimAI_analytical's (else the script fails).",
        "python3 benchmarks/bench_analytical.py --runs 5 --write",
    ),
    Benchmark(
        "calibration",
        "calibrate.py",
        "Calibration: Megatron-LM on A100",
        "`clustersim.training.train` against 25 published Megatron-LM A100 results (Narayanan N1–N10 "
        "at their scripts' micro-batch and interleaving, Korthikanti K1–K10 and one-layer T1–T5). "
        "Target: mean |error| ≤ 5 %, worst ≤ 10 %.",
        "python3 benchmarks/calibrate.py --write",
    ),
    Benchmark(
        "train",
        "bench_train.py",
        "`clustersim train`: Llama 3 405B on 16384 GPUs",
        "Whole `clustersim train` process, 1F1B and the paper's interleaved plan. Target: ≤ 2 s CPU, ≤ 1 GB.",
        "python3 benchmarks/bench_train.py --runs 5 --write",
    ),
    Benchmark(
        "overlap_iterations",
        "overlap_iterations.py",
        "Megatron-Core's communication overlaps",
        "Iteration time per overlap option (Megatron-LM's flags, issue 14 item 2), H100, analytical "
        "network. No numeric target: the overlaps' closed forms are held by `training/overlap_tests.rs`.",
        "python3 benchmarks/overlap_iterations.py --write",
    ),
    Benchmark(
        "two_ways",
        "two_ways.py",
        "The same iteration two ways: `train` vs `workload generate` + `analytical`",
        "Seconds per iteration by part (stage 0, H100). With ratio tables of ones both paths must "
        "agree (tests/test_same_iteration.py); SimAI's ratio tables account for the rest.",
        "python3 benchmarks/two_ways.py --write",
    ),
    Benchmark(
        "h100_public",
        "h100_public.py",
        "H100 fidelity: published Megatron-LM and MosaicML results",
        "Held out, never fitted: the Megatron-LM README's H100 rows run with their published plan and "
        "overlaps. Target (issue 14): mean |error| ≤ 10 %, each ≤ 15 %.",
        "python3 benchmarks/h100_public.py --write",
    ),
    Benchmark(
        "hopper_kernels",
        "hopper_kernels.py",
        "Hopper compute model against measured kernels",
        "Model / measured rate of 27 cuBLAS GEMM shapes (OpenXLA's tables, H100 and B200) and cuDNN "
        "attention (FlashAttention-3 paper). Expected GEMM median: the A100 fit's non-kernel share "
        "(ε_gemm / 0.869 ≈ 0.92); attention within ~10 % from 2k tokens on.",
        "python3 benchmarks/hopper_kernels.py --write",
    ),
    Benchmark(
        "h100_breakdown",
        "h100_breakdown.py",
        "H100 small models: the compute model per op class",
        "One micro-batch of the README's 1.7B and 7.1B rows by op class, against published H100 "
        "kernel measurements (F: FlashAttention-3 paper, X: OpenXLA, L: Liger-Kernel). "
        "No target: above 1 the model is faster than the kernel was measured.",
        "python3 benchmarks/h100_breakdown.py --write",
    ),
    Benchmark(
        "megatron_plans",
        "megatron_plans.py",
        "Search fidelity: Megatron-LM's published A100 plans",
        "The search over TP, PP, micro-batch and VPP against the published plan. Target "
        "(tests/test_search.py): the best plan is the published one or within 3 %; N4, N5 are "
        "strict expected failures.",
        "python3 benchmarks/megatron_plans.py --write",
    ),
    Benchmark(
        "narayanan_tradeoffs",
        "narayanan_tradeoffs.py",
        "Narayanan et al.'s trade-offs: TP vs PP vs DP on Selene",
        "TFLOP/s per GPU, model / published (readings of the figures, ±5), and whether the order "
        "the paper states holds (tests/test_narayanan_tradeoffs.py).",
        "python3 benchmarks/narayanan_tradeoffs.py --write",
    ),
    Benchmark(
        "search_bound",
        "bench_search_bound.py",
        "Plan search over whole spaces: branch and bound",
        "The `clustersim search` command, every plan dimension open, whole process (CPU of all its "
        "threads). Targets (issue 30): GPT-3 175B on 1024 A100s ≤ 10 s CPU, Llama 3 405B on 16,384 "
        "H100s ≤ 60 s, Calculon's Turing-530B study ≤ 1 s; the top 10 exactly exhaustive "
        "simulation's (tests/test_search_exact.py on five spaces; `--check` here on Calculon's study). "
        "For comparison (quoted, not run here): Calculon's `llm-optimal-execution` searched 8112 "
        "candidates in 103 s.",
        "python3 benchmarks/bench_search_bound.py --runs 3 --write",
    ),
    Benchmark(
        "sweep",
        "bench_sweep.py",
        "`clustersim sweep`: points per second and resuming",
        "160 `train` points of Llama 3 8B on 16 H100. Target (issue 15): storing costs nothing "
        "measurable against calling the API point by point; resuming a finished sweep is instant.",
        "python3 benchmarks/bench_sweep.py --runs 5 --write",
    ),
    Benchmark(
        "collective",
        "bench_collective.py",
        "`clustersim collective`: nccl-tests sweeps on the flow model",
        "Wall time and peak RSS of a sweep, busbw at its largest size. Targets per case (issue 9).",
        "python3 benchmarks/bench_collective.py --runs 3 --write",
    ),
    Benchmark(
        "nccl",
        "bench_nccl.py",
        "`clustersim collective` against real NCCL",
        "busbw at 1 and 4 GiB against nccl-tests results, and 8 B–64 KiB times against NCCL's own "
        "tuning model. Targets (issue 9): busbw within 10 %, small messages within 25 %. Changed by "
        "issue 28: the 8×H100 NVLS row (511.6 GB/s at 1 GiB before), now priced at what an H100 "
        "board achieves (the catalog's nvls_busbw, 475) rather than NCCL's tuning constants alone; "
        "the three multi-node rows, now InfiniBand platform files (transport=ib) whose NICs carry "
        "what NCCL achieves through a NIC of their line rate (the catalog's NIC busbw) instead of "
        "SimAI templates at line rate: 2×1 NDR 50.0 → 48.5 GB/s at 4 GiB (maintainers quote 46–48 "
        "and 48–49 per NDR NIC), 2×8 HDR ring 199.1 → 187.2 and auto (now tree) 199.1 → 188.4 "
        "against 192 measured.",
        "python3 benchmarks/bench_nccl.py --write",
    ),
    Benchmark(
        "nccl_corpus",
        "nccl_corpus.py",
        "NCCL corpus: the default model against real nccl-tests",
        "68 public nccl-tests logs (tests/data/nccl-tests/corpus.yaml), flow backend, NCCL's tuner, "
        "no calibration. Target (issue 28, validation split): busbw ≥ 64 MiB within 15 % for ≥ 80 % "
        "of entries and within 25 % for all; ≤ 64 KiB within 2×; the order of algorithms and of "
        "operations right (pairs of one post's entries on one machine; ties within 3 %).",
        "python3 benchmarks/nccl_corpus.py --write",
    ),
    Benchmark(
        "alltoall",
        "bench_alltoall.py",
        "All-to-all at scale on the flow model: direct and PXN",
        "64 MiB all-to-all on Spectrum-X, and DeepSeek-V3 (EP 64, 2048 GPUs) through `train -n`. "
        "Targets (issue 9): 1024 GPUs ≤ 5 s, DeepSeek-V3 ≤ 60 s.",
        "python3 benchmarks/bench_alltoall.py --runs 3 --write",
    ),
    Benchmark(
        "fabric_ecmp",
        "bench_fabric_ecmp.py",
        "SimAI's DCN+ vs Spectrum-X over ECMP seeds",
        "256 H100, TP 8, the DP all-reduce through `clustersim run` on SimAI's two fabrics, 64 ECMP "
        "seeds. Expected: ≈ 84 % of seeds collide on DCN+ ((∏(1 − i/64))⁴), rail-optimised clearly "
        "ahead; spraying or more queue pairs remove the penalty.",
        "python3 benchmarks/bench_fabric_ecmp.py --seeds 64 --write",
    ),
    Benchmark(
        "flow_run",
        "bench_flow_run.py",
        "`clustersim run` on the flow backend: whole workloads",
        "SimAI's example workload (TP 2, EP 16, PP 12, 1789 rows) on Spectrum-X. "
        "Target: ≤ 60 s at 1152 GPUs.",
        "python3 benchmarks/bench_flow_run.py --runs 3 --write",
    ),
    Benchmark(
        "msccl",
        "bench_msccl.py",
        "MSCCL algorithm files",
        "Reading, checking and levelising MSCCL XML programs, then one 64 MiB size on Spectrum-X. "
        "No numeric target (the 17 MB 256-GPU ring must read in about a second).",
        "python3 benchmarks/bench_msccl.py --runs 5 --write",
    ),
    Benchmark(
        "mscclpp",
        "bench_mscclpp.py",
        "MSCCL++'s README comparison on simulated NDv4",
        "All-pairs algorithms against NCCL's, flow model; busbw in GB/s, the tuner's pick in "
        "brackets. No target: MSCCL++'s published numbers are withheld as the simulator's check.",
        "python3 benchmarks/bench_mscclpp.py --runs 3 --write",
    ),
    Benchmark(
        "reduction_server",
        "bench_reduction_server.py",
        "Reduction servers: seed 004's Optcast set-up",
        "4 one-GPU clients + 4 CPU servers, 200 Gbit/s, all-reduce of 32 MiB. Expected (closed "
        "form): ideal ring 133.33 Gbit/s, servers 200·k/(k+1), ratio 1.477 at 64 chunks.",
        "python3 benchmarks/bench_reduction_server.py --runs 5 --write",
    ),
    Benchmark(
        "on_platform_runs",
        "bench_on_platform_runs.py",
        "`train` on reduction servers and CollNet",
        "An 8-layer Llama-style model, data parallel over every client. Held by "
        "tests/test_on_platform_runs.py: each all-reduce across servers takes `collective`'s time.",
        "python3 benchmarks/bench_on_platform_runs.py --runs 5 --write",
    ),
    Benchmark(
        "hetero",
        "bench_hetero.py",
        "Heterogeneous jobs and the coherent ring all-reduce",
        "A mixed H100/A100 job (HCSim §3.2) and one 256 MiB all-reduce on hcsim-cxl (§3.3). "
        "Expected: the mix at the A100s' pace; the coherent ring half the ring's time.",
        "python3 benchmarks/bench_hetero.py --runs 5 --write",
    ),
    Benchmark(
        "workload_ir",
        "bench_workload_ir.py",
        "Workload IR from Python: import, JSON out and back",
        "Building or importing a workload, writing and reading its IR JSON. No numeric target.",
        "python3 benchmarks/bench_workload_ir.py --runs 3 --write",
    ),
    Benchmark(
        "topology",
        "bench_topology.py",
        "Fabric templates: building and writing SimAI text",
        "CPU time of building a Spectrum-X template and writing its SimAI text, fresh process each. "
        "No numeric target.",
        "python3 benchmarks/bench_topology.py --runs 3 --write",
    ),
    Benchmark(
        "platform",
        "bench_platform.py",
        "Platforms: building and exporting HCSim's systems",
        "Build (catalog read included) and each export of `hcsim-cxl`, fresh process each. "
        "No numeric target (SimGrid's agreement is tests/test_platform_simgrid.py's).",
        "python3 benchmarks/bench_platform.py --runs 3 --write",
    ),
    Benchmark(
        "graph",
        "bench_graph.py",
        "Workload graphs: LLaMA2-13B on HCSim's coherent system",
        "One iteration of the paper's LLaMA2-13B graph on hcsim-cxl, fresh process per case. "
        "Targets (issue 11): ≤ 2 s at 1024 XPUs, ≤ 10 s at 4096 (HCSim: 756.6 s at 1024).",
        "python3 benchmarks/bench_graph.py --runs 3 --write",
    ),
    Benchmark(
        "study_hcsim",
        "study_hcsim.py",
        "The HCSim paper's studies (Fig. 8, 10, 11, Table 6), clustersim's modelling",
        "The paper's claims checked on our rows (issue 11 item 8), LLaMA2-13B, 40 decoders; "
        "the rows are in results/hcsim/*.csv.",
        "python3 benchmarks/study_hcsim.py --write",
    ),
    Benchmark(
        "study_hcsim_hcsim_model",
        "study_hcsim.py",
        "The HCSim paper's studies with HCSim's modelling (`--model hcsim`)",
        "The same claims with an all-reduce per layer, CM02 collectives and unbounded reads.",
        "python3 benchmarks/study_hcsim.py --model hcsim --write",
    ),
    Benchmark(
        "bwtest",
        "bench_bwtest.py",
        "bwtest and calibrate on this machine",
        "Open MPI over shared memory; α–β fits of bwtest and of two real nccl-tests logs. "
        "No target here (exactness is tests/test_bwtest.py's and tests/test_calibrate.py's).",
        "python3 benchmarks/bench_bwtest.py --runs 3 --write",
    ),
    Benchmark(
        "replay",
        "bench_replay.py",
        "`clustersim replay`",
        "`mpirun … clustersim replay` of tests/data/replay/tp2_dp2.txt, 5 iterations after 1 warm-up, "
        "Open MPI over shared memory. No target.",
        "python3 benchmarks/bench_replay.py --runs 5 --write",
    ),
    Benchmark(
        "emulated",
        "bench_emulated.py",
        "Emulated cluster: measured vs simulated after calibration",
        "4 network namespaces at 1 Gbit/s, calibrated on 1, 4, 16, 64 MiB, compared at 2, 8, 32 MiB "
        "(bwtest: 8, 32 MiB). Target (issue 12): within 15 % after calibration.",
        "sudo python3 benchmarks/bench_emulated.py --write",
    ),
    Benchmark(
        "fuzz",
        "fuzz_campaign.py",
        "Fuzzing every reader",
        "Structure-aware mutations of valid inputs (`scripts/fuzz.sh`: the engine's readers through "
        "`cargo test --test fuzz`, the Python front ends through this script). Target (issue 10): "
        "10⁶ inputs per reader, no failure; a refusal is one line `file:line: field: problem`.",
        "python3 benchmarks/fuzz_campaign.py --cases 1000000 --write",
    ),
    Benchmark(
        "goodput",
        "bench_goodput.py",
        "Goodput Monte Carlo of a long run",
        "CPU (process time) of the engine's Monte Carlo alone (`GoodputRun.simulate`): 10⁴ trials of a "
        "54-day run of 16,384 GPUs at Llama 3's Table 5 rates (≈ 466 interruptions a trial), Daly's "
        "interval. Target (issue 31): ≤ 5 s CPU.",
        "python3 benchmarks/bench_goodput.py --runs 3 --write",
    ),
    Benchmark(
        "packet",
        "bench_packet.py",
        "Packet backend: speed on a fat-tree permutation, and against SimAI's ns-3",
        "Data packets per CPU-second and peak RSS of the packet model alone (cargo example "
        "`packet_permutation`: every host of a k-ary fat-tree sends to another, 400 Gb/s links, "
        "PFC and ECN on); then `clustersim collective --backend packet` (and flow) on scenarios of "
        "tests/data/ns3 with their AS_* settings, busbw and CPU seconds against ns-3's (its user "
        "seconds from the scenario's run.txt: one thread, debug build, as SimAI builds it); and "
        "a 512 MiB ring all-reduce over 256 GPUs on SimAI's Spectrum-X template (CPU and peak RSS "
        "of the whole command). Targets (issue 27): ≥ 10⁶ data packets per CPU-second on 8192 "
        "hosts, ≤ 2 GB; busbw within 5 % of ns-3; ≥ 50× faster than ns-3; the 256-GPU all-reduce "
        "≤ 30 s CPU and ≤ 500 MB.",
        "python3 benchmarks/bench_packet.py --write",
    ),
    Benchmark(
        "packet_cc",
        "bench_packet_cc.py",
        "Packet backend: DCQCN against HPCC (and TIMELY, DCTCP) on the same incast",
        "The packet model alone (cargo example `packet_incast`): N hosts send to one through one switch, "
        "400 Gb/s links of 1 µs, SimAI.conf's shipped settings but for CC_MODE; the bottleneck's queue "
        "(time-weighted mean, largest), per-flow FCT (SimAI's: start to last ACK) median / p99 / largest, "
        "the bottleneck's busy share. Shows (issue 27): HPCC holds the queue near zero where DCQCN "
        "builds one, at a cost in line rate of about 1 − U_TARGET.",
        "python3 benchmarks/bench_packet_cc.py --write",
    ),
)

HEADER = """# clustersim benchmarks: current results

Today's numbers only, one section per script in this folder. Each script's `--write` regenerates
its own section (the command is in the section); `python3 benchmarks/results.py --check` checks
the page (every section, its date, machine and command; ≤ 400 lines; tests/test_results_page.py).
Machine: the project's 2-core AMD EPYC (x86_64) build machine, shared with other sessions, so wall
times are noisy: compare CPU seconds where given. A section not re-run says so and carries the
date of its numbers. History, with the how and why of every change: `git log -p benchmarks/RESULTS.md`;
what some findings mean for a user: docs/notes/ (HCSim studies, ECMP and channels, H100 fidelity).
"""

RUN_LINE = re.compile(r"\bRun of (\d{4}-\d{2}-\d{2})\b[^;]*? on [^;]+?, \d+ cores")


def run_header(runs: int | None = None) -> str:
    """When, on what machine, and over how many runs: the first line of every section's body."""
    return (
        f"Run of {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on"
        f" {platform.processor() or platform.machine()}, {os.cpu_count()} cores,"
        f" Python {platform.python_version()}; load average {os.getloadavg()[0]:.1f}"
        + (f"; median of {runs} runs." if runs else ".")
    )


def measure_child(code: str, spec: object, timeout: float) -> list[float]:
    """Run Python `code` in a fresh process with `spec` as JSON in argv[1]; the JSON it prints."""
    out = subprocess.run(
        [sys.executable, "-c", code, json.dumps(spec)],
        capture_output=True,
        text=True,
        check=False,
        timeout=timeout,
    )
    if out.returncode != 0:
        raise SystemExit(f"{spec} failed: {out.stderr}")
    return json.loads(out.stdout)


def benchmark(marker: str) -> Benchmark:
    """The registered section `marker`."""
    for bench in BENCHMARKS:
        if bench.marker == marker:
            return bench
    raise KeyError(f"{marker}: no such section in benchmarks/results.py's BENCHMARKS")


def _markers(marker: str) -> tuple[str, str]:
    return f"<!-- {marker}:begin -->", f"<!-- {marker}:end -->"


def section_text(marker: str, body: str) -> str:
    """The whole section `marker`: its title line, which holds the begin marker, what the benchmark
    measures and its command followed by `body`'s first line (the run line), the rest of `body`,
    and the end marker on a line of its own (the page is short: 400 lines for every benchmark)."""
    bench = benchmark(marker)
    begin, end = _markers(marker)
    run, *rest = body.strip("\n").splitlines()
    first = f"{bench.what} Regenerate: `{bench.command}`. {run}"
    return "\n".join([f"## {bench.title} {begin}", first, *rest, end])


def _span(text: str, marker: str) -> tuple[int, int] | None:
    """Where the section `marker` lies in `text`: from the start of its title line to the end of its
    end marker; None when it is not there whole."""
    begin, end = _markers(marker)
    if begin not in text or end not in text:
        return None
    at = text.index(begin)
    stop = text.find(end, at)
    return None if stop < 0 else (text.rfind("\n", 0, at) + 1, stop + len(end))


def write_section(marker: str, body: str, *, path: Path = RESULTS) -> None:
    """Put the section `marker` (its title, what it measures, `body`) in `path`, keeping the rest.

    `body` starts with the run line (`run_header`, or a carried-over date) and holds the tables.
    A missing section goes in `BENCHMARKS`' order; a missing file starts with `HEADER`."""
    block = section_text(marker, body)
    text = path.read_text(encoding="utf-8") if path.is_file() else HEADER
    span = _span(text, marker)
    if span is not None:
        text = text[: span[0]] + block + text[span[1] :]
    else:
        order = [b.marker for b in BENCHMARKS]
        later = [s for m in order[order.index(marker) + 1 :] if (s := _span(text, m)) is not None]
        if later:
            at = later[0][0]
            text = text[:at] + block + "\n" + text[at:]
        else:
            text = text.rstrip("\n") + ("\n" if text.rstrip().endswith("-->") else "\n\n") + block + "\n"
    path.write_text(text, encoding="utf-8")


def check(path: Path = RESULTS, folder: Path = HERE) -> list[str]:
    """What is wrong with the page: an empty list when every section is there and complete."""
    text = path.read_text(encoding="utf-8")
    problems = []
    lines = text.splitlines()
    if len(lines) > MAX_LINES:
        problems.append(f"{path.name}: {len(lines)} lines, more than {MAX_LINES}")
    scripts = {p.name for p in folder.glob("*.py")} - {Path(__file__).name}
    registered = {b.script for b in BENCHMARKS}
    problems += [
        f"{s}: a benchmark script without a section in BENCHMARKS" for s in sorted(scripts - registered)
    ]
    known = {b.marker for b in BENCHMARKS}
    for found in sorted(set(re.findall(r"<!-- ([\w.-]+):(?:begin|end) -->", text)) - known):
        problems.append(f"{path.name}: section marker {found!r} is not in BENCHMARKS")
    for bench in BENCHMARKS:
        begin, end = _markers(bench.marker)
        where = f"{path.name}: section {bench.marker} ({bench.script})"
        span = _span(text, bench.marker)
        if text.count(begin) != 1 or text.count(end) != 1 or span is None:
            problems.append(f"{where}: not exactly one {begin} … {end}")
            continue
        block = text[span[0] : span[1]].splitlines()
        if not block or not block[0].startswith("## "):
            problems.append(f"{where}: no title")
        if not any("Regenerate: `" in line and f"benchmarks/{bench.script}" in line for line in block):
            problems.append(f"{where}: no command that regenerates it")
        if not any(RUN_LINE.search(line) for line in block):
            problems.append(f"{where}: no line 'Run of YYYY-MM-DD … on MACHINE, N cores'")
        if not any(line.startswith("|") for line in block):
            problems.append(f"{where}: no table")
    return problems


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="check the page; exit 1 on a problem")
    ap.add_argument("--results", type=Path, default=RESULTS, help="the page to check")
    args = ap.parse_args()
    if not args.check:
        ap.print_help()
        return
    problems = check(args.results)
    for problem in problems:
        print(problem, file=sys.stderr)
    lines = len(args.results.read_text(encoding="utf-8").splitlines())
    print(f"{args.results}: {len(BENCHMARKS)} sections, {lines} lines, {len(problems)} problems")
    if problems:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
