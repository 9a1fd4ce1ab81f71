"""The SimGrid export (`clustersim platform --simgrid`) against the flow model: SimGrid, loading the
exported file as it is, moves the same flows in the same time as our flow model, within 0.5 %, on
the HCSim paper's Fig. 6b system at 64 XPUs and on random typed platforms (seeded).

Each flow runs on our side along the path our router gives its pair (the path the export writes),
and the test first checks that the file's route for the pair crosses links of the same figures in
the same order. SimGrid runs with the settings of tests/simgrid_reference.py (CM02, TCP-gamma 0).
"""

from __future__ import annotations

import random
import xml.etree.ElementTree as ET

import networkx as nx
import pytest
from clustersim import _engine
from clustersim.platform import from_networkx, hcsim
from simgrid_platform import completion_times, routes_of, seconds
from simgrid_reference import simgrid_available

pytestmark = pytest.mark.skipif(not simgrid_available(), reason="/usr/bin/python3 cannot import simgrid")

REL = 0.005


def check_routes(platform, xml: str, pairs) -> list[list[int]]:
    """Our path of each (src, dst) node pair, checked against the file's route for it."""
    root = ET.fromstring(xml)
    zone = root.find("zone")
    figures = {
        k.get("id"): (float(k.get("bandwidth")[:-3]), seconds(k.get("latency"))) for k in zone.findall("link")
    }
    routes = routes_of(root)
    src, dst, gbs, ns = platform.links
    link = {}
    for a, b, bw, lat in zip(src, dst, gbs, ns, strict=True):
        link.setdefault((a, b), (bw * 1e9, lat * 1e-9))
    names = platform.names
    paths = []
    for s, d in pairs:
        path = platform.route(s, d)
        ours = [link[(a, b)] for a, b in zip(path, path[1:], strict=False)]
        theirs = [figures[k] for k in routes[(names[s], names[d])]]
        flat = [x for pair in ours for x in pair]
        assert [x for pair in theirs for x in pair] == pytest.approx(flat, rel=1e-12), (names[s], names[d])
        paths.append(path)
    return paths


def compare(platform, flows, equal_share=True):
    """(ours, SimGrid's) durations in ns of flows (src node, dst node, bytes, start ns)."""
    xml = platform.to_simgrid("full", "fp32")
    paths = check_routes(platform, xml, [(s, d) for s, d, _, _ in flows])
    ours = _engine.flow_completion_times(platform, flows, paths, 0)
    names = platform.names
    theirs = completion_times(xml, [(names[s], names[d], b, t * 1e-9) for s, d, b, t in flows], equal_share)
    return (
        [t - f[3] for t, f in zip(ours, flows, strict=True)],
        [t * 1e9 - f[3] for t, f in zip(theirs, flows, strict=True)],
    )


def hcsim_flows(platform, rng: random.Random, count: int, apart_ns: float = 0.0):
    """XPU to XPU, XPU to its CXL expander and to host DRAM, and back, at random sizes."""
    names = platform.names
    index = {n: i for i, n in enumerate(names)}
    xpus = list(platform.placement[0])
    flows = []
    for i in range(count):
        x = rng.choice(xpus)
        server, local = names[x].split(".")
        kind = rng.randrange(4)
        if kind == 0:
            other = rng.choice([y for y in xpus if y != x])
        elif kind == 1:
            other = index[f"{server}.cxlmem{local[1:]}"]
        else:
            other = index[f"{server}.dram{rng.randrange(2)}"]
        a, b = (x, other) if kind != 3 else (other, x)
        start = i * apart_ns if apart_ns else rng.uniform(0, 50_000)
        flows.append((a, b, float(rng.randint(1_000, 256 << 20 if not apart_ns else 1 << 20)), start))
    return flows


def test_fig6b_at_64_xpus_moves_flows_as_our_flow_model_does():
    platform = hcsim("hcsim-cxl", [("h100", 64)], servers_per_tor=2)
    ours, theirs = compare(platform, hcsim_flows(platform, random.Random(1), 80))
    assert theirs == pytest.approx(ours, rel=REL)


def test_fig6b_lone_flows_keep_the_files_latencies():
    # Flows 10 ms apart never share a link: SimGrid runs the file untouched, latencies included.
    platform = hcsim("hcsim-cxl", [("h100", 64)])
    ours, theirs = compare(platform, hcsim_flows(platform, random.Random(2), 20, apart_ns=1e7), False)
    assert theirs == pytest.approx(ours, rel=1e-6)


def random_platform(seed: int):
    """A random tree of switches with XPUs (catalog or user-defined), CPUs and memory devices as
    leaves, a few extra links between switches; random rates (1–1000 GB/s) and latencies (0–5 µs)."""
    rng = random.Random(seed)
    graph = nx.Graph(name=f"random {seed}")
    switches = rng.randint(2, 8)
    kinds = ("switch", "cxl_switch", "pcie_switch", "nic", "xpu_switch")
    for s in range(switches):
        graph.add_node(f"sw{s}", kind=rng.choice(kinds[:4]))
    for s in range(1, switches):
        graph.add_edge(f"sw{rng.randrange(s)}", f"sw{s}")
    for _ in range(rng.randint(0, switches)):
        a, b = rng.sample(range(switches), 2)
        graph.add_edge(f"sw{a}", f"sw{b}")
    leaves = []
    for i in range(rng.randint(3, 12)):
        name = f"x{i}"
        if rng.random() < 0.5:
            graph.add_node(name, kind="xpu", type=rng.choice(["h100", "a100", "v100"]))
        else:
            graph.add_node(
                name, kind="xpu", fp16_flops=rng.uniform(1e13, 1e15), memory=rng.uniform(1e9, 1e11)
            )
        leaves.append(name)
    for i in range(rng.randint(0, 4)):
        graph.add_node(f"m{i}", kind="memory", memory_kind=rng.choice(["dram", "cxl"]), memory="inf")
        leaves.append(f"m{i}")
    for leaf in leaves:
        graph.add_edge(leaf, f"sw{rng.randrange(switches)}")
    for _, _, data in graph.edges(data=True):
        data.update(bandwidth=rng.randint(1, 1000) * 1e9, latency=rng.randint(0, 5000) * 1e-9)
    platform = from_networkx(graph)
    names = platform.names
    hosts = [names.index(n) for n in leaves]
    flows = []
    for _ in range(rng.randint(5, 30)):
        a, b = rng.sample(hosts, 2)
        flows.append((a, b, float(rng.randint(1_000, 50_000_000)), float(rng.randint(0, 2_000_000))))
    return platform, flows


@pytest.mark.parametrize("seed", range(8))
def test_random_platforms_move_flows_as_our_flow_model_does(seed):
    platform, flows = random_platform(seed)
    ours, theirs = compare(platform, flows)
    assert theirs == pytest.approx(ours, rel=REL, abs=2.0)


@pytest.mark.parametrize("routing", ["floyd", "dijkstra"])
def test_compact_routing_loads_and_finds_the_unique_paths(routing):
    # SimGrid finds routes itself; where the shortest path is unique (an XPU to its CXL
    # expander, to host DRAM, to an XPU in another rack) it is ours, and a lone flow takes as long.
    platform = hcsim("hcsim-cxl", [("h100", 32)], servers_per_tor=2)
    index = {n: i for i, n in enumerate(platform.names)}
    pairs = [("s0.x1", "s0.cxlmem1"), ("s1.x6", "s1.dram1"), ("s0.x0", "s3.x5"), ("s2.cxlmem3", "s2.x3")]
    flows = [(index[a], index[b], 1e6 * (i + 1), i * 1e7) for i, (a, b) in enumerate(pairs)]
    ours = _engine.flow_completion_times(platform, flows, None, 0)
    xml = platform.to_simgrid(routing, "fp32")
    theirs = completion_times(
        xml, [(a, b, f[2], f[3] * 1e-9) for (a, b), f in zip(pairs, flows, strict=True)], False
    )
    assert [t * 1e9 for t in theirs] == pytest.approx(ours, rel=1e-6)
