"""`--calibration FILE`: the file `clustersim calibrate` writes, read by one loader and applied
the same way by run, collective, train and bwtest --simulate. A calibrated run on a fabric equals
the uncalibrated run on that fabric with the link class's bandwidth × e and latency × k written
into it, exactly; a collective the file fits is a_c + t / e_c of that. Bad files are one-line
errors naming the file, the line and the field."""

from __future__ import annotations

import json

import pytest
from clustersim.calibration import parse_calibration
from clustersim.errors import InputError
from conftest import DATA, run_clustersim

CROSSBAR = DATA / "platforms" / "crossbar8.platform"  # 400 Gbps, 1 µs links: all scale-out
WORKLOAD = DATA / "replay" / "tp2_dp2.txt"
CALIBRATION = {
    "format": "clustersim-calibration/1",
    "classes": {"scale-out": {"bandwidth_efficiency": 0.5, "latency_factor": 2.0}},
    "collectives": {"allreduce": {"bandwidth_efficiency": 0.8, "call_latency_us": 100.0}},
}


@pytest.fixture
def files(tmp_path):
    """(calibration file, the crossbar with its links at bandwidth × 0.5 and latency × 2)."""
    cal = tmp_path / "cal.json"
    cal.write_text(json.dumps(CALIBRATION, indent=1))
    truth = tmp_path / "truth.platform"
    truth.write_text(CROSSBAR.read_text().replace("400Gbps 1us", "200Gbps 2us"))
    return cal, truth


def cli_json(tmp_path, *args):
    rc, stdout, stderr = run_clustersim(*args, "--json", cwd=tmp_path)
    assert rc == 0, stderr
    return json.loads(stdout)


@pytest.mark.parametrize(
    "args",
    [
        ["collective", "allgather", "-b", "1K", "-e", "64M", "-f", "64"],
        ["run", "-w", WORKLOAD, "-g_p_s", "1"],
        ["train", "--model", "llama3-8b", "--layers", "2", "--gpus", "8", "--gbs", "8", "-g_p_s", "1"],
        ["bwtest", "--simulate", "-g", "2", "--count", "4096", "-o", "bw.json"],
    ],
    ids=["collective", "run", "train", "bwtest"],
)
def test_calibrated_fabric_is_the_fabric_with_its_links_rescaled(tmp_path, files, args):
    cal, truth = files
    calibrated = cli_json(tmp_path, *args, "-n", CROSSBAR, "--calibration", cal)
    rescaled = cli_json(tmp_path, *args, "-n", truth)
    plain = cli_json(tmp_path, *args, "-n", CROSSBAR)
    for doc in (calibrated, rescaled, plain):
        doc.pop("simulate_seconds", None)
        doc.pop("provenance", None)  # each names its own fabric and calibration file
        for key in ("topology", "workload"):
            doc.pop(key, None)
    assert calibrated == rescaled
    assert calibrated != plain


def test_a_fitted_collective_is_its_call_latency_plus_time_over_its_efficiency(tmp_path, files):
    cal, truth = files
    sizes = ["-b", "1K", "-e", "256M", "-f", "16"]
    got = cli_json(tmp_path, "collective", "allreduce", *sizes, "-n", CROSSBAR, "--calibration", cal)
    base = cli_json(tmp_path, "collective", "allreduce", *sizes, "-n", truth)
    assert got["size"] == base["size"]
    for t, t0, bw, bw0 in zip(
        got["time_us"], base["time_us"], got["busbw_GBps"], base["busbw_GBps"], strict=True
    ):
        assert t == pytest.approx(100.0 + t0 / 0.8, rel=1e-12)
        assert bw == pytest.approx(bw0 * t0 / t, rel=1e-12)


def test_calibration_needs_a_fabric(tmp_path, files):
    cal, _ = files
    rc, _, stderr = run_clustersim(
        "train", "--model", "llama3-8b", "--gpus", "8", "--gbs", "8", "--calibration", cal, cwd=tmp_path
    )
    assert rc != 0 and stderr.strip().splitlines() == [
        f"clustersim: error: --calibration {cal}: rescales a fabric's links; give the fabric (-n)"
    ]


def test_analytical_takes_the_nvlink_and_nic_bandwidths_rescaled(tmp_path):
    """`analytical` has no links: its NVLink and NIC bus bandwidths (-nv, -nic, else the GPU and
    NIC types') are the scale-up and scale-out classes, × their efficiencies. TP pairs share a
    server (NVLink), DP pairs do not (NIC), so each class moves its own part."""
    cal = tmp_path / "cal.json"
    doc = CALIBRATION | {"classes": {"scale-up": {"bandwidth_efficiency": 0.25, "latency_factor": 3.0}}}
    doc["classes"]["scale-out"] = CALIBRATION["classes"]["scale-out"]
    cal.write_text(json.dumps(doc))
    base = ["analytical", "-w", WORKLOAD, "-g_p_s", "2"]
    runs = {
        "calibrated": [*base, "--calibration", cal],
        "rescaled": [*base, "-nv", 370.8 * 0.25, "-nic", 48.5 * 0.5],  # H100 and CX7 (the defaults)
        "given": [*base, "-nv", 400, "-nic", 40, "--calibration", cal],
        "given rescaled": [*base, "-nv", 100, "-nic", 20],
        "plain": base,
        "NIC only": [*base, "-nic", 48.5 * 0.5],
    }
    got = {name: cli_json(tmp_path, *args)["summary_us"] for name, args in runs.items()}
    assert got["calibrated"] == pytest.approx(got["rescaled"], rel=1e-6)  # bandwidths are f32
    assert got["given"] == pytest.approx(got["given rescaled"], rel=1e-6)
    assert len({json.dumps(got[k]) for k in ("calibrated", "plain", "NIC only")}) == 3


def test_analytical_takes_a_calibration_or_a_busbw_file_not_both(tmp_path, files):
    cal, _ = files
    busbw = DATA.parent.parent / "examples" / "busbw.yaml"
    rc, stdout, stderr = run_clustersim(
        "analytical", "-w", WORKLOAD, "--calibration", cal, "-busbw", busbw, cwd=tmp_path
    )
    assert rc != 0 and stdout == ""
    assert stderr.strip().splitlines() == [
        "clustersim: error: command line: --calibration: rescales the built-in NVLink and NIC"
        f" bandwidths, and -busbw {busbw} replaces them by measured ones: give one of the two"
    ]


def bad(change):
    doc = json.loads(json.dumps(CALIBRATION))
    change(doc)
    return json.dumps(doc, indent=1)


BAD = [
    ("{", ":1: JSON: Expecting property name enclosed in double quotes"),
    ("[]", ":1: document: expected a calibration file ('clustersim-calibration/1')"),
    (bad(lambda d: d.update(format="x")), ":2: format: expected a calibration file"),
    (bad(lambda d: d.update(classes=[])), ":3: classes: expected an object"),
    (
        bad(lambda d: d["classes"].update(nvlink={})),
        ":8: classes: unknown class 'nvlink' (valid: scale-up, scale-out)",
    ),
    (
        bad(lambda d: d["classes"]["scale-out"].update(bandwidth_efficiency=0)),
        ":5: classes.scale-out.bandwidth_efficiency: expected a factor from 1e-6 to 1e6, got 0",
    ),
    (
        bad(lambda d: d["classes"]["scale-out"].pop("latency_factor")),
        ":4: classes.scale-out.latency_factor: expected a number from 0 to 1e6, got None",
    ),
    (
        bad(lambda d: d["collectives"]["allreduce"].update(call_latency_us="fast")),
        ":12: collectives.allreduce.call_latency_us: expected a number from -1e6 to 1e6, got 'fast'",
    ),
    (
        bad(lambda d: d["collectives"].update(gather={})),
        ":14: collectives: unknown collective 'gather' (valid: allreduce, allgather, ",
    ),
]


@pytest.mark.parametrize("text, error", BAD)
def test_bad_calibration_files_name_file_line_and_field(tmp_path, text, error):
    with pytest.raises(InputError) as e:
        parse_calibration(text, "cal.json")
    assert str(e.value).startswith("cal.json" + error), str(e.value)
    path = tmp_path / "cal.json"
    path.write_text(text)
    rc, stdout, stderr = run_clustersim(
        "collective", "allreduce", "-n", CROSSBAR, "--calibration", path, cwd=tmp_path
    )
    assert rc != 0 and stdout == ""
    (line,) = stderr.strip().splitlines()
    assert line.startswith(f"clustersim: error: {path}{error}")


def test_the_calibration_calibrate_writes_is_read_back(tmp_path):
    """A calibration file from a real run on the emulated cluster (tests/data/emulated)."""
    from clustersim.calibration import read_calibration

    cal = read_calibration(DATA / "emulated" / "calibration.json")
    doc = json.loads((DATA / "emulated" / "calibration.json").read_text())
    assert set(cal.classes) == {"scale-out"} and set(cal.collectives) == {
        "allreduce",
        "allgather",
        "alltoall",
    }
    e, k = cal.classes["scale-out"]
    assert (e, k) == (
        doc["classes"]["scale-out"]["bandwidth_efficiency"],
        doc["classes"]["scale-out"]["latency_factor"],
    )
