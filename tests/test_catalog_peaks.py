"""An accelerator's peaks are written once, as its per-data-type `tflops` table; the compute
model's GEMM and vector peaks are read from it (bf16, else fp16; fp32)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from clustersim.api import train
from clustersim.catalog import accelerators, lookup

CATALOG = Path(__file__).resolve().parents[1] / "crates" / "engine" / "src" / "catalog" / "accelerators.yaml"

FIELDS = """\
  hbm_gb: 96
  hbm_tbps: 3.0
  nvlink_busbw: 300
  nic_busbw: 48.5
  sms: 100
  gemm_efficiency: 0.7
  hbm_efficiency: 0.8
  attention_efficiency: 0.5
"""


def test_every_shipped_accelerator_has_one_table_and_the_peaks_follow_it():
    # The catalog file (the engine's) writes each peak once, in the table.
    written = yaml.safe_load(CATALOG.read_text())
    for name, entry in accelerators().items():
        assert "matmul_tflops" not in written[name] and "vector_tflops" not in written[name], name
        table, acc = written[name]["tflops"], lookup("accelerators", name)
        assert acc["tflops"] == table
        assert acc["matmul_tflops"] == table.get("bf16", table.get("fp16"))
        assert acc["vector_tflops"] == table["fp32"]
        assert entry == acc
    # The A100 the compute model is calibrated on, and V100 (no bf16: its fp16 tensor peak).
    assert (
        lookup("accelerators", "a100")["matmul_tflops"],
        lookup("accelerators", "v100")["matmul_tflops"],
    ) == (312, 125)


def write(tmp_path, peaks: str):
    path = tmp_path / "gpus.yaml"
    path.write_text("mygpu:\n" + peaks + FIELDS)
    return path


def test_a_user_table_and_the_older_two_peaks_give_the_same_run(tmp_path):
    table = write(tmp_path, "  tflops: {fp32: 30, bf16: 500}\n")
    older = tmp_path / "older.yaml"
    older.write_text("mygpu:\n  matmul_tflops: 500\n  vector_tflops: 30\n" + FIELDS)
    plan = dict(gpus=8, tp=8, gbs=8, seq=2048, gpu="mygpu")
    assert (
        train("llama3-8b", accelerators=table, **plan).data
        == train("llama3-8b", accelerators=older, **plan).data
    )


@pytest.mark.parametrize(
    ("peaks", "message"),
    [
        (
            "  tflops: {fp32: 30, bf16: 500}\n  matmul_tflops: 400\n",
            ":3: matmul_tflops: 400 is not the tflops table's 500",
        ),
        ("  tflops: {fp32: 30, bf17: 500}\n", ":2: tflops: unknown data type 'bf17'"),
        ("  tflops: {fp32: 30}\n", ":2: tflops: needs bf16 or fp16"),
        (
            "  tflops: {fp32: 30, fp16: -1}\n",
            ":2: tflops: fp16: must be a positive number of TFLOP/s, got -1",
        ),
        ("", ":1: tflops: missing in accelerator 'mygpu'"),
    ],
)
def test_bad_peaks_name_file_line_and_field(run_cli, tmp_path, peaks, message):
    path = write(tmp_path, peaks)
    args = ["--model", "llama3-8b", "--gpu", "mygpu", "--accelerators", path, "-g", "8", "--gbs", "8"]
    code, _, err = run_cli("train", *args)
    assert code != 0
    assert len(err.strip().splitlines()) == 1
    assert err.strip().startswith(f"clustersim: error: {path}{message}"), err
