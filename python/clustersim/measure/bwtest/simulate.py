"""The tester's pattern on the flow model: one iteration is the p·(G−1) transfers of S bytes,
all started together on an idle network (`clustersim._engine.flow_completion_times`); every
iteration of the bulk-synchronous loop repeats it exactly, so one is simulated.

A group's time is the last completion among the transfers it sends or receives; the step's is
the last of all. On a crossbar of p GPUs with links of B bytes/s and latency λ each way, every
link carries G−1 transfers at B/(G−1) each, so t = 2λ + (G−1)·S/B and a group's bandwidth is
2·g·(G−1)·S / t → 2·g·B for large S.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from clustersim import _engine
from clustersim.errors import InputError
from clustersim.fabric import load_topology
from clustersim.measure.bwtest.pattern import Pattern

if TYPE_CHECKING:
    from clustersim.platform import Platform
    from clustersim.topology import Topology

ROUTINGS = ("spray", "ecmp")


def platform_of(spec: str | os.PathLike[str] | Topology | Platform) -> Platform:
    """The engine's Platform of a fabric spec (file, template or object), as `-n` takes them."""
    return load_topology(spec)


def rank_devices(platform: Platform, ranks: int, spec: object) -> list[int]:
    """Node ids of the devices of ranks 0 … ranks−1."""
    devices = list(platform.placement[0])
    if ranks > len(devices):
        raise InputError(f"--topology {spec}: {len(devices)} ranks, fewer than the {ranks} of the test")
    return devices[:ranks]


def simulate(
    pattern: Pattern, platform: Platform, spec: object, *, routing: str = "spray", seed: int = 0
) -> tuple[list[float], float]:
    """(each group's time, the step's time), seconds, of one iteration on `platform`."""
    devices = rank_devices(platform, pattern.ranks, spec)
    pairs = pattern.pairs()
    flows = [(devices[a], devices[b], float(pattern.message_bytes), 0.0) for a, b in pairs]
    ns = _engine.flow_completion_times(platform, flows, seed=seed, routing=routing)
    group = [0.0] * pattern.groups
    for (a, b), t in zip(pairs, ns, strict=True):
        for k in (pattern.group_of(a), pattern.group_of(b)):
            group[k] = max(group[k], t * 1e-9)
    return group, max(ns) * 1e-9
