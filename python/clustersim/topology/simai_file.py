"""SimAI topology files, as gen_Topo_Template.py writes them and SimAI's ns-3 front end reads them.

```
<nodes> <gpus_per_server> <nvswitch_count> <switch_count> <link_count> <gpu_type>
<NVSwitch ids> <switch ids>            (one line, each id followed by a space)
<src> <dst> <rate> <delay> <error_rate>   × link_count   (e.g. 0 32 2880Gbps 0.000025ms 0)
```

Every id not listed on line 2 is a GPU. Each link line is one full-duplex link. Like SimAI's reader,
the switch ids are read as a stream of words, so line breaks inside the id list do not matter; each
link must be on a line of its own. Errors name the line of the offending word. Rates are written in
Gbps and delays in ms.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from clustersim.errors import InputError
from clustersim.topology.model import GPU, NVSWITCH, SWITCH, Link, Topology
from clustersim.topology.units import (
    format_delay,
    format_error_rate,
    format_rate,
    parse_delay,
    parse_error_rate,
    parse_rate,
)

HEADER_FIELDS = ("nodes", "gpus_per_server", "nvswitch_count", "switch_count", "link_count", "gpu_type")


def format_simai(topo: Topology) -> str:
    """The file text: NVSwitch ids first, then switch ids, then one line per link."""
    nv = [i for i, k in enumerate(topo.kinds) if k == NVSWITCH]
    sw = [i for i, k in enumerate(topo.kinds) if k == SWITCH]
    lines = [
        f"{topo.num_nodes} {topo.gpus_per_server} {len(nv)} {len(sw)} {len(topo.links)} {topo.gpu_type}",
        "".join(f"{i} " for i in nv + sw),
    ]
    for link in topo.links:
        lines.append(
            f"{link.src} {link.dst} {format_rate(link.bandwidth)} {format_delay(link.latency)} "
            f"{format_error_rate(link.error_rate)}"
        )
    return "\n".join(lines) + "\n"


def _words(text: str) -> Iterator[tuple[int, str]]:
    for number, line in enumerate(text.splitlines(), start=1):
        for word in line.split():
            yield number, word


def parse_simai(text: str, path: str = "topology") -> Topology:
    """A Topology from SimAI topology file text; `path` names the file in error messages."""
    lines = text.splitlines()
    header = lines[0].split() if lines else []
    if len(header) != len(HEADER_FIELDS):
        raise InputError(
            f"{path}:1: header: expected {len(HEADER_FIELDS)} fields ({' '.join(HEADER_FIELDS)}), "
            f"got {len(header)}"
        )
    counts: dict[str, int] = {}
    for name, word in zip(HEADER_FIELDS[:5], header[:5], strict=True):
        if not (word.isascii() and word.isdigit()):
            raise InputError(f"{path}:1: {name}: not a whole number: '{word}'")
        counts[name] = int(word)
    gpu_type = header[5]
    nodes = counts["nodes"]
    if counts["gpus_per_server"] < 1:
        raise InputError(f"{path}:1: gpus_per_server: must be at least 1")
    listed = counts["nvswitch_count"] + counts["switch_count"]
    if listed > nodes:
        raise InputError(
            f"{path}:1: switch_count: {counts['nvswitch_count']} NVSwitches and {counts['switch_count']} "
            f"switches are more than the {nodes} nodes"
        )

    if listed == nodes:
        raise InputError(f"{path}:1: nodes: no GPU: all {nodes} nodes are switches")
    # A connected topology of n nodes has n − 1 links or more, each five words: bound the node
    # count by the file before allocating for it.
    room = sum(len(line.split()) for line in lines[1:]) // 5
    if nodes > room + 1:
        raise InputError(
            f"{path}:1: nodes: {nodes} nodes need {nodes - 1} links to be connected, "
            f"but the file holds {room} at most"
        )
    words = _words("\n".join(lines[1:]))
    kinds = [GPU] * nodes
    for k in range(listed):
        field = "nvswitch id" if k < counts["nvswitch_count"] else "switch id"
        item = next(words, None)
        if item is None:
            raise InputError(f"{path}:{len(lines)}: {field}: file ends after {k} of {listed} switch ids")
        line, word = item
        node = _node(word, nodes, f"{path}:{line + 1}: {field}")
        if kinds[node] != GPU:
            raise InputError(f"{path}:{line + 1}: {field}: node {node} is listed twice")
        kinds[node] = NVSWITCH if k < counts["nvswitch_count"] else SWITCH

    links: list[Link] = []
    expected = counts["link_count"]
    while True:
        first = next(words, None)
        if first is None:
            break
        line = first[0] + 1
        if len(links) == expected:
            raise InputError(
                f"{path}:{line}: link_count: the header says {expected} links but the file has more"
            )
        rest = [first] + [w for w in (next(words, None) for _ in range(4)) if w is not None]
        if len(rest) < 5 or any(w[0] != first[0] for w in rest):
            raise InputError(f"{path}:{line}: link: expected 'src dst rate delay error_rate' on one line")
        src = _node(rest[0][1], nodes, f"{path}:{line}: src")
        dst = _node(rest[1][1], nodes, f"{path}:{line}: dst")
        if src == dst:
            raise InputError(f"{path}:{line}: dst: a link must join two different nodes (both are {src})")
        values = []
        for name, parse, word in (
            ("rate", parse_rate, rest[2][1]),
            ("delay", parse_delay, rest[3][1]),
            ("error_rate", parse_error_rate, rest[4][1]),
        ):
            try:
                values.append(parse(word))
            except ValueError as e:
                raise InputError(f"{path}:{line}: {name}: {e}") from None
        links.append(Link(src, dst, values[0], values[1], values[2]))
    if len(links) != expected:
        raise InputError(
            f"{path}:1: link_count: the header says {expected} links but the file has {len(links)}"
        )
    name = os.path.basename(path)
    topo = Topology(kinds, links, counts["gpus_per_server"], gpu_type, name=name)
    topo.check(path)
    return topo


def _node(word: str, nodes: int, where: str) -> int:
    if not (word.isascii() and word.isdigit()):
        raise InputError(f"{where}: not a node id: '{word}'")
    node = int(word)
    if node >= nodes:
        raise InputError(f"{where}: node {node} does not exist (the header says {nodes} nodes)")
    return node


def read_simai(path: str | os.PathLike[str]) -> Topology:
    """Read a SimAI topology file; bad input raises InputError with file:line: field: message."""
    from clustersim.analytical import read_text

    return parse_simai(read_text(path, "topology"), os.fspath(path))
