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
from clustersim.files import read_text
from clustersim.platform import _jsonable, _node_id, graphml_graph

if TYPE_CHECKING:
    import networkx as nx

    from clustersim.platform import Platform
    from clustersim.workload import Workload

ACCESS = ("auto", "copy", "coherent")
"""How compute reads remote memory: auto (in place on CXL memory, copy first from host DRAM)."""
COLLECTIVES = ("nccl", "cm02")
"""How collectives are priced: NCCL's model (pipelined rings paying their hops' latency once,
NVLink at NCCL's payload rate, protocol efficiency), or SimGrid's CM02 as HCSim runs it (one
channel; every step's transfers pay their path latency, then move at link rate: t = latency + bytes
/ bandwidth)."""
SYNC = ("decoder", "layer")
"""Where `llama2_13b` all-reduces gradients: once per decoder, or per layer with parameters."""


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
    name = os.fspath(path)
    graph = graphml_graph(name)
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


def normalize(text: str, name: str = "graph") -> str:
    """A graph document checked by the engine and written back in the engine's form."""
    return _engine.normalize_workload_graph(name, text)


def read_workload_graph(path: str | os.PathLike[str]) -> str:
    """Read a workload graph (.graphml, else node-link JSON) as the engine's document."""
    name = os.fspath(path)
    if Path(name).suffix.lower() == ".graphml":
        return read_graphml(name)
    return _engine.normalize_workload_graph(name, read_text(name))


def run(
    text: str,
    platform: Platform,
    *,
    name: str = "graph",
    iterations: int | None = None,
    access: str = "auto",
    algorithm: str = "auto",
    trace: bool = False,
    progress: Callable[[float], object] | None = None,
    collectives: str = "nccl",
    concurrent: bool = False,
    backend: str = "flow",
) -> dict[str, Any]:
    """Run a graph document on `platform` (the engine's `workload_graph::run`): iteration end
    times (ns), per-class time breakdowns (compute, exposed reads of remote memory, collectives,
    point-to-point, idle), placed bytes, and the Chrome trace when `trace`; `algorithm` runs
    every collective with that algorithm (auto: NCCL's tuner), priced by `collectives`
    ([`COLLECTIVES`]); `concurrent` starts every communication vertex once its dependencies are
    met (HCSim's engine), instead of one at a time per participant set (NCCL's communicator);
    `backend` moves the transfers as max-min fair flows ("flow") or as packets ("packet", with the
    packet model's settings, as for `clustersim.run`)."""
    if access not in ACCESS:
        raise InputError(f"command line: --access: '{access}' is not one of {', '.join(ACCESS)}")
    if collectives not in COLLECTIVES:
        raise InputError(
            f"command line: --collectives: '{collectives}' is not one of {', '.join(COLLECTIVES)}"
        )
    result: dict[str, Any] = _engine.run_workload_graph(
        name,
        text,
        platform,
        iterations=iterations,
        access=access,
        algorithm=algorithm,
        trace=trace,
        progress=progress,
        send_lat_us=0.0 if collectives == "cm02" else None,
        concurrent=concurrent,
        backend=backend,
    )
    return result


def from_workload(
    workload: Workload, platform: Platform, *, dtype: str = "bf16", name: str = "workload"
) -> str:
    """A workload (the IR: a `train` plan from `Workload.from_training`, a SimAI file's from
    `Workload.from_simai`, or one built by hand) as a graph document on `platform`, which runs its
    ranks: a vertex per op of each rank, compute ops as FLOPs in `dtype` at the XPU's peak (so
    they take their time again), each collective once per group instance, each send/recv pair
    once, edges for the dependencies and the order of each stream (the engine's
    `workload_graph::export`)."""
    return _engine.workload_graph_from_workload(name, workload.columns(), platform, dtype)


def llama2_13b(
    batch: int = 1,
    *,
    layers: int = 40,
    hidden: int = 5120,
    seq: int = 4096,
    heads: int = 40,
    element_bytes: int = 4,
    iterations: int = 1,
    sync: str = "decoder",
) -> dict[str, Any]:
    """The HCSim paper's LLaMA2-13B data-parallel workload graph (§3.1 (2), Fig. 7): `layers`
    GPT-shaped decoders of hidden size `hidden`, sequence `seq`, `batch` per XPU, every vertex on
    every XPU, gradients all-reduced per decoder (`sync` "decoder") or per layer with parameters
    ("layer", as the paper builds its graph). Built by the engine (`workload_graph::llama2`, whose
    module doc gives each layer's FLOPs and bytes)."""
    if min(batch, layers, hidden, seq, heads, element_bytes, iterations) < 1:
        raise InputError("command line: llama2-13b: every size must be at least 1")
    text = _engine.llama2_13b_graph(batch, layers, hidden, seq, heads, element_bytes, iterations, sync)
    return json.loads(text)
