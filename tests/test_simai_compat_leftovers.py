"""`--compat simai` on inputs SimAI accepts beyond its reference runs (issue 14, item 4): a world
that TP×PP does not divide, and a busbw file with every overlap ratio. The expected numbers are
derived here from SimAI's code (aliyun/SimAI `astra-sim/workload/Layer.cc`, `system/calbusbw.cc`)
and anchored on SimAI's own 9216-GPU outputs (tests/data/simai/reference)."""

from __future__ import annotations

import math
import struct

import clustersim
import pytest
from conftest import EXAMPLE_BUSBW, EXAMPLE_WORKLOAD, REFERENCE

GIB = 1 << 30


def f32(x: float) -> float:
    """x rounded to single precision, as SimAI's float variables hold it."""
    return struct.unpack("f", struct.pack("f", x))[0]


def wg_rows() -> list[tuple[str, int]]:
    """(weight-gradient communication type, bytes) of the example's rows that have one."""
    rows = EXAMPLE_WORKLOAD.read_text().splitlines()[2:]
    return [(r.split()[9], int(r.split()[10])) for r in rows if r.split()[9] != "NONE"]


def simai_ns(kind: str, size: int, busbw: float, n: int) -> int:
    """Layer::compute_time's closed form, truncated to a Tick (ns); 1 B < S < 1 MiB is a table."""
    if 1 < size < 1 << 20:
        return {2: 10000, 4: 12000, 8: 15000, 16: 66000, 32: 135000, 64: 200000, 128: 320000}.get(n, 0)
    steps = 2 if kind.startswith("ALLREDUCE") else 1
    return math.trunc(size * 1.0 / GIB / busbw * 1e9 * steps * (n - 1) / (n / 1.0))


def reference_summary(name: str) -> list[float]:
    cells = (REFERENCE / name).read_text().splitlines()[1].split(",")[1:]
    return [float(c.split("(")[0]) for c in cells]


def test_g_not_divisible_by_tp_pp_computes_as_simai(run_cli, tmp_path):
    # The bundled example is TP 2 × PP 12 with EP 16; SimAI takes DP = 1024 // 24 = 42 and
    # DP_EP = 42 // 16 = 2 (Layer.cc: all_gpus / (TP·PP), DP_size / EP_size).
    r = clustersim.simulate(
        EXAMPLE_WORKLOAD,
        gpus=1024,
        nvlink_busbw=360,
        nic_busbw=48.5,
        nics_per_server=8,
        gpus_per_server=8,
        compat="simai",
    )
    assert (
        "-g 1024 with TP×PP = 24 and EP 16: computing with DP = ⌊1024/24⌋ = 42 and DP_EP = ⌊42/16⌋ = 2,"
        " as SimAI does" in r.warnings
    )
    # calbusbw.cc's ring bandwidth: DP is 42 nodes of 8/2 GPUs with 8/2 NICs, min(NVLink 360,
    # 4 × 48.5) = 194; DP_EP (TP·EP = 32 > 8) is 2 nodes of 1 GPU with 8/8 NICs, 48.5. No ratio.
    want = {"DP": 0, "DP_EP": 0}
    for kind, size in wg_rows():
        group = "DP_EP" if kind.endswith("_DP_EP") else "DP"
        bw, n = (48.5, 2) if group == "DP_EP" else (194.0, 42)
        want[group] += simai_ns(kind, size, bw, n)
    assert r.summary["exposed_dp_us"] == pytest.approx(want["DP"] / 1000, abs=1e-6)
    assert r.summary["exposed_dp_ep_us"] == pytest.approx(want["DP_EP"] / 1000, abs=1e-6)
    assert (round(r.summary["exposed_dp_us"]), round(r.summary["exposed_dp_ep_us"])) == (39474, 556701)
    # Nothing else depends on the world: TP and EP groups, compute and bubble as SimAI's run at 9216.
    dp, dp_ep, tp, ep, pp, bubble, comp, _, _ = reference_summary("auto-9216-EndToEnd.csv")
    assert [round(r.summary[k]) for k in ("exposed_tp_us", "exposed_ep_us", "bubble_us", "compute_us")] == [
        tp,
        ep,
        bubble,
        comp,
    ]
    parts = ("exposed_dp_us", "exposed_dp_ep_us", "exposed_tp_us", "exposed_ep_us", "bubble_us", "compute_us")
    assert r.summary["total_us"] == pytest.approx(sum(r.summary[k] for k in parts))
    # The CLI: the same numbers, one warning line, exit 0.
    args = ["-w", EXAMPLE_WORKLOAD, "-g", "1024", "-nv", "360", "-nic", "48.5", "-n_p_s", "8", "-g_p_s", "8"]
    rc, _, err = run_cli("analytical", *args, "-r", "g1024-", "--compat", "simai")
    assert rc == 0 and "computing with DP = ⌊1024/24⌋ = 42" in err, err
    summary = (tmp_path / "g1024-EndToEnd.csv").read_text().splitlines()[1]
    assert summary.split(",")[1].strip().startswith("39474 (") and summary.endswith(
        f", {round(r.summary['total_us'])}"
    )


def test_g_not_divisible_by_tp_pp_is_refused_without_compat():
    with pytest.raises(clustersim.InputError, match=r"1024 GPUs are not divisible by TP×PP = 2×12 = 24"):
        clustersim.simulate(EXAMPLE_WORKLOAD, gpus=1024)


def test_busbw_file_with_every_overlap_ratio_follows_simai_d44c48b():
    o = {"dp": 0.5, "tp": 0.3, "ep": 0.2, "pp": 0.5}
    r = clustersim.simulate(
        EXAMPLE_WORKLOAD,
        gpus=9216,
        gpus_per_server=8,
        busbw=EXAMPLE_BUSBW,
        compat="simai",
        dp_overlap=o["dp"],
        tp_overlap=o["tp"],
        ep_overlap=o["ep"],
        pp_overlap=o["pp"],
    )
    plain = clustersim.simulate(
        EXAMPLE_WORKLOAD, gpus=9216, gpus_per_server=8, busbw=EXAMPLE_BUSBW, compat="simai"
    )
    # Without overlaps clustersim writes SimAI's own CSV (test_simai_reference); the ratios only
    # scale exposure: Tick *= (1 - ratio) in float, truncated to whole ns (Layer.cc).
    rows = EXAMPLE_WORKLOAD.read_text().splitlines()[2:]
    want = {"exposed_dp_us": 0, "exposed_dp_ep_us": 0, "exposed_tp_us": 0, "exposed_ep_us": 0}
    for i, row in enumerate(rows):
        ep = row.split()[3].endswith("_EP")  # the fwd collective's group picks the ratio
        for phase in ("fwd", "ig", "wg"):
            total = round(plain.layers[f"{phase} total comm"][i] * 1000)
            assert r.layers[f"{phase} total comm"][i] == plain.layers[f"{phase} total comm"][i]
            ratio = o["dp"] if phase == "wg" else o["ep"] if ep else o["tp"]
            exposed = math.trunc(f32(f32(total) * f32(1 - f32(ratio))))
            assert round(r.layers[f"{phase} exposed comm"][i] * 1000) == exposed, (i, phase)
            key = (
                ("exposed_dp_ep_us" if "_DP_EP" in row.split()[9] else "exposed_dp_us")
                if phase == "wg"
                else ("exposed_ep_us" if ep else "exposed_tp_us")
            )
            want[key] += exposed
    for key, ns in want.items():
        assert r.summary[key] == pytest.approx(ns / 1000, rel=1e-12), key
    # The pipeline term of the busbw-file version: 2·vpp·GA·(pp_comm/2³⁰/PP.busbw·1e9) ns, whole
    # µs, times (1 − pp_o) in float: 2·8·24·(50331648/2³⁰/47.5·1e9)/1000 = 378947 µs → 189473.
    # (SimAI 1.6's formula divides by pp_o instead: 36 000 000 µs × 0.5.)
    header = EXAMPLE_WORKLOAD.read_text().split()
    vpp, ga, pp_comm = (int(header[header.index(k) + 1]) for k in ("vpp:", "ga:", "pp_comm"))
    pp_us = math.trunc(2 * vpp * ga * (pp_comm * 1.0 / GIB / f32(47.5) * 1e9) / 1000.0)
    assert (vpp, ga, pp_comm, pp_us) == (8, 24, 50331648, 378947)
    assert r.summary["exposed_pp_us"] == math.trunc(f32(f32(pp_us) * f32(1 - f32(o["pp"])))) == 189473
    # The bubble counts the undiscounted TP/EP communication (pre_bubble_time), as without ratios.
    assert r.summary["bubble_us"] == plain.summary["bubble_us"]
    parts = [k for k in want] + ["exposed_pp_us", "bubble_us", "compute_us"]
    assert r.summary["total_us"] == pytest.approx(sum(r.summary[k] for k in parts))


def test_busbw_file_needs_pp_busbw_for_pipeline_transfers(tmp_path):
    busbw = tmp_path / "no-pp.yaml"
    busbw.write_text(EXAMPLE_BUSBW.read_text().replace("PP:\nbusbw: 47.5", ""))
    with pytest.raises(clustersim.InputError, match=r"no-pp\.yaml: PP\.busbw: missing .*pp_comm"):
        clustersim.simulate(EXAMPLE_WORKLOAD, gpus=9216, busbw=busbw, compat="simai", pp_overlap=0.5)
