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
) -> dict[str, Any]:
    """Run a graph document on `platform` (the engine's `workload_graph::run`): iteration end
    times (ns), per-class time breakdowns (compute, exposed reads of remote memory, collectives,
    point-to-point, idle), placed bytes, and the Chrome trace when `trace`; `algorithm` runs
    every collective with that algorithm (auto: NCCL's tuner), priced by `collectives`
    ([`COLLECTIVES`]); `concurrent` starts every communication vertex once its dependencies are
    met (HCSim's engine), instead of one at a time per participant set (NCCL's communicator)."""
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
    decoders of hidden size h = `hidden`, sequence s = `seq`, `batch` b per XPU, every vertex on
    every XPU (`*`), each decoder's gradients all-reduced after its backward pass, and the loop
    closed by not_first edges from each all-reduce to its decoder's first forward vertex. Like the
    paper (Table 4) the decoder is GPT-shaped: a 4h MLP with GeLU, LayerNorm.

    Per layer, with e = `element_bytes` (FP32: 4), t = b·s tokens:
    - linear h_in → h_out: forward 2·t·h_in·h_out FLOPs reading e·(h_in·h_out + t·h_in) bytes
      (weights, input); backward twice the FLOPs, reading 16 bytes per weight (FP32 weight,
      gradient, Adam's two moments) and e·2·t·(h_in + h_out) (saved input, output gradient,
      input gradient written, output read);
    - self-attention (a = `heads`): forward 4·t·s·h FLOPs (QKᵀ and the weighted sum of V),
      reading e·(3·t·h + 2·b·a·s²) (Q, K, V; the score matrix written and read back); backward
      twice the FLOPs and the bytes;
    - LayerNorm, dropout, GeLU, add: 5, 1, 8 and 1 FLOPs per element, reading their inputs (e per
      element; add two) forward and twice that backward (negligible FLOPs, as in Table 4).
    The all-reduce of decoder l carries its parameters' gradients: e·(12h² + 13h) bytes. With
    `sync` = "layer", as the paper builds its graph (§3.1 (2): each neural layer's gradients in its
    own communication vertex), every layer with parameters (LayerNorm 2h, linear h_in·h_out + h_out)
    has its own all-reduce after its backward vertex instead: 8 per decoder, the same bytes."""
    if min(batch, layers, hidden, seq, heads, element_bytes, iterations) < 1:
        raise InputError("command line: llama2-13b: every size must be at least 1")
    if sync not in SYNC:
        raise InputError(f"command line: --sync: '{sync}' is not one of {', '.join(SYNC)}")
    b, s, h, a, e = batch, seq, hidden, heads, element_bytes
    t = b * s
    dtype = {2: "fp16", 4: "fp32", 8: "fp64"}.get(e)
    if dtype is None:
        raise InputError(f"command line: --element-bytes: {e} is not 2, 4 or 8")

    def linear(h_in: int, h_out: int) -> tuple[float, float, float, float]:
        fwd_flops = 2.0 * t * h_in * h_out
        return (
            fwd_flops,
            e * (h_in * h_out + t * h_in),
            2 * fwd_flops,
            16.0 * h_in * h_out + e * 2.0 * t * (h_in + h_out),
        )

    def elementwise(flops_per: float, n: int, inputs: int = 1) -> tuple[float, float, float, float]:
        return flops_per * t * n, e * inputs * t * n, 2 * flops_per * t * n, 2.0 * e * inputs * t * n

    attention = (4.0 * t * s * h, e * (3.0 * t * h + 2.0 * b * a * s * s))
    parts: list[tuple[str, tuple[float, float, float, float]]] = [
        ("layernorm1", elementwise(5, h)),
        ("linear_k", linear(h, h)),
        ("linear_q", linear(h, h)),
        ("linear_v", linear(h, h)),
        ("attention", (attention[0], attention[1], 2 * attention[0], 2 * attention[1])),
        ("linear_out", linear(h, h)),
        ("dropout1", elementwise(1, h)),
        ("add1", elementwise(1, h, inputs=2)),
        ("layernorm2", elementwise(5, h)),
        ("linear_up", linear(h, 4 * h)),
        ("gelu", elementwise(8, 4 * h)),
        ("linear_down", linear(4 * h, h)),
        ("dropout2", elementwise(1, h)),
        ("add2", elementwise(1, h, inputs=2)),
    ]
    # Parameters of the layers that have them (weights and biases; LayerNorm's scale and shift).
    params = {"layernorm1": 2 * h, "linear_k": h * h + h, "linear_q": h * h + h, "linear_v": h * h + h,
              "linear_out": h * h + h, "layernorm2": 2 * h, "linear_up": 4 * h * h + 4 * h,
              "linear_down": 4 * h * h + h}  # fmt: skip
    nodes: list[dict[str, Any]] = []
    links: list[dict[str, Any]] = []

    def compute(vid: str, flops: float, nbytes: float) -> None:
        nodes.append({"id": vid, "kind": "compute", "xpu": "*", "flops": round(flops), "dtype": dtype,
                      "bytes": round(nbytes)})  # fmt: skip

    previous = None
    for layer in range(layers):
        for name, (flops, nbytes, _, _) in parts:
            vid = f"d{layer}.fwd.{name}"
            compute(vid, flops, nbytes)
            if previous is not None:
                links.append({"source": previous, "target": vid})
            previous = vid

    def all_reduce(vid: str, after: str, before: str, n_params: int) -> None:
        """Gradients all-reduced once `after` is done; `before` waits for them from iteration 2."""
        nodes.append({"id": vid, "kind": "communication", "pattern": "allreduce", "participants": "*",
                      "bytes": e * n_params})  # fmt: skip
        links.append({"source": after, "target": vid})
        links.append({"source": vid, "target": before, "not_first": True})

    for layer in reversed(range(layers)):
        for name, (_, _, flops, nbytes) in reversed(parts):
            vid = f"d{layer}.bwd.{name}"
            compute(vid, flops, nbytes)
            links.append({"source": previous, "target": vid})
            previous = vid
            if sync == "layer" and name in params:
                all_reduce(f"d{layer}.{name}.allreduce", vid, f"d{layer}.fwd.{name}", params[name])
        if sync == "decoder":
            all_reduce(f"d{layer}.allreduce", previous, f"d{layer}.fwd.{parts[0][0]}", sum(params.values()))
    name = f"llama2-13b b={b} (decoders {layers}, hidden {h}, seq {s}, {dtype})"
    return {
        "directed": True,
        "multigraph": False,
        "graph": {"name": name, "iterations": iterations},
        "nodes": nodes,
        "links": links,
    }
