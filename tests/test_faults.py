"""Links and NICs that fail or slow down inside an iteration (issue 31), seen from the API and
the CLI. The closed forms (a dual-ToR port halved doubles the ring's bandwidth time, to 1e-9; a
degraded port; per-flow ECMP) are the engine's: crates/engine/src/network/flow/fault_tests.rs.
Here: the option reaches the engine from `train -n` and `run`, the report says how much slower,
and bad input or a group left without a path is a one-line error with a non-zero exit."""

from __future__ import annotations

import pytest
from clustersim import InputError, train
from clustersim.topology import Topology, simai_template

PLAN = dict(model="llama3-8b", gpus=16, tp=8, gbs=2, seq=2048, layers=2)


def tor_links(fabric: Topology, gpu: int) -> list[int]:
    """The switches GPU `gpu` links to besides its NVSwitches."""
    kinds = fabric.kinds
    return sorted({link.dst for link in fabric.links if link.src == gpu and kinds[link.dst] == "switch"})


@pytest.fixture(scope="module")
def dual():
    return simai_template("AlibabaHPN", gpu=16)


@pytest.fixture(scope="module")
def single():
    return simai_template("Spectrum-X", gpu=16)


def test_a_tor_link_down_on_a_dual_tor_fabric_slows_the_iteration_and_it_goes_on(dual):
    tors = tor_links(dual, 0)
    assert len(tors) == 2, tors  # dual ToR
    healthy = train(topology=dual, routing="spray", **PLAN)
    hurt = train(topology=dual, routing="spray", faults=f"link:0-{tors[0]}@0ns", **PLAN)
    report = hurt.data["faults"]
    assert report["faults"] == [f"link:0-{tors[0]}@0ns"]
    assert report["healthy_iteration_s"] == pytest.approx(healthy.iteration_s, rel=1e-12)
    assert report["iteration_s"] == hurt.iteration_s
    # GPU 0's port is halved: the DP all-reduce across the two servers takes longer.
    assert hurt.iteration_s > healthy.iteration_s
    assert report["slower_by"] == pytest.approx(hurt.iteration_s / healthy.iteration_s - 1)
    # Where: the DP all-reduce across the servers, the one communication leaving a server.
    grown = report["changed"][0]
    assert grown["part"] == "exposed DP comm"
    assert grown["healthy_seconds"] == dict(healthy.breakdown_s)["exposed DP comm"]
    assert grown["seconds"] - grown["healthy_seconds"] == pytest.approx(
        hurt.iteration_s - healthy.iteration_s
    )
    # Both links slowed to half: the same port as the one link lost (spraying splits evenly).
    half = train(topology=dual, routing="spray", faults=[f"link:0-{t}@0ns:0.5" for t in tors], **PLAN)
    assert half.iteration_s == pytest.approx(hurt.iteration_s, rel=1e-9)


def test_a_tor_link_down_on_a_single_tor_fabric_stops_the_run_with_one_line(single, run_cli, tmp_path):
    (tor,) = tor_links(single, 0)
    says = r"DP group 0 \(ranks 0, 8; AllReduce\): no path from node 0 to node 8 .*after link:0-\d+ went down"
    with pytest.raises(InputError, match=says + " at 0 ns"):
        train(topology=single, faults=f"link:0-{tor}@0ns", **PLAN)
    args = "train --model llama3-8b --gpus 16 --tp 8 --gbs 2 --layers 2 -n Spectrum-X:16 --fault"
    code, out, err = run_cli(*args.split(), f"link:0-{tor}@0ns")
    assert code != 0 and out == ""
    assert err.strip().count("\n") == 0 and "--fault: DP group 0 (ranks 0, 8; AllReduce): no path" in err, err


@pytest.mark.parametrize(
    ("fault", "says"),
    [
        ("link:0-1@1ms", "no link between 0 and 1"),
        ("link:0-99999@1ms", "does not name two nodes"),
        ("link:0-X@1ms:2", "from 0 (down) to 1"),
        ("nic:0@5", "needs a unit"),
    ],
)
def test_bad_faults_are_one_line_errors_naming_the_fault(run_cli, fault, says):
    args = "train --model llama3-8b --gpus 16 --tp 8 --gbs 2 -n AlibabaHPN:16 --fault"
    code, _, err = run_cli(*args.split(), fault)
    assert code != 0
    assert err.strip().count("\n") == 0 and f"fault 1 ({fault})" in err and says in err, err


def test_faults_need_a_fabric_and_the_sweep_refuses_them(run_cli):
    with pytest.raises(InputError, match="give the fabric"):
        train(faults="link:0-1@0ns", **PLAN)
    code, _, err = run_cli("collective", "allreduce", "-n", "AlibabaHPN:16", "--fault", "nic:0@0ns")
    assert code != 0 and "takes no faults yet" in err and err.strip().count("\n") == 0
