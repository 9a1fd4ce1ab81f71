"""`clustersim platform`: HCSim's templates, graph documents (JSON, YAML, GraphML, NetworkX) with
Table 2's attributes, the exports read back, and bad input refused in one line naming the file,
the line, the node or link and the field."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import networkx as nx
import pytest
from clustersim.errors import InputError
from clustersim.platform import from_networkx, hcsim, parse_graph, read_platform


def cli(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "clustersim", "platform", *args], capture_output=True, text=True, cwd=cwd
    )


def summary(*args: str) -> dict:
    out = cli(*args, "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_fig6b_at_64_xpus_has_the_papers_parts_and_table5_links():
    s = summary("hcsim-cxl", "--xpus", "64")
    assert s["xpus_by_type"] == {"H100": 64}
    # 8 servers of 2 CPUs, a PCIe switch per CPU, an XPU switch, 2 NICs; one ToR on the core;
    # a CXL switch per server, one for the rack, one for the system; DRAM per CPU, CXL per XPU.
    assert s["nodes_by_kind"] == {
        "cpu": 16, "cxl_switch": 10, "gpu": 64, "memory": 80, "nic": 16, "nvswitch": 8, "pcie_switch": 16,
        "switch": 2,
    }  # fmt: skip
    classes = {(c["between"], c["bandwidth_GBps"], c["latency_ns"]): c["count"] for c in s["link_classes"]}
    assert classes[("gpu-nvswitch", 900.0, 100.0)] == 64
    assert classes[("cxl_switch-gpu", 128.0, 200.0)] == 64
    assert classes[("cxl_switch-memory", 128.0, 200.0)] == 64
    assert classes[("cpu-cpu", 62.4, 100.0)] == 8
    assert classes[("cpu-pcie_switch", 4 * 128.0, 250.0)] == 16
    assert classes[("nic-switch", 12.5, 5000.0)] == 16
    assert s["memory_bytes"] == {"cxl": "inf", "dram": "inf", "hbm": 64 * 80e9}
    pcie = summary("hcsim-pcie", "--xpus", "64")
    assert "cxl_switch" not in pcie["nodes_by_kind"] and pcie["nodes_by_kind"]["memory"] == 16


def test_a_mix_is_assigned_per_tor_and_links_are_overridable():
    s = summary("hcsim-cxl", "--mix", "h100:128,a100:128", "--link", "cxl=256GB/s,1us", "--dram", "1TiB")
    assert s["xpus_by_type"] == {"A100": 128, "H100": 128}
    assert any(c["between"] == "cxl_switch-gpu" and (c["bandwidth_GBps"], c["latency_ns"]) == (256.0, 1000.0)
               for c in s["link_classes"])  # fmt: skip
    assert s["memory_bytes"]["dram"] == 64 * 2**40
    p = hcsim("hcsim-cxl", [("h100", 128), ("a100", 128)])
    assert (p.accelerator_types[127], p.accelerator_types[128]) == ("H100", "A100")
    assert summary("hcsim-pcie", "--xpus", "300", "--mix", "v100:128,h100")["xpus_by_type"] == {
        "H100": 172,
        "V100": 128,
    }


def canonical(platform) -> tuple:
    """Nodes in order and links as a sorted multiset: equal for the same platform whatever the order
    a writer put its links in."""
    doc = json.loads(platform.to_graph_json("p"))
    links = sorted(json.dumps(lk, sort_keys=True) for lk in doc["links"])
    return doc["nodes"], links, doc["ranks"]


def test_exports_read_back_to_the_same_platform(tmp_path):
    exports = ["--simgrid", "p.xml", "--graphml", "p.graphml", "--graph-json", "p.json"]
    out = cli(
        "hcsim-cxl",
        "--mix",
        "h100:16,a100:8",
        "--servers-per-tor",
        "2",
        "--dram",
        "512GB",
        *exports,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert "wrote p.xml, p.graphml, p.json" in out.stdout
    built = hcsim("hcsim-cxl", [("h100", 16), ("a100", 8)], servers_per_tor=2, dram_bytes=512e9)
    assert canonical(read_platform(tmp_path / "p.json")) == canonical(built)
    assert canonical(read_platform(tmp_path / "p.graphml")) == canonical(built)
    xml = (tmp_path / "p.xml").read_text()
    assert xml.count("<host ") == 24 + 6 + 6 + 24 and 'routing="Full"' in xml
    # YAML: the same document.
    import yaml

    (tmp_path / "p.yaml").write_text(yaml.safe_dump(json.loads((tmp_path / "p.json").read_text())))
    assert canonical(read_platform(tmp_path / "p.yaml")) == canonical(built)
    # Read windows: given on the command line, written into the document and read back.
    out = cli(
        "hcsim-cxl",
        "--xpus",
        "8",
        "--cxl-window",
        "4MiB",
        "--dram-window",
        "inf",
        "--graph-json",
        "w.json",
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    doc = json.loads((tmp_path / "w.json").read_text())
    windows = {n["memory_kind"]: n["window"] for n in doc["nodes"] if n["kind"] == "memory"}
    assert windows == {"cxl": 4 * 2**20, "dram": "inf"}
    wide = hcsim("hcsim-cxl", [("h100", 8)], cxl_window_bytes=4 * 2**20, dram_window_bytes=math.inf)
    assert canonical(read_platform(tmp_path / "w.json")) == canonical(wide)
    # A summary of a file.
    s = summary(str(tmp_path / "p.graphml"))
    assert s["xpus_by_type"] == {"A100": 8, "H100": 16}


def test_a_networkx_graph_with_table2_attributes():
    # HCSim's way: a switch with no attributes, XPUs by FLOPS, a memory node, edges with latency
    # and bandwidth; one XPU from the catalog.
    g = nx.Graph()
    g.add_node("sw", kind="switch")
    g.add_node("fpga", kind="xpu", fp16_flops=5e13, fp32_flops=2e13, memory=16e9)
    g.add_node("gpu", kind="xpu", type="a100")
    g.add_node("pool", kind="memory", memory=float("inf"))
    for n in ("fpga", "gpu", "pool"):
        g.add_edge(n, "sw", bandwidth=25e9, latency=1e-6)
    p = from_networkx(g)
    assert p.kinds == ["switch", "gpu", "gpu", "memory"]
    assert p.accelerator_types == ["custom", "A100"]
    specs = p.node_specs
    assert specs[1] == ("custom", 16e9, "hbm", "") and specs[3] == ("", float("inf"), "dram", "")
    # 1 GB from the FPGA to the pool: 2 µs of latency and 1e9 / 25 GB/s.
    from clustersim import _engine

    (t,) = _engine.flow_completion_times(p, [(1, 3, 1e9, 0.0)], None, 0)
    assert t == pytest.approx(2000 + 1e9 / 25)


DOC = """{
  "nodes": [
    {"id": "x0", "kind": "xpu", "type": "h100"},
    {"id": "x1", "kind": "xpu", "fp32_flops": 1e14, "memory": 8e10},
    {"id": "sw", "kind": "switch"},
    {"id": "m", "kind": "memory", "memory": "1TB"}
  ],
  "links": [
    {"source": "x0", "target": "sw", "bandwidth": 1e11, "latency": 1e-6},
    {"source": "x1", "target": "sw", "bandwidth": 1e11, "latency": 1e-6},
    {"source": "m", "target": "sw", "bandwidth": 1e11, "latency": 1e-6}
  ]
}
"""

BAD = [
    # (replace, with, the error's start after the file name, what the message says)
    ('"kind": "switch"', '"kind": "router"', ":5: node 'sw': kind: ", "unknown kind 'router'"),
    ('"type": "h100"', '"type": "tpu9"', ":3: node 'x0': type: ", "unknown XPU type 'tpu9'"),
    ('"source": "m"', '"source": "mem"', ": link 2: source: ", "no node 'mem'"),
    ('"x0", "target": "sw", "bandwidth": 1e11', '"x0", "target": "sw", "bandwidth": 0',
     ": link 0 (x0 -> sw): bandwidth: ", "must be positive"),
    ('"x1", "target": "sw", "bandwidth": 1e11', '"x1", "target": "sw", "bandwidth": -5e9',
     ": link 1 (x1 -> sw): bandwidth: ", "must be positive"),
    ('"fp32_flops": 1e14', '"fp32_flops": [1e14]', ":4: node 'x1': fp32_flops: ", "got a list"),
    ('"memory": "1TB"', '"memory": true', ":6: node 'm': memory: ", "got a boolean"),
    ('"memory": "1TB"', '"memory": 1e21', ":6: node 'm': memory: ", "more than any memory device holds"),
    ('"memory": 8e10', '"memory": "2000000TB"', ":4: node 'x1': memory: ", "more than any memory"),
]  # fmt: skip


@pytest.mark.parametrize(("old", "new", "where", "says"), BAD)
@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_bad_documents_are_one_line_errors(tmp_path, old, new, where, says, suffix):
    assert old in DOC
    text = DOC.replace(old, new)
    if suffix == ".yaml":
        import yaml

        text = yaml.safe_dump(json.loads(text), default_flow_style=None, sort_keys=False)
    path = tmp_path / f"p{suffix}"
    path.write_text(text)
    with pytest.raises(InputError) as e:
        read_platform(path)
    err = str(e.value)
    assert len(err.splitlines()) == 1 and says in err, err
    assert err.startswith(str(path)), err
    rest = err[len(str(path)) :]
    if suffix == ".yaml":  # other lines than the JSON's: the field part must match
        assert rest.split(": ", 1)[1].startswith(where.split(": ", 1)[1]), err
        assert rest[1].isdigit() or "link" in where, err  # a node's line is always known
    else:
        assert rest.startswith(where), err


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_the_command_exits_2_and_writes_nothing(tmp_path, suffix):
    path = tmp_path / f"p{suffix}"
    path.write_text(DOC.replace('"kind": "switch"', '"kind": "router"'))
    out = cli(str(path), "--graph-json", "out.json", "--simgrid", "out.xml", cwd=tmp_path)
    assert out.returncode == 2
    assert out.stderr.startswith(f"clustersim: error: {path}:5: node 'sw': kind: unknown kind 'router'")
    assert len(out.stderr.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]


def test_attribute_names_that_cannot_stand_in_the_field_go_into_the_message(tmp_path):
    # Found by fuzzing (YAML: a key with a leading no-break space; GraphML: ' type').
    path = tmp_path / "p.yaml"
    path.write_text(
        "nodes:\n- {id: a, kind: xpu, type: h100}\n- {id: s, kind: switch, \u00a0tier: tor}\nlinks: []\n"
    )
    with pytest.raises(InputError, match=r"p\.yaml:3: node 's': a switch node has no attribute ") as e:
        read_platform(path)
    assert len(str(e.value).splitlines()) == 1


def test_yaml_errors_carry_the_line_of_the_node_or_link(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("nodes:\n- {id: a, kind: xpu, type: h100}\n- {id: s, kind: spaceship}\nlinks: []\n")
    with pytest.raises(InputError, match=r"p\.yaml:3: node 's': kind: unknown kind 'spaceship'"):
        read_platform(path)
    path.write_text("nodes:\n- {id: a, kind: xpu, type: h100}\nlinks:\n- {source: a, target: b}\n")
    with pytest.raises(InputError, match=r"p\.yaml:4: link 0: target: no node 'b'"):
        read_platform(path)
    path.write_text("nodes: [\n")
    with pytest.raises(InputError, match=r"p\.yaml:\d+: YAML: not valid YAML"):
        read_platform(path)
    with pytest.raises(InputError, match=r"p\.json:1: JSON: not valid JSON"):
        parse_graph("p.json", "{nodes")


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["hcsim-cxl", "--mix", "h100:100,a100:28"], "hcsim-cxl: mix: h100:100: types are assigned per ToR"),
        (["hcsim-cxl", "--mix", "h100:0"], "command line: --mix: 'h100:0' is not TYPE:COUNT"),
        (["hcsim-cxl", "--mix", "tpu:128"], "hcsim-cxl: mix: unknown XPU type 'tpu'"),
        (["hcsim-cxl", "--xpus", "64", "--mix", "h100:128"], "--xpus 64 disagrees with --mix"),
        (["hcsim-cxl", "--link", "cxl=0GB/s,1us"], "command line: --link cxl: '0GB/s' is not a rate"),
        (["hcsim-cxl", "--link", "warp=1GB/s,1us"], "hcsim-cxl: link: unknown link class 'warp'"),
        (["hcsim-cxl", "--link", "cxl=1GB/s"], "is not CLASS=RATE,LATENCY"),
        (["hcsim-cxl", "--xpus-per-server", "7"], "xpus_per_server: 7 XPUs do not split evenly"),
        (
            ["hcsim-cxl", "--cxl-memory", "2000PB"],
            "cxl_memory: capacity 2e18 bytes is more than any memory device",
        ),
        (["hcsim-cxl", "--cxl-window", "0"], "command line: --cxl-window: read window '0' must be positive"),
        (["hcsim-cxl", "--dram-window", "wide"], "command line: --dram-window: 'wide' is not a capacity"),
        (["p.json", "--cxl-window", "1MiB"], "--cxl-window: only for the templates"),
        (["no-such-thing"], "command line: platform: 'no-such-thing' is neither a template"),
        (["hcsim-cxl", "--simgrid", "x.xml", "--dtype", "fp4"], "--dtype: 'fp4' is not a data type"),
    ],
)
def test_bad_options_are_one_line_errors(tmp_path, args, says):
    out = cli(*args, cwd=tmp_path)
    assert out.returncode == 2, out.stdout
    assert len(out.stderr.strip().splitlines()) == 1 and says in out.stderr, out.stderr
    assert not list(tmp_path.iterdir())
