"""k-ary fat-tree (Al-Fares et al., SIGCOMM 2008) with GPU servers at the edge.

Built from k-port switches in three tiers: k pods, each of k/2 edge and k/2 aggregation switches,
and (k/2)² core switches; each edge switch has k/2 GPU ports, so the fabric holds k³/4 GPUs and has
full bisection bandwidth. GPUs are grouped into servers of `gpu_per_server`, each server with
`nv_switch_per_server` NVSwitches (the scale-up domain), as in SimAI's templates.

Numbering: GPUs 0 … k³/4 − 1 (server s holds GPUs s·gps …); then NVSwitches server by server; then
edge switches pod by pod (pod p's edge e is number p·k/2 + e among them); then aggregation switches
in the same order; then core switches. Wiring, in link order: for each GPU, its NVSwitch links, then
one link to edge switch g // (k/2); then in each pod every edge switch to every aggregation switch;
then aggregation switch a of every pod to core switches a·k/2 … a·k/2 + k/2 − 1. GPU–edge links use
`bandwidth`, switch–switch links `ap_bandwidth`, all network links `latency`.
"""

from __future__ import annotations

from clustersim.errors import InputError
from clustersim.topology.model import Topology
from clustersim.topology.params import TemplateParams
from clustersim.topology.templates import LinkArrays, link_rates


def fat_tree(
    k: int,
    *,
    gpu_per_server: int = 8,
    nv_switch_per_server: int = 1,
    gpu_type: str = "H100",
    nvlink_bw: str = "2880Gbps",
    nv_latency: str = "0.000025ms",
    bandwidth: str = "400Gbps",
    ap_bandwidth: str = "400Gbps",
    latency: str = "0.0005ms",
    error_rate: str = "0",
) -> Topology:
    """A k-ary fat-tree of k³/4 GPUs (module docstring for numbering and wiring)."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 2 or k % 2:
        raise InputError(f"fat-tree: k: the switch port count must be an even number ≥ 2, got {k!r}")
    if isinstance(gpu_per_server, bool) or not isinstance(gpu_per_server, int) or gpu_per_server < 1:
        raise InputError(
            f"fat-tree: gpu_per_server (-gps): must be a whole number ≥ 1, got {gpu_per_server!r}"
        )
    if not isinstance(nv_switch_per_server, int) or nv_switch_per_server < 0:
        raise InputError(
            f"fat-tree: nv_switch_per_server (-nsps): must be a whole number ≥ 0, "
            f"got {nv_switch_per_server!r}"
        )
    half = k // 2
    gpus = k**3 // 4
    if gpus % gpu_per_server:
        raise InputError(
            f"fat-tree: gpu_per_server (-gps): a k={k} fat-tree has {gpus} GPUs, which do not fill whole "
            f"servers of {gpu_per_server}"
        )
    r = link_rates(
        TemplateParams(
            nvlink_bw=nvlink_bw,
            nv_latency=nv_latency,
            bandwidth=bandwidth,
            ap_bandwidth=ap_bandwidth,
            latency=latency,
            error_rate=str(error_rate),
        )
    )
    nsps = nv_switch_per_server
    nv_base = gpus
    edge_base = nv_base + gpus // gpu_per_server * nsps
    agg_base = edge_base + k * half
    core_base = agg_base + k * half
    nodes = core_base + half * half
    links = LinkArrays(r.error_rate)
    for g in range(gpus):
        nv = nv_base + (g // gpu_per_server) * nsps
        for j in range(nsps):
            links.add(g, nv + j, r.nvlink, r.nv_latency)
        links.add(g, edge_base + g // half, r.nic, r.latency)
    for pod in range(k):
        for e in range(half):
            for a in range(half):
                links.add(edge_base + pod * half + e, agg_base + pod * half + a, r.ap, r.latency)
    for pod in range(k):
        for a in range(half):
            for m in range(half):
                links.add(agg_base + pod * half + a, core_base + a * half + m, r.ap, r.latency)
    name = f"FatTree_k{k}_{gpus}g_{gpu_per_server}gps_{bandwidth}_{gpu_type}"
    platform = links.platform(
        f"fat-tree {name}", gpus, edge_base - nv_base, nodes - edge_base, gpu_per_server, gpu_type
    )
    return Topology(platform, name=name)
