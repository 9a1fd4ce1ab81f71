"""`--compat simai` reproduces SimAI-Analytical's own EndToEnd.csv files for the example workload."""

from __future__ import annotations

import math
import re

import clustersim
import pytest
from conftest import AUTO_FLAGS, BUSBW_FLAGS, EXAMPLE_WORKLOAD, REFERENCE

REL_TOL = 0.005  # 0.5 %
NUMBER = re.compile(r"^-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?$")
VALUE_PCT = re.compile(r"^(-?\d+(?:\.\d+)?) \((-?\d+(?:\.\d+)?)%\)$")


def parse_cells(line):
    """A CSV line as a list of ("num", float) / ("text", str); "v (p%)" cells give two numbers.

    nan, -nan and inf are compared as text."""
    cells = []
    for raw in line.rstrip("\r\n").split(","):
        cell = raw.strip()
        m = VALUE_PCT.match(cell)
        if m:
            cells += [("num", float(m[1])), ("num", float(m[2]))]
        elif NUMBER.match(cell):
            cells.append(("num", float(cell)))
        else:
            cells.append(("text", cell))
    return cells


def close(a, b):
    return a == b or abs(a - b) <= REL_TOL * max(abs(a), abs(b))


def compare_csv(ours_path, ref_path):
    ours = ours_path.read_text().splitlines()
    ref = ref_path.read_text().splitlines()
    assert len(ours) == len(ref), f"{ours_path.name} has {len(ours)} lines, reference {len(ref)}"
    problems = []
    numbers = 0
    for lineno, (a, b) in enumerate(zip(ours, ref, strict=True), start=1):
        ca, cb = parse_cells(a), parse_cells(b)
        if [k for k, _ in ca] != [k for k, _ in cb]:
            problems.append(f"line {lineno}: cells differ in kind/count:\n  ours {a}\n  ref  {b}")
            continue
        for col, ((kind, x), (_, y)) in enumerate(zip(ca, cb, strict=True)):
            if kind == "num":
                numbers += 1
                if not close(x, y):
                    problems.append(f"line {lineno} cell {col}: {x} vs reference {y}")
            elif x != y:
                problems.append(f"line {lineno} cell {col}: {x!r} vs reference {y!r}")
    assert not problems, f"{len(problems)} differences, first ones:\n" + "\n".join(problems[:15])
    # Guard against a comparison that silently compared nothing.
    assert numbers > 10 * len(ref)


def test_cell_parser():
    assert parse_cells("example-, 40332 (0.53%), 7545619") == [
        ("text", "example-"),
        ("num", 40332.0),
        ("num", 0.53),
        ("num", 7545619.0),
    ]
    assert parse_cells("a,0,-nan,0.00,nan,inf") == [
        ("text", "a"),
        ("num", 0.0),
        ("text", "-nan"),
        ("num", 0.0),
        ("text", "nan"),
        ("text", "inf"),
    ]
    assert close(1000.0, 1004.0) and not close(1000.0, 1006.0)


@pytest.mark.parametrize(
    ("flags", "prefix", "reference"),
    [
        (AUTO_FLAGS, "example-", "auto-9216-EndToEnd.csv"),
        (BUSBW_FLAGS, "test-", "busbw-9216-EndToEnd.csv"),
    ],
    ids=["built-in-bandwidths", "busbw-yaml"],
)
def test_compat_reproduces_reference_csv(run_cli, tmp_path, flags, prefix, reference):
    rc, out, err = run_cli("analytical", "-w", EXAMPLE_WORKLOAD, *flags, "-r", prefix, "--compat", "simai")
    assert rc == 0, err
    assert "Traceback" not in err
    compare_csv(tmp_path / f"{prefix}EndToEnd.csv", REFERENCE / reference)
    # Stronger than the 0.5% the issue asks for: SimAI's own bytes.
    assert (tmp_path / f"{prefix}EndToEnd.csv").read_bytes() == (REFERENCE / reference).read_bytes()
    assert (tmp_path / f"{prefix}summary.json").is_file()


def test_compat_summary_line_names_the_run(run_cli, tmp_path):
    rc, _, err = run_cli(
        "analytical", "-w", EXAMPLE_WORKLOAD, *AUTO_FLAGS, "-r", "example-", "--compat", "simai"
    )
    assert rc == 0, err
    lines = (tmp_path / "example-EndToEnd.csv").read_text().splitlines()
    assert lines[1].split(",")[0] == "example-"
    assert lines[0] == (REFERENCE / "auto-9216-EndToEnd.csv").read_text().splitlines()[0]
    assert lines[2] == (REFERENCE / "auto-9216-EndToEnd.csv").read_text().splitlines()[2]


def test_python_api_matches_reference():
    result = clustersim.simulate(
        EXAMPLE_WORKLOAD,
        gpus=9216,
        nvlink_busbw=360,
        nic_busbw=48.5,
        nics_per_server=8,
        gpus_per_server=8,
        compat="simai",
    )
    assert math.isclose(result.summary["total_us"], 7545619, rel_tol=REL_TOL)
    assert result.iteration_time_us == result.summary["total_us"]
    assert len(result.layers) == 1789
    assert "fwd compute" in result.layers.columns
    assert result.mode == "compat-simai"
    assert len(result.csv.splitlines()) == 1792
    # The per-row table holds the reference CSV's values (columns 2-4: fwd, wg, ig compute, µs).
    ref_rows = (REFERENCE / "auto-9216-EndToEnd.csv").read_text().splitlines()[3:]
    assert result.layers["layer_name"] == [r.split(",")[0] for r in ref_rows]
    for col, name in ((2, "fwd compute"), (3, "wg compute"), (4, "ig compute"), (6, "wg exposed comm")):
        for i, row in enumerate(ref_rows):
            ref = float(row.split(",")[col])
            ours = result.layers[name][i]
            # The CSV prints whole µs: allow the rounding on top of the relative tolerance.
            assert abs(ours - ref) <= max(0.5, REL_TOL * abs(ref)), (name, i, ours, ref)
