"""`clustersim collective` against real NCCL (shared/reference/hardware.md §3–4): bus bandwidth at
≥ 1 GiB within 10 % of nccl-tests measurements, small-message time within 25 % of NCCL's own
tuning-model prediction (tests/nccl_tuning_model.py). Fabrics are described by their hardware's
line rates; benchmarks/bench_nccl.py prints the full table."""

from __future__ import annotations

import pytest
from clustersim.nccl_tests import sweep
from clustersim.topology import simai_template
from nccl_tuning_model import predict_us

GIB = 1 << 30
A100 = {"gpu_type": "A100", "nvlink_bw": "2400Gbps", "bandwidth": "200Gbps"}
H100 = {"gpu_type": "H100", "nvlink_bw": "3600Gbps", "bandwidth": "400Gbps"}


@pytest.mark.parametrize(
    ("fabric", "op", "algorithm", "env", "measured"),
    [
        (dict(gpu=8, gpu_per_server=8, **A100), "allreduce", "auto", {}, 230),
        (dict(gpu=8, gpu_per_server=8, **A100), "allgather", "auto", {}, 230),
        (dict(gpu=8, gpu_per_server=8, **H100), "allreduce", "ring", {}, 370),
        (dict(gpu=8, gpu_per_server=8, **H100), "allreduce", "nvls", {"AS_NVLS_ENABLE": "1"}, 480),
        (dict(gpu=16, gpu_per_server=8, **A100), "allreduce", "auto", {}, 192),
        (dict(gpu=2, gpu_per_server=1, **H100), "allreduce", "auto", {}, 47),
    ],
)
def test_large_messages_reach_what_nccl_tests_measures(fabric, op, algorithm, env, measured):
    t = sweep(simai_template(None, **fabric), op, [GIB, 4 * GIB], algorithm=algorithm, env=env)
    for busbw in t["busbw_GBps"]:
        assert busbw == pytest.approx(measured, rel=0.10)


@pytest.mark.parametrize(
    ("fabric", "op", "nodes", "ppn", "bus"),
    [
        (dict(gpu=8, gpu_per_server=8, **A100), "allreduce", 1, 8, 240),
        (dict(gpu=8, gpu_per_server=8, **A100), "allgather", 1, 8, 240),
        (dict(gpu=8, gpu_per_server=8, **H100), "allreduce", 1, 8, 370.8),
        (dict(gpu=2, gpu_per_server=1, **H100), "allreduce", 2, 1, 50),
    ],
)
def test_small_messages_take_what_nccls_tuning_model_predicts(fabric, op, nodes, ppn, bus):
    sizes = [8, 64, 512, 4096, 32768, 65536]
    t = sweep(simai_template(None, **fabric), op, sizes, env={})
    for size, us in zip(sizes, t["time_us"], strict=True):
        assert us == pytest.approx(predict_us(op, size, nodes, ppn, bus)[0], rel=0.25)


def test_a100_nvlink_is_capped_at_nccls_rate_and_simai_mode_keeps_the_line_rate():
    # 8×A100 described at the 300 GB/s line rate: NCCL's 12 × 20 GB/s carry the data; SimAI's
    # AS_SEND_LAT mode plays the fabric as written.
    topo = simai_template(None, gpu=8, gpu_per_server=8, **A100)
    nccl = sweep(topo, "allgather", [4 * GIB], algorithm="ring", protocol="Simple", env={})
    simai = sweep(topo, "allgather", [4 * GIB], algorithm="ring", env={"AS_SEND_LAT": "0"})
    assert nccl["busbw_GBps"][0] == pytest.approx(240, rel=0.01)
    assert simai["busbw_GBps"][0] == pytest.approx(300, rel=0.01)
