#!/usr/bin/env python3
"""Benchmark `clustersim analytical` on SimAI's 9216-GPU example workload.

Targets (from the project's issue): the whole `clustersim analytical` process, start to CSV
written, <= 0.1 s CPU and <= 100 MB peak RSS; the simulation itself <= 10 ms.

For each case the real console script is run --runs times (after --warmup untimed runs). CPU
time (user + sys), peak RSS (ru_maxrss) and wall time come from os.wait4 on the child. The
simulation itself is measured twice: the engine's own `simulate_seconds` (building + executing
+ accounting, no Python start-up or file reading) from `--json` runs, and `clustersim.simulate()`
timed in-process with time.perf_counter (import once, call --runs times). In --compat simai
mode the CSV must be byte-identical to SimAI_analytical's reference output, or the benchmark
fails.

    python3 benchmarks/bench_analytical.py --runs 5 --write
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from results import run_header, write_section

REPO = Path(__file__).resolve().parents[1]
# In the repository: SimAI's example workload and busbw file, and SimAI's reference CSVs.
IN_REPO = (REPO / "examples", REPO / "tests" / "data" / "simai" / "reference")
RESULTS = REPO / "benchmarks" / "RESULTS.md"

TARGET_CPU_S = 0.1
TARGET_RSS_MB = 100.0
TARGET_SIM_S = 0.010

# ru_maxrss of a child that was spawned by a process P is at least P's peak RSS (Linux charges
# the old address space's high-water mark to the new program at exec). Running the benchmark's
# own Python (tens of MB) as the parent would inflate small readings, so every timed child is
# spawned by this tiny launcher: `python -S` (no site, ~8 MB), os.posix_spawn + os.wait4. It
# prints the child's rusage and its own peak RSS (the floor below which readings mean nothing).
LAUNCHER = r"""
import os, sys, time
out, err, *cmd = sys.argv[1:]
flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
actions = [(os.POSIX_SPAWN_OPEN, 1, out, flags, 0o644), (os.POSIX_SPAWN_OPEN, 2, err, flags, 0o644)]
floor = -1
try:
    with open("/proc/self/status") as f:
        floor = int(next(l for l in f if l.startswith("VmHWM:")).split()[1])
except (OSError, StopIteration, ValueError):
    pass
t0 = time.perf_counter()
pid = os.posix_spawn(cmd[0], cmd, os.environ, file_actions=actions)
_, status, ru = os.wait4(pid, 0)
wall = time.perf_counter() - t0
print(os.waitstatus_to_exitcode(status), ru.ru_utime, ru.ru_stime, ru.ru_maxrss, wall, floor)
"""

# The in-process measurement runs in its own interpreter, so that the benchmark process (which
# spawns the timed children) does not grow by the engine's memory.
IN_PROCESS = r"""
import json, sys, time
t0 = time.perf_counter()
import clustersim
import_s = time.perf_counter() - t0
kwargs, warmup, runs = json.loads(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
seconds, engine = [], []
for _ in range(warmup + runs):
    t = time.perf_counter()
    r = clustersim.simulate(**kwargs)
    seconds.append(time.perf_counter() - t)
    engine.append(r.simulate_seconds)
print(json.dumps({"seconds": seconds[warmup:], "engine_seconds": engine[warmup:], "first_seconds": seconds[0],
                  "import_seconds": import_s, "csv": r.csv,
                  "version": clustersim.__version__, "file": clustersim.__file__}))
"""


class Case(NamedTuple):
    name: str  # "auto" (built-in bandwidth model) or "busbw" (a busbw.yaml)
    compat: bool
    prefix: str  # the -r prefix; its name is the run name in the CSV
    reference: str | None  # SimAI's reference CSV (compat mode only)

    @property
    def label(self) -> str:
        return f"{self.name}, {'--compat simai' if self.compat else 'default mode'}"

    def cli_args(self, inputs: Path, out: Path) -> list[str]:
        args = ["analytical", "-w", str(inputs / "workload_analytical.txt"), "-g", "9216"]
        if self.name == "auto":
            args += ["-nv", "360", "-nic", "48.5", "-n_p_s", "8", "-g_p_s", "8", "-r", f"{out}/{self.prefix}"]
        else:
            args += ["-g_p_s", "8", "-r", f"{out}/{self.prefix}", "-busbw", str(inputs / "busbw.yaml")]
        return args + (["--compat", "simai"] if self.compat else [])

    def api_kwargs(self, inputs: Path) -> dict[str, Any]:
        kw: dict[str, Any] = {"workload": str(inputs / "workload_analytical.txt"), "gpus": 9216}
        if self.name == "auto":
            kw |= {"nvlink_busbw": 360.0, "nic_busbw": 48.5, "nics_per_server": 8, "gpus_per_server": 8}
        else:
            kw |= {"gpus_per_server": 8, "busbw": str(inputs / "busbw.yaml")}
        return kw | {"run_name": self.prefix, "compat": "simai" if self.compat else None}


CASES = [
    Case("auto", False, "example-", None),
    Case("auto", True, "example-", "auto-9216-EndToEnd.csv"),
    Case("busbw", False, "test-", None),
    Case("busbw", True, "test-", "busbw-9216-EndToEnd.csv"),
]


class Run(NamedTuple):
    cpu_s: float
    rss_mb: float
    wall_s: float
    floor_mb: float
    stdout: str


class Stats(NamedTuple):
    median: float
    lo: float
    hi: float

    @classmethod
    def of(cls, xs: Sequence[float]) -> Stats:
        return cls(statistics.median(xs), min(xs), max(xs))


class BenchError(Exception):
    """A run failed or produced a wrong result."""


def kib_to_mb(kib: float) -> float:
    # ru_maxrss is in KiB on Linux, bytes on macOS; MB here are 10**6 bytes.
    return kib / 1e6 if sys.platform == "darwin" else kib * 1024 / 1e6


def find_runner() -> tuple[list[str], str]:
    """The console script installed for this interpreter (not a PATH shim), or `python -m`."""
    script = Path(sysconfig.get_path("scripts")) / "clustersim"
    try:
        first = script.open("rb").readline()
    except OSError:
        first = b""
    if first.startswith(b"#!") and b"python" in first:
        return [str(script)], f"console script `{script}`"
    return [sys.executable, "-m", "clustersim"], f"`{sys.executable} -m clustersim` (no console script found)"


def path_shim_note(runner: list[str]) -> str | None:
    """Say so when a `clustersim` on PATH is something else (e.g. pyenv's bash shim)."""
    mine = Path(runner[0]).resolve() if len(runner) == 1 else None
    for d in os.environ.get("PATH", "").split(os.pathsep):
        cand = Path(d or ".") / "clustersim"
        if not (cand.is_file() and os.access(cand, os.X_OK)) or cand.resolve() == mine:
            continue
        try:
            first = cand.read_text(errors="replace").split("\n", 1)[0]
        except OSError:
            first = ""
        kind = "a shell shim" if first.startswith("#!") and "python" not in first else "another program"
        return f"`{cand}` on PATH is {kind}, not used: its own start-up cost is not clustersim's."
    return None


def pth_files() -> list[str]:
    """Start-up hooks in site-packages that import modules (environment, not project)."""
    found = []
    for key in ("purelib", "platlib"):
        d = Path(sysconfig.get_path(key))
        for p in sorted(d.glob("*.pth")):
            try:
                text = p.read_text(errors="replace")
            except OSError:
                continue
            imports = sorted(set(re.findall(r"\bimport\s+([A-Za-z_][\w.]*)", text)))
            entry = f"`{p.name}`" + (f" (imports {', '.join(imports)})" if imports else "")
            if entry not in found:
                found.append(entry)
    return found


def spawn(cmd: list[str], workdir: Path) -> Run:
    """Run cmd once through the launcher; its CPU, peak RSS and wall time from os.wait4."""
    out, err = workdir / "stdout.txt", workdir / "stderr.txt"
    launcher = [sys.executable, "-S", "-c", LAUNCHER, str(out), str(err), *cmd]
    res = subprocess.run(launcher, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise BenchError(f"launcher failed for {cmd}: {res.stderr.strip()}")
    code, utime, stime, maxrss, wall, floor = res.stdout.split()
    if int(code) != 0:
        raise BenchError(f"exit status {code}: {' '.join(cmd)}\n{err.read_text(errors='replace')}")
    floor_mb = kib_to_mb(float(floor)) if int(floor) >= 0 else 0.0
    return Run(float(utime) + float(stime), kib_to_mb(float(maxrss)), float(wall), floor_mb, out.read_text())


def first_difference(a: bytes, b: bytes) -> str:
    la, lb = a.splitlines(), b.splitlines()
    for i, (x, y) in enumerate(zip(la, lb, strict=False), 1):
        if x != y:
            return f"line {i}:\n  got      {x[:200]!r}\n  expected {y[:200]!r}"
    return f"line counts differ: got {len(la)}, expected {len(lb)}"


def check_csv(case: Case, got: bytes, reference_dir: Path, where: str) -> None:
    if not got:
        raise BenchError(f"{case.label}: {where}: empty CSV")
    if case.reference is None:
        return
    expected = (reference_dir / case.reference).read_bytes()
    if got != expected:
        raise BenchError(
            f"WRONG RESULT: {case.label}: {where}: the CSV is not byte-identical to "
            f"{reference_dir / case.reference}; first difference at {first_difference(got, expected)}"
        )


def bench_cli(
    case: Case, runner: list[str], inputs: Path, reference: Path, runs: int, warmup: int, tmp: Path
) -> dict[str, Any]:
    """Whole-process runs (the exact command) and --json runs (the engine's simulate_seconds)."""
    csv = tmp / f"{case.prefix}EndToEnd.csv"
    plain: list[Run] = []
    engine: list[float] = []
    for i in range(warmup + runs):
        for json_flag in (False, True):
            csv.unlink(missing_ok=True)
            cmd = runner + case.cli_args(inputs, tmp) + (["--json"] if json_flag else [])
            run = spawn(cmd, tmp)
            if not csv.is_file():
                raise BenchError(f"{case.label}: no CSV written at {csv}")
            check_csv(case, csv.read_bytes(), reference, "clustersim analytical")
            if i < warmup:
                continue
            if json_flag:
                engine.append(float(json.loads(run.stdout)["simulate_seconds"]))
            else:
                plain.append(run)
    return {"runs": plain, "engine_s": engine}


def bench_in_process(case: Case, inputs: Path, reference: Path, runs: int, warmup: int) -> dict[str, Any]:
    cmd = [sys.executable, "-c", IN_PROCESS, json.dumps(case.api_kwargs(inputs)), str(warmup), str(runs)]
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise BenchError(f"{case.label}: in-process clustersim.simulate() failed:\n{res.stderr}")
    doc = json.loads(res.stdout)
    check_csv(case, doc["csv"].encode(), reference, "clustersim.simulate()")
    return doc


def fmt_s(s: Stats, unit: str) -> str:
    scale = {"s": 1.0, "ms": 1e3}[unit]
    digits = 3 if unit == "s" else 2
    return f"{s.median * scale:.{digits}f} ({s.lo * scale:.{digits}f}–{s.hi * scale:.{digits}f})"


def fmt_mb(s: Stats, floor: float) -> str:
    mark = " †" if s.median <= floor * 1.02 else ""
    return f"{s.median:.1f} ({s.lo:.1f}–{s.hi:.1f}){mark}"


def verdict(value: float, limit: float) -> str:
    return "✅ pass" if value <= limit else "❌ FAIL"


def machine() -> list[str]:
    model = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            model = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), model)
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count() or 0
    now = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    return [
        f"CPU: {model}, {os.cpu_count()} logical cores ({usable} usable by this process)",
        f"OS: {platform.system()} {platform.release()}",
        f"Python: {platform.python_version()} ({sys.executable})",
        f"Date: {now}",
    ]


def report(data: dict[str, Any], runs: int, warmup: int) -> tuple[str, bool]:
    lines: list[str] = []
    ok = True
    lines.append(f"### Run of {data['date']}")
    lines.append("")
    for m in data["machine"]:
        lines.append(f"- {m}")
    lines.append(f"- clustersim {data['version']} as installed at `{data['installed']}`")
    lines.append(f"- Invoked as: {data['runner']}")
    if data["shim"]:
        lines.append(f"- {data['shim']}")
    if data["pth"]:
        lines.append(
            "- Start-up hooks in site-packages (environment, not project; they run at every Python "
            f"start-up, `clustersim` included): {', '.join(data['pth'])}"
        )
    lines.append(
        f"- {runs} timed runs per case after {warmup} untimed warm-up run(s); median (min–max). "
        f"Launcher floor: {data['floor']:.1f} MB (see below)."
    )
    lines.append("")
    lines.append("**Whole process** (`clustersim analytical`, start to CSV written; os.wait4 of the child)")
    lines.append("")
    lines.append("| case | CPU s (user+sys) | peak RSS MB | wall s | CPU ≤ 0.1 s | RSS ≤ 100 MB |")
    lines.append("|---|---|---|---|---|---|")
    floor = data["floor"]
    for label, (cpu, rss, wall), targets in [(n, r, False) for n, r in data["baselines"]] + [
        (n, r, True) for n, r in data["cli"]
    ]:
        c = verdict(cpu.median, TARGET_CPU_S) if targets else "–"
        m = verdict(rss.median, TARGET_RSS_MB) if targets else "–"
        ok &= "FAIL" not in c + m
        lines.append(
            f"| {label} | {fmt_s(cpu, 's')} | {fmt_mb(rss, floor)} | {fmt_s(wall, 's')} | {c} | {m} |"
        )
    lines.append("")
    lines.append("**The simulation itself** (ms)")
    lines.append("")
    lines.append(
        "| case | engine `simulate_seconds` (CLI `--json`) | `clustersim.simulate()` in-process "
        "(perf_counter) | engine ≤ 10 ms | `simulate()` ≤ 10 ms |"
    )
    lines.append("|---|---|---|---|---|")
    for label, engine, api in data["sim"]:
        e, a = verdict(engine.median, TARGET_SIM_S), verdict(api.median, TARGET_SIM_S)
        ok &= "FAIL" not in e + a
        lines.append(f"| {label} | {fmt_s(engine, 'ms')} | {fmt_s(api, 'ms')} | {e} | {a} |")
    lines.append("")
    lines.append(
        f"In-process, `import clustersim` took {data['import_ms']:.1f} ms and the first (untimed when "
        f"--warmup > 0) `simulate()` call after it {data['first_ms']:.1f} ms (medians over the cases). "
        "Correctness: every `--compat simai` CSV, from the CLI and from `simulate()`, was byte-identical "
        "to SimAI_analytical's reference output (`auto-9216-EndToEnd.csv`, `busbw-9216-EndToEnd.csv`)."
    )
    lines.append("")
    lines.append(
        "† at or below the launcher floor: Linux charges the spawning process's peak RSS to the child at "
        "exec, so a reading this low only bounds the true figure from above."
        if any(r[1].median <= data["floor"] * 1.02 for _, r in data["baselines"] + data["cli"])
        else "No RSS reading was at the launcher floor, so all are the children's own peaks."
    )
    return "\n".join(lines), ok


def compact(data: dict[str, Any], runs: int) -> str:
    """The section of RESULTS.md: one row per case, medians."""
    lines = [
        run_header(runs) + f" Whole process: os.wait4 of the child; launcher floor {data['floor']:.1f} MB. "
        "Every `--compat simai` CSV (CLI and `simulate()`) was byte-identical to SimAI_analytical's. "
        "For comparison (quoted, not measured): SimAI_analytical as shipped 1.5–1.7 s CPU, built "
        "with `-O3` 0.03 s.",
        "",
        "| case | CPU s | peak RSS MB | engine `simulate_seconds` ms | `simulate()` ms | targets |",
        "|---|---|---|---|---|---|",
    ]
    for label, (cpu, rss, _wall) in data["baselines"][:1]:
        lines.append(f"| {label} | {cpu.median:.3f} | {rss.median:.1f} | – | – | – |")
    for (label, (cpu, rss, _wall)), (_, engine, api) in zip(data["cli"], data["sim"], strict=True):
        ok = max(cpu.median / TARGET_CPU_S, rss.median / TARGET_RSS_MB) <= 1
        ok &= max(engine.median, api.median) <= TARGET_SIM_S
        lines.append(
            f"| {label} | {cpu.median:.3f} | {rss.median:.1f} | {engine.median * 1e3:.2f} | "
            f"{api.median * 1e3:.2f} | {'✅' if ok else '❌'} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5, help="timed runs per case (default 5)")
    ap.add_argument("--warmup", type=int, default=1, help="untimed runs per case first (default 1)")
    ap.add_argument(
        "--data",
        type=Path,
        default=None,
        help="a folder holding simai/ (workload, busbw.yaml, reference/); default: examples/, tests/data",
    )
    ap.add_argument("--write", action="store_true", help=f"update the analytical section of {RESULTS}")
    ap.add_argument("--results", type=Path, default=RESULTS, help="the results file --write updates")
    ap.add_argument("--strict", action="store_true", help="exit with status 3 if a target is missed")
    args = ap.parse_args(argv)
    if args.runs < 1 or args.warmup < 0:
        ap.error("--runs must be >= 1 and --warmup >= 0")
    if not hasattr(os, "wait4") or not hasattr(os, "posix_spawn"):
        ap.error("needs os.wait4 and os.posix_spawn (Linux or macOS)")
    simai = None if args.data is None else args.data / "simai"
    inputs, reference = IN_REPO if simai is None else (simai, simai / "reference")
    needed = [inputs / "workload_analytical.txt", inputs / "busbw.yaml"]
    needed += [reference / c.reference for c in CASES if c.reference]
    missing = [str(p) for p in needed if not p.is_file()]
    if missing:
        ap.error("missing data files (use --data): " + ", ".join(missing))

    runner, runner_desc = find_runner()
    print(f"invoking {runner_desc}", file=sys.stderr)
    data: dict[str, Any] = {
        "machine": machine(),
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "runner": runner_desc,
        "shim": path_shim_note(runner),
        "pth": pth_files(),
        "baselines": [],
        "cli": [],
        "sim": [],
    }
    floors: list[float] = []
    imports: list[float] = []
    firsts: list[float] = []
    try:
        with tempfile.TemporaryDirectory(prefix="bench-analytical-") as tmp_name:
            tmp = Path(tmp_name)
            baselines = [
                ("`python -c pass` (interpreter start-up alone)", [sys.executable, "-c", "pass"]),
                ("`python -S -c pass` (without site/.pth processing)", [sys.executable, "-S", "-c", "pass"]),
            ]
            for label, cmd in baselines:
                for _ in range(args.warmup):
                    spawn(cmd, tmp)
                rs = [spawn(cmd, tmp) for _ in range(args.runs)]
                floors += [r.floor_mb for r in rs]
                stats = (Stats.of([r.cpu_s for r in rs]), Stats.of([r.rss_mb for r in rs]))
                data["baselines"].append((label, (*stats, Stats.of([r.wall_s for r in rs]))))
                print(f"{label}: CPU {stats[0].median:.3f} s, RSS {stats[1].median:.1f} MB", file=sys.stderr)
            for case in CASES:
                cli = bench_cli(case, runner, inputs, reference, args.runs, args.warmup, tmp)
                rs = cli["runs"]
                floors += [r.floor_mb for r in rs]
                cpu, rss = Stats.of([r.cpu_s for r in rs]), Stats.of([r.rss_mb for r in rs])
                data["cli"].append((case.label, (cpu, rss, Stats.of([r.wall_s for r in rs]))))
                api = bench_in_process(case, inputs, reference, args.runs, args.warmup)
                imports.append(api["import_seconds"])
                firsts.append(api["first_seconds"])
                data["version"], data["installed"] = api["version"], str(Path(api["file"]).parent)
                engine, call = Stats.of(cli["engine_s"]), Stats.of(api["seconds"])
                data["sim"].append((case.label, engine, call))
                print(
                    f"{case.label}: CPU {cpu.median:.3f} s, RSS {rss.median:.1f} MB, engine "
                    f"{engine.median * 1e3:.2f} ms, simulate() {call.median * 1e3:.2f} ms",
                    file=sys.stderr,
                )
    except BenchError as e:
        print(f"bench_analytical: {e}", file=sys.stderr)
        return 1
    data["floor"] = max(floors)
    data["import_ms"] = statistics.median(imports) * 1e3
    data["first_ms"] = statistics.median(firsts) * 1e3
    section, ok = report(data, args.runs, args.warmup)
    print(section)
    if args.write:
        write_section("analytical", compact(data, args.runs), path=args.results)
        print(f"\nwrote {args.results}", file=sys.stderr)
    return 3 if args.strict and not ok else 0


if __name__ == "__main__":
    sys.exit(main())
