"""`clustersim collective` and `clustersim.nccl_tests.sweep`: nccl-tests reports on the flow model."""

from __future__ import annotations

import json

import pytest
from clustersim.errors import InputError
from clustersim.nccl_tests import busbw_factor, parse_size, sweep
from clustersim.topology import simai_template

GIB = 1 << 30


def test_ring_all_reduce_busbw_matches_the_link_closed_form():
    # 4 rail-optimised H100 servers, links without latency. Each of the 8 channels crosses each
    # server boundary once, on its own 50 GB/s NIC: busbw = 8 × 50 GB/s (NVLink, 360 GB/s per GPU
    # forwarding 7 channels, keeps up: 360/7 > 50), after NCCL's Simple ring latency: 56 NVLink
    # hops of 3.4 µs and 6 network hops of 14 µs, × 1.4 for a multi-node all-reduce.
    topo = simai_template("Spectrum-X", gpu=32, latency="0ms", nv_latency="0ms")
    latency_us = 1.4 * (8.4 + 56 * 3.4 + 6 * 14)
    for channels, want in ((1, 50.0), (8, 400.0)):
        t = sweep(topo, "allreduce", [GIB], algorithm="ring", protocol="Simple", channels=channels, env={})
        assert (t["algorithm"], t["protocol"]) == (["ring"], ["Simple"])
        wire_us = t["time_us"][0] - latency_us
        assert GIB / (wire_us * 1e3) * busbw_factor("allreduce", 32) == pytest.approx(want, rel=1e-6)


@pytest.mark.parametrize(
    ("op", "factor"),
    [("allreduce", 2 * 15 / 16), ("allgather", 15 / 16), ("reducescatter", 15 / 16), ("alltoall", 15 / 16)]
    + [("broadcast", 1.0), ("reduce", 1.0)],
)
def test_busbw_is_algbw_times_the_nccl_tests_factor(op, factor):
    assert busbw_factor(op, 16) == pytest.approx(factor)
    t = sweep("Spectrum-X:16", op, [1 << 24], env={})
    assert t["busbw_GBps"][0] == pytest.approx(t["algbw_GBps"][0] * factor)
    assert t["algbw_GBps"][0] == pytest.approx((1 << 24) / (t["time_us"][0] * 1e3))


def test_auto_picks_nvls_in_one_server_when_enabled_and_it_beats_the_ring():
    nvls = sweep("Spectrum-X:8", "allreduce", [GIB], env={"AS_NVLS_ENABLE": "1"})
    ring = sweep("Spectrum-X:8", "allreduce", [GIB], algorithm="ring", env={})
    default = sweep("Spectrum-X:8", "allreduce", [GIB], env={})
    assert nvls["algorithm"] == ["nvls"]
    assert default["algorithm"] != ["nvls"]
    assert nvls["busbw_GBps"][0] > 1.3 * ring["busbw_GBps"][0]


def test_rail_optimised_spectrum_x_beats_single_tor_dcn_on_256_gpus():
    spx = sweep(simai_template("Spectrum-X", gpu=256), "allreduce", [256 << 20], env={})
    dcn = sweep(simai_template("DCN+", gpu=256), "allreduce", [256 << 20], env={})
    assert spx["busbw_GBps"][0] > 1.5 * dcn["busbw_GBps"][0]


def test_send_lat_from_the_environment_slows_every_step():
    # AS_SEND_LAT replaces NCCL's latency: 14 ring steps, each waiting 10 µs and its path (two
    # 25 ns NVLinks), then moving S/8 per GPU (8 channels of S/64) at 360 GB/s.
    slow = sweep("Spectrum-X:8", "allreduce", [1 << 20], algorithm="ring", env={"AS_SEND_LAT": "10"})
    assert slow["time_us"][0] == pytest.approx(14 * (10 + 0.05 + (1 << 20) / 8 / 360e3), rel=1e-9)
    assert slow["protocol"] == ["Simple"]


def test_nccl_algo_and_proto_come_from_the_environment():
    t = sweep("Spectrum-X:16", "allreduce", [1 << 10, GIB], env={"NCCL_ALGO": "tree", "NCCL_PROTO": "LL128"})
    assert (t["algorithm"], t["protocol"]) == (["tree"] * 2, ["LL128"] * 2)
    # Explicit arguments win over the environment.
    t = sweep("Spectrum-X:16", "allreduce", [1 << 10], algorithm="ring", env={"NCCL_ALGO": "tree"})
    assert t["algorithm"] == ["ring"]
    with pytest.raises(InputError, match="unknown protocol 'fast'"):
        sweep("Spectrum-X:16", "allreduce", [1 << 10], env={"NCCL_PROTO": "fast"})
    direct = sweep("fat-tree:4", "alltoall", [1 << 20], env={"NCCL_P2P_PXN_LEVEL": "0"})
    pxn = sweep("fat-tree:4", "alltoall", [1 << 20], env={})
    assert direct["algorithm"] == ["direct"] and pxn["algorithm"] == ["pxn"]
    with pytest.raises(InputError, match="NCCL_P2P_PXN_LEVEL: expected 0, 1 or 2, got 'yes'"):
        sweep("fat-tree:4", "alltoall", [1 << 20], env={"NCCL_P2P_PXN_LEVEL": "yes"})
    with pytest.raises(InputError, match="does not run LL"):
        sweep("Spectrum-X:8", "allreduce", [1 << 10], algorithm="nvls", protocol="LL", env={})


def test_cli_prints_the_nccl_tests_table(run_cli, tmp_path):
    rc, out, err = run_cli(
        "collective", "allreduce", "-b", "16M", "-e", "64M", "-f", "2", "--topology", "Spectrum-X:16"
    )
    assert rc == 0, err
    rows = [line.split() for line in out.splitlines() if not line.startswith("#")]
    assert [int(r[0]) for r in rows] == [16 << 20, 32 << 20, 64 << 20]
    assert [r[2:4] for r in rows] == [["float", "sum"]] * 3
    avg = float(out.splitlines()[-1].split(":")[1])
    assert avg == pytest.approx(sum(float(r[6]) for r in rows) / 3, rel=1e-3)
    rc, out, _ = run_cli(
        "collective", "alltoall", "-b", "1M", "-e", "1M", "--topology", "fat-tree:4", "--json"
    )
    doc = json.loads(out)
    # 2 servers of 8: NCCL's default NCCL_P2P_PXN_LEVEL=2 relays all-to-all through PXN.
    assert doc["redop"] == ["none"] and doc["algorithm"] == ["pxn"]
    rc, _, err = run_cli(
        "collective", "allgather", "-b", "4M", "--topology", "Spectrum-X:16", "--csv", "out.csv"
    )
    assert rc == 0, err
    lines = (tmp_path / "out.csv").read_text().splitlines()
    # What made it, as comment lines above the header (pandas: comment="#").
    assert [line.split(":")[0] for line in lines[:6]] == [
        "# command",
        "# version",
        "# plan",
        "# model",
        "# fabric",
        "# backend",
    ]
    assert (
        lines[0] == "# command: clustersim collective allgather -b 4M --topology Spectrum-X:16 --csv out.csv"
    )
    assert lines[4].startswith("# fabric: Spectrum-X:16 (sha256 ") and lines[5] == "# backend: flow"
    assert lines[6].startswith("size,count,type,redop,time_us")


def test_sizes_use_powers_of_two():
    assert [parse_size(s) for s in ("4096", "16K", "16M", "1G", "2g")] == [
        4096,
        16 << 10,
        16 << 20,
        GIB,
        2 * GIB,
    ]


@pytest.mark.parametrize(
    ("args", "env", "says"),
    [
        (("gather",), {}, "valid: allreduce"),
        (("allreduce", "-b", "16Q"), {}, "size '16Q'"),
        (("allreduce", "-b", "1G", "-e", "1M"), {}, "larger than -e"),
        (("allreduce", "--algo", "bruck"), {}, "valid: auto, ring, tree"),
        (("allreduce", "--topology", "missing.txt"), {}, "missing.txt: no such file"),
        (("allreduce",), {"AS_NVLS_ENABLE": "yes"}, "AS_NVLS_ENABLE"),
        (("allreduce",), {"AS_SEND_LAT": "-3"}, "AS_SEND_LAT"),
        (("allreduce", "-g", "99"), {}, "ranks"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(run_cli, monkeypatch, args, env, says):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    if "--topology" not in args:
        args = (*args, "--topology", "Spectrum-X:16")
    rc, out, err = run_cli("collective", *args)
    assert rc == 2, err
    assert out == "" and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and says in err, err


def test_cli_forces_the_protocol_and_refuses_what_cannot_run(run_cli):
    rc, out, err = run_cli(
        "collective", "allreduce", "-b", "1M", "-e", "1M", "--topology", "Spectrum-X:8", "--proto", "LL128"
    )
    assert rc == 0, err
    assert out.splitlines()[3].split()[-1] == "LL128"
    rc, _, err = run_cli(
        "collective", "allreduce", "--topology", "Spectrum-X:8", "--algo", "nvls", "--proto", "LL"
    )
    assert rc == 2 and "nvls does not run LL" in err
    rc, _, err = run_cli("collective", "allreduce", "--topology", "Spectrum-X:8", "--proto", "ll64")
    assert rc == 2 and "unknown protocol 'll64'" in err
