"""Templates: byte-identical to SimAI's gen_Topo_Template.py, with the right counts; fat-trees; pods."""

from __future__ import annotations

import shlex
from decimal import Decimal
from pathlib import Path

import pytest
from clustersim.topology import TEMPLATES, fat_tree, read_simai, simai_template, template_params
from conftest import run_clustersim

REF = Path(__file__).parent / "data" / "topo"
CASES = [line.split("\t") for line in (REF / "flags.txt").read_text().splitlines() if line.strip()]


@pytest.mark.parametrize(("name", "flags"), CASES, ids=[c[0] for c in CASES])
def test_cli_writes_what_gen_topo_template_writes(tmp_path, name, flags):
    rc, out, err = run_clustersim("topo", *shlex.split(flags), cwd=tmp_path)
    assert rc == 0, err
    assert [p.name for p in tmp_path.iterdir()] == [name]
    assert (tmp_path / name).read_text() == (REF / name).read_text()
    assert out.startswith(f"{name}: ") and out.rstrip().endswith(f"wrote {name}")


def test_api_matches_reference_file():
    topo = simai_template("AlibabaHPN", dp=True, gpu=32, nics_per_aswitch=2, psw_switch_num=4)
    name = "AlibabaHPN_32g_8gps_DualToR_DualPlane_200Gbps_H100"
    assert topo.name == name
    assert topo.to_simai() == (REF / name).read_text()


def test_reference_files_read_back_identically():
    for name, _ in CASES:
        text = (REF / name).read_text()
        assert read_simai(REF / name).to_simai() == text


def gen_topo_template_text(topo):
    """gen_Topo_Template.py's file layout, written here independently of the engine's writer:
    rates as plain decimals in Gbps, delays in ms, error rates as plain decimals."""

    def plain(x):
        return format(Decimal(repr(x)).normalize(), "f")

    nv = [i for i, k in enumerate(topo.kinds) if k == "nvswitch"]
    sw = [i for i, k in enumerate(topo.kinds) if k == "switch"]
    links = list(zip(*topo.platform.duplex_links(), strict=True))
    lines = [
        f"{topo.num_nodes} {topo.gpus_per_server} {len(nv)} {len(sw)} {len(links)} {topo.gpu_type}",
        "".join(f"{i} " for i in nv + sw),
    ]
    lines += [f"{a} {b} {plain(gbs * 8)}Gbps {plain(ns / 1e6)}ms {plain(er)}" for a, b, gbs, ns, er in links]
    return "\n".join(lines) + "\n"


SHAPES = [{}, {"ro": True}, {"dt": True}, {"ro": True, "dt": True}, {"ro": True, "dt": True, "dp": True}]
LINKS = [
    {},
    {"bandwidth": "100Mbps", "latency": "1us", "error_rate": "0.001"},
    {"nvlink_bw": "1.5Tbps", "nv_latency": "25ns", "ap_bandwidth": "12.5GBps", "latency": "0.3ms"},
]


@pytest.mark.parametrize("topology", [*TEMPLATES, None])
def test_engine_writes_every_template_as_gen_topo_template(topology):
    written = 0
    for shape in SHAPES:
        for links in LINKS:
            for pods in (1, 2):
                flags = {"gpu": 64, "gpu_per_server": 4, "nics_per_aswitch": 8, "psw_switch_num": 4}
                if topology == "DCN+":
                    flags["asw_per_psw"] = 16  # room for 8 dual-ToR segments
                topo = simai_template(topology, pods=pods, **shape, **links, **flags)
                assert topo.to_simai() == gen_topo_template_text(topo), (shape, links, pods)
                written += 1
    assert written == len(SHAPES) * len(LINKS) * 2
    for topo in (fat_tree(4), fat_tree(6, gpu_per_server=2, latency="700ns", error_rate="0.01")):
        assert topo.to_simai() == gen_topo_template_text(topo)


def counts(topo):
    return topo.num_gpus, topo.num_nvswitches, topo.num_switches, topo.num_links


@pytest.mark.parametrize(
    ("topology", "flags", "expected"),
    [
        # GPUs, NVSwitches, ASW+PSW, links = PSW·ASW + ToRs·GPUs + NVSwitches-per-server·GPUs
        ("Spectrum-X", {}, (4096, 512, 64 + 64, 64 * 64 + 4096 + 4096)),
        ("AlibabaHPN", {}, (15360, 1920, 240 + 120, 120 * 240 + 2 * 15360 + 15360)),
        ("AlibabaHPN", {"dp": True}, (15360, 1920, 240 + 120, 60 * 240 + 2 * 15360 + 15360)),
        ("DCN+", {}, (512, 64, 8 + 8, 8 * 8 + 512 + 512)),
        ("DCN+", {"dt": True}, (512, 64, 8 + 8, 8 * 8 + 2 * 512 + 512)),
        (None, {}, (32, 4, 1 + 64, 64 * 1 + 32 + 32)),
        (None, {"ro": True}, (32, 4, 8 + 64, 64 * 8 + 32 + 32)),
        (None, {"ro": True, "dt": True, "dp": True}, (32, 4, 16 + 64, 32 * 16 + 2 * 32 + 32)),
    ],
)
def test_template_counts(topology, flags, expected):
    assert counts(simai_template(topology, **flags)) == expected


def test_template_defaults_are_the_scripts_code_values():
    p = template_params("AlibabaHPN", dp=True)
    assert (p.gpu, p.bandwidth, p.asw_switch_num, p.nics_per_aswitch, p.psw_switch_num, p.asw_per_psw) == (
        15360,
        "200Gbps",
        240,
        128,
        120,
        120,
    )
    assert (p.rail_optimized, p.dual_tor, p.dual_plane) == (True, True, True)
    dcn = template_params("DCN+", dt=True, ro=True, dp=True)  # --ro and --dp are ignored by DCN+
    assert (dcn.rail_optimized, dcn.dual_tor, dcn.dual_plane) == (False, True, False)
    assert (dcn.bandwidth, dcn.nics_per_aswitch, dcn.gpu) == ("200Gbps", 128, 512)
    custom = template_params()
    assert (custom.rail_optimized, custom.gpu, custom.asw_per_psw) == (False, 32, 64)
    assert set(TEMPLATES) == {"Spectrum-X", "AlibabaHPN", "DCN+"}


def test_rail_optimised_wiring():
    topo = simai_template(None, ro=True, gpu=32, gpu_per_server=4, nics_per_aswitch=2, psw_switch_num=2)
    asw_of = {lk.src: lk.dst for lk in topo.links if lk.src < 32 and topo.kinds[lk.dst] == "switch"}
    first_asw = 32 + 8  # 32 GPUs, 8 NVSwitches
    # segment = 2 servers; GPU i → ASW (i // 8)·4 + i % 4
    assert [asw_of[i] - first_asw for i in range(16)] == [0, 1, 2, 3] * 2 + [4, 5, 6, 7] * 2


def test_asw_count_follows_gpus_with_a_warning():
    topo = simai_template("DCN+", gpu=128, asw_switch_num=8)
    assert topo.num_switches == 2 + 8
    assert topo.warnings == ("asw_switch_num (-asn) 8 does not fit 128 GPUs: using 2",)
    assert simai_template("DCN+", gpu=512).warnings == ()


@pytest.mark.parametrize(("k", "gps"), [(2, 1), (4, 2), (6, 1), (8, 4)])
def test_fat_tree_counts(k, gps):
    topo = fat_tree(k, gpu_per_server=gps, nv_switch_per_server=1)
    hosts = k**3 // 4
    assert topo.num_gpus == hosts
    assert topo.num_switches == 5 * k * k // 4  # k²/2 edge + k²/2 aggregation + k²/4 core
    assert topo.num_nvswitches == hosts // gps
    # NVLink + GPU–edge + edge–aggregation (k pods · (k/2)²) + aggregation–core (k · (k/2)²)
    assert topo.num_links == hosts + hosts + k**3 // 4 + k**3 // 4
    # Full bisection: half the GPUs (whole servers) can send at line rate to the other half.
    assert topo.bisection_bandwidth() == pytest.approx(hosts // 2 * 50e9)


def test_fat_tree_wiring():
    topo = fat_tree(4, gpu_per_server=4)
    edge0 = 16 + 4  # GPUs, then 4 NVSwitches
    to_edge = [lk.dst - edge0 for lk in topo.links if lk.src < 16 and lk.dst >= edge0]
    assert to_edge == [g // 2 for g in range(16)]
    g = topo.to_networkx()
    core = range(edge0 + 16, edge0 + 20)
    assert all(g.degree(c) == 4 for c in core)  # one link to each pod


def test_pods_join_copies_with_a_core_tier():
    # 64 GPUs, 4 per server, 8 servers per segment: 2 segments × 4 rails = 8 ASWs, each with 8 × 400 Gbps
    # up to 8 PSWs: a non-blocking pod.
    flags = {"gpu": 64, "gpu_per_server": 4, "nics_per_aswitch": 8, "psw_switch_num": 8}
    one = simai_template("Spectrum-X", **flags)
    three = simai_template("Spectrum-X", pods=3, **flags)
    assert three.name == one.name + "_3pods"
    assert three.num_gpus == 3 * one.num_gpus
    assert three.num_switches == 3 * one.num_switches + 8
    assert three.num_links == 3 * one.num_links + 8 * 3
    # Pod 0 is wired exactly like the single pod (up to the renumbering of its switches).
    assert three.kinds[:192] == ["gpu"] * 192
    assert three.kinds[192 : 192 + 48] == ["nvswitch"] * 48
    # Core links are non-blocking bundles: each PSW has 8 ASWs of 400 Gbps below it.
    core_links = three.links[-24:]
    assert {lk.bandwidth for lk in core_links} == {8 * 50e9}
    assert three.bisection_bandwidth() == pytest.approx(96 * 50e9)
    assert one.bisection_bandwidth() == pytest.approx(32 * 50e9)
    # Halve the PSWs and each pod is 2:1 oversubscribed: the middle cut of one pod (segment 0 to
    # segment 1) is 4 ASWs × 4 PSWs × 400 Gbps.
    thin = simai_template("Spectrum-X", **(flags | {"psw_switch_num": 4}))
    assert thin.bisection_bandwidth() == pytest.approx(16 * 50e9)


def test_oversubscribed_bisection():
    # DCN+ 512 GPUs: 8 ASWs of 64 NICs, each with 8 × 400 Gbps up: the middle cut is 4 ASWs' uplinks.
    assert simai_template("DCN+").bisection_bandwidth() == pytest.approx(4 * 8 * 50e9)
