"""`Topology`: typed nodes and full-duplex links, the in-memory form of every fabric.

Nodes are numbered 0 … n−1 and have a kind: `gpu` (an accelerator that is also its own NIC, as in
SimAI), `nvswitch` (the scale-up switch inside a server) or `switch` (any network switch). A link is
full-duplex: the same rate (bytes/s) and latency (s) in each direction, used independently by the
two directions. SimAI topology files, NetworkX graphs and flat arrays convert in and out.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

from clustersim.errors import InputError

if TYPE_CHECKING:
    import networkx as nx

    from clustersim.platform import Platform

GPU = "gpu"
NVSWITCH = "nvswitch"
SWITCH = "switch"
KINDS = (GPU, NVSWITCH, SWITCH)
KIND_CODES = {GPU: 0, NVSWITCH: 1, SWITCH: 2}
"""Integer codes of the node kinds in `Topology.to_arrays()`."""


@dataclass(frozen=True)
class Link:
    """One full-duplex link: `bandwidth` in bytes/s and `latency` in s, each direction."""

    src: int
    dst: int
    bandwidth: float
    latency: float
    error_rate: float = 0.0


class TopologyArrays(NamedTuple):
    """Plain parallel lists (no NumPy) for moving a topology to the engine in one call.

    `kinds[i]` is node i's code from `KIND_CODES`; link j joins `src[j]` and `dst[j]` with rate
    `bandwidth[j]` bytes/s and latency `latency[j]` s in each direction."""

    kinds: list[int]
    src: list[int]
    dst: list[int]
    bandwidth: list[float]
    latency: list[float]


@dataclass
class Topology:
    """A fabric: `kinds[i]` is node i's kind, `links` its full-duplex links.

    `gpus_per_server` and `gpu_type` are carried into SimAI files; `name` is the file name
    gen_Topo_Template.py would choose (templates set it); `warnings` holds what a template adjusted."""

    kinds: list[str]
    links: list[Link]
    gpus_per_server: int = 8
    gpu_type: str = "H100"
    name: str = "topology"
    warnings: list[str] = field(default_factory=list)

    # --- counts -------------------------------------------------------------------------------
    @property
    def num_nodes(self) -> int:
        return len(self.kinds)

    @property
    def gpus(self) -> list[int]:
        return [i for i, k in enumerate(self.kinds) if k == GPU]

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

    # --- checks -------------------------------------------------------------------------------
    def check(self, where: str = "topology") -> None:
        """Raise InputError if a kind is unknown, a link is malformed, or a GPU cannot reach another.
        The engine checks it (`Platform.from_arrays`): one set of rules, one reachability rule
        (routes pass through switches only, never through a GPU)."""
        self.to_platform(where)

    def to_platform(self, where: str = "topology") -> Platform:
        """The engine's `Platform` of this topology (GPUs run ranks 0 … G−1 in node order)."""
        from clustersim import _engine

        for i, kind in enumerate(self.kinds):
            if kind not in KINDS:
                raise InputError(f"{where}: node {i}: kind: unknown '{kind}' (valid: {', '.join(KINDS)})")
        a = self.to_arrays()
        return _engine.Platform.from_arrays(
            where, a.kinds, a.src, a.dst, a.bandwidth, a.latency, self.gpus_per_server, self.gpu_type
        )

    # --- conversions --------------------------------------------------------------------------
    def to_arrays(self) -> TopologyArrays:
        return TopologyArrays(
            kinds=[KIND_CODES[k] for k in self.kinds],
            src=[link.src for link in self.links],
            dst=[link.dst for link in self.links],
            bandwidth=[link.bandwidth for link in self.links],
            latency=[link.latency for link in self.links],
        )

    def to_simai(self) -> str:
        """The SimAI topology file text (see `clustersim.topology.simai_file`)."""
        from clustersim.topology.simai_file import format_simai

        return format_simai(self)

    def write(self, path: str | os.PathLike[str]) -> None:
        """Write a SimAI topology file; the file appears whole or not at all."""
        from clustersim.output import atomic_outputs, write_text

        with atomic_outputs() as stage:
            write_text(stage(path), self.to_simai())

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> Topology:
        """Read a SimAI topology file; bad input raises InputError naming file, line and field."""
        from clustersim.topology.simai_file import read_simai

        return read_simai(path)

    def to_networkx(self) -> nx.Graph:
        from clustersim.topology.graph import to_networkx

        return to_networkx(self)

    @classmethod
    def from_networkx(
        cls, graph: nx.Graph, gpus_per_server: int | None = None, gpu_type: str | None = None
    ) -> Topology:
        """See `clustersim.topology.graph.from_networkx` (defaults come from the graph's attributes)."""
        from clustersim.topology.graph import from_networkx

        return from_networkx(graph, gpus_per_server=gpus_per_server, gpu_type=gpu_type)

    def bisection_bandwidth(self) -> float:
        from clustersim.topology.metrics import bisection_bandwidth

        return bisection_bandwidth(self)

    def summary(self) -> dict[str, object]:
        """Counts and bisection bandwidth (bytes/s) as a JSON-ready dict."""
        return {
            "name": self.name,
            "gpus": self.num_gpus,
            "gpus_per_server": self.gpus_per_server,
            "gpu_type": self.gpu_type,
            "nvswitches": self.num_nvswitches,
            "switches": self.num_switches,
            "links": len(self.links),
            "bisection_bandwidth_Bps": self.bisection_bandwidth(),
        }
