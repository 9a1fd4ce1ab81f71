"""SimAI topology files, as gen_Topo_Template.py writes them and SimAI's ns-3 front end reads them.

```
<nodes> <gpus_per_server> <nvswitch_count> <switch_count> <link_count> <gpu_type>
<NVSwitch ids> <switch ids>            (one line, each id followed by a space)
<src> <dst> <rate> <delay> <error_rate>   × link_count   (e.g. 0 32 2880Gbps 0.000025ms 0)
```

Every id not listed on line 2 is a GPU. Each link line is one full-duplex link. The engine reads
the file (`Platform.parse_simai`; ids may wrap lines, as ns-3's stream reader allows; errors name the
line of the offending word); this module writes it, rates in Gbps and delays in ms.
"""

from __future__ import annotations

import os

from clustersim.topology.model import NVSWITCH, SWITCH, Link, Topology
from clustersim.topology.units import (
    format_delay,
    format_error_rate,
    format_rate,
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


def parse_simai(text: str, path: str = "topology") -> Topology:
    """A Topology from SimAI topology file text; `path` names the file in error messages. The
    engine parses it (one parser, one set of rules); each full-duplex line is a pair of directed
    links there."""
    from clustersim import _engine

    p = _engine.Platform.parse_simai(path, text)
    src, dst, gbps, ns = p.links
    errors = p.error_rates
    # The engine works in B/ns and ns; back in bytes/s and s, 12 significant digits are exact for
    # any rate or delay a file can state (0.001ms is 1e-06 s, not 1.0000000000000002e-06).
    links = [
        Link(src[i], dst[i], _si(gbps[i] * 1e9), _si(ns[i] * 1e-9), errors[i]) for i in range(0, len(src), 2)
    ]
    return Topology(list(p.kinds), links, p.gpus_per_server, p.gpu_type, name=os.path.basename(path))


def _si(value: float) -> float:
    return float(f"{value:.12g}")


def read_simai(path: str | os.PathLike[str]) -> Topology:
    """Read a SimAI topology file; bad input raises InputError with file:line: field: message."""
    from clustersim.analytical import read_text

    return parse_simai(read_text(path, "topology"), os.fspath(path))
