"""Start-up cost of the `clustersim` command: whole-process CPU (user + sys, from os.wait4) of each
case below, runs interleaved with `python -c pass` (the interpreter's own start-up) so that load
from other processes hits every case alike; median and quartiles of --runs. With --baseline PATH
(another install's `clustersim` console script) the same cases run through it too, interleaved.
Each case also reports which heavy libraries the command imports (none is the target). Commands
run byte-compiled, as an installed package does (the first, untimed round compiles), and again
under `python -S` (no `site`, so no `.pth` hook of the machine's: see NO_SITE).

    python3 benchmarks/bench_startup.py [--runs 31] [--baseline /path/to/old/bin/clustersim] [--write]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

from results import run_header, write_section

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "workload_analytical.txt"
# A `.pth` hook can cost an interpreter more than clustersim does (this sandbox's imports certifi,
# and with it pathlib, zipfile and tempfile, in every process): the same commands also run without
# `site`, as on an interpreter without such hooks.
NO_SITE = "no `site` (`python -S`)"
HEAVY = ("networkx", "matplotlib", "pandas", "tqdm", "yaml")
CASES = {
    "`clustersim --version`": ["--version"],
    "`clustersim analytical` (9216-GPU example, CSV + JSON written)": [
        "analytical", "-w", str(EXAMPLE), "-g", "9216", "-nv", "360", "-nic", "48.5", "-n_p_s", "8",
        "-g_p_s", "8", "-r", "{out}/example-",
    ],
}  # fmt: skip
# Children run as an installed package does: byte-compiled (pip compiles at install; here the
# warm-up round writes the .pyc files, which PYTHONDONTWRITEBYTECODE in a sandbox would forbid).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
# Runs the CLI in-process, then names the heavy libraries it left in sys.modules.
LOADED = """import sys
from clustersim.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(",".join(m for m in HEAVY if m in sys.modules), file=sys.stderr)
"""


def cpu_seconds(cmd: list[str]) -> float | None:
    """CPU of one run of `cmd` (output discarded), or None if it failed (a baseline without the option)."""
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        actions = [(os.POSIX_SPAWN_DUP2, null, 1), (os.POSIX_SPAWN_DUP2, null, 2)]
        pid = os.posix_spawn(cmd[0], cmd, ENV, file_actions=actions)
        _, status, usage = os.wait4(pid, 0)
    finally:
        os.close(null)
    return usage.ru_utime + usage.ru_stime if status == 0 else None


def instructions(cmd: list[str]) -> float | None:
    """Instructions one run of `cmd` executes (valgrind's callgrind, in millions): unlike CPU
    time, the same on a busy machine as on a quiet one. None without valgrind."""
    if shutil.which("valgrind") is None:
        return None
    with tempfile.NamedTemporaryFile() as out:
        run = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out.name}", *cmd],
            env=ENV, capture_output=True, text=True, check=False,
        )  # fmt: skip
    counted = re.search(r"Collected : (\d+)", run.stderr)
    return int(counted.group(1)) / 1e6 if counted and run.returncode == 0 else None


def cell(values: list[float]) -> str:
    """A runner's CPU seconds of one command: median (quartiles)."""
    if len(values) < 2:
        return "fails (option missing)" if not values else f"{values[0]:.3f}"
    q = statistics.quantiles(values, n=4)
    return f"{statistics.median(values):.3f} ({q[0]:.3f}–{q[2]:.3f})"


def no_site() -> list[str]:
    """The `clustersim` command run by an interpreter that skips `site` (its `.pth` hooks), with
    the installed package put on its path by hand."""
    import clustersim

    where = str(Path(clustersim.__file__).resolve().parents[1])
    code = f"import sys; sys.path.insert(0, {where!r}); from clustersim.cli import main"
    code += "; sys.exit(main(sys.argv[1:]))"
    return [sys.executable, "-S", "-c", code]


def heavy_loaded(args: list[str]) -> str:
    code = f"HEAVY = {HEAVY!r}\n{LOADED}"
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=False)
    return out.stderr.strip().splitlines()[-1].replace(",", ", ") if out.stderr.strip() else "none"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=31)
    ap.add_argument("--baseline", help="another install's clustersim console script to compare with")
    ap.add_argument("--baseline-is", default="", help="what the baseline install is, for the page")
    ap.add_argument("--write", action="store_true", help="update the start-up section of RESULTS.md")
    args = ap.parse_args()
    script = str(Path(sysconfig.get_path("scripts")) / "clustersim")
    runners = {"this install": [script], NO_SITE: no_site()}
    runners |= {"baseline": [args.baseline]} if args.baseline else {}
    python = {"this install": [sys.executable, "-c", "pass"], NO_SITE: [sys.executable, "-S", "-c", "pass"]}
    with tempfile.TemporaryDirectory() as out:
        todo = {("python -c pass", who): cmd for who, cmd in python.items()}
        for label, case in CASES.items():
            for who, exe in runners.items():
                todo[(label, who)] = [*exe, *(a.format(out=out) for a in case)]
        cpu: dict[tuple[str, str], list[float]] = {k: [] for k in todo}
        for i in range(args.runs + 1):
            for key, cmd in todo.items():
                t = cpu_seconds(cmd)
                if i and t is not None:  # the first round warms the file cache
                    cpu[key].append(t)
        said = f" Baseline: {args.baseline_is}." if args.baseline and args.baseline_is else ""
        lines = [
            run_header(args.runs) + said + " CPU s: median (quartiles).",
            "",
            "| command | "
            + " | ".join(runners)
            + " | instructions, M (× python's) | heavy libraries imported |",
            "|---|" + "---|" * len(runners) + "---|---|",
        ]
        base = instructions(todo[("python -c pass", "this install")])
        for label in ["python -c pass", *CASES]:
            cells = [cell(cpu.get((label, who), [])) for who in runners]
            counted = instructions(todo[(label, "this install")])
            ratio = f"{counted:.0f} ({counted / base:.2f}×)" if counted and base else "–"
            case = CASES.get(label)
            heavy = heavy_loaded([a.format(out=out) for a in case]) or "none" if case else "–"
            lines.append(f"| {label} | " + " | ".join(cells) + f" | {ratio} | {heavy} |")
    body = "\n".join(lines)
    print(body)
    if args.write:
        write_section("startup", body)


if __name__ == "__main__":
    main()
