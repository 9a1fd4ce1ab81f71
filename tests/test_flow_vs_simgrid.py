"""The flow model against SimGrid on random small fabrics (seeded).

Each case: a random tree of 5–20 nodes plus extra links between its inner nodes (its leaves are
GPUs, every other node a switch), random rates and latencies, 5–30 flows between GPUs with random
sizes and start times, each on a NetworkX shortest path. SimGrid (tests/simgrid_reference.py) gives
the reference completion times; `clustersim._engine.flow_completion_times` must agree within 0.5%.

The SimGrid side is also checked against a small max-min fluid simulation written here
(progressive filling, re-solved at every flow start and end), so a harness error cannot hide.
"""

from __future__ import annotations

import random

import networkx as nx
import pytest
from clustersim import _engine
from clustersim.topology import Link, Topology, parse_simai
from simgrid_reference import completion_times, simgrid_available

pytestmark = pytest.mark.skipif(not simgrid_available(), reason="/usr/bin/python3 cannot import simgrid")

SEEDS = range(12)
REL = 0.005


def random_case(seed):
    """(SimAI topology text, flows (src, dst, bytes, start_ns), routes) for one seed."""
    rng = random.Random(seed)
    n = rng.randint(5, 20)
    edges = {(rng.randrange(i), i) for i in range(1, n)}
    degree = [0] * n
    for a, b in edges:
        degree[a] += 1
        degree[b] += 1
    # GPUs (the leaves) take ids 0..G−1 and switches follow, as in SimAI's files.
    order = sorted(range(n), key=lambda i: degree[i] > 1)
    new = {old: k for k, old in enumerate(order)}
    edges = {tuple(sorted((new[a], new[b]))) for a, b in edges}
    degree = [degree[old] for old in order]
    gpus = [i for i in range(n) if degree[i] == 1]
    inner = [i for i in range(n) if degree[i] > 1]
    for _ in range(rng.randint(0, n // 2) if len(inner) > 2 else 0):
        a, b = sorted(rng.sample(inner, 2))
        edges.add((a, b))
    links = [
        Link(a, b, rng.randint(10, 400) * 125e6, rng.randint(0, 5000) * 1e-9)  # 10–400 Gbps, 0–5 µs
        for a, b in sorted(edges)
    ]
    kinds = ["gpu" if i in gpus else "switch" for i in range(n)]
    text = Topology.from_links(kinds, links, gpus_per_server=1, gpu_type="H100").to_simai()
    graph = parse_simai(text).to_networkx()
    flows, routes = [], []
    for _ in range(rng.randint(5, 30)):
        src, dst = rng.sample(gpus, 2)
        flows.append((src, dst, rng.randint(1_000, 50_000_000), rng.randint(0, 2_000_000)))
        routes.append(nx.shortest_path(graph, src, dst))
    return text, flows, routes


def simgrid_durations_ns(text, flows, routes):
    topo = parse_simai(text)
    links = [(lk.src, lk.dst, lk.bandwidth, lk.latency, True) for lk in topo.links]
    sg_flows = [(s, d, b, start * 1e-9) for s, d, b, start in flows]
    done = completion_times(links, sg_flows, routes)
    return [t * 1e9 - f[3] for t, f in zip(done, flows, strict=True)]


def fluid_max_min_ns(text, flows, routes):
    """Completion − start (ns) of each flow: latency first, then max-min fair rates per link direction."""
    topo = parse_simai(text)
    cap, lat = {}, {}
    for lk in topo.links:
        for a, b in ((lk.src, lk.dst), (lk.dst, lk.src)):
            cap[(a, b)], lat[(a, b)] = lk.bandwidth, lk.latency
    hops = [list(zip(r, r[1:], strict=False)) for r in routes]
    ready = [f[3] * 1e-9 + sum(lat[h] for h in hops[i]) for i, f in enumerate(flows)]
    left = [float(f[2]) for f in flows]
    done = [None] * len(flows)
    now = 0.0
    while any(d is None for d in done):
        active = [i for i in range(len(flows)) if done[i] is None and ready[i] <= now]
        rate = dict.fromkeys(active, 0.0)
        free, users, frozen = dict(cap), {}, set()
        for i in active:
            for h in hops[i]:
                users.setdefault(h, []).append(i)
        while len(frozen) < len(active):
            share = {
                h: free[h] / sum(1 for i in us if i not in frozen)
                for h, us in users.items()
                if any(i not in frozen for i in us)
            }
            h_min = min(share, key=share.get)
            for i in users[h_min]:
                if i not in frozen:
                    rate[i] = share[h_min]
                    frozen.add(i)
                    for h in hops[i]:
                        free[h] -= rate[i]
        waiting = [ready[i] for i in range(len(flows)) if done[i] is None and ready[i] > now]
        step = min([left[i] / rate[i] for i in active] + [w - now for w in waiting])
        for i in active:
            left[i] -= rate[i] * step
            if left[i] <= 1e-6 * flows[i][2]:
                done[i] = now + step
        now += step
    return [d * 1e9 - f[3] for d, f in zip(done, flows, strict=True)]


@pytest.mark.parametrize("seed", SEEDS)
def test_simgrid_agrees_with_a_fluid_max_min_model(seed):
    case = random_case(seed)
    assert simgrid_durations_ns(*case) == pytest.approx(fluid_max_min_ns(*case), rel=1e-6)


@pytest.mark.parametrize("seed", SEEDS)
def test_engine_flow_model_agrees_with_simgrid(seed):
    text, flows, routes = random_case(seed)
    ours = _engine.flow_completion_times(text, flows, routes, seed)
    assert len(ours) == len(flows)
    durations = [t - f[3] for t, f in zip(ours, flows, strict=True)]
    assert durations == pytest.approx(simgrid_durations_ns(text, flows, routes), rel=REL, abs=2.0)
