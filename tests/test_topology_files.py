"""Topology views of the engine's Platform: SimAI file and NetworkX round trips, units, and bad input."""

from __future__ import annotations

from pathlib import Path

import networkx as nx
import pytest
from clustersim import _engine
from clustersim.errors import InputError
from clustersim.topology import (
    Link,
    Topology,
    fat_tree,
    format_delay,
    format_rate,
    from_networkx,
    parse_delay,
    parse_rate,
    parse_simai,
    read_simai,
    simai_template,
)
from conftest import run_clustersim
from test_bad_input import assert_clean_error

DATA = Path(__file__).parent / "data"
SMALL = (
    "5 2 1 2 4 H800\n2 3 4 \n"
    """\
0 2 2880Gbps 0.000025ms 0
1 2 2880Gbps 0.000025ms 0
0 3 400Gbps 0.0005ms 0
3 4 100Gbps 0.001ms 0.01
"""
)


def test_units():
    assert parse_rate("400Gbps") == 50e9
    assert parse_rate("2880Gbps") == 360e9
    assert parse_rate("100GBps") == 100e9
    assert parse_rate("1Kibps") == 128.0
    assert parse_delay("0.0005ms") == pytest.approx(5e-7, rel=1e-15)
    assert parse_delay("0.000025ms") == pytest.approx(25e-9, rel=1e-15)
    assert parse_delay("1us") == pytest.approx(1e-6, rel=1e-15)
    assert format_rate(50e9) == "400Gbps"
    assert format_rate(parse_rate("1.5Tbps")) == "1500Gbps"
    assert format_delay(5e-7) == "0.0005ms"
    assert format_delay(25e-9) == "0.000025ms"
    # One parser, the engine's, as ns-3 reads: a bare number is bits per second or seconds.
    assert (parse_rate("400"), parse_delay("5")) == (50.0, 5.0)
    for bad in ("400Gbs", "Gbps", "-4Gbps", "0Gbps", "1e3Gbps"):
        with pytest.raises(ValueError):
            parse_rate(bad)
    for bad in ("0.5mss", "ms", "-1ms"):
        with pytest.raises(ValueError):
            parse_delay(bad)


def test_parse_small_file():
    topo = parse_simai(SMALL, "small.txt")
    assert topo.kinds == ["gpu", "gpu", "nvswitch", "switch", "switch"]
    assert (topo.gpus_per_server, topo.gpu_type, topo.num_gpus) == (2, "H800", 2)
    assert topo.links[3] == Link(3, 4, 12.5e9, 1e-6, 0.01)
    assert topo.to_simai() == SMALL


def test_simai_file_round_trip(tmp_path):
    for topo in (
        simai_template("DCN+", dt=True, gpu=64),
        fat_tree(4),
        simai_template("DCN+", gpu=16, pods=2),
    ):
        path = tmp_path / topo.name
        topo.write(path)
        back = read_simai(path)
        assert back.kinds == topo.kinds
        assert back.links == topo.links
        assert (back.gpus_per_server, back.gpu_type) == (topo.gpus_per_server, topo.gpu_type)
        assert back.to_simai() == path.read_text()


def test_networkx_round_trip():
    topo = simai_template(None, ro=True, dt=True, dp=True, gpu=16, nics_per_aswitch=1, psw_switch_num=2)
    g = topo.to_networkx()
    assert isinstance(g, nx.Graph) and not g.is_multigraph()
    assert g.number_of_nodes() == topo.num_nodes and g.number_of_edges() == len(topo.links)
    assert (
        g.nodes[0]["kind"] == "gpu" and g.nodes[16]["kind"] == "nvswitch" and g.nodes[18]["kind"] == "switch"
    )
    assert g.edges[0, 16] == {"bandwidth": 360e9, "latency": pytest.approx(25e-9), "error_rate": 0.0}
    back = Topology.from_networkx(g)
    assert back.kinds == topo.kinds
    assert sorted(back.links, key=lambda lk: (lk.src, lk.dst)) == sorted(
        topo.links, key=lambda lk: (lk.src, lk.dst)
    )
    assert (back.gpus_per_server, back.gpu_type, back.name) == (8, "H100", topo.name)


def test_from_networkx_renumbers_named_nodes_gpus_first():
    g = nx.Graph()
    g.add_node("tor", kind="switch")
    g.add_node("a", kind="gpu")
    g.add_node("b", kind="gpu")
    g.add_edge("a", "tor", bandwidth=50e9, latency=1e-6)
    g.add_edge("b", "tor", bandwidth=25e9, latency=2e-6)
    topo = Topology.from_networkx(g)
    assert topo.kinds == ["gpu", "gpu", "switch"]
    assert topo.links == [Link(0, 2, 50e9, 1e-6), Link(1, 2, 25e9, 2e-6)]
    assert topo.to_simai().splitlines()[:2] == ["3 1 0 1 2 H100", "2 "]


def test_parallel_links_give_a_multigraph():
    topo = Topology.from_links(
        ["gpu", "gpu"], [Link(0, 1, 1e9, 1e-6), Link(1, 0, 2e9, 1e-6)], gpus_per_server=1
    )
    g = topo.to_networkx()
    assert g.is_multigraph() and g.number_of_edges() == 2
    assert from_networkx(g).bisection_bandwidth() == 3e9


def test_a_view_holds_no_copy_of_the_fabric():
    topo = parse_simai(SMALL)
    p = topo.platform
    assert isinstance(p, _engine.Platform) and topo.kinds == p.kinds
    src, dst, gbs, ns, errors = p.duplex_links()
    assert src == [0, 1, 0, 3] and dst == [2, 2, 3, 4]
    assert gbs == [360.0, 360.0, 50.0, 12.5] and ns == [25.0, 25.0, 500.0, 1000.0]
    assert errors == [0.0, 0.0, 0.0, 0.01]
    # The directed links are the engine's: each full-duplex link both ways.
    assert len(p.links[0]) == 2 * len(src) and p.forwards == [False, False, True, True, True]


def test_engine_writer_is_byte_identical_for_every_simai_file_in_tests_data():
    files = [f for f in DATA.rglob("*") if f.is_file() and _is_simai_topology(f)]
    assert len(files) >= 5
    for f in files:
        assert read_simai(f).to_simai() == f.read_text(), f


def _is_simai_topology(path):
    try:
        _engine.Platform.parse_simai(str(path), path.read_text())
    except (UnicodeDecodeError, InputError):
        return False
    return True


# --- bad input --------------------------------------------------------------------------------


def replace_line(number, text):
    lines = SMALL.splitlines()
    lines[number - 1] = text
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            replace_line(3, "0 2 2880Gbs 0.000025ms 0"),
            "bad.txt:3: link rate: '2880Gbs' is not an ns-3 data rate",
        ),
        (replace_line(4, "1 2 2880Gbps 25xs 0"), "bad.txt:4: link delay: '25xs' is not an ns-3 time"),
        (
            replace_line(6, "3 4 100Gbps 0.001ms 2"),
            "bad.txt:6: link error_rate: '2' is not a probability",
        ),
        (
            replace_line(1, "5 2 1 2 5 H800"),
            "bad.txt:1: link_count: the header says 5 links but the file has 4",
        ),
        (
            replace_line(1, "5 2 1 2 3 H800"),
            "bad.txt:6: link_count: '3' after the 3 links the header announces",
        ),
        (replace_line(1, "5 2 1"), "bad.txt:1: header: expected 6 fields"),
        (replace_line(1, "5 x 1 2 4 H800"), "bad.txt:1: gpus_per_server: 'x' is not a whole number"),
        (replace_line(2, "2 3 9"), "bad.txt:2: switch id: 9 is not a node id (0..5)"),
        (replace_line(2, "2 3 3"), "bad.txt:2: switch id: 3 is listed twice"),
        (replace_line(5, "0 7 400Gbps 0.0005ms 0"), "bad.txt:5: link dst: 7 is not a node id (0..5)"),
        (
            replace_line(5, "0 3 400Gbps"),
            # Ids and link fields are a stream of words, as ns-3 reads them: the next line's
            # first two words are taken as this link's delay (3 s) and error rate.
            "bad.txt:5: link error_rate: '4' is not a probability",
        ),
        (
            replace_line(3, "4 3 2880Gbps 0.000025ms 0"),
            "bad.txt: links: the topology is disconnected: GPU 1 cannot reach GPU 0",
        ),
        ("", "bad.txt:1: header: expected 6 fields"),
    ],
)
def test_malformed_files(tmp_path, text, message):
    path = tmp_path / "bad.txt"
    path.write_text(text)
    with pytest.raises(InputError) as err:
        read_simai(path)
    assert message in str(err.value).replace(str(tmp_path) + "/", "")


def test_disconnected_topology_names_the_unreachable_gpu():
    kinds = ["gpu", "gpu", "gpu", "switch"]
    links = [Link(0, 3, 1e9, 0.0), Link(1, 3, 1e9, 0.0)]
    with pytest.raises(InputError, match="disconnected: GPU 2 cannot reach GPU 0"):
        Topology.from_links(kinds, links, gpus_per_server=1)
    g = nx.Graph()
    g.add_nodes_from((i, {"kind": k}) for i, k in enumerate(kinds))
    g.add_edges_from((lk.src, lk.dst, {"bandwidth": lk.bandwidth, "latency": lk.latency}) for lk in links)
    with pytest.raises(InputError, match="networkx graph: links: the topology is disconnected: GPU 2"):
        from_networkx(g)


def test_bad_networkx_graphs():
    g = nx.Graph()
    g.add_node(0, kind="gpu")
    g.add_node(1, kind="router")
    with pytest.raises(InputError, match=r"node 1: kind: 'router' is not one of gpu, nvswitch, switch"):
        from_networkx(g)
    g.nodes[1]["kind"] = "gpu"
    g.add_edge(0, 1, latency=1e-6)
    with pytest.raises(InputError, match=r"edge \(0, 1\): bandwidth: missing"):
        from_networkx(g)
    with pytest.raises(InputError, match="undirected"):
        from_networkx(nx.DiGraph(g))


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda: simai_template("Fat-Tree"),
            "unknown template 'Fat-Tree' (valid: Spectrum-X, AlibabaHPN, DCN+",
        ),
        (lambda: simai_template(None, dp=True), "not rail-optimised cannot be dual-plane"),
        (
            lambda: simai_template(None, ro=True, dp=True),
            "rail-optimised single-ToR fabric cannot be dual-plane",
        ),
        (lambda: simai_template("Spectrum-X", gpu=8192), "8192 GPUs need 16 segments"),
        (lambda: simai_template(None, gpu=36), "36 GPUs do not fill whole servers of 8"),
        (lambda: simai_template("DCN+", bandwidth="400G"), "bandwidth (-bw): '400G' is not a data rate"),
        (lambda: simai_template("DCN+", latency="5parsec"), "latency (-l): '5parsec' is not a delay"),
        (lambda: simai_template("DCN+", asw_switches=3), "asw_switches: not a parameter"),
        (lambda: simai_template("DCN+", pods=0), "pods: must be a whole number ≥ 1"),
        (lambda: fat_tree(5), "must be an even number"),
        (lambda: fat_tree(4, gpu_per_server=3), "16 GPUs, which do not fill whole servers of 3"),
        (
            lambda: simai_template("DCN+", psw_switch_num=0, gpu=128),
            "disconnected: GPU 64 cannot reach GPU 0",
        ),
    ],
)
def test_bad_template_parameters(call, message):
    with pytest.raises(InputError) as err:
        call()
    assert message in str(err.value)


# --- CLI --------------------------------------------------------------------------------------


def test_cli_default_name_output_and_json(tmp_path):
    rc, out, err = run_clustersim("topo", "-topo", "DCN+", "-g", "128", cwd=tmp_path)
    assert rc == 0, err
    name = "DCN+SingleToR_128g_8gps_400Gbps_H100"
    assert out == (
        f"{name}: 128 GPUs, 16 NVSwitches, 10 switches, 272 links, bisection 3.2 Tbps\nwrote {name}\n"
    )
    assert err == ""  # no -asn given: the template's default ASW count follows the GPUs silently
    assert read_simai(tmp_path / name).num_gpus == 128
    rc, _, err = run_clustersim(
        "topo", "-topo", "DCN+", "-g", "128", "-asn", "8", "-o", "asn.txt", cwd=tmp_path
    )
    assert (rc, err) == (0, "warning: asw_switch_num (-asn) 8 does not fit 128 GPUs: using 2\n")

    rc, out, err = run_clustersim(
        "topo", "--fat-tree", "4", "-gps", "4", "-o", "out/ft.txt", "--json", cwd=tmp_path
    )
    assert rc == 0, err
    import json

    doc = json.loads(out)
    assert (
        doc["output"] == "out/ft.txt" and doc["gpus"] == 16 and doc["switches"] == 20 and doc["links"] == 64
    )
    assert doc["bisection_bandwidth_Bps"] == 8 * 50e9
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["ft.txt"]


@pytest.mark.parametrize(
    ("args", "parts"),
    [
        (["-topo", "Clos"], ["unknown template 'Clos'", "valid: Spectrum-X, AlibabaHPN, DCN+"]),
        (["-topo", "DCN+", "-bw", "400Gbs"], ["bandwidth (-bw): '400Gbs' is not a data rate"]),
        (["--fat-tree", "4", "-g", "32"], ["a k=4 fat-tree has 16 GPUs, not 32"]),
        (["--fat-tree", "4", "--pods", "2"], ["--fat-tree: cannot be combined with --pods"]),
        (["--ro", "--dp"], ["single-ToR fabric cannot be dual-plane"]),
    ],
)
def test_cli_bad_input(tmp_path, args, parts):
    rc, out, err = run_clustersim("topo", *args, cwd=tmp_path)
    assert_clean_error(rc, out, err, *parts)
    assert list(tmp_path.iterdir()) == []


def test_one_reachability_rule_gpus_do_not_forward():
    # 0 – 1 – 2 wired through GPU 1 only: Python refuses it as the engine does.
    links = [Link(0, 1, 1e9, 0.0), Link(1, 2, 1e9, 0.0)]
    with pytest.raises(InputError, match="GPU 2 cannot reach GPU 0"):
        Topology.from_links(["gpu", "gpu", "gpu"], links, gpus_per_server=1)
