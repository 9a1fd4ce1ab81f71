"""Kernel tables: `clustersim kernels measure` with the NumPy stand-in end to end, `train --kernels`
replacing the model's time of exactly the kernels a table measures, and bad tables reported as one
line naming file, line and field."""

from __future__ import annotations

import csv

import clustersim
import pytest
from clustersim.api import train
from clustersim.kernel_table import read_table, rows_text
from clustersim.measure.kernels import measure, plan_kernels

# A tiny GPT (2 layers, hidden 256) on one GPU: every kernel times in milliseconds on a CPU.
TINY = [
    "--layers",
    "2",
    "--hidden",
    "256",
    "--heads",
    "4",
    "--ffn",
    "1024",
    "--vocab",
    "1000",
    "--seq",
    "128",
    "--family",
    "gpt",
]
SHAPE = dict(layers=2, hidden=256, heads=4, ffn=1024, vocab=1000, seq=128, family="gpt")


def write_table(path, rows):
    with path.open("w", newline="") as f:
        csv.writer(f).writerows(rows_text(rows))


def test_measure_on_the_cpu_stand_in_writes_a_table_train_then_uses(run_cli, tmp_path):
    code, out, err = run_cli(
        "kernels",
        "measure",
        *TINY,
        "--gpus",
        "1",
        "--gbs",
        "2",
        "--device",
        "cpu",
        "--repeats",
        "1",
        "-o",
        "k.csv",
    )
    assert code == 0, err
    assert "NumPy stand-in: plumbing only, not a GPU measurement" in out
    rows = list(csv.DictReader((tmp_path / "k.csv").open()))
    kernels = plan_kernels(None, gpus=1, gbs=2, **SHAPE)
    # One row per distinct kernel of the iteration, in the engine's order, each timed.
    assert [(r["kernel"], r["shape"], r["dtype"]) for r in rows] == [
        (k.kernel, k.shape, k.dtype) for k in kernels
    ]
    classes = {r["kernel"] for r in rows}
    assert {"gemm", "flash_attention", "flash_attention_bwd", "norm", "norm_bwd", "gelu", "adam"} <= classes
    assert all(r["device"] == "cpu-numpy" and float(r["measured_us"]) > 0 for r in rows)
    # The model's time as the engine gives it (µs, 6 significant digits).
    for r, k in zip(rows, kernels, strict=True):
        assert float(r["model_us"]) == pytest.approx(k.model_s * 1e6, rel=1e-5)
    code, out, err = run_cli("train", *TINY, "--gpus", "1", "--gbs", "2", "--kernels", "k.csv")
    assert code == 0, err
    assert f"{len(rows)} measured (table), 0 modelled" in out


def model_s(kernel: str, shape: str, **options) -> float:
    (k,) = [k for k in plan_kernels(None, **SHAPE, **options) if (k.kernel, k.shape) == (kernel, shape)]
    return k.model_s


@pytest.mark.parametrize("gbs", [1, 3])
def test_a_measured_time_changes_the_iteration_by_its_difference_times_its_uses(tmp_path, gbs):
    # One GPU, no communication: the iteration is the sum of its kernels. The LM head's forward
    # GEMM (128 tokens × 256 by 256 × 1000) runs once per micro-batch, Adam once per iteration.
    plan = dict(gpus=1, gbs=gbs, **SHAPE)
    base = train(None, **plan).iteration_s
    (adam,) = [(k.kernel, k.shape) for k in plan_kernels(None, **plan) if k.kernel == "adam"]
    head = ("gemm", "128x1000x256")
    rows = [
        {"kernel": "gemm", "shape": head[1], "dtype": "bf16", "measured_us": 1000.0, "model_us": 0.0},
        {"kernel": "adam", "shape": adam[1], "dtype": "fp32", "measured_us": 20000.0, "model_us": 0.0},
        # Listed but not measured: the model's time stays.
        {"kernel": "norm", "shape": "128x256", "dtype": "bf16", "measured_us": None, "model_us": 0.0},
    ]
    write_table(tmp_path / "t.csv", rows)
    r = train(None, kernels=tmp_path / "t.csv", **plan)
    want = base + gbs * (1e-3 - model_s(*head, gpus=1, gbs=gbs)) + (20e-3 - model_s(*adam, gpus=1, gbs=gbs))
    assert r.iteration_s == pytest.approx(want, rel=1e-9)
    n = len(plan_kernels(None, **plan))
    assert r.data["kernels"] == {"measured": 2, "modelled": n - 2}
    assert "kernels" not in train(None, **plan).data


GOOD = "kernel,shape,dtype,device,measured_us,model_us\ngemm,128x1000x256,bf16,x,12.5,3\n"


@pytest.mark.parametrize(
    ("text", "where"),
    [
        (GOOD + "conv,3x3,bf16,x,1,1\n", "t.csv:3: kernel: unknown kernel class 'conv'"),
        (
            GOOD + "gemm,128x0x256,bf16,x,1,1\n",
            "t.csv:3: shape: expected positive whole numbers joined by x, got '128x0x256'",
        ),
        (
            GOOD + "gemm,1x2x3,int4,x,1,1\n",
            "t.csv:3: dtype: expected one of bf16, fp16, fp32, fp8, got 'int4'",
        ),
        (GOOD + "gemm,1x2x3,bf16,x,fast,1\n", "t.csv:3: measured_us: expected a time in µs, got 'fast'"),
        (GOOD + "gemm,1x2x3,bf16,x,-1,1\n", "t.csv:3: measured_us: must be a finite time ≥ 0 µs, got '-1'"),
        (GOOD + "gemm,1x2x3,bf16,x,nan,1\n", "t.csv:3: measured_us: must be a finite time ≥ 0 µs, got 'nan'"),
        (
            GOOD + "gemm,128x1000x256,bf16,y,2,1\n",
            "t.csv:3: kernel: gemm 128x1000x256 bf16 is already on line 2",
        ),
        (GOOD + "gemm,1x2x3,bf16\n", "t.csv:3: row: 3 fields, the header has 6"),
        (
            "kernel,shape,dtype,device,model_us\n",
            "t.csv:1: measured_us: missing column (expected kernel,shape,dtype,device,measured_us,model_us)",
        ),
        ("", "t.csv:1: header: empty file (expected kernel,shape,dtype,device,measured_us,model_us)"),
    ],
)
def test_a_bad_table_row_is_one_line_naming_file_line_and_field(run_cli, tmp_path, text, where):
    (tmp_path / "t.csv").write_text(text)
    with pytest.raises(clustersim.InputError) as e:
        read_table(tmp_path / "t.csv")
    assert str(e.value).replace(str(tmp_path) + "/", "") == where
    code, out, err = run_cli("train", *TINY, "--gpus", "1", "--gbs", "1", "--kernels", "t.csv")
    assert code == 2 and out == ""
    assert err.strip() == f"clustersim: error: {where}"


def test_the_good_row_reads_as_the_engine_takes_it(tmp_path):
    (tmp_path / "t.csv").write_text(GOOD + "norm,128x256,bf16,x,,2\n")
    assert read_table(tmp_path / "t.csv") == [
        {"kernel": "gemm", "shape": "128x1000x256", "dtype": "bf16", "ns": 12500.0}
    ]


def test_the_stand_in_leaves_kernels_too_large_for_it_to_the_model(monkeypatch):
    from clustersim.measure.kernels import timing

    # Adam holds 4 arrays of the 2.35 M parameters: above a limit of 4 M elements; the rest is below.
    monkeypatch.setattr(timing, "STAND_IN_ELEMENTS", 4_000_000)
    rows = measure(None, device="cpu", repeats=1, gpus=1, gbs=1, **SHAPE)
    skipped = [r["kernel"] for r in rows if r["measured_us"] is None]
    assert skipped == ["adam"]
    assert rows_text(rows)[-1][4] == ""


def test_cuda_without_a_gpu_is_an_input_error():
    pytest.importorskip("numpy")
    try:
        import torch

        if torch.cuda.is_available():
            pytest.skip("a CUDA device is present")
    except ImportError:
        pass
    with pytest.raises(clustersim.InputError, match="--device cuda: "):
        measure(None, device="cuda", gpus=1, gbs=1, **SHAPE)
