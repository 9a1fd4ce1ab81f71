"""The theoretical bound of the pattern on a platform: per group, the most bytes per second that
can leave the group's devices for the other ranks' plus the most that can enter them — the two
maximum flows (minimum cuts) of the platform's directed links at their bandwidths.

A route may cross switches, NVSwitches, NICs and PCIe/CXL switches, never another accelerator,
CPU or memory (the platform's default: docs/platform-format.md, "Routing"). For a DGX-A100, where
each GPU reaches the NVSwitches over 12 NVLinks of 25 GB/s each way, this is g × 600 GB/s, the
tester's README's bound.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from clustersim.measure.bwtest.pattern import Pattern

if TYPE_CHECKING:
    from clustersim.platform import Platform

TRANSIT = frozenset({"switch", "nvswitch", "nic", "pcie_switch", "cxl_switch"})


def group_bounds_GBps(pattern: Pattern, platform: Platform, devices: list[int]) -> list[float]:
    """Each group's bound on its aggregate bidirectional bandwidth, GB/s."""
    import networkx as nx  # only here: start-up stays lean

    kinds = platform.kinds
    ends = set(devices)
    graph = nx.DiGraph()
    for a, b, bw, _ in zip(*platform.links, strict=True):
        if (kinds[a] in TRANSIT or a in ends) and (kinds[b] in TRANSIT or b in ends):
            cap = graph.get_edge_data(a, b, {"capacity": 0.0})["capacity"]
            graph.add_edge(a, b, capacity=cap + bw)
    out = []
    for k in range(pattern.groups):
        inside = {devices[r] for r in pattern.members(k)}
        outside = ends - inside
        out.append(_max_flow(graph, inside, outside) + _max_flow(graph, outside, inside))
    return out


def _max_flow(graph: object, sources: set[int], sinks: set[int]) -> float:
    import networkx as nx

    g = graph.copy()  # type: ignore[attr-defined]
    g.add_edges_from(("source", s) for s in sources)  # no capacity attribute: unbounded
    g.add_edges_from((t, "sink") for t in sinks)
    return float(nx.maximum_flow_value(g, "source", "sink"))
