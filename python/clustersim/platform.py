"""Platforms of typed devices, read and built by the engine: platform files (docs/platform-format.md),
SimAI topology files, graph documents (JSON, YAML, GraphML, NetworkX graphs with HCSim's Table 2
attribute names) and HCSim's two systems (`hcsim`). `Platform` is the engine's object; Python holds
a handle and its arrays.

A graph document (the engine's `platform::graph` module doc has the full list) is NetworkX's
node-link form: `nodes` with `id`, `kind` (xpu, xpu_switch, switch, cpu, nic, memory, pcie_switch,
cxl_switch) and Table 2's attributes (`type` from the catalog, or `fp16_flops`, `fp32_flops`, ...
in FLOP/s and `memory` in bytes; a memory node's `memory`, "inf" for unbounded), `links` with
`source`, `target`, `bandwidth` (bytes/s) and `latency` (s), optional `ranks`. YAML and GraphML
files and NetworkX graphs are turned into that document here; the engine reads and checks it.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clustersim import _engine
from clustersim.errors import InputError
from clustersim.files import read_text

if TYPE_CHECKING:
    import networkx as nx

Platform = _engine.Platform

TEMPLATES = ("hcsim-pcie", "hcsim-cxl")
"""HCSim's Fig. 6a (PCIe, no coherence) and Fig. 6b (with a CXL fabric) systems."""


def read_platform(path: str | os.PathLike[str]) -> Platform:
    """Read a platform: a graph document (.json, .yaml/.yml, .graphml), else a platform file or a
    SimAI topology file."""
    name = os.fspath(path)
    suffix = Path(name).suffix.lower()
    if suffix == ".graphml":
        return read_graphml(name)
    text = read_text(path)
    if suffix == ".json":
        return parse_graph(name, text)
    if suffix in (".yaml", ".yml"):
        return parse_yaml(name, text)
    return Platform.parse(name, text)


def parse_graph(name: str, text: str, lines: dict[str, int] | None = None) -> Platform:
    """A graph document's JSON text, read by the engine; `name` names it in errors, `lines` gives
    the line of each node ('node ID') or link ('link I') where the input has lines."""
    try:
        return Platform.parse_graph(name, text)
    except InputError as e:
        raise _with_line(e, name, lines if lines is not None else _json_lines(text)) from None


def _with_line(e: InputError, name: str, lines: dict[str, int]) -> InputError:
    """The engine's error with the line of the node or link it names, where known."""
    message = str(e)
    m = re.match(re.escape(name) + r": (node '(.*?)'|node #(\d+)|link (\d+))", message)
    if m is None:
        return e
    node, index, link = m.group(2), m.group(3), m.group(4)
    key = f"node {node}" if node is not None else f"node #{index}" if index is not None else f"link {link}"
    if key not in lines:
        return e
    return InputError(f"{name}:{lines[key]}{message[len(name) :]}")


def _json_lines(text: str) -> dict[str, int]:
    """Line of each node of a JSON document, found by its `"id"` (links carry no id)."""
    lines = {}
    for m in re.finditer(r'"id"\s*:\s*(?:"((?:[^"\\]|\\.)*)"|(-?\d+))', text):
        node = m.group(1) if m.group(1) is not None else m.group(2)
        lines.setdefault(f"node {node}", text.count("\n", 0, m.start()) + 1)
    return lines


def _jsonable(value: Any) -> Any:
    """A YAML or GraphML value as JSON: mapping keys as text, non-finite numbers as text (the
    engine reads "inf" and refuses "nan" by name), anything else JSON has no type for as text."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def parse_yaml(name: str, text: str) -> Platform:
    """A graph document written as YAML (the same keys as the JSON form)."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        tree = yaml.compose(text, Loader=loader)
        doc = yaml.load(text, Loader=loader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 1
        problem = (getattr(e, "problem", None) or str(e)).splitlines()[0]
        raise InputError(f"{name}:{line}: YAML: not valid YAML: {problem}") from None
    except RecursionError:
        raise InputError(f"{name}:1: YAML: nested too deeply") from None
    return parse_graph(name, json.dumps(_jsonable(doc)), _yaml_lines(tree))


def _yaml_lines(tree: Any) -> dict[str, int]:
    """Line of each node (by id) and link (by index) of a composed YAML document."""
    import yaml

    lines: dict[str, int] = {}
    if not isinstance(tree, yaml.MappingNode):
        return lines
    for key, value in tree.value:
        if not isinstance(value, yaml.SequenceNode) or key.value not in ("nodes", "links", "edges"):
            continue
        for i, item in enumerate(value.value):
            line = item.start_mark.line + 1
            if key.value != "nodes":
                lines[f"link {i}"] = line
            else:
                lines[f"node #{i}"] = line
            if key.value == "nodes" and isinstance(item, yaml.MappingNode):
                ids = [v.value for k, v in item.value if k.value == "id" and isinstance(v, yaml.ScalarNode)]
                if ids:
                    lines.setdefault(f"node {ids[0]}", line)
    return lines


def graph_document(graph: nx.Graph) -> dict[str, Any]:
    """The node-link document of a NetworkX graph with Table 2's attributes (module docstring):
    node and edge attributes as they are, `ranks` from the graph attribute of that name."""
    doc: dict[str, Any] = {
        "directed": graph.is_directed(),
        "nodes": [{"id": _node_id(n), **data} for n, data in graph.nodes(data=True)],
        "links": [
            {**data, "source": _node_id(u), "target": _node_id(v)} for u, v, data in graph.edges(data=True)
        ],
    }
    if "ranks" in graph.graph:
        doc["ranks"] = [_node_id(n) for n in graph.graph["ranks"]]
    if "name" in graph.graph:
        doc["graph"] = {"name": str(graph.graph["name"])}
    return doc


def _node_id(node: Any) -> str | int:
    return (
        node if isinstance(node, str) or (isinstance(node, int) and not isinstance(node, bool)) else str(node)
    )


def from_networkx(graph: nx.Graph, name: str = "networkx graph") -> Platform:
    """The engine's platform of a NetworkX graph with Table 2's attributes (module docstring)."""
    try:
        text = json.dumps(_jsonable(graph_document(graph)))
    except (TypeError, ValueError) as e:
        raise InputError(f"{name}: graph: cannot be read as a graph document: {e}") from None
    return parse_graph(name, text, {})


def graphml_graph(path: str | os.PathLike[str]) -> Any:
    """The NetworkX graph of a GraphML file (platforms and workload graphs), or a one-line error."""
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
    return graph


def read_graphml(path: str | os.PathLike[str]) -> Platform:
    """A GraphML file with Table 2's attributes (as `write_graphml` writes, or NetworkX's own)."""
    name = os.fspath(path)
    graph = graphml_graph(name)
    ranks = graph.graph.get("ranks")
    if isinstance(ranks, str):  # GraphML holds scalars only: `graphml_text` writes the list as JSON
        try:
            graph.graph["ranks"] = json.loads(ranks)
        except ValueError:
            raise InputError(f"{name}: ranks: not a JSON list of node ids: {ranks[:60]!r}") from None
    return from_networkx(graph, name)


def to_networkx(platform: Platform) -> nx.MultiDiGraph:
    """The platform as a NetworkX multigraph with Table 2's attributes: one edge per link, a
    full-duplex link once with `directed` False (as `graph_document` and the engine read it)."""
    import networkx as nx

    doc = json.loads(platform.to_graph_json("platform"))
    graph = nx.MultiDiGraph(ranks=doc["ranks"], name=doc["graph"]["name"])
    for node in doc["nodes"]:
        graph.add_node(node.pop("id"), **node)
    for link in doc["links"]:
        link.setdefault("directed", False)
        graph.add_edge(link.pop("source"), link.pop("target"), **link)
    return graph


def graphml_text(platform: Platform) -> str:
    """The platform as GraphML (NetworkX's writer over `to_networkx`; ranks as a graph attribute)."""
    import networkx as nx

    graph = to_networkx(platform)
    graph.graph["ranks"] = json.dumps(graph.graph["ranks"])
    return "\n".join(nx.generate_graphml(graph)) + "\n"


def hcsim(
    template: str,
    mix: list[tuple[str, int]],
    links: dict[str, tuple[float, float]] | None = None,
    **params: Any,
) -> Platform:
    """One of HCSim's systems: `template` hcsim-pcie (Fig. 6a) or hcsim-cxl (Fig. 6b); `mix` the XPU
    types and counts in rank order (types assigned per ToR); `links` overrides Table 5's figures
    by class (tor_core, nic_tor, upi, pcie, xpu, cxl, dram) with (GB/s, ns); `params` the engine's
    (xpus_per_server, servers_per_tor, cpus_per_server, nics_per_server, pcie_uplinks, cxl_uplink
    GB/s, dram_bytes, cxl_memory_bytes, dram_window_bytes, cxl_window_bytes: the bytes an XPU keeps
    in flight to that memory, which bound its reads by Little's law; default the protocols' tag
    limits, docs/platform-format.md)."""
    if template not in TEMPLATES:
        raise InputError(f"command line: template: unknown '{template}' (valid: {', '.join(TEMPLATES)})")
    return Platform.hcsim(template, template == "hcsim-cxl", mix, links=links or {}, **params)
