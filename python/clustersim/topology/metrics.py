"""Maximum flows over a fabric, and its bisection bandwidth.

`max_flow` is the one max-flow of the package (the bisection here and the bandwidth tester's
bound use it): the platform's directed links carry their rates, and flow passes only through
nodes that forward under the engine's reachability rule (`Platform.forwards`: switches, NICs and
nodes declared `forward=yes`; never an accelerator). A node that does not forward is split in two,
its traffic leaving from one half and arriving at the other, so no flow passes through it.

The bisection bandwidth is the maximum flow (bytes/s, one direction) from the GPUs of the first
half of the ranks to those of the second half. Ranks are numbered server by server, so this cuts
the cluster between servers in the middle; for the Clos fabrics of the templates it is the classic
bisection (e.g. G/2 × NIC rate when the fabric is non-blocking).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from clustersim.topology.model import Topology, platform_of

if TYPE_CHECKING:
    from clustersim.platform import Platform


def max_flow(platform: Platform, sources: Iterable[int], sinks: Iterable[int], scale: float = 1.0) -> float:
    """The most that can flow from the nodes `sources` to the nodes `sinks` together, each link
    carrying its rate in GB/s times `scale` (1e9: bytes/s)."""
    import networkx as nx  # only here: start-up stays lean

    forwards = platform.forwards

    def node(v: int, out: bool) -> object:
        return v if forwards[v] else (("out", v) if out else ("in", v))

    graph = nx.DiGraph()
    for a, b, gbs in zip(*platform.links[:3], strict=True):
        u, v = node(a, True), node(b, False)
        if graph.has_edge(u, v):
            graph[u][v]["capacity"] += gbs * scale
        else:
            graph.add_edge(u, v, capacity=gbs * scale)
    graph.add_edges_from(("source", node(s, True)) for s in sources)  # no capacity: unbounded
    graph.add_edges_from((node(t, False), "sink") for t in sinks)
    if "source" not in graph or "sink" not in graph:
        return 0.0
    return float(nx.maximum_flow_value(graph, "source", "sink"))


def bisection_bandwidth(fabric: Topology | Platform) -> float:
    """Bytes/s, one direction (module docstring)."""
    p = platform_of(fabric)
    gpus = p.placement[0]
    if len(gpus) < 2:
        return 0.0
    half = len(gpus) // 2
    return max_flow(p, gpus[:half], gpus[half:], scale=1e9)
