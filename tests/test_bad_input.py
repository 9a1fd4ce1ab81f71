"""Bad input: one clean line on stderr ("clustersim: error: FILE:LINE: FIELD: …"), exit code 2,
no traceback, and no result files left behind."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import EXAMPLE_BUSBW, RATIO_DIR

HEADER = (
    "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 2 ep: 1 pp: 1 vpp: 2 ga: 1 all_gpus: 16 "
    "checkpoints: 0 checkpoint_initiates: 0 pp_comm: 0"
)
ROW_TP = "attention_column -1 1000 ALLREDUCE 1048576 1000 ALLREDUCE 1048576 1000 NONE 0 100"
ROW_DP = "mlp -1 1000 NONE 0 1000 NONE 0 1000 ALLREDUCE 1048576 100"


def workload(header=HEADER, count="2", rows=(ROW_TP, ROW_DP)):
    return "\n".join([header, count, *rows]) + "\n"


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def assert_clean_error(rc, out, err, *parts):
    """Exit 2, nothing on stdout, exactly one stderr line with the prefix and every `part`."""
    assert rc == 2, f"exit code {rc}, stderr: {err}"
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got:\n{err}"
    line = lines[0]
    assert line.startswith("clustersim: error: "), line
    for part in parts:
        assert part in line, f"{part!r} not in {line!r}"
    # "FILE:LINE: FIELD: message" - a field named with its header colon would print "FIELD::".
    assert "::" not in line, line
    assert out == ""
    return line


def assert_no_outputs(folder):
    left = [
        p.name for p in folder.rglob("*") if "EndToEnd" in p.name or "summary" in p.name or p.suffix == ".tmp"
    ]
    assert not left, f"files left behind: {left}"


def simulate(run_cli, path, *flags):
    return run_cli("analytical", "-w", path, "-r", "out/run-", *flags)


def test_good_base_workload_runs(run_cli, tmp_path):
    """The files below differ from this one in one place only, so each error has one cause."""
    path = write(tmp_path, "good.txt", workload())
    rc, _, err = simulate(run_cli, path, "-g", "16")
    assert rc == 0, err
    assert (tmp_path / "out" / "run-EndToEnd.csv").is_file()
    rc, _, err = run_cli("workload", "check", path)
    assert rc == 0, err


WORKLOAD_ERRORS = {
    # name: (file text, parts the message must contain besides the file name)
    "unknown-policy": (
        workload(header=HEADER.replace("HYBRID_TRANSFORMER_FWD_IN_BCKWD", "HYBRID_FOO")),
        [":1:", "HYBRID_FOO", "HYBRID_TRANSFORMER_FWD_IN_BCKWD", "MICRO"],
    ),
    "unknown-key": (workload(header=HEADER + " colour: 3"), [":1:", "colour"]),
    "tp-zero": (
        workload(header=HEADER.replace("model_parallel_NPU_group: 2", "model_parallel_NPU_group: 0")),
        [":1:", "model_parallel_NPU_group"],
    ),
    "missing-value-at-end": (workload(header=HEADER.replace("pp_comm: 0", "pp_comm:")), [":1:", "pp_comm"]),
    "missing-value-in-middle": (workload(header=HEADER.replace("ga: 1", "ga:")), [":1:", "ga"]),
    "not-a-number": (workload(header=HEADER.replace("pp: 1", "pp: one")), [":1:", "pp", "one"]),
    "astra-sim-policy": (
        workload(header=HEADER.replace("HYBRID_TRANSFORMER_FWD_IN_BCKWD", "HYBRID_DLRM")),
        [":1:", "HYBRID_DLRM"],
    ),
    "pp-comm-fraction": (
        workload(header=HEADER.replace("pp_comm: 0", "pp_comm: 1.5")),
        [":1:", "pp_comm", "1.5"],
    ),
    "pp-comm-not-a-number": (
        workload(header=HEADER.replace("pp_comm: 0", "pp_comm: abc")),
        [":1:", "pp_comm", "abc"],
    ),
    "checkpoint-count-not-a-number": (
        workload(header=HEADER.replace("checkpoints: 0", "checkpoints: x")),
        [":1:", "checkpoints", "'x'"],
    ),
    "depen-not-a-number": (workload(rows=(ROW_TP, ROW_DP.replace("-1", "x", 1))), [":4:", "depen", "'x'"]),
    "fractional-compute": (
        workload(rows=(ROW_TP.replace("-1 1000", "-1 1.5"), ROW_DP)),
        [":3:", "fwd_compute", "1.5"],
    ),
    "row-count-too-high": (workload(count="3"), [":2:", "rows", "3"]),
    "row-count-too-low": (workload(count="1"), [":2:", "rows"]),
    "row-count-not-a-number": (workload(count="two"), [":2:", "rows", "two"]),
    "row-with-11-fields": (workload(rows=(ROW_TP, ROW_DP.rsplit(" ", 1)[0])), [":4:", "12", "11"]),
    "row-with-13-fields": (workload(rows=(ROW_TP, ROW_DP + " 7")), [":4:", "12", "13"]),
    "unknown-collective": (
        workload(rows=(ROW_TP.replace("ALLREDUCE", "ALLSUM", 1), ROW_DP)),
        [":3:", "fwd_comm", "ALLSUM"],
    ),
    "negative-size": (workload(rows=(ROW_TP, ROW_DP.replace("1048576", "-5"))), [":4:", "wg_size", "-5"]),
    "negative-compute": (
        workload(rows=(ROW_TP.replace("-1 1000", "-1 -1000"), ROW_DP)),
        [":3:", "fwd_compute", "-1000"],
    ),
    "negative-ig-compute": (
        workload(rows=(ROW_TP, ROW_DP.replace("NONE 0 1000 NONE", "NONE 0 -7 NONE"))),
        [":4:", "ig_compute"],
    ),
}


@pytest.mark.parametrize("case", list(WORKLOAD_ERRORS))
def test_bad_workload_analytical(run_cli, tmp_path, case):
    text, parts = WORKLOAD_ERRORS[case]
    path = write(tmp_path, f"bad-{case}.txt", text)
    rc, out, err = simulate(run_cli, path, "-g", "16")
    assert_clean_error(rc, out, err, f"bad-{case}.txt", *parts)
    assert_no_outputs(tmp_path)


@pytest.mark.parametrize("case", list(WORKLOAD_ERRORS))
def test_bad_workload_check(run_cli, tmp_path, case):
    text, parts = WORKLOAD_ERRORS[case]
    path = write(tmp_path, f"bad-{case}.txt", text)
    rc, out, err = run_cli("workload", "check", path, "--json")
    assert_clean_error(rc, out, err, f"bad-{case}.txt", *parts)
    rc, out, err = run_cli("workload", "rewrite", path, "-o", "out/rewritten.txt")
    assert_clean_error(rc, out, err, f"bad-{case}.txt", *parts)
    assert not (tmp_path / "out" / "rewritten.txt").exists()


@pytest.mark.parametrize(
    ("header_change", "flags", "parts"),
    [
        # TP×PP = 8 does not divide 100 GPUs.
        (("model_parallel_NPU_group: 2", "model_parallel_NPU_group: 8"), ["-g", "100"], ["100", "8"]),
        # 12 GPUs: divisible by TP×PP = 2, not a whole number of 8-GPU servers.
        (None, ["-g", "12", "-g_p_s", "8"], ["12", "8"]),
        # EP 3 does not divide DP = 16 / 2 = 8.
        (("ep: 1", "ep: 3"), ["-g", "16"], ["ep", "3", "8"]),
    ],
    ids=["gpus-not-divisible-by-tp-pp", "gpus-not-whole-servers", "ep-does-not-divide-dp"],
)
def test_bad_parallel_plan(run_cli, tmp_path, header_change, flags, parts):
    header = HEADER.replace(*header_change) if header_change else HEADER
    path = write(tmp_path, "plan.txt", workload(header=header))
    rc, out, err = simulate(run_cli, path, *flags)
    assert_clean_error(rc, out, err, "plan.txt", *parts)
    assert_no_outputs(tmp_path)


def busbw_variant(tmp_path, name, old=None, new=None):
    """A copy of the example busbw.yaml named `name`, with `old` replaced by `new` once."""
    text = EXAMPLE_BUSBW.read_text()
    if old is not None:
        assert old in text
        text = text.replace(old, new, 1)
    return write(tmp_path, name, text)


def test_busbw_null_entry_needed(run_cli, tmp_path):
    """The example busbw.yaml has DP allreduce: null; ROW_DP has a wg (DP) ALLREDUCE."""
    path = write(tmp_path, "dp.txt", workload())
    busbw = busbw_variant(tmp_path, "my-busbw.yaml")
    rc, out, err = simulate(run_cli, path, "-g", "16", "-busbw", busbw)
    assert_clean_error(rc, out, err, "my-busbw.yaml", "DP.allreduce", "null")
    assert_no_outputs(tmp_path / "out")


def test_busbw_error_names_the_file_once(run_cli, tmp_path):
    path = write(tmp_path, "dp.txt", workload())
    rc, out, err = simulate(run_cli, path, "-g", "16", "-busbw", EXAMPLE_BUSBW)
    line = assert_clean_error(rc, out, err, "DP.allreduce")
    assert line.startswith(f"clustersim: error: {EXAMPLE_BUSBW}: DP.allreduce"), line
    assert line.count("busbw.yaml") == 1, f"file name repeated: {line}"


def test_busbw_missing_entry_needed(run_cli, tmp_path):
    path = write(tmp_path, "tp.txt", workload())
    busbw = busbw_variant(tmp_path, "no-tp-allreduce.yaml", "allreduce,: 300\n", "")
    rc, out, err = simulate(run_cli, path, "-g", "16", "-busbw", busbw)
    assert_clean_error(rc, out, err, "no-tp-allreduce.yaml", "TP.allreduce")
    assert_no_outputs(tmp_path / "out")


def test_busbw_not_needed_entry_may_be_null(run_cli, tmp_path):
    """Only entries the workload uses must be set: TP-only traffic runs with the example file."""
    path = write(tmp_path, "tp.txt", workload(rows=(ROW_TP,), count="1"))
    rc, _, err = simulate(run_cli, path, "-g", "16", "-busbw", EXAMPLE_BUSBW)
    assert rc == 0, err


def test_busbw_non_numeric_value(run_cli, tmp_path):
    path = write(tmp_path, "tp.txt", workload())
    busbw = busbw_variant(tmp_path, "typo.yaml", "allreduce,: 300", "allreduce,: 3x0")
    rc, out, err = simulate(run_cli, path, "-g", "16", "-busbw", busbw)
    assert_clean_error(rc, out, err, "typo.yaml", ":3:", "TP.allreduce", "3x0")
    assert_no_outputs(tmp_path / "out")


def test_busbw_file_missing(run_cli, tmp_path):
    path = write(tmp_path, "tp.txt", workload())
    rc, out, err = simulate(run_cli, path, "-g", "16", "-busbw", tmp_path / "nowhere.yaml")
    assert_clean_error(rc, out, err, "nowhere.yaml")
    assert_no_outputs(tmp_path)


def test_nonexistent_workload(run_cli, tmp_path):
    rc, out, err = simulate(run_cli, tmp_path / "missing.txt", "-g", "16")
    assert_clean_error(rc, out, err, "missing.txt")
    assert_no_outputs(tmp_path)
    rc, out, err = run_cli("workload", "check", tmp_path / "missing.txt")
    assert_clean_error(rc, out, err, "missing.txt")


def test_unreadable_workload_directory(run_cli, tmp_path):
    (tmp_path / "a-folder.txt").mkdir()
    rc, out, err = simulate(run_cli, tmp_path / "a-folder.txt", "-g", "16")
    assert_clean_error(rc, out, err, "a-folder.txt")
    assert_no_outputs(tmp_path)


def test_binary_workload(run_cli, tmp_path):
    path = tmp_path / "binary.txt"
    path.write_bytes(b"\xff\xfe\x00\x81garbage\n")
    rc, out, err = simulate(run_cli, path, "-g", "16")
    assert_clean_error(rc, out, err, "binary.txt")
    assert_no_outputs(tmp_path)


def test_unknown_gpu_type(run_cli, tmp_path):
    path = write(tmp_path, "ok.txt", workload())
    rc, out, err = simulate(run_cli, path, "-g", "16", "-g_type", "Z100")
    assert_clean_error(rc, out, err, "Z100", "g_type", "A100", "A800", "H100", "H800", "H20")
    assert_no_outputs(tmp_path)


def test_unwritable_output_location(run_cli, tmp_path):
    """-r points below a regular file: the output folder cannot be created."""
    path = write(tmp_path, "ok.txt", workload())
    (tmp_path / "blocker").write_text("a file, not a folder\n")
    rc, out, err = run_cli("analytical", "-w", path, "-g", "16", "-r", "blocker/sub/run-")
    assert_clean_error(rc, out, err, "blocker")
    assert (tmp_path / "blocker").read_text() == "a file, not a folder\n"
    assert_no_outputs(tmp_path)


def test_unwritable_rewrite_output(run_cli, tmp_path):
    path = write(tmp_path, "ok.txt", workload())
    (tmp_path / "blocker").write_text("x")
    rc, out, err = run_cli("workload", "rewrite", path, "-o", "blocker/out.txt")
    assert_clean_error(rc, out, err, "blocker")


def test_output_file_name_taken_by_a_folder(run_cli, tmp_path):
    """<prefix>summary.json exists as a folder: a clean error, and the CSV is not left half-done."""
    path = write(tmp_path, "ok.txt", workload())
    (tmp_path / "out" / "run-summary.json").mkdir(parents=True)
    rc, out, err = simulate(run_cli, path, "-g", "16")
    assert_clean_error(rc, out, err, "run-summary.json")
    assert not (tmp_path / "out" / "run-EndToEnd.csv").exists(), "outputs must appear together or not at all"
    assert not list((tmp_path / "out").glob(".*.tmp"))


def test_rewrite_output_is_a_folder(run_cli, tmp_path):
    path = write(tmp_path, "ok.txt", workload())
    (tmp_path / "a-folder").mkdir()
    rc, out, err = run_cli("workload", "rewrite", path, "-o", "a-folder")
    assert_clean_error(rc, out, err, "a-folder")


@pytest.mark.parametrize("folder", [".", "./", "..", "/"])
def test_output_that_names_a_folder_by_no_name(run_cli, tmp_path, folder):
    """-o . (or .., /): a folder, named without a last component; a clean error, nothing written."""
    path = write(tmp_path, "ok.txt", workload())
    rc, out, err = run_cli("workload", "rewrite", path, "-o", folder)
    message = f"{Path(folder)}: cannot write the result: a folder of that name is in the way"
    assert_clean_error(rc, out, err, message)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ok.txt"]


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_a_file_that_cannot_be_written_is_named_as_given(run_cli, tmp_path):
    """The error names the user's path, not the staged copy the write went to."""
    path = write(tmp_path, "ok.txt", workload())
    rc, out, err = run_cli("workload", "rewrite", path, "-o", "/proc/clustersim-out.txt")
    assert_clean_error(rc, out, err, "/proc/clustersim-out.txt: cannot write: ")
    assert ".tmp" not in err


def test_empty_workload(run_cli, tmp_path):
    path = write(tmp_path, "empty.txt", "")
    rc, out, err = simulate(run_cli, path, "-g", "16")
    assert_clean_error(rc, out, err, "empty.txt")
    assert_no_outputs(tmp_path)


def test_micro_needs_gpu_count(run_cli, tmp_path):
    path = write(tmp_path, "micro.txt", "MICRO\n1\nmicro_test -1 1 NONE 0 1 NONE 0 1 ALLREDUCE 4096 1\n")
    rc, out, err = simulate(run_cli, path)
    assert_clean_error(rc, out, err, "micro.txt", "-g")
    assert_no_outputs(tmp_path)
    rc, _, err = simulate(run_cli, path, "-g", "16")
    assert rc == 0, err


@pytest.mark.parametrize(
    ("flags", "parts"),
    [
        (["-g", "0"], ["gpus"]),
        (["-g", "16", "-g_p_s", "0"], ["g_p_s"]),
        (["-g", "16", "-nv", "-5"], ["nv", "-5"]),
        (["-g", "16", "-nic", "0"], ["nic"]),
        (["-g", "16", "-dp_o", "1.5"], ["dp_o", "1.5"]),
        (["-g", "16", "-nic_t", "cx9"], ["nic_t", "cx9", "cx6", "cx7", "bf3"]),
    ],
    ids=["zero-gpus", "zero-gpus-per-server", "negative-nvlink", "zero-nic", "overlap-above-1", "nic-type"],
)
def test_bad_command_line_values(run_cli, tmp_path, flags, parts):
    path = write(tmp_path, "ok.txt", workload())
    rc, out, err = simulate(run_cli, path, *flags)
    assert_clean_error(rc, out, err, *parts)
    assert_no_outputs(tmp_path)


def test_absurd_counts_are_errors_not_aborts(run_cli, tmp_path):
    # Counts are user input: they must not become allocation sizes.
    path = write(
        tmp_path, "ck.txt", workload(header=HEADER.replace("checkpoints: 0", "checkpoints: 99999999999"))
    )
    assert_clean_error(*run_cli("workload", "check", path), "ck.txt:1: checkpoints:")
    path = write(tmp_path, "rows.txt", workload(count="1000000000000"))
    assert_clean_error(*run_cli("workload", "check", path), "rows.txt:2: rows:")


def test_tp_times_pp_does_not_overflow(run_cli, tmp_path):
    header = HEADER.replace("model_parallel_NPU_group: 2", "model_parallel_NPU_group: 65536").replace(
        "pp: 1", "pp: 65537"
    )
    path = write(tmp_path, "huge.txt", workload(header=header))
    assert_clean_error(*simulate(run_cli, path, "-g", "65536", "-g_p_s", "65536"), "huge.txt: gpus:")
    assert_no_outputs(tmp_path)


def test_tp_group_may_not_straddle_servers(run_cli, tmp_path):
    header = HEADER.replace("model_parallel_NPU_group: 2", "model_parallel_NPU_group: 4")
    path = write(tmp_path, "tp4.txt", workload(header=header))
    assert_clean_error(*simulate(run_cli, path, "-g", "12", "-g_p_s", "6"), "model_parallel_NPU_group")


def test_ratio_table_with_a_non_finite_cell(run_cli, tmp_path):
    folder = tmp_path / "ratios"
    folder.mkdir()
    for name in ("nvlink_ratio.csv", "nic_ratio.csv", "ata_ratio.csv"):
        (folder / name).write_text((RATIO_DIR / name).read_text())
    nic = folder / "nic_ratio.csv"
    lines = nic.read_text().splitlines()
    lines[1] = lines[1].replace("16777216,0.45", "16777216,inf")
    nic.write_text("\n".join(lines) + "\n")
    path = write(tmp_path, "good.txt", workload())
    rc, out, err = simulate(run_cli, path, "-g", "16", "--ratio-dir", folder, "--compat", "simai")
    assert_clean_error(rc, out, err, "nic_ratio.csv:2:")
    assert_no_outputs(tmp_path)
