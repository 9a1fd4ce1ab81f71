"""Bisection bandwidth of a fabric.

Defined here as the maximum flow (bytes/s, one direction) from the first half of the GPUs, by id,
to the second half, every link carrying its rate in each direction. GPUs are numbered server by
server, so this cuts the cluster between servers in the middle; for the Clos fabrics of the
templates it is the classic bisection (e.g. G/2 × NIC rate when the fabric is non-blocking).
"""

from __future__ import annotations

from clustersim.topology.model import Topology


def bisection_bandwidth(topo: Topology) -> float:
    gpus = topo.gpus
    if len(gpus) < 2:
        return 0.0
    half = len(gpus) // 2
    import networkx as nx  # only here: start-up stays lean

    graph = nx.DiGraph()
    for link in topo.links:
        for a, b in ((link.src, link.dst), (link.dst, link.src)):
            if graph.has_edge(a, b):
                graph[a][b]["capacity"] += link.bandwidth
            else:
                graph.add_edge(a, b, capacity=link.bandwidth)
    source, sink = "source", "sink"
    graph.add_edges_from((source, g) for g in gpus[:half])  # no capacity attribute: unbounded
    graph.add_edges_from((g, sink) for g in gpus[half:])
    return float(nx.maximum_flow_value(graph, source, sink))
