"""The theoretical bound of the pattern on a platform: per group, the most bytes per second that
can leave the group's devices for the other ranks' plus the most that can enter them — the two
maximum flows (minimum cuts) of the platform's directed links at their bandwidths.

Routes follow the engine's reachability rule (`clustersim.topology.metrics.max_flow`): they cross
switches, NVSwitches, NICs, PCIe/CXL switches and nodes declared `forward=yes`, never another
accelerator (docs/platform-format.md, "Routing"). For a DGX-A100, where each GPU reaches the
NVSwitches over 12 NVLinks of 25 GB/s each way, this is g × 600 GB/s, the tester's README's bound.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from clustersim.measure.bwtest.pattern import Pattern

if TYPE_CHECKING:
    from clustersim.platform import Platform


def group_bounds_GBps(pattern: Pattern, platform: Platform, devices: list[int]) -> list[float]:
    """Each group's bound on its aggregate bidirectional bandwidth, GB/s."""
    from clustersim.topology.metrics import max_flow

    ends = set(devices)
    out = []
    for k in range(pattern.groups):
        inside = {devices[r] for r in pattern.members(k)}
        outside = ends - inside
        out.append(max_flow(platform, inside, outside) + max_flow(platform, outside, inside))
    return out
