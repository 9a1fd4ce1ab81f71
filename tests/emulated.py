"""Measured against simulated on the emulated cluster (scripts/emulated_cluster.sh, 4 hosts at
1 Gbit/s): shared by tests/test_emulated_cluster.py and benchmarks/bench_emulated.py.

1. Calibration set, measured: bwtest g 1 and g 2 at 1, 4, 16 and 64 MiB per pair, and a replay
   of all-reduce, all-gather and all-to-all at 1, 4, 16 and 64 MiB
   (tests/data/replay/emulated4_cal.txt).
2. `clustersim calibrate` of those on the test bed's description
   (tests/data/platforms/emulated4_1gbit.platform): the scale-out links' efficiency and latency
   from bwtest, each collective's own efficiency and call latency from the replay.
3. Compared set, other sizes inside the calibrated range: bwtest g 1 and g 2 at 8 and 32 MiB
   per pair, and a replay of the three collectives at 2, 8 and 32 MiB
   (tests/data/replay/emulated4.txt), each measured, then simulated on the description with the
   calibration file (`--calibration`), and before it.

The compared sizes lie between calibrated ones, as a calibration is meant to be used: below the
smallest calibrated size a fit extrapolates what it never saw, and at 1 MiB the test bed has an
effect no link model has (tbf's 256 kB bucket passes at once, ~2 ms of a 6 ms all-to-all).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "emulated_cluster.sh"
DATA = ROOT / "tests" / "data"
PLATFORM = DATA / "platforms" / "emulated4_1gbit.platform"
CAL_WORKLOAD = DATA / "replay" / "emulated4_cal.txt"
WORKLOAD = DATA / "replay" / "emulated4.txt"
CAL_COUNTS = (32768, 131072, 524288, 2097152)  # 32-byte words: 1, 4, 16, 64 MiB per pair
COUNTS = (262144, 1048576)  # 8 MiB, 32 MiB
GROUPS = (1, 2)
# Timed iterations of each bwtest and replay (after one warm-up): a stall in one is a fifth of the mean.
ITERATIONS = 5
# The cluster's number (scripts/emulated_cluster.sh): namespaces and addresses of its hosts.
NET = int(os.environ.get("CS_EMU_NET", "0"))


def namespace(i: int) -> str:
    return f"cs-emu{NET or ''}-h{i}"


def address(i: int) -> str:
    return f"10.77.{NET}.{i}"


def why_not() -> str | None:
    """Why the emulated cluster cannot run here, or None."""
    import importlib.util

    if os.geteuid() != 0:
        return "network namespaces need root"
    for tool in ("ip", "tc", "mpirun"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    if importlib.util.find_spec("mpi4py") is None:
        return "mpi4py is not installed (the extra clustersim[mpi])"
    probe = f"cs-emu-probe{os.getpid()}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"this machine does not allow network namespaces: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], check=True)
    return None


def link(i: int, side: str) -> tuple[str, str]:
    """(namespace, device) of host i's veth: its own end ("host") or the switch port ("switch")."""
    if side == "host":
        return namespace(i), f"v{NET}h{i}"
    return f"cs-emu{NET or ''}-sw", f"s{NET}h{i}"


# TCP's counters of loss and its repair, summed over the hosts (nstat; RFC 4898 names).
TCP_COUNTERS = ("TcpRetransSegs", "TcpExtTCPLossProbes", "TcpExtTCPTimeouts", "TcpExtTCPSackRecovery")


def network_counters(hosts: int = 4) -> dict[str, int]:
    """Packets the tbf queues dropped (both ends of every host link) and TCP's loss counters."""
    import re

    out = {"tbf_dropped": 0} | dict.fromkeys(TCP_COUNTERS, 0)
    for i in range(1, hosts + 1):
        for side in ("host", "switch"):
            ns, dev = link(i, side)
            text = subprocess.run(
                ["ip", "netns", "exec", ns, "tc", "-s", "qdisc", "show", "dev", dev],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            out["tbf_dropped"] += sum(int(n) for n in re.findall(r"dropped (\d+)", text))
        text = subprocess.run(
            ["ip", "netns", "exec", namespace(i), "nstat", "-az", *TCP_COUNTERS],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for line in text.splitlines():
            name, *rest = line.split()
            if name in out and rest:
                out[name] += int(rest[0])
    return out


def up() -> None:
    subprocess.run(["bash", SCRIPT, "up", "4", "1gbit"], check=True, timeout=60)


def down() -> None:
    subprocess.run(["bash", SCRIPT, "down"], check=True, timeout=60)


def mpirun(*args: object, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    # Ahead of other work on the machine (root may raise priority; the cluster needs root anyway):
    # the ranks should wait for the network, not for the scheduler.
    cmd = ["nice", "-n", "-10", "bash", str(SCRIPT), "mpirun", "-np", "4", sys.executable, "-m", "clustersim"]
    cmd += list(map(str, args))
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {proc.stderr[-2000:]}")
    return proc


def bwtest(g: int, count: int, iters: int, out: Path) -> dict[str, Any]:
    mpirun("bwtest", "-g", g, "--count", count, "--iters", iters, "-o", out, cwd=out.parent)
    return json.loads(out.read_text())


def replay(workload: Path, iterations: int, prefix: Path) -> dict[str, Any]:
    mpirun(
        "replay",
        "-w",
        workload,
        "--compute",
        "skip",
        "--iterations",
        iterations,
        "-r",
        prefix,
        cwd=prefix.parent,
    )
    return json.loads(Path(f"{prefix}replay.json").read_text())


def measure_calibration_set(tmp: Path) -> list[Path]:
    for g in GROUPS:
        for c in CAL_COUNTS:
            bwtest(g, c, ITERATIONS, tmp / f"cal-bw-g{g}-{c}.json")
    replay(CAL_WORKLOAD, ITERATIONS, tmp / "cal-")
    return calibration_files(tmp)


def calibrate(files: list[Path], tmp: Path) -> tuple[Path, dict[str, Any]]:
    """The calibration file of the measured set on the description, and its report."""
    cmd = [sys.executable, "-m", "clustersim", "calibrate", *map(str, files), "-n", str(PLATFORM)]
    cmd += ["-o", str(tmp / "fit-")]
    subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=300, cwd=tmp)
    path = tmp / "fit-calibration.json"
    return path, json.loads(path.read_text())


def measure_compared_set(tmp: Path) -> None:
    for g in GROUPS:
        for c in COUNTS:
            bwtest(g, c, ITERATIONS, tmp / f"bw-g{g}-{c}.json")
    replay(WORKLOAD, ITERATIONS, tmp / "cmp-")


def compare(cal_file: Path, tmp: Path) -> list[dict[str, Any]]:
    """The compared set measured in `tmp` (`measure_compared_set`): one row per bwtest (pattern,
    size) and per replayed op, measured, simulated before calibration and after."""
    from clustersim.calibration import calibrated, read_calibration
    from clustersim.measure.bwtest.pattern import Pattern
    from clustersim.measure.bwtest.simulate import platform_of, simulate
    from clustersim.measure.replay import compare as replay_compare
    from clustersim.measure.replay.plan import load

    cal = read_calibration(cal_file)
    plain, fitted = platform_of(PLATFORM), calibrated(PLATFORM, cal)
    rows = []
    for g in GROUPS:
        for c in COUNTS:
            doc = json.loads((tmp / f"bw-g{g}-{c}.json").read_text())
            pattern = Pattern.of(4, g, c)
            measured = doc["aggregate"]["group_bandwidth_GBps"]
            sims = [pattern.bandwidth_GBps(simulate(pattern, p, PLATFORM)[1]) for p in (plain, fitted)]
            what = f"bwtest g={g} ({4 // g} groups)"
            rows.append(_row(what, pattern.message_bytes, "GB/s per group", measured, *sims))
    doc = json.loads((tmp / "cmp-replay.json").read_text())
    plan = load(WORKLOAD)
    before = replay_compare.simulate(plan, 1.0, str(PLATFORM))
    after = replay_compare.simulate(plan, 1.0, str(PLATFORM), cal)
    for op in doc["ops"]:
        if "collective" in op:
            r, ph = op["row"] - 1, op["phase"]
            sims = [x.layers[f"{ph} total comm"][r] / 1e3 for x in (before, after)]
            what = f"replay {op['collective']} on {op['ranks']}"
            rows.append(_row(what, op["bytes"], "ms", op["time_s"] * 1e3, *sims))
    return rows


def calibration_files(tmp: Path) -> list[Path]:
    """The calibration set's files in `tmp`, as `measure_calibration_set` names them."""
    return [tmp / f"cal-bw-g{g}-{c}.json" for g in GROUPS for c in CAL_COUNTS] + [tmp / "cal-replay.json"]


def _row(what: str, size: int, unit: str, measured: float, before: float, after: float) -> dict[str, Any]:
    return {
        "what": what,
        "bytes": size,
        "unit": unit,
        "measured": measured,
        "before": before,
        "after": after,
        "error_before": (before - measured) / measured,
        "error_after": (after - measured) / measured,
    }


def experiment(tmp: Path) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    """The calibration report, the compared rows, and the conditions they were measured in: the
    load average before and after, and what the network lost meanwhile (the cluster must be up)."""
    import time

    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    start, load = network_counters(), os.getloadavg()[0]
    files = measure_calibration_set(tmp)
    measure_compared_set(tmp)
    cal_file, report = calibrate(files, tmp)
    rows = compare(cal_file, tmp)
    end = network_counters()
    lost = {k: end[k] - start[k] for k in start}
    conditions = {"utc": when, "load_before": load, "load_after": os.getloadavg()[0], "network": lost}
    return report, rows, conditions
