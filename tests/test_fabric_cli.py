"""`clustersim fabric`: one command for every template and fabric file; `topo` and `platform` are
the same code under their own flags (their outputs are held by test_topology_templates.py and
test_platform_cli.py), and gen_Topo_Template.py's flags work in `fabric` as they do in `topo`."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from clustersim.platform import read_platform
from clustersim.topology import PARAMETERS, read_simai
from conftest import run_clustersim
from test_bad_input import assert_clean_error

REF = Path(__file__).parent / "data" / "topo"
CASES = [line.split("\t") for line in (REF / "flags.txt").read_text().splitlines() if line.strip()]


def fabric(*args, cwd):
    rc, out, err = run_clustersim("fabric", *args, cwd=cwd)
    assert rc == 0, err
    return out, err


@pytest.mark.parametrize(("name", "flags"), CASES, ids=[c[0] for c in CASES])
def test_gen_topo_template_flags_write_the_scripts_file(tmp_path, name, flags):
    out, _ = fabric(*shlex.split(flags), "--simai", cwd=tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == [name]
    assert (tmp_path / name).read_text() == (REF / name).read_text()
    assert out.rstrip().endswith(f"wrote {name}")


def test_a_template_named_as_the_positional_with_its_gpu_count(tmp_path):
    out, err = fabric("DCN+:128", "--simai", "dcn.txt", "--bisection", "--json", cwd=tmp_path)
    doc = json.loads(out)
    # DCN+'s default 8 ASWs become 2 for 128 GPUs silently: no -asn was given to warn about.
    assert err == ""
    assert doc["warnings"] == []
    assert (doc["name"], doc["xpus"], doc["outputs"]) == (
        "DCN+SingleToR_128g_8gps_400Gbps_H100",
        128,
        ["dcn.txt"],
    )
    # 2 ASWs of 64 NICs, each with 8 × 400 Gbps up: the middle cut is one ASW's uplinks.
    assert doc["bisection_bandwidth_Bps"] == 8 * 50e9
    assert doc["nodes_by_kind"] == {"gpu": 128, "nvswitch": 16, "switch": 10}
    rc, _, _ = run_clustersim("topo", "-topo", "DCN+", "-g", "128", "-o", "topo.txt", cwd=tmp_path)
    assert rc == 0 and (tmp_path / "dcn.txt").read_text() == (tmp_path / "topo.txt").read_text()


def test_every_export_of_a_fat_tree_reads_back_to_the_same_fabric(tmp_path):
    exports = [
        "--simai",
        "ft.txt",
        "--graphml",
        "ft.graphml",
        "--graph-json",
        "ft.json",
        "--simgrid",
        "ft.xml",
    ]
    out, _ = fabric("fat-tree:4", "-gps", "4", *exports, "--bisection", cwd=tmp_path)
    assert "bisection: 3.2 Tbps" in out and "wrote ft.txt, ft.xml, ft.graphml, ft.json" in out
    simai = read_simai(tmp_path / "ft.txt")
    assert (simai.num_gpus, simai.num_switches, simai.num_links) == (16, 20, 64)
    for export in ("ft.graphml", "ft.json"):
        back = read_platform(tmp_path / export)
        assert back.kinds == simai.platform.kinds and back.links == simai.platform.links, export
    assert (tmp_path / "ft.xml").read_text().count("<host ") == 16


def test_a_file_of_any_format_is_read_and_converted(tmp_path):
    fabric("hcsim-cxl", "--xpus", "16", "--graph-json", "cxl.json", cwd=tmp_path)
    out, _ = fabric("cxl.json", "--graphml", "cxl.graphml", "--json", cwd=tmp_path)
    doc = json.loads(out)
    assert doc["name"] == "cxl" and doc["xpus"] == 16 and doc["outputs"] == ["cxl.graphml"]
    # `platform` prints the same summary of the same fabric (the same code).
    rc, plat_out, _ = run_clustersim("platform", "hcsim-cxl", "--xpus", "16", "--json", cwd=tmp_path)
    assert rc == 0
    plat = json.loads(plat_out)
    assert {k: v for k, v in doc.items() if k not in ("name", "warnings", "outputs")} == {
        k: v for k, v in plat.items() if k not in ("name", "outputs")
    }
    # A SimAI file converts to a graph document and back to the same SimAI text.
    name = CASES[0][0]
    fabric(str(REF / name), "--graph-json", "simai.json", cwd=tmp_path)
    fabric("simai.json", "--simai", "again.txt", cwd=tmp_path)
    assert (tmp_path / "again.txt").read_text() == (REF / name).read_text()


def test_help_gives_each_templates_defaults_from_the_engine(tmp_path):
    rc, out, _ = run_clustersim("fabric", "--help", cwd=tmp_path)
    assert rc == 0
    text = " ".join(out.split())
    assert "NIC-ASW rate (default 400Gbps; 200Gbps AlibabaHPN, DCN+ --dt)" in text
    assert "GPUs per pod (default 32; 4096 Spectrum-X; 15360 AlibabaHPN; 512 DCN+)" in text
    assert [name for name, *_ in PARAMETERS][:3] == ["gpu", "error_rate", "gpu_per_server"]


@pytest.mark.parametrize(
    ("args", "parts"),
    [
        (["hcsim-cxl", "-g", "64"], ["-g: only for SimAI's templates and fat-trees"]),
        (["DCN+", "--xpus", "64"], ["--xpus: only for HCSim's templates (hcsim-pcie, hcsim-cxl)"]),
        (
            ["Clos"],
            ["fabric: 'Clos' is neither a template (Spectrum-X, AlibabaHPN, DCN+, fat-tree, hcsim-pcie"],
        ),
        (["DCN+", "-topo", "AlibabaHPN"], ["--topology AlibabaHPN: FABRIC DCN+ is given already"]),
        (["DCN+", "-bw", "400Gbs"], ["bandwidth (-bw): '400Gbs' is not a data rate"]),
        (["fat-tree:4", "-npa", "2"], ["--fat-tree: cannot be combined with -npa"]),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, args, parts):
    rc, out, err = run_clustersim("fabric", *args, "--simai", cwd=tmp_path)
    assert_clean_error(rc, out, err, *parts)
    assert list(tmp_path.iterdir()) == []


def test_a_file_takes_no_template_options(tmp_path):
    rc, out, err = run_clustersim(
        "fabric", str(REF / CASES[0][0]), "-g", "8", "--mix", "h100:8", cwd=tmp_path
    )
    assert_clean_error(rc, out, err, "-g, --mix: a file cannot be combined with template options")
