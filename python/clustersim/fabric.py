"""The flow backend's input: a fabric (SimAI topology file) and how collectives run on it."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from clustersim.analytical import read_text
from clustersim.collective import tuning_env


def fabric_document(
    topology: str | os.PathLike[str],
    *,
    algorithm: str = "auto",
    channels: int = 0,
    seed: int = 0,
    routes: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    qps: int = 0,
    routing: str = "ecmp",
) -> dict[str, Any]:
    """The engine's "fabric": the topology file's text, the algorithm ("auto": NCCL's tuner),
    channels (0: one per group rank of a server, at most one per NIC), the ECMP seed, a routes
    file's text (one route per line: the nodes of the path, source first; it overrides ECMP between
    its end nodes), NCCL_ALGO (where `algorithm` is "auto"), NCCL_PROTO and SimAI's AS_* switches
    from `env` (default: the process environment); `qps` queue pairs per connection
    (NCCL_IB_QPS_PER_CONNECTION, 0 = 1), each hashed on its own, and `routing` "ecmp" (per-flow
    hashing) or "spray" (per-packet spraying / adaptive routing, as Spectrum-X does)."""
    doc = {
        "path": str(topology),
        "topology": read_text(topology, "topology"),
        "algorithm": algorithm,
        "channels": channels,
        "seed": seed,
        "qps": qps,
        "routing": routing,
    }
    if routes is not None:
        doc |= {"routes": read_text(routes, "routes file"), "routes_path": str(routes)}
    switches = tuning_env(os.environ if env is None else env)
    if algorithm != "auto":
        switches.pop("algorithm", None)
    return doc | switches
