"""Congestion control on the packet backend from the CLI and the API: `--cc`, `--simai-conf` and
`backend="packet:cc=NAME:conf=PATH"` (the closed-form checks of each algorithm are the engine's:
crates/engine/src/network/packet/cc_tests.rs)."""

from __future__ import annotations

import json
from pathlib import Path

import clustersim
import pytest
from conftest import ROOT, run_clustersim

HPCC_CONF = ROOT / "tests" / "data" / "ns3" / "spx16_ar_16m_hpcc" / "SimAI.conf"
# An all-to-all on 16 GPUs of Spectrum-X: 15-way incasts at every NIC, where CC matters.
ARGS = ("collective", "alltoall", "-n", "Spectrum-X:16", "-b", "4M", "-e", "4M", "--backend", "packet")


def time_us(out: str) -> float:
    return json.loads(out)["time_us"][0]


def test_cc_flag_matches_the_api_and_is_recorded(tmp_path):
    code, out, err = run_clustersim(*ARGS, "--cc", "hpcc", "--json", cwd=tmp_path)
    assert code == 0, err
    cli = json.loads(out)
    api = clustersim.collective(
        "alltoall", "Spectrum-X:16", minbytes="4M", maxbytes="4M", backend="packet:cc=hpcc"
    ).to_dict()
    cli["provenance"].pop("command")
    api["provenance"].pop("command")
    assert cli == api and cli["provenance"]["backend"] == "packet:cc=hpcc"


def test_each_cc_gives_its_own_run(tmp_path):
    times = {}
    for cc in ("none", "dcqcn", "hpcc", "timely", "dctcp"):
        code, out, err = run_clustersim(*ARGS, "--cc", cc, "--json", cwd=tmp_path)
        assert code == 0, err
        times[cc] = time_us(out)
    # No congestion control at all is never slower than one that cuts rates below the line.
    assert times["none"] <= min(times.values()) * (1 + 1e-9), times
    # HPCC keeps 5 % of each link spare (U_TARGET 0.95): slower than none, by at most ~10 %.
    assert times["none"] < times["hpcc"] < 1.1 * times["none"], times
    # HPCC and TIMELY act without congestion (utilisation, RTT), each its own way: an ignored
    # --cc would give `none`'s time. DCQCN and DCTCP act on ECN marks only, and nothing is marked
    # here (the incasts of cc_tests.rs and bench_packet_cc.py tell them apart).
    assert len({times["none"], times["hpcc"], times["timely"]}) == 3, times
    assert times["dcqcn"] == times["dctcp"] == times["none"], times


def test_simai_conf_sets_the_cc_and_cc_overrides_it(tmp_path):
    code, out, err = run_clustersim(*ARGS, "--simai-conf", str(HPCC_CONF), "--json", cwd=tmp_path)
    assert code == 0, err
    code, hpcc, err = run_clustersim(*ARGS, "--cc", "hpcc", "--json", cwd=tmp_path)
    assert code == 0, err
    # The scenario's conf is SimAI's shipped file with CC_MODE 3: the same run as --cc hpcc.
    assert time_us(out) == time_us(hpcc)
    code, dcqcn_over, err = run_clustersim(
        *ARGS, "--simai-conf", str(HPCC_CONF), "--cc", "dcqcn", "--json", cwd=tmp_path
    )
    assert code == 0, err
    code, dcqcn, err = run_clustersim(*ARGS, "--json", cwd=tmp_path)
    assert code == 0, err
    assert time_us(dcqcn_over) == time_us(dcqcn)


def test_a_bad_cc_mode_is_a_one_line_error_naming_file_line_and_key(tmp_path: Path):
    conf = tmp_path / "SimAI.conf"
    conf.write_text(HPCC_CONF.read_text().replace("CC_MODE 3", "CC_MODE 5"))
    code, out, err = run_clustersim(*ARGS, "--simai-conf", str(conf), cwd=tmp_path)
    assert code != 0 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and f"{conf}:14: CC_MODE: expected 0 (none), 1 (DCQCN), 3 (HPCC)" in lines[0], err
    with pytest.raises(clustersim.InputError, match="cc: expected none, dcqcn, hpcc, timely or dctcp"):
        clustersim.collective(
            "alltoall", "Spectrum-X:16", minbytes="4M", maxbytes="4M", backend="packet:cc=bbr"
        )


def test_packet_flags_need_the_packet_backend(tmp_path):
    code, _, err = run_clustersim(
        "collective", "alltoall", "-n", "Spectrum-X:16", "--cc", "hpcc", cwd=tmp_path
    )  # fmt: skip
    assert code != 0 and "command line: --cc: applies to --backend packet only" in err
