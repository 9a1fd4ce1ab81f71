"""`--backend packet` / `backend="packet"`: the packet model behind `run`, `collective`, `train`
and `graph run`."""

from __future__ import annotations

import json

import clustersim
import pytest
from conftest import run_clustersim

# RoCEv2 at a 9000-byte payload: 62 header + 20 preamble/gap bytes per packet.
FRAMING = 9082 / 9000


def test_packet_collective_against_flow_on_an_uncongested_fabric():
    # One ring all-reduce, 16 GPUs of Spectrum-X (rail-optimised: the ring's NIC hops meet no
    # other traffic): the packet backend pays the framing and a packet's store-and-forward per
    # hop, so it is slower than the flow backend by about the framing, never faster.
    size = 64 << 20
    kw = dict(minbytes=size, maxbytes=size, algo="ring", env={})
    flow = next(clustersim.collective("allreduce", "Spectrum-X:16", **kw).rows())["time_us"]
    packet = next(clustersim.collective("allreduce", "Spectrum-X:16", backend="packet", **kw).rows())[
        "time_us"
    ]
    assert flow * FRAMING <= packet <= flow * FRAMING * 1.05, (flow, packet)


def test_cli_backend_matches_the_api(tmp_path):
    code, out, err = run_clustersim(
        "collective", "allreduce", "-n", "Spectrum-X:16", "-b", "1M", "-e", "1M", "--algo", "ring",
        "--backend", "packet", "--json", cwd=tmp_path,
    )  # fmt: skip
    assert code == 0, err
    api = clustersim.collective(
        "allreduce", "Spectrum-X:16", minbytes="1M", maxbytes="1M", algo="ring", backend="packet"
    )
    cli, api_doc = json.loads(out), api.to_dict()
    # Alike but for how each was asked for (a command line, an API call); both say the backend.
    assert cli["provenance"].pop("command").startswith("clustersim collective")
    assert api_doc["provenance"].pop("command").startswith("clustersim.collective(")
    assert cli == api_doc and cli["provenance"]["backend"] == "packet"


def test_unknown_backend_is_a_one_line_error(tmp_path):
    with pytest.raises(clustersim.InputError, match="flow or packet backend"):
        clustersim.collective("allreduce", "Spectrum-X:16", minbytes="1M", maxbytes="1M", backend="fluid")
    code, _, err = run_clustersim(
        "collective", "allreduce", "-n", "Spectrum-X:16", "--backend", "fluid", cwd=tmp_path
    )  # fmt: skip
    assert code != 0 and "invalid choice" in err


def test_run_takes_the_packet_backend():
    micro = __import__("conftest").ROOT / "examples" / "microAllReduce.txt"
    flow = clustersim.run(micro, "Spectrum-X:16", gpus=16, algo="ring")
    packet = clustersim.run(micro, "Spectrum-X:16", gpus=16, algo="ring", backend="packet")
    assert flow.iteration_time_us < packet.iteration_time_us < 1.2 * flow.iteration_time_us


def test_graph_run_takes_the_packet_backend():
    # SimAI's micro all-reduce workload as a graph on the 8-GPU crossbar (no memory devices, one
    # switch: uncongested), its collectives as flows and as packets.
    from clustersim import workload_graph
    from clustersim.platform import Platform
    from clustersim.workload import Workload

    root = __import__("conftest").ROOT
    path = root / "tests" / "data" / "platforms" / "crossbar8.platform"
    platform = Platform.parse(str(path), path.read_text())
    w = Workload.from_simai(root / "examples" / "microAllReduce.txt", gpus=8, gpus_per_server=1)
    graph = workload_graph.from_workload(w, platform)
    flow = workload_graph.run(graph, platform)["end_ns"]
    packet = workload_graph.run(graph, platform, backend="packet")["end_ns"]
    assert flow < packet < 1.05 * flow, (flow, packet)  # framing, store-and-forward: 1.5 % here
    with pytest.raises(clustersim.InputError, match="cm02 prices collectives"):
        workload_graph.run(graph, platform, backend="packet", collectives="cm02")
