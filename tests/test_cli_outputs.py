"""What the `clustersim analytical` command prints and writes."""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import AUTO_FLAGS, EXAMPLE_WORKLOAD, run_clustersim

SUMMARY_KEYS = [
    "exposed_dp_us",
    "exposed_dp_ep_us",
    "exposed_tp_us",
    "exposed_ep_us",
    "exposed_pp_us",
    "bubble_us",
    "compute_us",
    "exposed_comm_us",
    "total_us",
]
COMM_KEYS = ["exposed_dp_us", "exposed_dp_ep_us", "exposed_tp_us", "exposed_ep_us"]


def run_json(run_cli, *flags):
    rc, out, err = run_cli("analytical", "-w", EXAMPLE_WORKLOAD, *AUTO_FLAGS, "--json", *flags)
    assert rc == 0, err
    return json.loads(out)


def csv_summary(path):
    """Line 2 of an EndToEnd.csv as {header: value}."""
    header, values = path.read_text().splitlines()[:2]
    names = [h.strip() for h in header.split(",")]
    return {n: float(v.strip().split(" ")[0]) for n, v in zip(names[1:], values.split(",")[1:], strict=True)}


@pytest.fixture(scope="module")
def compat_doc(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("compat")
    rc, out, err = run_clustersim(
        "analytical", "-w", EXAMPLE_WORKLOAD, *AUTO_FLAGS, "-r", "c-", "--compat", "simai", "--json", cwd=cwd
    )
    assert rc == 0, err
    return json.loads(out), cwd


def test_json_output(compat_doc):
    doc, cwd = compat_doc
    assert list(doc["summary_us"]) == SUMMARY_KEYS
    assert doc["iteration_time_us"] == doc["summary_us"]["total_us"]
    assert math.isclose(doc["iteration_time_us"], 7545619, rel_tol=0.005)
    plan = doc["plan"]
    assert (plan["gpus"], plan["tp"], plan["ep"], plan["pp"], plan["dp"]) == (9216, 2, 16, 12, 384)
    pct_keys = {k.removesuffix("_us") + "_pct" for k in SUMMARY_KEYS}
    assert set(doc["breakdown_pct"]) == pct_keys - {"total_pct", "exposed_comm_pct"}
    assert doc["mode"] == "compat-simai"
    assert doc["outputs"]["csv"] == "c-EndToEnd.csv"
    # The JSON written next to the CSV is the one printed.
    assert json.loads((cwd / "c-summary.json").read_text()) == doc


def check_parts_add_up(summary):
    total = summary["total_us"]
    assert total > 0
    comm = sum(summary[k] for k in COMM_KEYS)
    assert math.isclose(comm, summary["exposed_comm_us"], rel_tol=1e-6)
    parts = sum(summary[k] for k in ("compute_us", "exposed_comm_us", "bubble_us", "exposed_pp_us"))
    assert math.isclose(parts, total, rel_tol=1e-6)
    assert all(summary[k] >= 0 for k in SUMMARY_KEYS)


def check_breakdown(doc):
    pct = doc["breakdown_pct"]
    total = doc["summary_us"]["total_us"]
    for k, v in pct.items():
        part = k.removesuffix("_pct") + "_us"
        assert math.isclose(v, doc["summary_us"][part] / total * 100, rel_tol=1e-9, abs_tol=1e-12), k
    disjoint = [
        k.removesuffix("_us") + "_pct" for k in SUMMARY_KEYS if k not in ("total_us", "exposed_comm_us")
    ]
    assert math.isclose(sum(pct[k] for k in disjoint), 100.0, rel_tol=1e-6)


def test_summary_parts_add_up_compat(compat_doc):
    doc, _ = compat_doc
    check_parts_add_up(doc["summary_us"])
    check_breakdown(doc)


def test_csv_summary_agrees_with_json(compat_doc):
    doc, cwd = compat_doc
    csv = csv_summary(cwd / "c-EndToEnd.csv")
    s = doc["summary_us"]
    assert abs(csv["Total time"] - s["total_us"]) <= 0.5
    assert abs(csv["Expose DP_EP comm"] - s["exposed_dp_ep_us"]) <= 0.5
    assert abs(csv["total comp"] - s["compute_us"]) <= 0.5


def test_default_mode_differs_from_compat(run_cli, tmp_path, compat_doc):
    compat, _ = compat_doc
    doc = run_json(run_cli, "-r", "d-")
    assert doc["mode"] == "default"
    check_parts_add_up(doc["summary_us"])
    check_breakdown(doc)
    assert not math.isclose(doc["iteration_time_us"], compat["iteration_time_us"], rel_tol=1e-3)
    # PP = 12: the default mode prices the pipeline transfers that SimAI's pp_o = 1 zeroes.
    assert compat["summary_us"]["exposed_pp_us"] == 0
    assert doc["summary_us"]["exposed_pp_us"] > 0
    assert csv_summary(tmp_path / "d-EndToEnd.csv")["Expose_PP_comm"] > 0


def test_human_summary(run_cli, tmp_path):
    rc, out, err = run_cli("analytical", "-w", EXAMPLE_WORKLOAD, *AUTO_FLAGS, "-r", "h-", "--compat", "simai")
    assert rc == 0, err
    assert re.search(r"iteration time\s+7545\.6\d\d ms", out), out
    assert "h-EndToEnd.csv" in out and "h-summary.json" in out
    assert not (tmp_path / "h-chart.png").exists()


def test_default_output_prefix(run_cli, tmp_path):
    rc, _, err = run_cli("analytical", "-w", EXAMPLE_WORKLOAD, *AUTO_FLAGS)
    assert rc == 0, err
    assert (tmp_path / "results" / "workload_analytical-EndToEnd.csv").is_file()
    assert (tmp_path / "results" / "workload_analytical-summary.json").is_file()
    line2 = (tmp_path / "results" / "workload_analytical-EndToEnd.csv").read_text().splitlines()[1]
    assert line2.startswith("workload_analytical-,")


def test_result_folder_and_prefix(run_cli, tmp_path):
    rc, _, err = run_cli("analytical", "-w", EXAMPLE_WORKLOAD, *AUTO_FLAGS, "-r_f", "folder", "-r", "name-")
    assert rc == 0, err
    assert (tmp_path / "folder" / "name-EndToEnd.csv").is_file()
    assert (tmp_path / "folder" / "name-summary.json").is_file()
    assert not (tmp_path / "results").exists()
    assert not (tmp_path / "name-EndToEnd.csv").exists()


def check_charts(folder, prefix):
    png = folder / f"{prefix}chart.png"
    html = folder / f"{prefix}chart.html"
    assert png.is_file(), f"{png.name} missing"
    assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert png.stat().st_size > 1000
    text = html.read_text()
    assert "<svg" in text
    # Self-contained: the only URLs are XML namespace names, which nothing fetches.
    rest = re.sub(r'xmlns(:\w+)?="http://www\.w3\.org/[^"]*"', "", text)
    assert "http" not in rest, re.findall(r"https?://\S{0,40}", rest)
    svg = (folder / f"{prefix}chart.svg").read_text()
    assert svg.startswith("<?xml") and svg[svg.index("<svg") :] in text


def test_visual_1_writes_charts(run_cli, tmp_path):
    rc, out, err = run_cli("analytical", "-w", EXAMPLE_WORKLOAD, *AUTO_FLAGS, "-r", "v-", "-v", "1", "--json")
    assert rc == 0, err
    assert "Traceback" not in err
    check_charts(tmp_path, "v-")
    doc = json.loads(out)
    assert doc["outputs"]["png"] == "v-chart.png" and doc["outputs"]["html"] == "v-chart.html"


def test_bare_visual_flag_writes_charts(run_cli, tmp_path):
    # A bare -v followed by another option means -v 1.
    rc, _, err = run_cli("analytical", "-w", EXAMPLE_WORKLOAD, "-v", *AUTO_FLAGS, "-r", "b-")
    assert rc == 0, err
    assert "Traceback" not in err
    check_charts(tmp_path, "b-")


def test_visual_0_writes_no_charts(run_cli, tmp_path):
    rc, _, err = run_cli("analytical", "-w", EXAMPLE_WORKLOAD, *AUTO_FLAGS, "-r", "z-", "-v", "0")
    assert rc == 0, err
    assert (tmp_path / "z-EndToEnd.csv").is_file()
    assert not list(tmp_path.glob("*chart*"))


def test_help(run_cli):
    rc, out, _ = run_cli("--help")
    assert rc == 0
    assert "analytical" in out and "workload" in out
    rc, out, _ = run_cli("analytical", "--help")
    assert rc == 0
    assert "-g_p_s" in out and "-busbw" in out and "--compat" in out


def test_console_script(tmp_path):
    """The `clustersim` command installed beside this Python runs the same CLI."""
    script = Path(sys.executable).with_name("clustersim")
    exe = str(script) if script.exists() else shutil.which("clustersim")
    if exe is None:
        pytest.skip("no clustersim console script installed")
    proc = subprocess.run([exe, "--help"], capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert proc.returncode == 0
    assert "analytical" in proc.stdout


def test_no_command_is_a_usage_error(run_cli):
    rc, out, err = run_cli()
    assert rc == 2
    # One line, like every other error, pointing at --help.
    assert err.count("\n") == 1 and err.startswith("clustersim: error: ") and "--help" in err
    assert "Traceback" not in err
