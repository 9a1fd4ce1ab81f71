"""`Topology`: a view of the engine's `Platform` with the name and warnings of what built it.

The fabric itself — typed nodes and directed links, checked by the engine with its one
reachability rule (routes pass through switches, never through a GPU) — exists once, in the
engine (`clustersim.platform.Platform`). The engine builds the templates and reads and writes SimAI
files; NetworkX graphs build it from link arrays (`Platform.from_arrays`); this class only adds
what a template knows beyond the fabric (gen_Topo_Template.py's file name, its warnings) and the
Python conveniences (NetworkX, bisection bandwidth, a summary, `links` as records). As in
NetworkX graphs, `Link` records are in bytes/s and s; the engine's arrays are in GB/s and ns.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from clustersim import _engine
from clustersim.errors import InputError

if TYPE_CHECKING:
    import networkx as nx

    from clustersim.platform import Platform

GPU = "gpu"
NVSWITCH = "nvswitch"
SWITCH = "switch"
KINDS = (GPU, NVSWITCH, SWITCH)
KIND_CODES = {GPU: 0, NVSWITCH: 1, SWITCH: 2}
"""Integer codes of the node kinds in `Platform.from_arrays`."""


class Link(NamedTuple):
    """One full-duplex link: `bandwidth` in bytes/s and `latency` in s, each direction."""

    src: int
    dst: int
    bandwidth: float
    latency: float
    error_rate: float = 0.0


@dataclass(frozen=True)
class Topology:
    """The engine's `platform`, named (`name`: the file name gen_Topo_Template.py would choose) and
    with what its template adjusted (`warnings`)."""

    platform: Platform
    name: str = "topology"
    warnings: tuple[str, ...] = ()

    # --- the platform's arrays ----------------------------------------------------------------
    @property
    def kinds(self) -> list[str]:
        return self.platform.kinds

    @property
    def links(self) -> list[Link]:
        """The platform's full-duplex links, in file order, as records (made on each call)."""
        src, dst, gbs, ns, errors = self.platform.duplex_links()
        return [
            Link(a, b, bw * 1e9, lat / 1e9, er)
            for a, b, bw, lat, er in zip(src, dst, gbs, ns, errors, strict=True)
        ]

    @classmethod
    def from_links(
        cls,
        kinds: list[str],
        links: list[Link],
        gpus_per_server: int = 8,
        gpu_type: str = "H100",
        name: str = "topology",
        source: str | None = None,
    ) -> Topology:
        """The engine's platform of `kinds` (gpu, nvswitch, switch; GPUs first) and full-duplex
        `links`; it checks them (InputError naming `source`, default `name`)."""
        where = name if source is None else source
        for i, kind in enumerate(kinds):
            if kind not in KINDS:
                raise InputError(f"{where}: node {i}: kind: unknown '{kind}' (valid: {', '.join(KINDS)})")
        platform = _engine.Platform.from_arrays(
            where,
            [KIND_CODES[k] for k in kinds],
            [lk.src for lk in links],
            [lk.dst for lk in links],
            [lk.bandwidth / 1e9 for lk in links],
            [lk.latency * 1e9 for lk in links],
            [lk.error_rate for lk in links],
            gpus_per_server,
            gpu_type,
        )
        return cls(platform, name=name)

    @property
    def gpus_per_server(self) -> int:
        return self.platform.gpus_per_server

    @property
    def gpu_type(self) -> str:
        return self.platform.gpu_type

    # --- counts -------------------------------------------------------------------------------
    @property
    def num_nodes(self) -> int:
        return len(self.kinds)

    @property
    def num_gpus(self) -> int:
        return self.kinds.count(GPU)

    @property
    def num_nvswitches(self) -> int:
        return self.kinds.count(NVSWITCH)

    @property
    def num_switches(self) -> int:
        """Network switches, NVSwitches not included (SimAI's `switch_count`)."""
        return self.kinds.count(SWITCH)

    @property
    def num_links(self) -> int:
        """Full-duplex links (SimAI's `link_count`)."""
        return len(self.platform.duplex_links()[0])

    # --- files, graphs, metrics ---------------------------------------------------------------
    def to_simai(self) -> str:
        """The SimAI topology file text, as the engine writes it."""
        return self.platform.to_simai()

    def write(self, path: str | os.PathLike[str]) -> None:
        """Write a SimAI topology file; the file appears whole or not at all."""
        write_simai(self.platform, path)

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> Topology:
        """Read a SimAI topology file; bad input raises InputError naming file, line and field."""
        return read_simai(path)

    def to_networkx(self) -> nx.Graph:
        from clustersim.topology.graph import to_networkx

        return to_networkx(self.platform, name=self.name)

    @classmethod
    def from_networkx(
        cls, graph: nx.Graph, gpus_per_server: int | None = None, gpu_type: str | None = None
    ) -> Topology:
        """See `clustersim.topology.graph.from_networkx` (defaults come from the graph's attributes)."""
        from clustersim.topology.graph import from_networkx

        return from_networkx(graph, gpus_per_server=gpus_per_server, gpu_type=gpu_type)

    def bisection_bandwidth(self) -> float:
        """Bytes/s, one direction (`clustersim.topology.metrics`)."""
        from clustersim.topology.metrics import bisection_bandwidth

        return bisection_bandwidth(self.platform)

    def summary(self) -> dict[str, object]:
        """Counts and bisection bandwidth (bytes/s) as a JSON-ready dict."""
        return {
            "name": self.name,
            "gpus": self.num_gpus,
            "gpus_per_server": self.gpus_per_server,
            "gpu_type": self.gpu_type,
            "nvswitches": self.num_nvswitches,
            "switches": self.num_switches,
            "links": self.num_links,
            "bisection_bandwidth_Bps": self.bisection_bandwidth(),
        }


def platform_of(fabric: Topology | Platform) -> Platform:
    """The engine's platform of a `Topology` view or of a platform itself."""
    return fabric.platform if isinstance(fabric, Topology) else fabric


def write_simai(fabric: Topology | Platform, path: str | os.PathLike[str]) -> None:
    """Write a fabric as a SimAI topology file (the engine's writer); whole or not at all."""
    from clustersim.files import atomic_outputs, write_text

    text = platform_of(fabric).to_simai()
    with atomic_outputs() as stage:
        write_text(stage(path), text)


def parse_simai(text: str, path: str = "topology") -> Topology:
    """A SimAI topology file's text, read by the engine; `path` names it in errors (and the view)."""
    return Topology(_engine.Platform.parse_simai(path, text), name=os.path.basename(path))


def read_simai(path: str | os.PathLike[str]) -> Topology:
    """Read a SimAI topology file; bad input raises InputError with file:line: field: message."""
    from clustersim.files import read_text

    return parse_simai(read_text(path, "topology"), os.fspath(path))
