"""The emulated cluster (scripts/emulated_cluster.sh): four hosts as network namespaces on a bridge,
each link shaped with tbf to 1 Gbit/s. Checked: one TCP stream between two hosts runs at the shaped
rate, and bwtest under mpirun runs across the namespaces, below the bound of the test bed's
description (tests/data/platforms/emulated4_1gbit.platform) — so its bytes crossed the shaped
links, not shared memory. Skipped, with the reason, where namespaces, tc or MPI are missing."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time

import pytest
from conftest import DATA, ROOT

SCRIPT = ROOT / "scripts" / "emulated_cluster.sh"
PLATFORM = DATA / "platforms" / "emulated4_1gbit.platform"
RATE_BPS = 1e9 / 8  # 1 Gbit/s


def why_not() -> str | None:
    if os.geteuid() != 0:
        return "network namespaces need root"
    for tool in ("ip", "tc", "mpirun"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    if importlib.util.find_spec("mpi4py") is None:
        return "mpi4py is not installed (the extra clustersim[mpi])"
    probe = subprocess.run(["ip", "netns", "add", "cs-emu-probe"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"this machine does not allow network namespaces: {probe.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", "cs-emu-probe"], check=True)
    return None


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
    return subprocess.Popen(["ip", "netns", "exec", f"cs-emu-h{i}", *map(str, args)], text=True, **kw)


def test_one_stream_runs_at_the_shaped_rate(cluster):
    server = in_host(2, sys.executable, "-c", STREAM, "server")
    time.sleep(0.5)
    client = in_host(1, sys.executable, "-c", STREAM, "client", "10.77.0.2", 40, stdout=subprocess.PIPE)
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
    for g in doc["per_group"]:
        # Two hosts, 1 Gbit/s each way: 0.5 GB/s bidirectional. Shared memory would be far above it.
        assert g["bound_GBps"] == pytest.approx(0.5)
        assert 0.05 * g["bound_GBps"] < g["bandwidth_GBps"] <= 1.02 * g["bound_GBps"], g
