"""SimGrid as an independent reference for the flow model.

`completion_times(links, flows, routes)` builds a SimGrid platform and runs one actor pair per flow;
it returns when each flow's last byte arrives (s). SimGrid (Debian's python3-simgrid 3.32) is
installed for the system Python only, so this module runs itself under `/usr/bin/python3` in a
subprocess and talks JSON over stdin/stdout; the importing interpreter needs no SimGrid.

Model (SimGrid CM02, formats.md §10): every flow first waits the sum of its route's latencies, then
shares bandwidth max-min fairly with the other flows on each link it crosses, re-solved whenever a
flow starts or ends. `network/TCP-gamma:0` removes the TCP window bound and `network/crosstraffic:0`
the reverse ACK traffic, so a lone flow takes exactly Σ latency + bytes / min bandwidth.

CM02 is RTT-unfair: flows on a shared link get rates in inverse proportion to their route latencies
(measured with SimGrid 3.32: flows with 1 ms and 3 ms routes on one bottleneck get 3/4 and 1/4 of
it). The flow model under test shares equally, so by default (`equal_share=True`) the SimGrid links
get latency 0 and each sender first waits its route's latency: the same result as SimGrid's own
latency phase, which loads no link, but with equal weights. `equal_share=False` puts the latencies
on the SimGrid links instead.

Platform: one `Full`-routing zone. A full-duplex link is one SPLITDUPLEX SimGrid link (each
direction its own capacity), a directed link is a SHARED link used in one direction only. Each flow
gets two hosts of its own (`f<i>s`, `f<i>d`) and one route between them: the list of its topology
links in path order, each with the direction it is crossed in. Giving every flow its own endpoints
is what lets flows between the same two nodes take different routes (SimGrid keeps one route per
host pair); the hosts add no link of their own, so they cost neither latency nor bandwidth.
"""

from __future__ import annotations

import json
import subprocess
import sys

SYSTEM_PYTHON = "/usr/bin/python3"

Link = tuple[int, int, float, float, bool]  # (u, v, bytes/s, latency s, full-duplex?)
Flow = tuple[int, int, float, float]  # (src, dst, bytes, start s)


def simgrid_available() -> bool:
    try:
        proc = subprocess.run(
            [SYSTEM_PYTHON, "-c", "import simgrid"], capture_output=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0


def completion_times(
    links: list[Link],
    flows: list[Flow],
    routes: list[list[int]],
    equal_share: bool = True,
    timeout: float = 300,
) -> list[float]:
    """Completion time (s, absolute) of each flow, simulated by SimGrid."""
    doc = {
        "links": [list(lk) for lk in links],
        "flows": [list(f) for f in flows],
        "routes": routes,
        "equal_share": equal_share,
    }
    return run_under_system_python(__file__, doc, timeout)


def run_under_system_python(script: str, doc: dict, timeout: float) -> list[float]:
    """`script` run by the system Python (which has SimGrid) on `doc` as JSON on stdin: the list
    its last line of output holds."""
    proc = subprocess.run(
        [SYSTEM_PYTHON, script],
        input=json.dumps(doc),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"SimGrid run failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def route_latencies(links: list[Link], routes: list[list[int]]) -> list[float]:
    """Σ latency (s) of each route, using the first link between each pair of nodes."""
    latency: dict[tuple[int, int], float] = {}
    for u, v, _, lat, duplex in links:
        latency.setdefault((u, v), lat)
        if duplex:
            latency.setdefault((v, u), lat)
    return [sum(latency[(a, b)] for a, b in zip(r, r[1:], strict=False)) for r in routes]


def platform_xml(links: list[Link], flows: list[Flow], routes: list[list[int]]) -> str:
    """The SimGrid platform: one link per topology link, two hosts and one route per flow."""
    by_pair: dict[tuple[int, int], tuple[str, str | None]] = {}
    out = [
        "<?xml version='1.0'?>",
        '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">',
        '<platform version="4.1">',
        '<zone id="world" routing="Full">',
    ]
    for i in range(len(flows)):
        out.append(f'  <host id="f{i}s" speed="1Gf"/>')
        out.append(f'  <host id="f{i}d" speed="1Gf"/>')
    for j, (u, v, bandwidth, latency, duplex) in enumerate(links):
        policy = "SPLITDUPLEX" if duplex else "SHARED"
        out.append(
            f'  <link id="l{j}" bandwidth="{float(bandwidth)!r}Bps" latency="{float(latency)!r}s"'
            f' sharing_policy="{policy}"/>'
        )
        # The first link between two nodes carries the route (parallel links are not used).
        by_pair.setdefault((u, v), (f"l{j}", "UP" if duplex else None))
        if duplex:
            by_pair.setdefault((v, u), (f"l{j}", "DOWN"))
    for i, ((src, dst, _, _), path) in enumerate(zip(flows, routes, strict=True)):
        if len(path) < 2 or path[0] != src or path[-1] != dst:
            raise ValueError(f"flow {i}: route {path} does not lead from {src} to {dst}")
        hops = []
        for a, b in zip(path, path[1:], strict=False):
            if (a, b) not in by_pair:
                raise ValueError(f"flow {i}: no link from {a} to {b}")
            name, direction = by_pair[(a, b)]
            hops.append(f'<link_ctn id="{name}"' + (f' direction="{direction}"/>' if direction else "/>"))
        out.append(f'  <route src="f{i}s" dst="f{i}d" symmetrical="NO">{"".join(hops)}</route>')
    out += ["</zone>", "</platform>"]
    return "\n".join(out) + "\n"


def _run_simgrid(doc: dict) -> list[float]:  # runs under /usr/bin/python3
    import os
    import tempfile

    import simgrid

    links = [tuple(x) for x in doc["links"]]
    flows = [tuple(x) for x in doc["flows"]]
    xml = platform_xml(links, flows, doc["routes"])  # checks every route
    wait = [0.0] * len(flows)
    if doc["equal_share"]:
        wait = route_latencies(links, doc["routes"])
        xml = platform_xml([(u, v, bw, 0.0, duplex) for u, v, bw, _, duplex in links], flows, doc["routes"])
    config = [
        "--cfg=network/model:CM02",
        "--cfg=network/TCP-gamma:0",
        "--cfg=network/crosstraffic:0",
        "--cfg=maxmin/precision:1e-9",  # default 1e-5 (rates); the timing precision stays 1e-9 s
        "--log=root.thresh:critical",
    ]
    engine = simgrid.Engine(["simgrid_reference", *config])
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "platform.xml")
        with open(path, "w") as f:
            f.write(xml)
        engine.load_platform(path)
    done = [float("nan")] * len(flows)

    def send(i: int, size: int, start: float) -> None:
        if start + wait[i] > 0:
            simgrid.this_actor.sleep_for(start + wait[i])
        simgrid.Mailbox.by_name(f"m{i}").put(i, size)  # whole bytes

    def receive(i: int) -> None:
        simgrid.Mailbox.by_name(f"m{i}").get()
        done[i] = simgrid.Engine.clock

    for i, (_, _, size, start) in enumerate(flows):
        simgrid.Actor.create(f"send{i}", simgrid.Host.by_name(f"f{i}s"), send, i, int(size), float(start))
        simgrid.Actor.create(f"recv{i}", simgrid.Host.by_name(f"f{i}d"), receive, i)
    engine.run()
    return done


if __name__ == "__main__":
    result = _run_simgrid(json.load(sys.stdin))
    sys.stdout.write("\n" + json.dumps(result) + "\n")
