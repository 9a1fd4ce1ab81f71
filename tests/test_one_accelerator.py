"""One accelerator, one description: `analytical -g_type H100`, `train --gpu h100` and an H100 in a
platform file resolve the same figures, the engine catalog's."""

from __future__ import annotations

import pytest
from clustersim import _engine
from clustersim.catalog import accelerators, lookup
from clustersim.platform import Platform
from clustersim.training import input_document

PLATFORM = """\
node g0 gpu type=H100
node g1 gpu type=h100
node nvs nvswitch
link g0 nvs 900GB/s 100ns
link g1 nvs 900GB/s 100ns
"""


def test_simai_train_and_platform_files_read_the_same_h100():
    h100 = accelerators()["h100"]
    assert (h100["nvlink_busbw"], h100["nvls_busbw"], h100["nic_busbw"]) == (370.8, 475, 48.5)
    # SimAI-Analytical's -g_type H100 (-nic_t cx7): its figures in single precision.
    h100_cx7 = _engine.ServerSpec(gpu_type="H100", nic_type="cx7")
    nvlink, nic = h100_cx7.nvlink_busbw, h100_cx7.nic_busbw
    assert nvlink == pytest.approx(h100["nvlink_busbw"], rel=1e-6) and nic == h100["nic_busbw"]
    # train --gpu h100: the run's document carries the catalog entry and its links.
    doc = input_document("llama3-8b", accelerator="h100", gpus=8, tp=8, gbs=8)
    assert doc["accelerator"] == lookup("accelerators", "h100") == h100
    assert doc["network"]["nvlink_busbw"] == h100["nvlink_busbw"]
    assert (doc["network"]["nvls_busbw"], doc["network"]["nic_busbw"]) == (
        h100["nvls_busbw"],
        h100["nic_busbw"],
    )
    # A platform file's H100 is the catalog's type, whatever its spelling.
    p = Platform.parse("p.platform", PLATFORM)
    assert p.accelerator_types == ["h100", "h100"]


def test_simai_gpu_types_are_catalog_entries():
    catalog = accelerators()
    for g_type in ("A100", "A800", "H100", "H800", "H20"):
        nvlink = _engine.ServerSpec(gpu_type=g_type, nic_type="cx6").nvlink_busbw
        assert nvlink == pytest.approx(catalog[g_type.lower()]["nvlink_busbw"], rel=1e-6), g_type
