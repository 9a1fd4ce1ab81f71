"""ECMP as the hardware does it: SimAI's DCN+ vs Spectrum-X experiment (seed 000) over ECMP seeds,
queue pairs per connection, spraying, and the per-seed reports of `run` and `collective`."""

from __future__ import annotations

import json

import pytest
from clustersim.errors import InputError
from clustersim.fabric import qps_option
from clustersim.nccl_tests import sweep
from clustersim.topology import simai_template
from test_bad_input import assert_clean_error, assert_no_outputs

MIB = 1 << 20
# Seed 000's workload: TP 8 on 256 GPUs, one all-reduce in the wg column (a DP group per rail).
HEADER = (
    "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 8 ep: 1 pp: 1 vpp: 8 ga: 1 all_gpus: 256 "
    "checkpoints: 0 checkpoint_initiates: 0"
)


def experiment(run_cli, tmp_path, fabric: str, *extra: str, size: int = 64 * MIB) -> dict:
    """`clustersim run` of seed 000's workload on `fabric` (SimAI's gen_Topo_Template commands)."""
    row = f"embedding_layer -1 556000 NONE 0 1 NONE 0 1 ALLREDUCE {size} 1"
    (tmp_path / "w.txt").write_text(f"{HEADER}\n1\n{row}\n")
    flags = {"DCN+": ["-topo", "DCN+", "-g", "256", "-psn", "64", "-bw", "400Gbps"]}
    code, _, err = run_cli("topo", *flags.get(fabric, ["-topo", fabric, "-g", "256"]), "-o", "f.txt")
    assert code == 0, err
    code, out, err = run_cli("run", "-w", "w.txt", "-n", "f.txt", "-r", "o-", "--json", *extra)
    assert code == 0, err
    return json.loads(out)


def test_dcn_pays_for_ecmp_collisions_that_spectrum_x_never_meets(run_cli, tmp_path, monkeypatch):
    monkeypatch.setenv("AS_SEND_LAT", "2")
    spx = experiment(run_cli, tmp_path, "Spectrum-X", "--ecmp-seeds", "8")["ecmp_seeds"]["exposed_dp_us"]
    dcn = experiment(run_cli, tmp_path, "DCN+", "--ecmp-seeds", "8")["ecmp_seeds"]
    # Rail-local rings: no uplink, no hash, no spread.
    assert spx["min"] == spx["max"]
    # DCN+: each rail's ring crosses 4 ToRs; two rings hashed onto one spine run at half rate.
    # A seed is either collision-free (as fast as Spectrum-X but for 2 more hops of delay in
    # each of the 62 steps: 2 %) or about 2×.
    times = [r["exposed_dp_us"] for r in dcn["rows"]]
    assert dcn["exposed_dp_us"]["min"] == pytest.approx(spx["mean"], rel=0.03)
    assert all(t == pytest.approx(min(times), rel=0.01) or t > 1.7 * min(times) for t in times), times
    assert dcn["exposed_dp_us"]["mean"] > 1.4 * spx["mean"]
    # Spraying spreads every ring over all 64 spines: the penalty is gone, whatever the seed.
    sprayed = experiment(run_cli, tmp_path, "DCN+", "--routing", "spray", "--ecmp-seeds", "3")["ecmp_seeds"]
    assert sprayed["exposed_dp_us"]["max"] == pytest.approx(dcn["exposed_dp_us"]["min"], rel=1e-6)


def test_run_reports_each_seed_and_their_statistics(run_cli, tmp_path):
    doc = experiment(run_cli, tmp_path, "DCN+", "--seed", "5", "--ecmp-seeds", "4")
    stats = doc["ecmp_seeds"]
    assert stats["seeds"] == [5, 6, 7, 8]
    totals = [r["total_us"] for r in stats["rows"]]
    assert stats["total_us"] == {
        "mean": pytest.approx(sum(totals) / 4),
        "min": min(totals),
        "max": max(totals),
    }
    # The main result is the first seed's; the CSV has a row per seed, then mean, min, max.
    assert doc["summary_us"]["total_us"] == totals[0]
    rows = [r for r in (tmp_path / "o-seeds.csv").read_text().splitlines() if not r.startswith("# ")]
    assert rows[0].startswith("seed,") and [r.split(",")[0] for r in rows[1:]] == [
        *"5678",
        "mean",
        "min",
        "max",
    ]
    # One seed by default: no seed report.
    assert "ecmp_seeds" not in experiment(run_cli, tmp_path, "DCN+")


def test_more_queue_pairs_dilute_collisions(run_cli, tmp_path, monkeypatch):
    monkeypatch.setenv("AS_SEND_LAT", "2")
    one = experiment(run_cli, tmp_path, "DCN+", "--ecmp-seeds", "6")["ecmp_seeds"]["exposed_dp_us"]
    # 8 QPs of 1/8 of a NIC each: an uplink needs 9 of the 64 crossing flows to slow anyone.
    many = experiment(run_cli, tmp_path, "DCN+", "--qps", "8", "--ecmp-seeds", "6")["ecmp_seeds"][
        "exposed_dp_us"
    ]
    assert many["max"] == pytest.approx(one["min"], rel=1e-6) and one["max"] > 1.7 * one["min"]
    # NCCL_IB_QPS_PER_CONNECTION is --qps's default.
    monkeypatch.setenv("NCCL_IB_QPS_PER_CONNECTION", "8")
    env = experiment(run_cli, tmp_path, "DCN+", "--ecmp-seeds", "6")["ecmp_seeds"]["exposed_dp_us"]
    assert env == many


def test_qps_option_and_its_errors():
    assert qps_option(None, {}) == 1
    assert qps_option(None, {"NCCL_IB_QPS_PER_CONNECTION": "4"}) == 4
    assert qps_option(2, {"NCCL_IB_QPS_PER_CONNECTION": "4"}) == 2
    with pytest.raises(InputError, match="NCCL_IB_QPS_PER_CONNECTION"):
        qps_option(None, {"NCCL_IB_QPS_PER_CONNECTION": "0"})
    # Each QP is a flow of its own: more than NCCL's 128 would only exhaust memory.
    for bad in (0, -1, 129, 2.5, True):
        with pytest.raises(InputError, match="qps: expected a whole number from 1 to 128"):
            qps_option(bad, {})


SEED_MAX = str((1 << 64) - 1)


@pytest.mark.parametrize(
    "args, env, message",
    [
        (["--qps", "0"], {}, "argument --qps: must be a whole number from 1 to 128, got '0'"),
        (["--qps", "-1"], {}, "argument --qps: must be a whole number from 1 to 128, got '-1'"),
        (["--qps", "100000000"], {}, "argument --qps: must be a whole number from 1 to 128"),
        (["--ecmp-seeds", "1000000000"], {}, "argument --ecmp-seeds: must be a whole number from 1 to 1024"),
        (["--routing", "spry"], {}, "argument --routing: invalid choice: 'spry'"),
        (["--seed", "-1"], {}, f"argument --seed: must be a whole number from 0 to {SEED_MAX}, got '-1'"),
        (["--seed", SEED_MAX, "--ecmp-seeds", "2"], {}, f"--ecmp-seeds 2: seeds go past {SEED_MAX}"),
        ([], {"NCCL_IB_QPS_PER_CONNECTION": "abc"}, "NCCL_IB_QPS_PER_CONNECTION: expected a whole number"),
        ([], {"NCCL_IB_QPS_PER_CONNECTION": "4096"}, "from 1 to 128, got '4096'"),
    ],
)
@pytest.mark.parametrize("command", ["collective", "run"])
def test_bad_ecmp_options_are_one_line_errors(run_cli, tmp_path, monkeypatch, command, args, env, message):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    where = {
        "collective": ["collective", "allreduce", "-b", "1M", "-e", "1M", "--topology", "DCN+:16"],
        "run": ["run", "-w", "w.txt", "-n", "f.txt", "-r", "o-"],
    }
    rc, out, err = run_cli(*where[command], *args)
    assert_clean_error(rc, out, err, message)
    assert_no_outputs(tmp_path)


def test_collective_reports_each_seed_then_mean_min_max(run_cli):
    code, out, err = run_cli(
        "collective", "allreduce", "-b", "1M", "-e", "4M", "-f", "4", "--topology", "DCN+:128",
        "--channels", "1", "--ecmp-seeds", "3", "--json",
    )  # fmt: skip
    assert code == 0, err
    t = json.loads(out)
    assert t["seed"] == ["0", "0", "1", "1", "2", "2", "mean", "mean", "min", "min", "max", "max"]
    per_seed = [t["time_us"][i] for i in range(6)]
    small, large = per_seed[0::2], per_seed[1::2]
    assert t["time_us"][6:] == pytest.approx(
        [sum(small) / 3, sum(large) / 3, min(small), min(large), max(small), max(large)]
    )
    # Every row reads as nccl-tests' do: its bandwidths are those of its time, so the min row
    # (the fastest seed) has the highest bus bandwidth, not the lowest.
    columns = (t["size"], t["time_us"], t["algbw_GBps"], t["busbw_GBps"])
    for size, time_us, algbw, busbw in zip(*columns, strict=True):
        assert algbw == pytest.approx(size / (time_us * 1e3), rel=1e-12)
        assert busbw == pytest.approx(algbw * 2 * 127 / 128, rel=1e-12)
    assert t["busbw_GBps"][8:10] == [max(t["busbw_GBps"][0:6:2]), max(t["busbw_GBps"][1:6:2])]
    # The Python API gives the same rows seed by seed.
    for seed in range(3):
        one = sweep("DCN+:128", "allreduce", [MIB, 4 * MIB], channels=1, seed=seed, env={})
        assert one["time_us"] == pytest.approx(per_seed[2 * seed : 2 * seed + 2], rel=1e-12)


def test_spraying_is_refused_by_name_when_misspelt():
    with pytest.raises(InputError, match="routing"):
        sweep(simai_template("DCN+", gpu=64), "allreduce", [MIB], routing="spry", env={})
