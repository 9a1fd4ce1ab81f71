"""The model against Narayanan et al. 2021's measured trade-offs (arXiv 2104.04473 §5.3–§5.5, Fig.
12–16; benchmarks/narayanan_tradeoffs.py simulates them as the paper's scripts ran them). The
orders are the paper's text; the values are readings off its figures (about ±5 TFLOP/s, see the
benchmark's docstring), checked where the model agrees with them. Where it does not, a strict
xfail holds the gap."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

# The benchmark's simulation of each figure's runs, loaded from its file.
_SPEC = importlib.util.spec_from_file_location(
    "narayanan_tradeoffs", Path(__file__).resolve().parents[1] / "benchmarks" / "narayanan_tradeoffs.py"
)
_BENCH = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(_BENCH)
ROWS = _BENCH.rows()


def figure(fig: str, gbs: int | None = None) -> list[dict]:
    return [r for r in ROWS if r["figure"] == fig and (gbs is None or int(r["gbs"]) == gbs)]


def tflops(r: dict) -> float:
    return r["run"]["tflops"]


def within(r: dict, tolerance: float) -> bool:
    return abs(tflops(r) / float(r["tflops_per_gpu"]) - 1) <= tolerance


@pytest.mark.parametrize("gbs", [32, 128])
def test_fig13_peaks_at_tp_8_the_gpus_of_a_server(gbs):
    # §5.4.1: "we see peak performance when the tensor-parallel size is equal to the number of
    # GPUs in a single node"; the throughput falls on either side of (PP 8, TP 8).
    by_pp = sorted(figure("13", gbs), key=lambda r: int(r["pp"]))
    speeds = [tflops(r) for r in by_pp]
    peak = speeds.index(max(speeds))
    assert by_pp[peak]["tp"] == "8", speeds
    assert speeds[:peak] == sorted(speeds[:peak]) and speeds[peak:] == sorted(speeds[peak:], reverse=True)
    # At micro-batch 1 with TP the model runs fast (also Fig. 16's MBS 1): +12 % at the peak.
    assert within(by_pp[peak], 0.15), tflops(by_pp[peak])


@pytest.mark.parametrize("gbs", [32, 512])
def test_fig14_throughput_falls_as_pp_replaces_dp(gbs):
    # §5.4.2: "for each batch size, the throughput decreases as the pipeline-parallel size increases".
    by_pp = sorted(figure("14", gbs), key=lambda r: int(r["pp"]))
    speeds = [tflops(r) for r in by_pp]
    assert speeds == sorted(speeds, reverse=True)
    assert all(within(r, 0.08) for r in by_pp if r["tflops_per_gpu"]), speeds


@pytest.mark.parametrize("gbs", [32, 128, 512])
def test_fig15_throughput_falls_as_tp_replaces_dp(gbs):
    # §5.4.3: TP's communication for every micro-batch, across servers beyond TP 8, and its smaller
    # GEMMs lower the throughput as TP grows.
    by_tp = sorted(figure("15", gbs), key=lambda r: int(r["tp"]))
    speeds = [tflops(r) for r in by_tp]
    assert speeds == sorted(speeds, reverse=True)


@pytest.mark.xfail(strict=True, reason="model 16-41 % fast on Fig. 15 (TP at micro-batch 1); see RESULTS.md")
def test_fig15_values():
    assert all(within(r, 0.10) for r in figure("15") if r["tflops_per_gpu"])


@pytest.mark.xfail(strict=True, reason="model: TP 2 x DP 32 80 TFLOP/s vs PP 2 x DP 32 61; measured 58 vs 62")
def test_fig14_and_15_pp_2_beats_tp_2_at_batch_32():
    # The same 5.9B model, split in two by PP (Fig. 14) or by TP (Fig. 15), DP 32: measured PP 2
    # ahead at every batch (62 vs 58 at batch 32, 148 vs 128 at 512).
    (pp2,) = [r for r in figure("14", 32) if r["pp"] == "2"]
    (tp2,) = [r for r in figure("15", 32) if r["tp"] == "2"]
    assert tflops(pp2) > tflops(tp2)


def test_fig12_interleaving_wins_and_its_gain_shrinks_with_the_batch():
    # §5.3.2: the interleaved schedule is faster; "this gap closes as the batch size increases".
    gains = []
    for gbs in (12, 24, 36, 48, 60):
        plain, inter = sorted(figure("12", gbs), key=lambda r: int(r["vpp"]))
        gains.append(tflops(inter) / tflops(plain))
        assert within(plain, 0.08) and within(inter, 0.08), (tflops(plain), tflops(inter))
    assert all(g > 1 for g in gains) and gains == sorted(gains, reverse=True), gains


@pytest.mark.xfail(strict=True, reason="model picks micro-batch 1 at batch 128 (by 3.4 %); see RESULTS.md")
def test_fig16_best_micro_batch_is_2():
    # §5.5: "the best microbatch size is 2 for this model".
    for gbs in (128, 512):
        best = max(figure("16", gbs), key=tflops)
        assert best["mbs"] == "2", gbs
