"""Every SimAI/AICB workload file in tests/data and examples/ loads, round-trips through the writer, and is
recognised as the right header variant."""

from __future__ import annotations

import json

import pytest
from conftest import AICB, DATA, EXAMPLE_WORKLOAD, ROOT

WORKLOADS = sorted(p for root in (ROOT / "examples", AICB) for p in root.rglob("*.txt"))
# Declares 839 rows on line 2 but holds 33.
SHORT = AICB / "simai-workloads" / "model_workload" / "L65B-M1-C05_Llama65B_megatron_tp8_pp1_mbs1_A100.txt"
HEADER_KEYS = ("policy", "variant", "tp", "ep", "pp", "vpp", "ga", "all_gpus", "pp_comm")


def ids(paths):
    return [str(p.relative_to(DATA if p.is_relative_to(DATA) else ROOT)) for p in paths]


def check_json(run_cli, path, *extra):
    rc, out, err = run_cli("workload", "check", path, "--json", *extra)
    assert rc == 0, f"workload check {path} failed: {err}"
    return json.loads(out), err


def test_data_is_there():
    assert len(WORKLOADS) >= 15
    assert SHORT in WORKLOADS


@pytest.mark.parametrize(
    "path", [p for p in WORKLOADS if p != SHORT], ids=ids([p for p in WORKLOADS if p != SHORT])
)
def test_workload_loads(run_cli, path):
    info, err = check_json(run_cli, path)
    assert "Traceback" not in err
    assert info["rows"] > 0
    assert info["rows"] == int(path.read_text().splitlines()[1].strip())
    for key in HEADER_KEYS:
        assert key in info
    assert info["distinct_row_names"]


def test_short_file_fails_without_lenient(run_cli):
    rc, out, err = run_cli("workload", "check", SHORT, "--json")
    assert rc == 2
    assert out == ""
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("clustersim: error: ")
    assert f"{SHORT.name}:2:" in lines[0]
    assert "rows" in lines[0]
    assert "839" in lines[0] and "33" in lines[0]


def test_short_file_loads_with_lenient(run_cli):
    info, err = check_json(run_cli, SHORT, "--lenient")
    assert info["rows"] == 33
    assert "warning" in err.lower()
    assert f"{SHORT.name}:2:" in err


def test_short_file_simulates_with_lenient_only(run_cli, tmp_path):
    rc, _, err = run_cli("analytical", "-w", SHORT, "-g", "64", "-r", "out/s-")
    assert rc == 2 and f"{SHORT.name}:2:" in err
    assert not (tmp_path / "out" / "s-EndToEnd.csv").exists()
    rc, _, err = run_cli("analytical", "-w", SHORT, "-g", "64", "-r", "out/s-", "--lenient")
    assert rc == 0, err
    assert "warning" in err.lower()
    assert len((tmp_path / "out" / "s-EndToEnd.csv").read_text().splitlines()) == 3 + 33


@pytest.mark.parametrize("path", WORKLOADS, ids=ids(WORKLOADS))
def test_rewrite_round_trip(run_cli, tmp_path, path):
    lenient = ["--lenient"] if path == SHORT else []
    original, _ = check_json(run_cli, path, *lenient)
    rc, _, err = run_cli("workload", "rewrite", path, "-o", "out.txt", *lenient)
    assert rc == 0, err
    rewritten, _ = check_json(run_cli, tmp_path / "out.txt")  # a rewritten file is always well-formed
    for key in HEADER_KEYS:
        assert rewritten[key] == original[key], f"{key}: {original[key]!r} became {rewritten[key]!r}"
    assert rewritten["rows"] == original["rows"]
    assert rewritten["distinct_row_names"] == original["distinct_row_names"]
    rc, _, err = run_cli("workload", "rewrite", "out.txt", "-o", "again.txt")
    assert rc == 0, err
    assert (tmp_path / "again.txt").read_bytes() == (tmp_path / "out.txt").read_bytes()


GENERATED = sorted((AICB / "generated").glob("*.txt"))
MODEL_WORKLOAD = sorted((AICB / "simai-workloads" / "model_workload").glob("*.txt"))
MICRO = sorted((AICB / "simai-workloads" / "micro_test").glob("all_*.txt"))


@pytest.mark.parametrize(
    ("path", "variant"),
    [(p, "Current") for p in GENERATED]
    + [(EXAMPLE_WORKLOAD, "PpCommNoColon")]
    + [(p, "V1") for p in MODEL_WORKLOAD]
    + [(p, "Micro") for p in MICRO],
    ids=ids(GENERATED + [EXAMPLE_WORKLOAD] + MODEL_WORKLOAD + MICRO),
)
def test_header_variant(run_cli, path, variant):
    info, _ = check_json(run_cli, path, "--lenient")
    assert info["variant"] == variant


def test_variant_groups_are_not_empty():
    assert len(GENERATED) >= 5 and len(MODEL_WORKLOAD) >= 7 and len(MICRO) >= 3


def test_example_header_values(run_cli):
    info, _ = check_json(run_cli, EXAMPLE_WORKLOAD)
    assert {k: info[k] for k in ("tp", "ep", "pp", "vpp", "ga", "all_gpus", "pp_comm", "rows")} == {
        "tp": 2,
        "ep": 16,
        "pp": 12,
        "vpp": 8,
        "ga": 24,
        "all_gpus": 9216,
        "pp_comm": 50331648,
        "rows": 1789,
    }


def test_v1_defaults(run_cli):
    info, _ = check_json(
        run_cli,
        AICB / "simai-workloads" / "model_workload" / "G13B-M1-C01_GPT13B_megatron_tp8_pp1_mbs1_A100.txt",
    )
    assert (info["tp"], info["ep"], info["pp"], info["vpp"], info["ga"], info["pp_comm"]) == (
        8,
        1,
        1,
        1,
        1,
        0,
    )
    assert info["all_gpus"] is None
