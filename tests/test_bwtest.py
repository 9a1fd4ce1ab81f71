"""clustersim bwtest: the tester's mapping, its closed form on a crossbar, the DGX-A100 bound of
the tester's README (g × 600 GB/s), and real runs under mpirun (skipped, with the reason, where
mpirun or mpi4py is missing)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys

import pytest
from clustersim.errors import InputError
from clustersim.measure.bwtest.bound import group_bounds_GBps
from clustersim.measure.bwtest.pattern import Pattern
from clustersim.measure.bwtest.simulate import platform_of, rank_devices, simulate
from conftest import DATA, run_clustersim

CROSSBAR = DATA / "platforms" / "crossbar8.platform"  # 8 GPUs, 50 GB/s and 1 µs per link
DGX_A100 = DATA / "platforms" / "dgx_a100.platform"  # 8 A100s × 6 NVSwitches × 50 GB/s


def test_mapping_is_the_testers():
    # The README's example: six GPUs, three groups of two; GPU i of a group talks to GPU i of the others.
    p = Pattern.of(6, 2, 10)
    assert p.groups == 3
    assert p.partners(0) == [2, 4] and p.partners(3) == [1, 5] and p.partners(5) == [1, 3]
    assert len(p.pairs()) == 6 * 2 and all(a != b for a, b in p.pairs())
    assert p.message_bytes == 320 and p.group_bytes == 2 * 2 * 2 * 320


@pytest.mark.parametrize(
    "ranks, g, count, message",
    [(5, 2, 1, "must divide"), (4, 4, 1, "one group"), (4, 1, 0, "at least one")],
)
def test_impossible_patterns_name_the_option(ranks, g, count, message):
    with pytest.raises(InputError, match=message):
        Pattern.of(ranks, g, count)


@pytest.mark.parametrize("g, count", [(1, 1), (2, 1000), (4, 1 << 20), (2, 12345)])
def test_simulation_is_the_closed_form_on_a_crossbar(g, count):
    platform = platform_of(CROSSBAR)
    p = Pattern.of(8, g, count)
    group_s, step_s = simulate(p, platform, CROSSBAR)
    # Every link carries G−1 transfers at B/(G−1): t = 2λ + (G−1)·S/B.
    t = 2e-6 + (p.groups - 1) * p.message_bytes / 50e9
    assert step_s == pytest.approx(t, rel=1e-9)
    assert group_s == pytest.approx([t] * p.groups, rel=1e-9)
    assert p.bandwidth_GBps(t) == pytest.approx(2 * g * (p.groups - 1) * count * 32 / t / 1e9)
    bounds = group_bounds_GBps(p, platform, rank_devices(platform, 8, CROSSBAR))
    assert bounds == pytest.approx([2 * g * 50.0] * p.groups)


@pytest.mark.parametrize("g", [1, 2, 4])
def test_dgx_a100_bound_is_g_times_600(g):
    platform = platform_of(DGX_A100)
    p = Pattern.of(8, g, 1 << 20)
    assert group_bounds_GBps(p, platform, rank_devices(platform, 8, DGX_A100)) == pytest.approx(
        [g * 600.0] * p.groups
    )
    # Sprayed over the six NVSwitches, each GPU sends G−1 transfers at 300 GB/s in all (and
    # receives as many): t = 2·100 ns + (G−1)·S / 300 GB/s, approaching the bound.
    _, step_s = simulate(p, platform, DGX_A100)
    assert step_s == pytest.approx(200e-9 + (p.groups - 1) * p.message_bytes / 300e9, rel=1e-9)
    # One hashed path per transfer uses one NVSwitch of six.
    _, ecmp_s = simulate(p, platform, DGX_A100, routing="ecmp")
    assert ecmp_s > 2 * step_s


def test_simulate_cli_prints_and_writes_the_bound(tmp_path):
    out = tmp_path / "s.json"
    rc, stdout, stderr = run_clustersim(
        "bwtest", "--simulate", "-n", DGX_A100, "-g", "2", "--count", "1024", "-o", out, cwd=tmp_path
    )
    assert rc == 0, stderr
    doc = json.loads(out.read_text())
    assert doc["mode"] == "simulate" and doc["groups"] == 4
    assert [g["bound_GBps"] for g in doc["per_group"]] == pytest.approx([1200.0] * 4)
    assert "1200.00" in stdout and f"wrote {out}" in stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (["--simulate", "-g", "2"], "give the platform with -n"),
        (["--simulate", "-g", "3", "-n", str(CROSSBAR)], "-g 3: the group size must divide the 8 ranks"),
        (["--simulate", "-g", "2", "-np", "16", "-n", str(CROSSBAR)], "8 ranks, fewer than the 16"),
        (["-g", "2", "-np", "4"], "-np is for --simulate"),
    ],
)
def test_bad_options_are_one_line_errors(tmp_path, args, message):
    rc, stdout, stderr = run_clustersim("bwtest", *args, "-o", tmp_path / "x.json", cwd=tmp_path)
    assert rc == 2 and stderr.count("\n") == 1 and message in stderr, stderr
    assert not (tmp_path / "x.json").exists()


MPIRUN = shutil.which("mpirun")
needs_mpi = pytest.mark.skipif(
    MPIRUN is None or importlib.util.find_spec("mpi4py") is None,
    reason="bwtest over MPI needs mpirun (apt-get install openmpi-bin) and mpi4py (pip install mpi4py)",
)


def mpirun(np, *args, cwd, timeout=120):
    # Containers often forbid the cross-memory attach of Open MPI's shared-memory transport.
    env = os.environ | {
        "OMPI_MCA_rmaps_base_oversubscribe": "1",
        "OMPI_MCA_btl_vader_single_copy_mechanism": "none",
    }
    cmd = [
        MPIRUN,
        "--allow-run-as-root",
        "--oversubscribe",
        "-np",
        str(np),
        sys.executable,
        "-m",
        "clustersim",
    ]
    return subprocess.run(
        [*cmd, *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env
    )


@needs_mpi
def test_measured_run_writes_the_json_document(tmp_path):
    out = tmp_path / "bw.json"
    proc = mpirun(
        4, "bwtest", "-g", "2", "--count", "256", "--iters", "5", "-n", CROSSBAR, "-o", out, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    assert (doc["mode"], doc["buffers"], doc["ranks"], doc["groups"], doc["group_size"]) == (
        "mpi",
        "host",
        4,
        2,
        2,
    )
    assert doc["message_bytes"] == 256 * 32 and doc["group_bytes"] == 2 * 2 * 1 * 256 * 32
    assert [g["ranks"] for g in doc["per_group"]] == [[0, 1], [2, 3]]
    assert len(doc["hosts"]) == 4
    for g in doc["per_group"]:
        assert g["time_s"] > 0 and g["bandwidth_GBps"] == pytest.approx(
            doc["group_bytes"] / g["time_s"] / 1e9
        )
        assert g["bound_GBps"] == pytest.approx(200.0)  # two 50 GB/s links each way
    a = doc["aggregate"]
    assert a["time_s"] >= max(g["time_s"] for g in doc["per_group"]) * (1 - 1e-12)
    assert a["min_latency_us"] <= a["latency_us"]
    assert proc.stdout.count("# bwtest over MPI") == 1  # rank 0 alone reports


@needs_mpi
def test_bad_input_under_mpirun_fails_on_every_rank_without_hanging(tmp_path):
    proc = mpirun(4, "bwtest", "-g", "3", "-o", tmp_path / "x.json", cwd=tmp_path, timeout=60)
    assert proc.returncode != 0
    # Every rank finds the error before any traffic; mpirun may stop the others once the first
    # exits, and interleaves the lines of those that got to print.
    error = "clustersim: error: -g 3: the group size must divide the 4 ranks"
    assert 1 <= proc.stderr.count(error) == proc.stderr.count("clustersim: error:") <= 4, proc.stderr
    assert not (tmp_path / "x.json").exists()


FORWARDING_CPU = """\
# Two switches of two GPUs each, joined by a thin 25 GB/s link and through a CPU by 100 GB/s links.
node g0 gpu type=H100
node g1 gpu type=H100
node g2 gpu type=H100
node g3 gpu type=H100
node sw0 switch
node sw1 switch
node cpu cpu forward={forward}
link g0 sw0 50GB/s 1us
link g1 sw0 50GB/s 1us
link g2 sw1 50GB/s 1us
link g3 sw1 50GB/s 1us
link sw0 sw1 25GB/s 1us
link sw0 cpu 100GB/s 1us
link cpu sw1 100GB/s 1us
"""


@pytest.mark.parametrize(("forward", "each_way"), [("no", 25.0), ("yes", 100.0)])
def test_the_bound_passes_through_a_node_as_the_engine_routes(tmp_path, forward, each_way):
    # The engine routes through a CPU declared forward=yes: the two GPUs of a switch then reach the
    # others at their own 2 × 50 GB/s; through the 25 GB/s link alone when the CPU does not forward.
    from clustersim.platform import read_platform
    from clustersim.topology import bisection_bandwidth

    path = tmp_path / "cpu.platform"
    path.write_text(FORWARDING_CPU.format(forward=forward))
    platform = read_platform(path)
    assert platform.forwards[6] is (forward == "yes")
    p = Pattern.of(4, 2, 1)
    assert group_bounds_GBps(p, platform, rank_devices(platform, 4, path)) == [2 * each_way] * 2
    # The bisection is the same max-flow, one way, in bytes/s.
    assert bisection_bandwidth(platform) == each_way * 1e9
