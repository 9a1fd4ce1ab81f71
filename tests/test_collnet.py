"""In-network reduction (SHARP via NCCL CollNet) from the CLI and the sweep: busbw with nccl-tests'
in-network factor, and bad input."""

from __future__ import annotations

import pytest
from clustersim.nccl_tests import in_network_factor, sweep
from clustersim.reduction_server import crossbar_text, platform
from conftest import ROOT

MIB32 = 32 << 20


@pytest.mark.parametrize("algo", ["collnet_direct", "collnet_chain"])
def test_one_switch_reduces_at_the_nic_rate_and_busbw_uses_the_in_network_factor(algo):
    # 4 GPUs at 200 Gbit/s on one switch, bare timing: k = 64 chunks, k + 1 steps of u/B.
    topo = platform(crossbar_text(servers=1))
    t = sweep(topo, "allreduce", [MIB32], algorithm=algo, env={"AS_SEND_LAT": "0"})
    assert t["algorithm"] == [algo]
    assert t["algbw_GBps"][0] == pytest.approx(25.0 * 64 / 65, rel=1e-9)
    assert t["busbw_GBps"][0] == pytest.approx(t["algbw_GBps"][0] * 3 / 5)
    assert in_network_factor(4) == 3 / 5


def test_nccl_algo_names_collnet_and_a_slow_switch_bounds_it(run_cli):
    example = ROOT / "examples" / "optcast_4x4.platform"
    env_run = sweep(platform(crossbar_text()), "allreduce", [MIB32], env={"NCCL_ALGO": "CollNetDirect"})
    assert env_run["algorithm"] == ["collnet_direct"]
    rc, out, err = run_cli("collective", "allreduce", "-n", example, "--algo", "collnet_chain")
    assert rc == 0 and "collnet_chain" in out, err
    slow = sweep(
        platform(crossbar_text()), "allreduce", [MIB32], algorithm="collnet_direct", switch_reduce_gbps=10.0
    )
    assert slow["time_us"][0] > 2 * env_run["time_us"][0]


@pytest.mark.parametrize(
    ("args", "field", "want"),
    [
        (["allgather", "--algo", "collnet_direct"], "algorithm", "all-reduce only"),
        (
            ["allreduce", "--switch-reduce-gbps", "5"],
            "switch_reduce_gbps",
            "collnet_direct and collnet_chain",
        ),
        (
            ["allreduce", "--algo", "collnet_chain", "--switch-reduce-gbps", "-1"],
            "switch_reduce_gbps",
            "positive",
        ),
        (["allreduce", "--algo", "collnet_direct", "--reduction-servers", "all"], "algorithm", "in switches"),
        (["allreduce", "--reduce-gbps", "5"], "--reduce-gbps", "reduction servers only"),
    ],
)
def test_bad_in_network_requests_are_one_line_errors(run_cli, args, field, want):
    rc, _, err = run_cli("collective", *args, "-n", ROOT / "examples" / "optcast_4x4.platform")
    assert rc != 0 and field in err and want in err and err.count("\n") == 1, err
