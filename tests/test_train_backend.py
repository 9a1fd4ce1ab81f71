"""`train -n FABRIC --backend packet`: a training iteration's communication moved packet by packet
(RoCEv2 framing, PFC, ECN, DCQCN at SimAI.conf's shipped settings) instead of as max-min flows."""

from __future__ import annotations

import clustersim
import pytest
from clustersim.cli import main
from clustersim.errors import InputError

SMALL = dict(layers=2, hidden=1024, heads=8, ffn=4096, vocab=32000, gpus=16, tp=8, gbs=16, seq=512)


def test_packets_never_beat_flows_and_cost_at_most_their_framing_here():
    """Two servers, TP inside each, DP across an idle Spectrum-X: nothing congests, so the packet
    run adds to the flow run's communication RoCEv2's framing (4096 payload bytes of 4178 on the
    wire, 2 %) and per-packet costs (store-and-forward, ACK clocking): within 5 % of it (3.1 % at
    the time of writing); the compute is the same."""
    flow = clustersim.train(None, topology="Spectrum-X:16", **SMALL)
    packet = clustersim.train(None, topology="Spectrum-X:16", backend="packet", **SMALL)
    assert (flow.provenance["backend"], packet.provenance["backend"]) == ("flow", "packet")
    compute = dict(flow.data["breakdown_s"])["compute"]
    assert dict(packet.data["breakdown_s"])["compute"] == pytest.approx(compute, rel=1e-12)
    comm = flow.iteration_s - compute
    assert (
        flow.iteration_s + comm * (4178 / 4096 - 1) * 0.5
        <= packet.iteration_s
        <= flow.iteration_s + 0.05 * comm
    )


def test_packet_backend_needs_a_fabric(capsys: pytest.CaptureFixture[str]):
    with pytest.raises(InputError, match="backend: 'packet' moves a fabric's transfers"):
        clustersim.train(None, backend="packet", **SMALL)
    code = main(["train", "--gpus", "8", "--gbs", "8", "--backend", "packet"])
    assert (
        code == 2 and "--backend: moves a fabric's transfers; give the fabric (-n)" in capsys.readouterr().err
    )
