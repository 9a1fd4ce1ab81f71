"""Inputs that used to be accepted silently (issue 29): each is now a one-line error, or a
warning only where the user asked for what is corrected, and an interrupt says what was kept."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time

import clustersim
import pytest
from clustersim.plan import BY_NAME, MAX_COUNT, OPTIONS
from conftest import ROOT


def one_line_error(code: int, out: str, err: str) -> str:
    assert (code, out) == (2, ""), err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err.strip()


@pytest.mark.parametrize("fabric", ["Spectrum-X:0", "DCN+:", "fat-tree:0"])
def test_a_template_of_zero_gpus_is_refused_not_its_default_size(run_cli, fabric):
    # Spectrum-X:0 ran all 4096 GPUs of the template, exit 0; `topo -g 0` refused 0.
    err = one_line_error(*run_cli("collective", "allreduce", "-n", fabric))
    assert (
        err
        == f"clustersim: error: --topology {fabric}: the part after ':' must be a whole number, at least 1"
    )


def test_a_sweep_grid_is_type_checked_against_the_plan_before_any_point_runs(run_cli, tmp_path):
    base = "command: train\nfixed: {model: llama3-8b, gbs: 16, seq: 2048}\ngrid:\n"
    for grid, says in (
        ("  gpus: [8, banana]\n", "s.yaml:4: grid.gpus.1: expected a whole number, got 'banana'"),
        ("  gpus: [8, 0]\n", "s.yaml:4: grid.gpus.1: must be a whole number from 1 to 16777216, got 0"),
        ("  tp: [1, 2.5]\n", "s.yaml:4: grid.tp.1: expected a whole number, got 2.5"),
        ("  zero: [1, 4]\n", "s.yaml:4: grid.zero.1: 4 is not one of 1, 2, 3"),
        ("  sp: [true, maybe]\n", "s.yaml:4: grid.sp.1: expected true or false, got 'maybe'"),
    ):
        (tmp_path / "s.yaml").write_text(base + grid + ("" if "gpus" in grid else "  gpus: [8]\n"))
        err = one_line_error(*run_cli("sweep", "s.yaml"))
        assert err == f"clustersim: error: {says}"
        assert not (tmp_path / "s.sqlite").exists(), "no store: no point ran"


def test_one_limit_one_message(run_cli):
    # The CLI's range is the engine's: "from 1 to 4294967295" then "at most 16777216" no more.
    micro = str(ROOT / "examples" / "microAllReduce.txt")
    for value in ("0", "16777217"):
        err = one_line_error(*run_cli("train", "--model", "llama3-8b", "--gpus", value, "--gbs", "8"))
        assert "must be a whole number from 1 to 16777216, got" in err
        for command in (["analytical", "-w", micro], ["collective", "allreduce", "-n", "Spectrum-X:16"]):
            err = one_line_error(*run_cli(*command, "-g", value))
            assert "must be a whole number from 1 to 16777216, got" in err
    # The plan schema's maxima are the engine's: one past each, the engine names the same number.
    plan = dict(gpus=8, gbs=8, seq=1024, allow_oom=True)
    checked = (
        "gpus",
        "gbs",
        "seq",
        "mbs",
        "vpp",
        "gpus_per_server",
        "layers",
        "hidden",
        "ffn",
        "vocab",
        "experts",
    )
    for name in checked:
        maximum = BY_NAME[name].maximum
        assert maximum < MAX_COUNT, name
        with pytest.raises(clustersim.InputError, match=f"\\b{maximum}\\b"):
            clustersim.train("llama3-8b", **(plan | {name: maximum + 1}))
    assert all(o.maximum <= MAX_COUNT for o in OPTIONS)


def test_a_binary_platform_file_is_one_line_naming_the_file(run_cli, tmp_path):
    (tmp_path / "bin.platform").write_bytes(b"\x00\x01\x02\xff\xfe binary")
    err = one_line_error(
        *run_cli("train", "--model", "llama3-8b", "--gpus", "8", "--gbs", "8", "-n", "bin.platform")
    )
    assert err == (
        "clustersim: error: bin.platform:1: cannot read: not a UTF-8 text file (byte 0xff at offset 3);"
        " a binary file?"
    )


def test_a_hugging_face_config_without_model_type_lists_the_supported_ones(run_cli, tmp_path):
    config = '{"hidden_size": 4096, "num_hidden_layers": 2, "num_attention_heads": 32, "vocab_size": 32000}'
    (tmp_path / "config.json").write_text(config)
    err = one_line_error(*run_cli("train", "--model", "config.json", "--gpus", "8", "--gbs", "8"))
    assert err.startswith("clustersim: error: config.json:1: model_type: missing (supported: deepseek_v2, ")
    assert "llama" in err and "gpt2" in err and "mixtral" in err


def test_ctrl_c_exits_130_and_says_what_was_kept(monkeypatch, capsys):
    from clustersim import api, cli

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(api, "train", interrupted)
    assert cli.main(["train", "--model", "llama3-8b", "--gpus", "8", "--gbs", "8"]) == 130
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "clustersim: interrupted: no result file was written (results are written whole, at the end,"
        " or not at all)\n"
    )


def test_ctrl_c_on_a_sweep_keeps_the_points_stored(tmp_path):
    (tmp_path / "s.yaml").write_text(
        "command: train\nfixed: {model: llama3-8b, gpus: 16, seq: 2048, dist-opt: true}\ngrid:\n"
        "  gbs: [32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448, 480, 512]\n"
        "  tp: [1, 2, 4, 8]\n  mbs: [1, 2]\n"
    )
    command = [sys.executable, "-m", "clustersim", "sweep", "s.yaml"]
    proc = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def stored() -> int:
        try:
            with sqlite3.connect(f"file:{tmp_path / 's.sqlite'}?mode=ro", uri=True) as conn:
                return conn.execute("SELECT COUNT(*) FROM points").fetchone()[0]
        except sqlite3.Error:
            return 0

    deadline = time.monotonic() + 60
    while stored() < 5 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert err.splitlines()[-1] == (
        "clustersim: interrupted: the points simulated so far are kept in s.sqlite; run the same sweep again"
        " to resume"
    )
    assert 5 <= stored() < 128
