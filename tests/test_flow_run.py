"""`clustersim run`: a SimAI workload on a fabric with the flow model."""

from __future__ import annotations

import json

import clustersim
import pytest
from clustersim.topology import Topology, simai_template

S = 1 << 30
# One data-parallel all-reduce of S bytes (a SimAI MICRO file).
MICRO = f"MICRO\n1\nmicro_test\t-1\t1\tNONE\t0\t1\tNONE\t0\t1\tALLREDUCE\t{S}\t1\n"


def write_fabric(tmp_path, topo: Topology, name: str = "fabric.txt") -> str:
    path = tmp_path / name
    path.write_text(topo.to_simai())
    return str(path)


def test_ring_all_reduce_in_one_server_matches_the_closed_form(tmp_path, monkeypatch):
    """8 GPUs on one NVSwitch (360 GB/s, 25 ns per link): NCCL's Simple ring latency, 8.4 µs +
    14 hops of 3.4 µs plus the 2·25 ns path, then 2(n−1) steps of S/(n·B)."""
    (tmp_path / "w.txt").write_text(MICRO)
    fabric = write_fabric(tmp_path, simai_template(None, gpu=8, gpu_per_server=8))
    r = clustersim.simulate(tmp_path / "w.txt", gpus=8, topology=fabric)
    expected_us = 8.4 + 14 * (3.4 + 0.05) + 14 * S / 8 / 360e3
    assert r.iteration_time_us == pytest.approx(expected_us, rel=1e-6)
    # Each GPU's NVLink carries 2(n−1)/n · S in each direction, busy but for the latency.
    gpu0_up = next(i for i in range(len(r.links)) if r.links["src"][i] == 0)
    assert r.links["bytes"][gpu0_up] == pytest.approx(2 * 7 / 8 * S, rel=1e-9)
    wire_us = 14 * S / 8 / 360e3
    assert r.links["utilisation"][gpu0_up] == pytest.approx(wire_us / expected_us, rel=1e-6)
    # With SimAI's AS_SEND_LAT every step waits it and its path latency instead.
    monkeypatch.setenv("AS_SEND_LAT", "2")
    r = clustersim.simulate(tmp_path / "w.txt", gpus=8, topology=fabric)
    assert r.iteration_time_us == pytest.approx(14 * (2 + 0.05) + wire_us, rel=1e-6)


def test_run_writes_results_links_and_trace(run_cli, tmp_path):
    (tmp_path / "w.txt").write_text(MICRO)
    write_fabric(tmp_path, simai_template(None, gpu=16, gpu_per_server=8))
    code, out, err = run_cli("run", "-w", "w.txt", "-g", "16", "-n", "fabric.txt", "-r", "o-")
    assert code == 0, err
    assert "o-links.csv" in out
    lines = (tmp_path / "o-links.csv").read_text().splitlines()
    # What made it first (comment lines), then the header.
    made_by = [line for line in lines if line.startswith("#")]
    assert made_by[0] == "# command: clustersim run -w w.txt -g 16 -n fabric.txt -r o-"
    assert made_by[3].startswith("# model: w.txt (sha256 ") and made_by[4].startswith(
        "# fabric: fabric.txt (sha256 "
    )
    assert lines[len(made_by)] == "src,dst,bandwidth_gbps,bytes,utilisation"
    trace = json.loads((tmp_path / "o-trace.json").read_text())
    assert any(e["ph"] == "X" for e in trace["traceEvents"])
    assert json.loads((tmp_path / "o-summary.json").read_text())["mode"] == "flow"


def test_dual_plane_survives_losing_a_plane(tmp_path):
    """AlibabaHPN dual-ToR dual-plane: without plane 2 (its ToRs and spines) the iteration still
    runs, through plane 1, and is no faster."""
    (tmp_path / "w.txt").write_text(MICRO)
    topo = simai_template("AlibabaHPN", dp=True, gpu=32, gpu_per_server=8)
    fabric = write_fabric(tmp_path, topo)
    gpus = range(topo.num_gpus)
    tors = sorted({lk.dst for lk in topo.links if lk.src in gpus and topo.kinds[lk.dst] == "switch"})
    plane2 = set(tors[len(tors) // 2 :])
    spines = {lk.dst for lk in topo.links if lk.src in plane2 and lk.dst not in gpus}
    plane2 |= spines
    cut = Topology.from_links(
        topo.kinds,
        [lk for lk in topo.links if lk.src not in plane2 and lk.dst not in plane2],
        gpus_per_server=topo.gpus_per_server,
        gpu_type=topo.gpu_type,
    )
    # Plane 2's switches stay as isolated nodes, which the flow model never routes through.
    one_plane = write_fabric(tmp_path, cut, "one_plane.txt")
    both = clustersim.simulate(tmp_path / "w.txt", gpus=32, topology=fabric, channels=4)
    single = clustersim.simulate(tmp_path / "w.txt", gpus=32, topology=one_plane, channels=4)
    assert single.iteration_time_us >= both.iteration_time_us * (1 - 1e-9)
    # Intact, ECMP spreads the traffic over both planes.
    via_plane2 = [b for s, b in zip(both.links["src"], both.links["bytes"], strict=True) if s in plane2]
    assert sum(via_plane2) > 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-g", "32"], "the workload has 32 ranks but the topology only 16 GPUs"),
        (["-g", "16", "--algo", "spiral"], "spiral"),
        (["-g", "16", "--compat", "simai"], "flow backend"),
    ],
)
def test_run_bad_input(run_cli, tmp_path, args, message):
    (tmp_path / "w.txt").write_text(MICRO)
    write_fabric(tmp_path, simai_template(None, gpu=16, gpu_per_server=8))
    code, _, err = run_cli("run", "-w", "w.txt", "-n", "fabric.txt", "-r", "o-", *args)
    assert code == 2
    assert message in err and err.count("\n") == 1
    assert not (tmp_path / "o-summary.json").exists()


def test_train_runs_unchanged_on_the_flow_backend(tmp_path):
    from clustersim.training import train

    fabric = write_fabric(tmp_path, simai_template("Spectrum-X", gpu=32))
    plan = dict(gpus=32, tp=8, pp=2, gbs=16, seq=4096, sp=True, dp="distributed_optimizer")
    analytical = train("llama3-8b", **plan)
    flow = train("llama3-8b", topology=fabric, channels=4, **plan)
    # Same generated iteration and compute; only communication is priced differently.
    assert flow["ops"] == analytical["ops"]
    assert dict(flow["breakdown_s"])["compute"] == pytest.approx(dict(analytical["breakdown_s"])["compute"])
    assert flow["iteration_s"] == pytest.approx(analytical["iteration_s"], rel=0.25)


def test_tp_comm_overlap_copies_run_on_the_flow_backend(tmp_path):
    # Transformer Engine's userbuffers copies (shifts along TP inside a stage) are flows on the
    # fabric's NVLink, as the analytical model prices them at NVLink speed.
    from clustersim.training import train

    fabric = write_fabric(tmp_path, simai_template("Spectrum-X", gpu=32))
    plan = dict(gpus=32, tp=8, pp=2, gbs=16, seq=4096, sp=True, dp="distributed_optimizer")
    overlap = {"tp_comm": True}
    analytical = train("llama3-8b", overlap=overlap, **plan)
    flow = train("llama3-8b", topology=fabric, channels=4, overlap=overlap, **plan)
    assert flow["ops"] == analytical["ops"]
    assert flow["iteration_s"] == pytest.approx(analytical["iteration_s"], rel=0.25)
    assert flow["iteration_s"] < train("llama3-8b", topology=fabric, channels=4, **plan)["iteration_s"]


def test_train_fabric_must_match_the_server_shape(tmp_path):
    from clustersim.training import train

    fabric = write_fabric(tmp_path, simai_template("Spectrum-X", gpu=32, gpu_per_server=4))
    with pytest.raises(clustersim.InputError, match="4 GPUs per server but the plan 8"):
        train("llama3-8b", gpus=32, tp=8, gbs=16, topology=fabric)


def test_user_routes_override_the_nvswitch(tmp_path, monkeypatch):
    """A routes file sends GPU 0 → 1 through their ToR: one ring channel in one server then
    waits on that hop, 2 × 500 ns + S/8 at 400 Gbps, in each of its 14 steps (AS_SEND_LAT=0:
    steps pay their path latency)."""
    monkeypatch.setenv("AS_SEND_LAT", "0")
    (tmp_path / "w.txt").write_text(MICRO)
    topo = simai_template(None, gpu=8, gpu_per_server=8)
    fabric = write_fabric(tmp_path, topo)
    tor = next(lk.dst for lk in topo.links if lk.src == 0 and topo.kinds[lk.dst] == "switch")
    assert any({lk.src, lk.dst} == {tor, 1} for lk in topo.links)
    (tmp_path / "routes.txt").write_text(f"# GPU 0 to GPU 1 over the ToR\n0 {tor} 1\n")
    r = clustersim.simulate(
        tmp_path / "w.txt", gpus=8, topology=fabric, channels=1, routes=tmp_path / "routes.txt"
    )
    assert r.iteration_time_us == pytest.approx(14 * (1.0 + S / 8 / 50e3), rel=1e-6)


@pytest.mark.parametrize(
    ("routes", "message"),
    [
        ("0 1\n", "routes.txt:1: route: hop 0 -> 1 of route [0, 1] has no link"),
        ("\n0 x 1\n", "routes.txt:2: node 2: 'x' is not a node number"),
        ("0 99999 1\n", "routes.txt:1: node 2: node 99999 is not in the topology"),
        ("3\n", "routes.txt:1: route: a route needs two distinct end nodes"),
        ("0 {tor} 2 {tor} 1\n", "routes.txt:1: route: node 2 is a GPU, which does not forward"),
        ("0 {tor} 0 {tor} 1\n", "routes.txt:1: route: node 0 is a GPU"),
        ("0 {tor} {nvs} {tor} 1\n", "routes.txt:1: route: node {tor} comes twice"),
        ("0 {tor} 1\n0 {tor} 1\n", "routes.txt:2: route: a second route from 0 to 1 (the first is on line 1"),
    ],
)
def test_bad_routes_are_refused_with_file_and_line(run_cli, tmp_path, routes, message):
    (tmp_path / "w.txt").write_text(MICRO)
    topo = simai_template(None, gpu=8, gpu_per_server=8)
    write_fabric(tmp_path, topo)
    tor = next(lk.dst for lk in topo.links if lk.src == 0 and topo.kinds[lk.dst] == "switch")
    nvs = next(lk.dst for lk in topo.links if lk.src == 0 and topo.kinds[lk.dst] == "nvswitch")
    (tmp_path / "routes.txt").write_text(routes.format(tor=tor, nvs=nvs))
    code, _, err = run_cli("run", "-w", "w.txt", "-n", "fabric.txt", "--routes", "routes.txt", "-r", "o-")
    assert code == 2
    assert message.format(tor=tor) in err and err.count("\n") == 1, err
    assert not (tmp_path / "o-summary.json").exists()
