"""Bisection bandwidth of a fabric.

Defined here as the maximum flow (bytes/s, one direction) from the GPUs of the first half of the
ranks to those of the second half, every directed link carrying its rate. Ranks are numbered
server by server, so this cuts the cluster between servers in the middle; for the Clos fabrics of
the templates it is the classic bisection (e.g. G/2 × NIC rate when the fabric is non-blocking).
The engine's reachability rule holds (`Platform.forwards`): flow passes through switches, never
through a GPU.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from clustersim.topology.model import Topology, platform_of

if TYPE_CHECKING:
    from clustersim.platform import Platform


def bisection_bandwidth(fabric: Topology | Platform) -> float:
    p = platform_of(fabric)
    gpus = p.placement[0]
    if len(gpus) < 2:
        return 0.0
    half = len(gpus) // 2
    import networkx as nx  # only here: start-up stays lean

    forwards = p.forwards
    graph = nx.DiGraph()

    def node(v: int, out: bool) -> object:
        """A node that does not forward (a GPU) is split: its traffic leaves from ("out", v) and
        arrives at ("in", v), so no flow passes through it."""
        return v if forwards[v] else (("out", v) if out else ("in", v))

    for a, b, gbs in zip(*p.links[:3], strict=True):
        u, v = node(a, True), node(b, False)
        if graph.has_edge(u, v):
            graph[u][v]["capacity"] += gbs * 1e9
        else:
            graph.add_edge(u, v, capacity=gbs * 1e9)
    source, sink = "source", "sink"
    graph.add_edges_from((source, node(g, True)) for g in gpus[:half])  # no capacity: unbounded
    graph.add_edges_from((node(g, False), sink) for g in gpus[half:])
    return float(nx.maximum_flow_value(graph, source, sink))
