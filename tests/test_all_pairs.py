"""MSCCL++-style all-pairs algorithms on the flow model: closed forms on an NVSwitch server, the
seed's note that NCCL's ring all-gather beats all-pairs across nodes, and `--algo auto+extra`."""

from __future__ import annotations

import json

import pytest
from clustersim.nccl_tests import busbw_factor, sweep
from clustersim.topology import simai_template
from conftest import ROOT

GIB = 1 << 30
# MSCCL++'s measured step (all_pairs.rs, MSCCLPP_LATENCY_US): 6.51 µs with put + signal (Simple).
STEP_US = 6.51
# An A100 carries NCCL's 240 GB/s of its 300 GB/s NVLink; a GPU → NVSwitch → GPU path is 2 × 25 ns.
NVLINK = 240e3  # bytes per µs
PATH_US = 0.05


def ndv4(gpus: int, per_server: int = 8):
    """Azure NDv4 from the custom rail-optimised template: 8 × A100 on NVSwitch, 200 Gb/s HDR per GPU."""
    return simai_template(
        None, ro=True, gpu=gpus, gpu_per_server=per_server, gpu_type="A100", nvlink_bw="2400Gbps",
        bandwidth="200Gbps",
    )  # fmt: skip


def test_ndv4_is_a_dgx_a100_like_template_with_one_hdr_nic_per_gpu():
    topo = ndv4(16)
    assert (topo.num_gpus, topo.gpus_per_server, topo.num_nvswitches, topo.gpu_type) == (16, 8, 2, "A100")
    nics = [link.bandwidth for link in topo.links if link.src < 16 and topo.kinds[link.dst] != "nvswitch"]
    assert nics == [25e9] * 16


@pytest.mark.parametrize(
    ("op", "algo", "steps", "bytes_per_rank"),
    [
        ("allreduce", "one_shot", 1, 7 * GIB),  # the whole buffer to each of 7 peers
        ("allreduce", "two_shot", 2, 2 * 7 * GIB / 8),  # all-pairs reduce-scatter, then all-gather
        ("allgather", "all_pairs", 1, 7 * GIB / 8),  # its shard to each peer
        ("reducescatter", "all_pairs", 1, 7 * GIB / 8),
    ],
)
def test_closed_forms_in_one_nvswitch_server(op, algo, steps, bytes_per_rank):
    # T = steps × (MSCCL++'s step + path) + bytes in (= out) per rank / NVLink.
    t = sweep(ndv4(8), op, [GIB], algorithm=algo, protocol="Simple", env={})
    assert t["algorithm"] == [algo]
    want = steps * (STEP_US + PATH_US) + bytes_per_rank / NVLINK
    assert t["time_us"][0] == pytest.approx(want, rel=1e-9)


def test_across_nodes_ring_all_gather_beats_all_pairs():
    # The seed's note: NCCL's ring crosses the network far less than all-pairs, which puts half
    # of every rank's gather on its NIC; crossing once per rail (hierarchical) beats the ring.
    topo = ndv4(16)
    busbw = {a: sweep(topo, "allgather", [GIB, 4 * GIB], algorithm=a, env={})["busbw_GBps"] for a in
             ("ring", "all_pairs", "hier_all_pairs")}  # fmt: skip
    for i in range(2):
        assert busbw["ring"][i] > 4 * busbw["all_pairs"][i]
        assert busbw["hier_all_pairs"][i] > busbw["ring"][i]
    # All-pairs: 8 of 15 shards of S/16 leave on a 25 GB/s NIC, so busbw ≈ 15/16 S / (S/2 / 25).
    assert busbw["all_pairs"][1] == pytest.approx(25 * 2 * busbw_factor("allgather", 16), rel=1e-2)


def test_auto_is_nccl_and_auto_plus_extra_also_weighs_all_pairs():
    topo = ndv4(8)
    sizes = [1 << 10, GIB]
    nccl = sweep(topo, "allreduce", sizes, env={})
    extra = sweep(topo, "allreduce", sizes, algorithm="auto+extra", env={})
    assert set(nccl["algorithm"]) <= {"ring", "tree"}
    assert extra["algorithm"] == ["one_shot", "two_shot"]
    assert all(e < n for e, n in zip(extra["time_us"], nccl["time_us"], strict=True))
    # NCCL_ALGO may ask for it too.
    env = sweep(topo, "allreduce", sizes, env={"NCCL_ALGO": "auto+extra"})
    assert env["algorithm"] == extra["algorithm"]


def test_run_and_train_accept_auto_plus_extra(run_cli):
    micro = ROOT / "examples" / "microAllReduce.txt"
    tp_us = {}
    for algo in ("auto", "auto+extra"):
        args = ("run", "-w", micro, "--gpus", "16", "--topology", "DCN+:16", "--algo", algo, "--json")
        rc, out, err = run_cli(*args)
        assert rc == 0, err
        tp_us[algo] = json.loads(out)["summary_us"]["exposed_tp_us"]
    # The tensor-parallel all-reduces inside a server: two-shot beats NCCL's ring.
    assert tp_us["auto+extra"] < tp_us["auto"]
    train = ("train", "--model", "llama3-8b", "--gpus", "16", "--tp", "8", "--gbs", "16", "--seq", "2048")
    rc, out, err = run_cli(*train, "--topology", "DCN+:16", "--algo", "auto+extra", "--json")
    assert rc == 0, err
    assert json.loads(out)["iteration_s"] > 0
    # One-shot cannot reduce the data-parallel gradients across servers: one line says why.
    rc, out, err = run_cli(*train, "--topology", "DCN+:16", "--algo", "one_shot")
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "inside one server" in err, err


def test_collective_command_takes_auto_plus_extra_and_says_it_in_bad_input(run_cli):
    args = ("collective", "allreduce", "-b", "1K", "-e", "1K", "--topology", "Spectrum-X:8")
    rc, out, err = run_cli(*args, "--algo", "auto+extra", "--json")
    assert rc == 0, err
    assert json.loads(out)["algorithm"] == ["one_shot"]
    rc, out, err = run_cli(*args, "--algo", "three_shot")
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "auto+extra)" in err, err
