"""clustersim._engine.flow_completion_times: the flow model seen from Python (the entry point the
SimGrid cross-check uses)."""

from __future__ import annotations

import pytest
from clustersim import _engine

# Two servers of 2 GPUs, one NVSwitch each (4, 5), one ToR (6): SimAI generator layout.
TOPO = (
    "7 2 2 1 8 H100\n4 5 6 \n"
    "0 4 2880Gbps 0.000025ms 0\n0 6 400Gbps 0.0005ms 0\n"
    "1 4 2880Gbps 0.000025ms 0\n1 6 400Gbps 0.0005ms 0\n"
    "2 5 2880Gbps 0.000025ms 0\n2 6 400Gbps 0.0005ms 0\n"
    "3 5 2880Gbps 0.000025ms 0\n3 6 400Gbps 0.0005ms 0\n"
)


def test_one_flow_is_latency_plus_size_over_bandwidth():
    # 0 → 2 crosses the ToR: 2 × 500 ns, then 1 MB at 50 B/ns.
    assert _engine.flow_completion_times(TOPO, [(0, 2, 1e6, 0.0)]) == [1000.0 + 1e6 / 50.0]


def test_two_flows_share_a_link_and_gpus_of_a_server_use_nvlink():
    times = _engine.flow_completion_times(TOPO, [(0, 2, 1e6, 0.0), (1, 2, 1e6, 0.0), (0, 1, 3.6e6, 0.0)])
    # Both into GPU 2's ToR link at 25 B/ns; 0 → 1 over the NVSwitch at 360 B/ns (2 × 25 ns).
    assert times == pytest.approx([1000.0 + 1e6 / 25.0, 1000.0 + 1e6 / 25.0, 50.0 + 1e4])


def test_user_routes_and_seeds():
    flows = [(0, 1, 1e6, 0.0)]
    via_tor = _engine.flow_completion_times(TOPO, flows, routes=[[0, 6, 1]], seed=3)
    assert via_tor == [1000.0 + 1e6 / 50.0]
    again = _engine.flow_completion_times(TOPO, flows, seed=1)
    assert _engine.flow_completion_times(TOPO, flows, seed=1) == again


@pytest.mark.parametrize(
    ("topology", "flows", "routes", "message"),
    [
        (TOPO.replace("0 6 400Gbps", "0 6 400Gbit"), [], None, "topology:4: link rate"),
        (TOPO, [(0, 9, 1.0, 0.0)], None, "node 9"),
        (TOPO, [(0, 1, 1.0, 0.0)], [[0, 2, 1]], "hop 0 -> 2"),
        (TOPO, [(0, 1, -5.0, 0.0)], None, "flow 0"),
    ],
)
def test_bad_input_raises_the_engine_error(topology, flows, routes, message):
    with pytest.raises(_engine.InputError, match=message):
        _engine.flow_completion_times(topology, flows, routes=routes)
