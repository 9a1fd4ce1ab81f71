"""bwtest's result: one JSON document (measured or simulated alike) and its printed table."""

from __future__ import annotations

import json
import os
from typing import Any

from clustersim.files import atomic_outputs, write_text
from clustersim.measure.bwtest.pattern import WORD_BYTES, Pattern

FORMAT = "clustersim-bwtest/1"


def document(
    pattern: Pattern,
    *,
    mode: str,
    buffers: str,
    iterations: int,
    group_s: list[float],
    iteration_s: float,
    min_iteration_s: float,
    hosts: list[str] | None = None,
    topology: str | None = None,
    bounds_GBps: list[float] | None = None,
) -> dict[str, Any]:
    """The JSON document: the pattern, each group's mean time and bandwidth, the step's, and the
    platform's bound where one was described. Times in seconds, bandwidths in GB/s (10^9 B/s)."""
    groups = []
    for k, t in enumerate(group_s):
        row = {
            "group": k,
            "ranks": pattern.members(k),
            "time_s": t,
            "bandwidth_GBps": pattern.bandwidth_GBps(t),
        }
        if bounds_GBps is not None:
            row["bound_GBps"] = bounds_GBps[k]
        groups.append(row)
    return {
        "format": FORMAT,
        "mode": mode,
        "buffers": buffers,
        "ranks": pattern.ranks,
        "group_size": pattern.group_size,
        "groups": pattern.groups,
        "count": pattern.count,
        "word_bytes": WORD_BYTES,
        "message_bytes": pattern.message_bytes,
        "group_bytes": pattern.group_bytes,
        "warmup": 1,
        "iterations": iterations,
        "hosts": hosts,
        "topology": topology,
        "per_group": groups,
        "aggregate": {
            "time_s": iteration_s,
            "latency_us": iteration_s * 1e6,
            "min_latency_us": min_iteration_s * 1e6,
            # Every group's bytes over the step's time: G·2·g·(G−1)·S / t.
            "bandwidth_GBps": pattern.groups * pattern.bandwidth_GBps(iteration_s),
            "group_bandwidth_GBps": pattern.bandwidth_GBps(iteration_s),
            "bound_GBps": None if bounds_GBps is None else sum(bounds_GBps),
        },
    }


def write(doc: dict[str, Any], path: str | os.PathLike[str]) -> None:
    """Write the document; the file appears whole or not at all."""
    with atomic_outputs() as stage:
        write_text(stage(path), json.dumps(doc, indent=2, allow_nan=False) + "\n")


def print_table(doc: dict[str, Any]) -> None:
    how = "on the flow model" if doc["mode"] == "simulate" else f"over MPI, {doc['buffers']} buffers"
    print(
        f"# bwtest {how}: {doc['ranks']} ranks in {doc['groups']} groups of {doc['group_size']},"
        f" {doc['count']} words ({doc['message_bytes']} B) per pair, {doc['iterations']} iterations"
    )
    bounded = doc["aggregate"]["bound_GBps"] is not None
    bound_head = f"{'bound':>12}" if bounded else ""
    print(f"#{'group':>6}  {'ranks':<12}{'time (us)':>12}{'GB/s':>12}{bound_head}")
    for g in doc["per_group"]:
        ranks = f"{g['ranks'][0]}-{g['ranks'][-1]}" if len(g["ranks"]) > 1 else str(g["ranks"][0])
        bound = f"{g['bound_GBps']:>12.2f}" if bounded else ""
        print(f" {g['group']:>6}  {ranks:<12}{g['time_s'] * 1e6:>12.2f}{g['bandwidth_GBps']:>12.3f}{bound}")
    a = doc["aggregate"]
    bound = f"{a['bound_GBps']:>12.2f}" if bounded else ""
    print(f" {'all':>6}  {'':<12}{a['time_s'] * 1e6:>12.2f}{a['bandwidth_GBps']:>12.3f}{bound}")
    print(f"# latency (mean iteration): {a['latency_us']:.2f} us, fastest {a['min_latency_us']:.2f} us")
    if not bounded:
        print("# (give --topology FABRIC to print the platform's bound)")
