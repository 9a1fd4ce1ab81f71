"""Workload graphs (HCSim's Table 3): compute and communication vertices placed on a platform's
XPUs, dependency edges (a `not_first` edge is ignored in the first iteration), cycles, an iteration
count. The engine reads one form, NetworkX's node-link JSON (docs/workload-graph-format.md; the
engine's `workload_graph::json` module doc lists every attribute); GraphML files and NetworkX
DiGraphs are turned into that document here, and the engine checks it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clustersim import _engine
from clustersim.errors import InputError
from clustersim.platform import _jsonable, _node_id, _read_text

if TYPE_CHECKING:
    import networkx as nx

    from clustersim.platform import Platform

ACCESS = ("auto", "copy", "coherent")
"""How compute reads remote memory: auto (in place on CXL memory, copy first from host DRAM)."""


def graph_document(graph: nx.DiGraph) -> dict[str, Any]:
    """The node-link document of a NetworkX DiGraph with Table 3's attributes: vertex and edge
    attributes as they are, `name` and `iterations` from the graph's attributes."""
    doc: dict[str, Any] = {
        "directed": graph.is_directed(),
        "multigraph": graph.is_multigraph(),
        "nodes": [{"id": _node_id(n), **data} for n, data in graph.nodes(data=True)],
        "links": [
            {**data, "source": _node_id(u), "target": _node_id(v)} for u, v, data in graph.edges(data=True)
        ],
    }
    attrs = {k: graph.graph[k] for k in ("name", "iterations") if k in graph.graph}
    if attrs:
        doc["graph"] = attrs
    return doc


def from_networkx(graph: nx.DiGraph, name: str = "networkx graph") -> str:
    """A NetworkX DiGraph as the engine's graph document (JSON text), checked by the engine."""
    try:
        text = json.dumps(_jsonable(graph_document(graph)))
    except (TypeError, ValueError) as e:
        raise InputError(f"{name}: graph: cannot be read as a graph document: {e}") from None
    return _engine.normalize_workload_graph(name, text)


def to_networkx(text: str) -> nx.DiGraph:
    """A graph document as a NetworkX DiGraph (lists of XPUs kept as lists)."""
    import networkx as nx

    doc = json.loads(text)
    graph = nx.DiGraph(**doc.get("graph", {}))
    for node in doc["nodes"]:
        graph.add_node(node.pop("id"), **node)
    for link in doc["links"]:
        graph.add_edge(link.pop("source"), link.pop("target"), **link)
    return graph


def read_graphml(path: str | os.PathLike[str]) -> str:
    """A GraphML workload graph as the engine's document (XPU lists as comma-separated text)."""
    import warnings
    import xml.etree.ElementTree as ET

    import networkx as nx

    name = os.fspath(path)
    try:
        with warnings.catch_warnings():  # NetworkX warns of keys without a type: read as text
            warnings.simplefilter("ignore")
            graph = nx.read_graphml(name)
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"{name}: cannot read: {getattr(e, 'strerror', None) or e}") from None
    except (ET.ParseError, nx.NetworkXError, ValueError, KeyError, TypeError, IndexError) as e:
        detail = str(e).splitlines()[0] if str(e) else type(e).__name__
        line = getattr(e, "position", (1, 0))[0] if isinstance(e, ET.ParseError) else 1
        raise InputError(f"{name}:{line}: GraphML: not a readable GraphML graph: {detail}") from None
    return from_networkx(graph, name)


def graphml_text(text: str) -> str:
    """A graph document as GraphML (GraphML holds scalars: XPU lists become comma-separated)."""
    import networkx as nx

    graph = to_networkx(text)
    for _, data in graph.nodes(data=True):
        for key in ("xpu", "participants"):
            if isinstance(data.get(key), list):
                data[key] = ",".join(str(x) for x in data[key])
    return "\n".join(nx.generate_graphml(graph)) + "\n"


def read_workload_graph(path: str | os.PathLike[str]) -> str:
    """Read a workload graph (.graphml, else node-link JSON) as the engine's document."""
    name = os.fspath(path)
    if Path(name).suffix.lower() == ".graphml":
        return read_graphml(name)
    return _engine.normalize_workload_graph(name, _read_text(name))


def run(
    text: str,
    platform: Platform,
    *,
    name: str = "graph",
    iterations: int | None = None,
    access: str = "auto",
    trace: bool = False,
    progress: Callable[[float], object] | None = None,
) -> dict[str, Any]:
    """Run a graph document on `platform` (the engine's `workload_graph::run`): iteration end
    times (ns), per-class time breakdowns (compute, exposed reads of remote memory, collectives,
    point-to-point, idle), placed bytes, and the Chrome trace when `trace`."""
    if access not in ACCESS:
        raise InputError(f"command line: --access: '{access}' is not one of {', '.join(ACCESS)}")
    result: dict[str, Any] = _engine.run_workload_graph(
        name, text, platform, iterations=iterations, access=access, trace=trace, progress=progress
    )
    return result
