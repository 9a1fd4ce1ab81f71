"""A straggler in a synchronous TP × DP iteration (issue 31, faults inside an iteration): what the
synchronisation predicts, checked on the simulator.

A GPU 5 % slower makes every kernel it runs 5 % longer. Its TP group's collectives (every layer)
wait for it, so the group runs at its pace; the data-parallel ring all-reduce at the end starts
when the last group arrives and then takes its usual time (each ring step waits for its slowest
member, and the communication itself is not slower). Closed form, with C the compute time of the
iteration and no overlap of compute with the DP ring:

    T_straggler = T + 0.05 · C,  the same as every GPU 5 % slower.

The heterogeneous mix (`--gpu A:n,B:m`) runs each TP group on one accelerator type, so the slow
GPU is given as its TP group of 8 on a slower type: by the first step of the argument, the same
pace. The slower type is H100 with every peak and bandwidth divided by 1.05 and every fixed kernel
cost multiplied by 1.05."""

from __future__ import annotations

import pytest
import yaml
from clustersim import _engine, train

SLOWDOWN = 1.05
PLAN = dict(gpus=1024, tp=8, gbs=128, seq=2048, sp=True)  # DP 128, one micro-batch each


@pytest.fixture
def slow_h100(tmp_path):
    h100 = _engine.catalog_accelerators()["h100"]
    slow = {k: v for k, v in h100.items() if k != "name"}
    slow["tflops"] = {t: v / SLOWDOWN for t, v in h100["tflops"].items()}
    for field in ("matmul_tflops", "vector_tflops", "hbm_tbps"):
        slow[field] = h100[field] / SLOWDOWN
    for field in ("kernel_overhead_ns", "gemm_fill_drain_ns"):
        slow[field] = h100[field] * SLOWDOWN
    path = tmp_path / "slow.yaml"
    path.write_text(yaml.safe_dump({"h100-slow": slow}))
    return str(path)


def test_one_slow_tp_group_among_1024_gpus_paces_the_iteration(slow_h100):
    base = train("llama3-8b", **PLAN)
    straggler = train("llama3-8b", gpu="h100:1016,h100-slow:8", accelerators=slow_h100, **PLAN)
    all_slow = train("llama3-8b", gpu="h100-slow", accelerators=slow_h100, **PLAN)
    compute = base.breakdown_s["compute"]
    # The slow type's kernels are 5 % longer: its compute is.
    assert all_slow.breakdown_s["compute"] == pytest.approx(SLOWDOWN * compute, rel=1e-9)
    # One slow group sets the pace of all 128: the iteration is the all-slow one.
    assert straggler.iteration_s == pytest.approx(all_slow.iteration_s, rel=1e-12)
    # The DP ring is not slower, it starts later: its exposed time is unchanged.
    assert straggler.breakdown_s["exposed DP comm"] == pytest.approx(
        base.breakdown_s["exposed DP comm"], rel=1e-12
    )
    # T + 0.05·C, within 0.1 % of the iteration (the TP collectives' own small kernels differ).
    assert straggler.iteration_s == pytest.approx(base.iteration_s + (SLOWDOWN - 1) * compute, rel=1e-3)
    assert straggler.iteration_s > base.iteration_s + 0.9 * (SLOWDOWN - 1) * compute


def test_one_gpu_5_percent_slower_among_1024_paces_the_iteration(slow_h100):
    # --slow-gpus slows one rank, not a TP group's type: its TP group waits for it at every
    # layer, the DP ring for its group, so the iteration is the one with every GPU 5 % slower,
    # T + 0.05·C (within 0.1 %, as above: with SP a little TP communication overlaps compute).
    base = train("llama3-8b", **PLAN)
    one = train("llama3-8b", slow_gpus=f"517:{SLOWDOWN}", **PLAN)
    all_slow = train("llama3-8b", gpu="h100-slow", accelerators=slow_h100, **PLAN)
    assert one.iteration_s == pytest.approx(all_slow.iteration_s, rel=1e-12)
    compute = base.breakdown_s["compute"]
    assert one.iteration_s == pytest.approx(base.iteration_s + (SLOWDOWN - 1) * compute, rel=1e-3)
    # The slow rank is the busiest: the headline breakdown is its, with its longer compute.
    assert one.breakdown_s["compute"] == pytest.approx(SLOWDOWN * compute, rel=1e-9)


def test_bad_slow_gpus_are_one_line_errors_naming_the_item(run_cli):
    code, _, err = run_cli(
        "train", "--model", "llama3-8b", "--gpus", "16", "--tp", "8", "--gbs", "2", "--slow-gpus", "16:1.05"
    )
    assert code != 0
    assert err.strip().count("\n") == 0 and "slow_gpus item 1 (16:1.05)" in err and "outside" in err, err
