"""SimGrid running an exported platform file (`Platform.to_simgrid`) as it is: flows between its
named hosts along the routes the file gives, timed by SimGrid. Like `simgrid_reference.py` (whose
model settings it shares), it runs itself under the system Python, which has SimGrid.

`completion_times(xml, flows, equal_share)`: flows are (src host, dst host, bytes, start s).
CM02 shares a link in inverse proportion to each flow's route latency (RTT-unfair), while the
flow model shares equally; with `equal_share` (the default) the file's link latencies are set to
0 and each sender first waits its route's latency, read from the file: the time SimGrid's own
latency phase would take, without the unequal weights. `equal_share=False` runs the file
untouched (exact for flows that never share a link).
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET

from simgrid_reference import run_under_system_python

Flow = tuple[str, str, float, float]


def completion_times(
    xml: str, flows: list[Flow], equal_share: bool = True, timeout: float = 600
) -> list[float]:
    """Completion time (s, absolute) of each flow, simulated by SimGrid on the platform `xml`."""
    doc = {"xml": xml, "flows": [list(f) for f in flows], "equal_share": equal_share}
    return run_under_system_python(__file__, doc, timeout)


def seconds(text: str) -> float:
    assert text.endswith("s"), text
    return float(text[:-1])


def routes_of(root: ET.Element) -> dict[tuple[str, str], list[str]]:
    zone = root.find("zone")
    assert zone is not None
    return {
        (r.get("src", ""), r.get("dst", "")): [c.get("id", "") for c in r.findall("link_ctn")]
        for r in zone.findall("route")
    }


def _run(doc: dict) -> list[float]:  # runs under /usr/bin/python3
    import os
    import tempfile

    import simgrid

    root = ET.fromstring(doc["xml"])
    zone = root.find("zone")
    assert zone is not None
    latency = {link.get("id"): seconds(link.get("latency", "0s")) for link in zone.findall("link")}
    routes = routes_of(root)
    flows = [tuple(f) for f in doc["flows"]]
    wait = [0.0] * len(flows)
    if doc["equal_share"]:
        wait = [sum(latency[k] for k in routes[(s, d)]) for s, d, _, _ in flows]
        for link in zone.findall("link"):
            link.set("latency", "0s")
    config = [
        "--cfg=network/model:CM02",
        "--cfg=network/TCP-gamma:0",
        "--cfg=network/crosstraffic:0",
        "--cfg=maxmin/precision:1e-9",
        "--log=root.thresh:critical",
    ]
    engine = simgrid.Engine(["simgrid_platform", *config])
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "platform.xml")
        ET.ElementTree(root).write(path, xml_declaration=True, encoding="utf-8")
        with open(path, encoding="utf-8") as f:
            body = f.read()
        # ElementTree drops the DOCTYPE; SimGrid wants it.
        body = body.replace("?>", '?>\n<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">', 1)
        with open(path, "w", encoding="utf-8") as f:
            f.write(body)
        engine.load_platform(path)
    done = [float("nan")] * len(flows)

    def send(i: int, size: int, start: float) -> None:
        if start + wait[i] > 0:
            simgrid.this_actor.sleep_for(start + wait[i])
        simgrid.Mailbox.by_name(f"m{i}").put(i, size)

    def receive(i: int) -> None:
        simgrid.Mailbox.by_name(f"m{i}").get()
        done[i] = simgrid.Engine.clock

    for i, (src, dst, size, start) in enumerate(flows):
        simgrid.Actor.create(f"send{i}", simgrid.Host.by_name(src), send, i, int(size), float(start))
        simgrid.Actor.create(f"recv{i}", simgrid.Host.by_name(dst), receive, i)
    engine.run()
    return done


if __name__ == "__main__":
    result = _run(json.load(sys.stdin))
    sys.stdout.write("\n" + json.dumps(result) + "\n")
