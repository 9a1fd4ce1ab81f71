"""The SimAI ns-3 reference runs in tests/data/ns3/ are whole and agree with their own inputs.

Each scenario folder holds the inputs we wrote (topology from SimAI's generator, SimAI.conf,
workload) and what SimAI 1.6's ns-3 wrote (ncclFlowModel_EndToEnd.csv, the FCT and PFC files);
tests/data/ns3/README.md says how they were made. These tests check the files against each other
and against closed forms, so the reference data cannot rot silently:

- the FCT file parses (``sip dip sport dport size start fct standalone_fct``, IPs in hex);
- the flows are exactly those SimAI's NCCL model must make for the collective on that topology
  (derivation in README.md, "Flows per collective"): count, size, per-(src, dst) multiplicity,
  and bytes per rank equal to the ring / all-to-all closed form;
- every flow's time is at least the physical floor of its path (round-trip propagation plus the
  serialisation of its bytes on the first link) and its standalone_fct is the one SimAI's formula
  gives from the topology;
- flows start no earlier than AS_SEND_LAT; the EndToEnd.csv time is rank 0's finish: between
  the end of rank 0's last flow less its ACK's return and that flow's end;
- the PFC file parses, its node types match the topology, and every paused port is paused and
  resumed in turn, in time order, within the run.
"""

from __future__ import annotations

import csv
import functools
import gzip
import heapq
import math
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

NS3 = Path(__file__).parent / "data" / "ns3"
SCENARIOS = sorted(p.name for p in NS3.iterdir() if (p / "run.txt").exists())
INPUTS = {"SimAI.conf", "workload.txt", "flow.txt", "trace.txt", "run.txt"}
AS_SEND_LAT_NS = 3000  # tests/data/ns3/run.sh exports AS_SEND_LAT=3 (µs)
MTU = 9000  # PACKET_PAYLOAD_SIZE in every SimAI.conf here


def _read(path: Path) -> str:
    gz = path.with_name(path.name + ".gz")
    if gz.exists():
        return gzip.decompress(gz.read_bytes()).decode()
    return path.read_text()


@dataclass
class Topology:
    gpus: int
    gpus_per_server: int
    nodes: int
    switches: set[int]
    nvswitches: set[int]
    adj: dict[int, list[tuple[int, float, float]]]  # node -> (peer, bit/s, delay ns)


def _rate(s: str) -> float:
    m = re.fullmatch(r"([0-9.]+)(G|M|K)?bps", s)
    assert m, s
    return float(m[1]) * {"G": 1e9, "M": 1e6, "K": 1e3, None: 1.0}[m[2]]


def _delay_ns(s: str) -> float:
    m = re.fullmatch(r"([0-9.]+)(ms|us|ns|s)", s)
    assert m, s
    return float(m[1]) * {"s": 1e9, "ms": 1e6, "us": 1e3, "ns": 1.0}[m[2]]


@functools.cache
def topology(scn: str) -> Topology:
    folder = NS3 / scn
    files = [
        p
        for p in folder.iterdir()
        if p.name not in INPUTS and not p.name.startswith(("fct", "pfc", "ncclFlowModel_", "run-failed"))
    ]
    assert len(files) == 1, files
    tokens = files[0].read_text().split()
    nodes, gps, nvs, sws, links = (int(t) for t in tokens[:5])
    switch_ids = {int(t) for t in tokens[6 : 6 + nvs + sws]}
    nvswitch_ids = {int(t) for t in tokens[6 : 6 + nvs]}
    adj: dict[int, list[tuple[int, float, float]]] = {i: [] for i in range(nodes)}
    rest = tokens[6 + nvs + sws :]
    assert len(rest) == 5 * links
    for i in range(links):
        a, b, rate, delay, _err = rest[5 * i : 5 * i + 5]
        adj[int(a)].append((int(b), _rate(rate), _delay_ns(delay)))
        adj[int(b)].append((int(a), _rate(rate), _delay_ns(delay)))
    return Topology(nodes - nvs - sws, gps, nodes, switch_ids, nvswitch_ids, adj)


def _route_metrics(t: Topology, src: int) -> dict[int, set[tuple[float, float, float]]]:
    """SimAI's route metrics from src (its CalculateRoute): a hop-count BFS through switches only
    that keeps, per node, (Σ delay ns, Σ MTU·8/rate ns, min rate) of the first path it finds.
    Which of several shortest paths is first depends on pointer order in SimAI, so this returns
    the metrics of every shortest-hop path."""
    level = {src: 0}
    metrics: dict[int, set[tuple[float, float, float]]] = {src: {(0.0, 0.0, math.inf)}}
    frontier = [src]
    while frontier:
        nxt: list[int] = []
        for now in frontier:
            for peer, rate, d in t.adj[now]:
                if level.get(peer, level[now] + 1) != level[now] + 1:
                    continue
                if peer not in level:
                    level[peer] = level[now] + 1
                    metrics[peer] = set()
                    if peer in t.switches:
                        nxt.append(peer)
                hop = int(MTU * 1e9 * 8 / rate)
                metrics[peer] |= {(dl + d, tx + hop, min(bw, rate)) for dl, tx, bw in metrics[now]}
        frontier = nxt
    return metrics


def _min_delay(t: Topology, src: int) -> dict[int, float]:
    """Least one-way propagation from src to every host over any path through switches."""
    best = {src: 0.0}
    heap = [(0.0, src)]
    while heap:
        d, now = heapq.heappop(heap)
        if d > best[now] or (now != src and now not in t.switches):
            continue
        for peer, _rate_bps, dl in t.adj[now]:
            if d + dl < best.get(peer, math.inf):
                best[peer] = d + dl
                heapq.heappush(heap, (d + dl, peer))
    return best


@dataclass
class Flow:
    src: int
    dst: int
    sport: int
    dport: int
    size: int
    start: int
    fct: int
    standalone: int

    @property
    def end(self) -> int:
        return self.start + self.fct


def _node(ip_hex: str) -> int:
    return (int(ip_hex, 16) >> 8) & 0xFFFF


@functools.cache
def flows(scn: str) -> list[Flow]:
    out = []
    for n, line in enumerate(_read(NS3 / scn / "fct.txt").splitlines(), 1):
        f = line.split()
        assert len(f) == 8, f"fct.txt:{n}: {line!r}"
        assert all(re.fullmatch(r"[0-9a-f]{8}", x) for x in f[:2]), f"fct.txt:{n}"
        out.append(Flow(_node(f[0]), _node(f[1]), *(int(x) for x in f[2:])))
    return out


def workload(scn: str) -> tuple[int, str, int]:
    lines = (NS3 / scn / "workload.txt").read_text().splitlines()
    head = lines[0].split()
    n = int(head[head.index("all_gpus:") + 1])
    assert head[head.index("model_parallel_NPU_group:") + 1] == "1"  # DP group = all GPUs
    assert int(lines[1]) == 1
    row = lines[2].split()
    assert row[3] == row[6] == "NONE"
    return n, row[9], int(row[10])


def end_to_end_us(scn: str) -> float:
    rows = list(csv.reader(_read(NS3 / scn / "ncclFlowModel_EndToEnd.csv").splitlines()))
    last = [c.strip() for c in rows[-1]]
    assert last[0] == "total exposed comm" and last[4] == "total time", last
    return float(last[5])


@pytest.mark.parametrize("scn", SCENARIOS)
def test_flows_are_the_collectives_closed_form(scn):
    t = topology(scn)
    n, coll, size = workload(scn)
    assert n == t.gpus
    fl = flows(scn)
    assert all(0 <= f.src < n and 0 <= f.dst < n and f.src != f.dst for f in fl)
    sent: dict[int, int] = {}
    pairs: dict[tuple[int, int], int] = {}
    for f in fl:
        sent[f.src] = sent.get(f.src, 0) + f.size
        pairs[f.src, f.dst] = pairs.get((f.src, f.dst), 0) + 1
    gps = t.gpus_per_server
    if coll in ("ALLREDUCE", "ALLGATHER", "REDUCESCATTER"):
        # One ring per local rank (gps channels); all-reduce runs 2(n-1) steps, all-gather and
        # reduce-scatter n-1, each step one flow of S/n/gps per rank per ring.
        per = size // n // gps
        steps = 2 * (n - 1) if coll == "ALLREDUCE" else n - 1
        assert {f.size for f in fl} == {per}
        assert len(fl) == gps * n * steps
        want_pairs = {}
        for r in range(n):
            server, local = divmod(r, gps)
            intra = server * gps + (local + 1) % gps
            inter = ((server + 1) % (n // gps)) * gps + (local + 1) % gps
            want_pairs[r, intra] = (gps - 1) * steps
            want_pairs[r, inter] = want_pairs.get((r, inter), 0) + steps
        assert pairs == want_pairs
        if size % (n * gps) == 0:
            assert all(sent[r] * n == steps * size for r in range(n))
    elif coll == "ALLTOALL":
        per = size // n
        assert {f.size for f in fl} == {per}
        assert pairs == {(a, b): 1 for a in range(n) for b in range(n) if a != b}
        if size % n == 0:
            assert all(sent[r] * n == (n - 1) * size for r in range(n))
    else:
        pytest.fail(f"no closed form for {coll}")


@pytest.mark.parametrize("scn", SCENARIOS)
def test_flow_times_against_the_topology(scn):
    t = topology(scn)
    fl = flows(scn)
    routes = {s: _route_metrics(t, s) for s in {f.src for f in fl}}
    floors = {s: _min_delay(t, s) for s in routes}
    for f in fl:
        # A flow leaves on one link: NVLink within a server, one NIC link between servers.
        same_server = f.src // t.gpus_per_server == f.dst // t.gpus_per_server
        first_rate = max(r for peer, r, _ in t.adj[f.src] if (peer in t.nvswitches) == same_server)
        floor = 2 * floors[f.src][f.dst] + f.size * 8e9 / first_rate
        assert f.standalone > 0 and f.fct >= floor, (f, floor)
        # standalone_fct = base RTT (2·Σdelay + Σ MTU serialisation) + bytes with headers at the
        # path's slowest link; the per-packet header is tens of bytes (between 0 and 100 here).
        fits = []
        for delay, tx, bw in routes[f.src][f.dst]:
            lo = 2 * delay + tx + f.size * 8e9 / bw
            hi = 2 * delay + tx + (f.size + math.ceil(f.size / MTU) * 100) * 8e9 / bw
            fits.append(lo - 2 <= f.standalone <= hi + 1)
        assert any(fits), (f, routes[f.src][f.dst])
        assert f.start >= AS_SEND_LAT_NS


@pytest.mark.parametrize("scn", SCENARIOS)
def test_end_to_end_time_is_rank_0s_last_arrival(scn):
    fl = flows(scn)
    total_ns = end_to_end_us(scn) * 1000
    # Rank 0 writes EndToEnd.csv (Workload.cc: generator->id == 0) when its own part of the
    # collective is done: the last data to or from rank 0 has arrived. The FCT file times a flow
    # to the ACK of its last byte back at the sender, at most a standalone RTT after the arrival.
    last0 = max((f for f in fl if 0 in (f.src, f.dst)), key=lambda f: f.end)
    assert last0.end - last0.standalone <= total_ns <= last0.end + 1
    # Other ranks may finish later than rank 0 (their last flows can even start after it).
    assert min(f.start for f in fl) < total_ns <= max(f.end for f in fl) + 1


@pytest.mark.parametrize("scn", SCENARIOS)
def test_pfc_file_pauses_and_resumes_in_turn(scn):
    t = topology(scn)
    last_end = max(f.end for f in flows(scn))
    ports: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for n, line in enumerate(_read(NS3 / scn / "pfc.txt").splitlines(), 1):
        f = line.split()
        assert len(f) == 5 and all(x.isdigit() for x in f), f"pfc.txt:{n}: {line!r}"
        time, node, kind, port, pause = (int(x) for x in f)
        assert node < t.nodes and kind == (0 if node < t.gpus else 2 if node in t.nvswitches else 1)
        assert pause in (0, 1) and 0 < time <= last_end
        ports.setdefault((node, port), []).append((time, pause))
    # On every port that was paused: pause, resume, pause, ... in time order, ending resumed.
    for events in ports.values():
        assert [e[0] for e in events] == sorted(e[0] for e in events)
        assert [e[1] for e in events] == [1, 0] * (len(events) // 2)
