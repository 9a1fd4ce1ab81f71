"""NetworkX in and out of the engine's `Platform`.

`to_networkx` gives an undirected `nx.Graph` (an `nx.MultiGraph` if two links join the same pair of
nodes), one edge per full-duplex link: node attribute `kind` (`gpu`, `nvswitch`, `switch`, …), edge
attributes `bandwidth` (bytes/s), `latency` (s) and `error_rate`; graph attributes
`gpus_per_server`, `gpu_type`, `name`. `from_networkx` reads the same attributes back into the
engine's `Platform` (GPU, NVSwitch and switch nodes). Nodes labelled 0 … n−1 keep their
numbers; other labels are renumbered GPUs first, then NVSwitches, then switches, each in the
graph's node order. Links come in the graph's edge order, each written from its lower to its
higher node number.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

from clustersim.errors import InputError
from clustersim.topology.model import GPU, KINDS, NVSWITCH, SWITCH, Link, Topology, platform_of

if TYPE_CHECKING:
    import networkx as nx

    from clustersim.platform import Platform


def to_networkx(fabric: Topology | Platform, name: str | None = None) -> nx.Graph:
    """The fabric's full-duplex links as an undirected graph (module docstring)."""
    import networkx as nx  # only here: start-up stays lean

    if name is None:
        name = fabric.name if isinstance(fabric, Topology) else "topology"
    p = platform_of(fabric)
    src, dst, gbs, ns, errors = p.duplex_links()
    pairs = {(min(a, b), max(a, b)) for a, b in zip(src, dst, strict=True)}
    graph: nx.Graph = nx.Graph() if len(pairs) == len(src) else nx.MultiGraph()
    graph.graph.update(gpus_per_server=p.gpus_per_server, gpu_type=p.gpu_type, name=name)
    graph.add_nodes_from((i, {"kind": kind}) for i, kind in enumerate(p.kinds))
    graph.add_edges_from(
        (a, b, {"bandwidth": bw * 1e9, "latency": lat / 1e9, "error_rate": er})
        for a, b, bw, lat, er in zip(src, dst, gbs, ns, errors, strict=True)
    )
    return graph


def from_networkx(
    graph: nx.Graph, gpus_per_server: int | None = None, gpu_type: str | None = None
) -> Topology:
    """The engine's platform of an undirected graph whose nodes have `kind` and edges `bandwidth`
    and `latency`, named by the graph's `name`. `gpus_per_server` and `gpu_type` default to the
    graph attributes of those names, else 1 and H100."""
    if graph.is_directed():
        raise InputError("networkx graph: links are full-duplex: give an undirected Graph or MultiGraph")
    kinds: dict[Hashable, str] = {}
    for node, data in graph.nodes(data=True):
        kind = data.get("kind")
        if kind not in KINDS:
            raise InputError(
                f"networkx graph: node {node!r}: kind: {kind!r} is not one of {', '.join(KINDS)}"
            )
        kinds[node] = kind
    nodes = list(graph.nodes)
    if set(nodes) == set(range(len(nodes))) and all(type(n) is int for n in nodes):
        index = {n: n for n in nodes}
    else:
        order = [n for k in (GPU, NVSWITCH, SWITCH) for n in nodes if kinds[n] == k]
        index = {n: i for i, n in enumerate(order)}
    links = []
    for u, v, data in graph.edges(data=True):
        a, b = sorted((index[u], index[v]))
        values = [_edge_value(u, v, data, name) for name in ("bandwidth", "latency")]
        links.append(Link(a, b, values[0], values[1], float(data.get("error_rate", 0.0))))
    return Topology.from_links(
        [kinds[n] for n in sorted(index, key=index.__getitem__)],
        links,
        gpus_per_server=gpus_per_server or int(graph.graph.get("gpus_per_server", 1)),
        gpu_type=gpu_type or str(graph.graph.get("gpu_type", "H100")),
        name=str(graph.graph.get("name", "topology")),
        source="networkx graph",
    )


def _edge_value(u: Hashable, v: Hashable, data: dict[str, Any], name: str) -> float:
    if name not in data:
        raise InputError(f"networkx graph: edge ({u!r}, {v!r}): {name}: missing")
    try:
        return float(data[name])
    except (TypeError, ValueError):
        raise InputError(
            f"networkx graph: edge ({u!r}, {v!r}): {name}: not a number: {data[name]!r}"
        ) from None
