"""The emulated cluster (scripts/emulated_cluster.sh): four hosts as network namespaces on a bridge,
each link shaped with tbf to 1 Gbit/s. Checked: one TCP stream between two hosts runs at the shaped
rate; bwtest under mpirun runs across the namespaces, below the bound of the test bed's
description (tests/data/platforms/emulated4_1gbit.platform) — so its bytes crossed the shaped
links, not shared memory; more ranks than hosts are refused; and, calibrated on one set of
sizes, the description's simulated bwtest bandwidths and replayed collectives' times agree with
the measured ones at other sizes, between the calibrated ones, within 15 % (tests/emulated.py).
Skipped, with the reason, where namespaces, tc or MPI are missing; the agreement also on a
machine too busy to time anything (load average above its cores, at the start or the end of
the run: the ranks would wait for the scheduler, not the network)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest
from conftest import DATA, ROOT
from emulated import address, namespace, why_not

SCRIPT = ROOT / "scripts" / "emulated_cluster.sh"
PLATFORM = DATA / "platforms" / "emulated4_1gbit.platform"
RATE_BPS = 1e9 / 8  # 1 Gbit/s
BURST_BYTES = 256 * 1024  # tbf's bucket (scripts/emulated_cluster.sh: "burst 256kb")


REASON = why_not()
pytestmark = pytest.mark.skipif(REASON is not None, reason=str(REASON))


@pytest.fixture(scope="module")
def cluster():
    subprocess.run(["bash", SCRIPT, "up", "4", "1gbit"], check=True, timeout=60)
    try:
        yield
    finally:
        subprocess.run(["bash", SCRIPT, "down"], check=True, timeout=60)


STREAM = """
import socket, sys, time
if sys.argv[1] == "server":
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", 5001)); s.listen(1); c, _ = s.accept()
    while c.recv(1 << 20):
        pass
    c.sendall(b"k")
else:
    c = socket.create_connection((sys.argv[2], 5001), timeout=30)
    buf = b"x" * (1 << 20); t = time.perf_counter()
    for _ in range(int(sys.argv[3])):
        c.sendall(buf)
    c.shutdown(socket.SHUT_WR); c.recv(1)
    print(int(sys.argv[3]) * len(buf) / (time.perf_counter() - t))
"""


def in_host(i: int, *args: object, **kw: object) -> subprocess.Popen:
    return subprocess.Popen(["ip", "netns", "exec", namespace(i), *map(str, args)], text=True, **kw)


def test_one_stream_runs_at_the_shaped_rate(cluster):
    server = in_host(2, sys.executable, "-c", STREAM, "server")
    time.sleep(0.5)
    client = in_host(1, sys.executable, "-c", STREAM, "client", address(2), 40, stdout=subprocess.PIPE)
    out, _ = client.communicate(timeout=60)
    server.wait(timeout=10)
    rate = float(out)
    # TCP and Ethernet headers take ~5 % of the wire; tbf's burst lets a little more through.
    assert 0.85 * RATE_BPS < rate < 1.02 * RATE_BPS, rate


def test_bwtest_runs_across_the_namespaces_below_the_described_bound(cluster, tmp_path):
    out = tmp_path / "bw.json"
    clustersim = [sys.executable, "-m", "clustersim"]
    args = ["bwtest", "-g", "2", "--count", "65536", "--iters", "3", "-n", PLATFORM, "-o", out]
    proc = subprocess.run(
        ["bash", SCRIPT, "mpirun", "-np", "4", *clustersim, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert doc["ranks"] == 4 and doc["groups"] == 2
    # tbf lets a full bucket through at once: a message of S bytes can arrive S / (S − burst)
    # times faster than the rate (2 MiB here: ×1.14).
    message = 65536 * 32
    burst = message / (message - BURST_BYTES)
    for g in doc["per_group"]:
        # Two hosts, 1 Gbit/s each way: 0.5 GB/s bidirectional. Shared memory would be far above it.
        assert g["bound_GBps"] == pytest.approx(0.5)
        assert 0.05 * g["bound_GBps"] < g["bandwidth_GBps"] <= 1.02 * burst * g["bound_GBps"], g


def test_more_ranks_than_hosts_are_refused(cluster):
    proc = subprocess.run(
        ["bash", SCRIPT, "mpirun", "-np", "5", "true"], capture_output=True, text=True, timeout=30
    )
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        "emulated_cluster: mpirun: -np 5: the cluster has 4 hosts, one rank each"
    ]


def busy() -> str | None:
    load, cores = os.getloadavg()[0], os.cpu_count() or 1
    if load > cores:
        what = f"load average {load:.1f} on {cores} cores"
        return f"the machine is busy ({what}): timings would measure the scheduler"
    return None


def test_calibrated_model_agrees_with_the_cluster_within_15_percent(cluster, tmp_path):
    import emulated

    reason = busy()
    if reason is not None:
        pytest.skip(reason)
    report, rows, conditions = emulated.experiment(tmp_path)
    print(conditions)
    reason = busy()
    if reason is not None:  # the load came while measuring
        pytest.skip(f"{reason} by the end of the run")
    assert set(report["classes"]) == {"scale-out"}
    assert set(report["collectives"]) == {"allreduce", "allgather", "alltoall"}
    assert len(rows) == 4 + 9 and all(r["bytes"] >= 1 << 20 for r in rows)
    worst = max(rows, key=lambda r: abs(r["error_after"]))
    assert abs(worst["error_after"]) <= 0.15, (rows, conditions)
