"""Reduction servers (Optcast, seed 004): templates, the CLI, bad input and the seed's cost terms."""

from __future__ import annotations

import pytest
from clustersim.api import collective
from clustersim.errors import InputError
from clustersim.reduction_server import (
    ReductionServers,
    break_even,
    cost_report,
    crossbar_text,
    leaf_spine_text,
    platform,
)
from conftest import ROOT

MIB32 = 32 << 20
BARE = {"AS_SEND_LAT": "0"}


def algbw_gbit(topo, reduction=None, **kw) -> float:
    t = collective("allreduce", topo, minbytes=MIB32, maxbytes=MIB32, env=BARE, reduction=reduction, **kw)
    return MIB32 * 8 / (t["time_us"][0] * 1e3)


def test_the_seeds_set_up_reaches_the_seeds_ideal_bandwidths():
    # Ring: 200·4/(2·3) = 133.33 Gbit/s; reduction server: 200 less one chunk of fill (k = 64).
    topo = platform(crossbar_text())
    assert algbw_gbit(topo, algo="ring") == pytest.approx(200 * 4 / 6, rel=1e-9)
    assert algbw_gbit(topo, ReductionServers()) == pytest.approx(200 * 64 / 65, rel=1e-9)
    optcast = ReductionServers(chunk_bytes=float(8 << 20), nsplit=4, nreq=4)
    assert algbw_gbit(topo, optcast) == pytest.approx(160.0, rel=1e-9)


def test_the_shipped_example_is_the_template():
    assert (ROOT / "examples" / "optcast_4x4.platform").read_text() == crossbar_text()
    spread = leaf_spine_text(clients=8, servers=4, servers_on="spine")
    assert (ROOT / "examples" / "optcast_leaf_spine.platform").read_text() == spread


@pytest.mark.parametrize("servers_on", ["tor", "spine"])
def test_servers_spread_over_a_fabric_are_bound_by_their_share(servers_on):
    # 8 clients, 4 servers, non-blocking leaf–spine, no latency: each server takes n/N_s = 2
    # workers' worth per step, so T = (k+1)·2u/B and algbw = B·k/(2(k+1)).
    topo = platform(leaf_spine_text(clients=8, servers=4, servers_on=servers_on, latency_ns=0))
    assert algbw_gbit(topo, ReductionServers()) == pytest.approx(100 * 64 / 65, rel=1e-9)


def test_break_even_is_the_seeds_x():
    # 32 = (32 + 4·2)(1 − x): x = 0.2.
    assert break_even(1, 32.0, 2, 4.0) == pytest.approx(0.2)
    c = cost_report(100.0, 70.0, 1, 32.0, 2, 4.0)
    assert (c.reduction, c.break_even, c.servers_per_hour, c.pays_off) == (
        pytest.approx(0.3),
        0.2,
        40.0,
        True,
    )
    with pytest.raises(InputError, match="servers"):
        break_even(1, 32.0, 0, 4.0)
    with pytest.raises(InputError, match="worker_price"):
        break_even(1, -1.0, 1, 4.0)


def test_cli_runs_all_reduce_on_the_servers_with_a_cost_report(run_cli):
    example = ROOT / "examples" / "optcast_4x4.platform"
    rc, out, err = run_cli(
        "collective", "allreduce", "-n", example, "--reduction-servers", "all", "--cost", "32,4,1"
    )
    assert rc == 0, err
    assert "reduction_server" in out and "break-even 0.333" in out
    rc, out, err = run_cli("collective", "allreduce", "-n", example, "--reduction-servers", "cpu0,cpu1")
    assert rc == 0 and "reduction_server" in out, err


NO_NIC = """node gpu0 gpu type=A100
node gpu1 gpu type=A100
node sw0 switch
node cpu0 cpu
link gpu0 sw0 200Gbps 0ns
link gpu1 sw0 200Gbps 0ns
link cpu0 sw0 200Gbps 0ns
"""


@pytest.mark.parametrize(
    ("args", "field", "want"),
    [
        (["allreduce", "--reduction-servers", "0"], "reduction_servers", "selects 0 servers"),
        (["allreduce", "--reduction-servers", "cpu9"], "reduction_servers", "no node named 'cpu9'"),
        (["allgather", "--reduction-servers", "all"], "algorithm", "all-reduce only"),
        (["allreduce", "--algo", "reduction_server"], "reduction_servers", "needs servers"),
        (["allreduce", "--reduction-servers", "all", "--reduce-gbps", "0"], "reduce_gbps", "positive"),
        (["allreduce", "--cost", "1,2"], "--cost", "give --reduction-servers"),
    ],
)
def test_bad_reduction_servers_are_one_line_errors(run_cli, args, field, want):
    rc, out, err = run_cli("collective", *args, "-n", ROOT / "examples" / "optcast_4x4.platform")
    assert rc != 0 and field in err and want in err and err.count("\n") == 1, err


def test_a_server_without_a_nic_is_refused(run_cli, tmp_path):
    path = tmp_path / "bare.platform"
    path.write_text(NO_NIC)
    rc, _, err = run_cli("collective", "allreduce", "-n", path, "--reduction-servers", "cpu0")
    assert rc != 0 and "server 'cpu0' has no NIC" in err and err.count("\n") == 1, err
    with pytest.raises(InputError, match="selects 0 servers"):
        collective("allreduce", path, reduction=ReductionServers("all"))


def test_templates_refuse_zero_servers():
    with pytest.raises(InputError, match="servers"):
        crossbar_text(servers=0)
    with pytest.raises(InputError, match="servers_on"):
        leaf_spine_text(servers_on="core")
