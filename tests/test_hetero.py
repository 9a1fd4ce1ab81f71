"""Heterogeneous training jobs (`train --gpu h100:N,a100:M`) and the coherent ring all-reduce
(`--algo coherent_ring`, HCSim §3.3), seen from the API and the CLI."""

from __future__ import annotations

import json

import pytest
from clustersim.api import train
from clustersim.errors import InputError

PLAN = dict(gpus=32, tp=8, gbs=32, seq=2048)


def test_a_homogeneous_mix_is_the_plain_run():
    plain = train("llama3-8b", gpu="h100", **PLAN)
    for gpu in ("h100:32", "h100:8,h100:24"):
        mixed = train("llama3-8b", gpu=gpu, **PLAN)
        data = dict(mixed.data)
        (use,) = data.pop("per_type")
        assert (use["accelerator"], use["gpus"], use["mfu"]) == ("h100", 32, plain.mfu)
        # One stage: its compute over the iteration.
        compute = dict(plain.data["stages"][0]["breakdown_s"])["compute"]
        assert use["busy"] == pytest.approx(compute / plain.iteration_s, rel=1e-12)
        for s in data["stages"]:
            assert s.pop("accelerator") == "h100"
        assert data.pop("breakdown_accelerator") == "h100"
        assert data == plain.data


def test_a_data_parallel_mix_runs_at_the_slower_types_pace():
    # Four TP groups in data parallelism: two on H100s, two on A100s. Every gradient reduction
    # waits for the A100s, whose timeline is then the all-A100 run's; the network is the
    # slower type's (A100 NVLink and NIC figures) in both.
    a100 = train("llama3-8b", gpu="a100", **PLAN)
    mixed = train("llama3-8b", gpu="h100:16,a100:16", **PLAN)
    assert mixed.iteration_s == pytest.approx(a100.iteration_s, rel=1e-9)
    h, a = mixed.data["per_type"]
    assert (h["accelerator"], h["gpus"], a["accelerator"], a["gpus"]) == ("h100", 16, "a100", 16)
    assert a["mfu"] == pytest.approx(a100.mfu, rel=1e-9)
    # The same FLOPs at 989 rather than 312 TFLOP/s: the H100s' MFU is the A100s' × 312/989,
    # and they idle most of the iteration.
    assert h["mfu"] == pytest.approx(a100.mfu * 312 / 989, rel=1e-9)
    assert h["busy"] < a["busy"]
    assert mixed.mfu == pytest.approx(a100.mfu * 32 * 312 / (16 * 989 + 16 * 312), rel=1e-9)


def test_the_faster_types_wait_is_waiting_for_slower_devices_not_a_bubble(run_cli):
    # Issue 29's case: PP 1, so there is no pipeline and no bubble. The H100s finish each step
    # first and wait at the gradient reduction for the A100s; the report says so, and its
    # headline is the A100s' (busy the whole iteration, bound by their compute).
    args = "train --model llama2-13b --gpus 256 --gpu h100:128,a100:128 --tp 8 --gbs 256 --seq 4096"
    args += " --dist-opt"
    code, out, err = run_cli(*args.split(), "--json")
    assert code == 0, err
    doc = json.loads(out)
    bound = (doc["breakdown_stage"], doc["breakdown_accelerator"], doc["critical_bound"])
    assert bound == (0, "a100", "compute")
    h, a = doc["stages"]
    assert (h["accelerator"], a["accelerator"]) == ("h100", "a100")
    hp, ap = dict(h["breakdown_s"]), dict(a["breakdown_s"])
    assert doc["breakdown_s"] == a["breakdown_s"]
    assert hp["bubble"] == ap["bubble"] < 1e-6 * doc["iteration_s"]
    assert ap["waiting for slower devices"] == 0.0
    waiting = hp["waiting for slower devices"]
    assert waiting == pytest.approx(a["busy_s"] - h["busy_s"], rel=1e-9)
    assert waiting > 0.35 * doc["iteration_s"]
    code, out, err = run_cli(*args.split())
    assert code == 0, err
    lines = out.splitlines()
    head = lines.index("where the time goes (stage 0, a100 ranks, the busiest: it bounds the iteration):")
    parts = [line.split()[0] for line in lines[head + 1 :][:3]]
    assert parts == ["compute", "exposed", "exposed"] and "bubble" not in lines[head + 3]
    row = next(line.split() for line in lines if line.split()[:2] == ["0", "h100"])
    # stage, type, layers, compute, exposed comm, bubble, waiting, memory, largest exposed comm
    assert (float(row[5]), float(row[6])) == (0.0, round(waiting, 3))


def test_per_stage_assignment_puts_the_slower_stages_on_the_critical_path():
    plan = dict(gpus=32, tp=8, pp=2, gbs=32, seq=2048)
    for gpu, slow in (("a100:16,h100:16", 0), ("h100:16,a100:16", 1)):
        r = train("llama3-8b", gpu=gpu, mix_by="stage", **plan)
        assert r.data["critical_stage"] == slow
        assert [s["accelerator"] for s in r.data["stages"]] == gpu.replace(":16", "").split(",")


@pytest.mark.parametrize(
    ("gpu", "extra", "message"),
    [
        ("h100:16,b300:16", [], "accelerators: b300: unknown name (valid: "),
        ("h100:16,a100:8", [], "plan: mix: h100:16,a100:8 is 24 GPUs but the plan has 32"),
        ("h100:12,a100:20", [], "plan: mix: h100:12 in h100:12,a100:20 is not a multiple of TP 8"),
        (
            "h100:8,a100:24",
            ["--pp", "2", "--mix-by", "stage"],
            "is not a whole number of pipeline stages of 16",
        ),
        ("h100:16,a100", [], "command line: --gpu: 'a100' is not TYPE:COUNT"),
        ("h100", ["--mix-by", "stage"], "command line: --mix-by: assigns a mix of types"),
    ],
)
def test_bad_mixes_are_one_line_errors(run_cli, gpu, extra, message):
    args = ["--model", "llama3-8b", "-g", "32", "--tp", "8", "--gbs", "32", "--seq", "2048", "--gpu", gpu]
    code, out, err = run_cli("train", *args, *extra)
    assert code != 0 and out == ""
    assert len(err.strip().splitlines()) == 1 and message in err, err


def test_the_cli_reports_each_types_utilisation(run_cli):
    args = ["--model", "llama3-8b", "-g", "32", "--tp", "8", "--gbs", "32", "--seq", "2048"]
    code, out, err = run_cli("train", *args, "--gpu", "h100:16,a100:16", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["accelerator"] == "h100:16,a100:16"
    assert [t["accelerator"] for t in doc["per_type"]] == ["h100", "a100"]
    code, out, err = run_cli("train", *args, "--gpu", "h100:16,a100:16")
    assert code == 0, err
    lines = [line.split() for line in out.splitlines()]
    assert ["a100", "16", "GPUs", "busy"] == lines[[x[:1] for x in lines].index(["a100"])][:4]


def test_one_type_only_where_a_file_describes_one(run_cli, tmp_path):
    args = ["--model", "llama3-8b", "-g", "32", "--tp", "8", "--gbs", "32", "--seq", "2048"]
    out = tmp_path / "w.txt"
    code, _, err = run_cli("workload", "generate", *args, "--gpu", "h100:16,a100:16", "-o", str(out))
    assert code != 0 and not out.exists()
    assert err.strip().splitlines() == [
        "clustersim: error: command line: --gpu: a SimAI workload file describes one accelerator type,"
        " not the mix h100:16,a100:16"
    ]
    with pytest.raises(InputError, match="a kernel table times one accelerator type"):
        train("llama3-8b", gpu="h100:16,a100:16", kernels="table.csv", **PLAN)


def test_coherent_ring_halves_the_ring_on_hcsim_cxl_and_is_refused_on_pcie(run_cli, tmp_path):
    for t in ("cxl", "pcie"):
        code, _, err = run_cli(
            "platform", f"hcsim-{t}", "--xpus", "32", "--graph-json", str(tmp_path / f"{t}.json")
        )
        assert code == 0, err
    sweep = ["allreduce", "-b", "256M", "-e", "256M", "--json"]
    times = {}
    for algo in ("ring", "coherent_ring"):
        code, out, err = run_cli("collective", *sweep, "-n", str(tmp_path / "cxl.json"), "--algo", algo)
        assert code == 0, err
        doc = json.loads(out)
        assert doc["algorithm"] == [algo]
        times[algo] = doc["time_us"][0]
    assert 0.45 < times["coherent_ring"] / times["ring"] < 0.55, times
    code, out, err = run_cli(
        "collective", *sweep, "-n", str(tmp_path / "pcie.json"), "--algo", "coherent_ring"
    )
    assert code != 0 and out == ""
    assert err.strip().splitlines() == [
        "clustersim: error: collective: algorithm: coherent_ring needs a cache-coherent platform"
        " (every XPU on a CXL switch, as hcsim-cxl); this one is not"
    ]


def test_the_ir_of_a_mixed_job_has_a_program_per_stage_and_type():
    from clustersim.catalog import lookup
    from clustersim.workload import Workload

    h, a = lookup("accelerators", "h100"), lookup("accelerators", "a100")
    plan = dict(gpus=32, tp=8, pp=2, gbs=32, seq=2048, accelerator=h)
    # PP 2 of 16 GPUs each: stage 0 on H100s, stage 1 on A100s, in rank order.
    w = Workload.from_training("llama3-8b", mix=[(h, 16), (a, 16)], **plan)
    assert w.num_programs == 2 and w.rank_class == [0] * 16 + [1] * 16
    # A type boundary inside stage 0: two classes there.
    w = Workload.from_training("llama3-8b", mix=[(h, 8), (a, 24)], **plan)
    assert w.num_programs == 3 and w.rank_class == [0] * 8 + [1] * 8 + [2] * 16


def test_on_a_typed_fabric_the_mix_must_be_the_fabrics(run_cli, tmp_path):
    # HCSim's coherent system with a ToR of 8 H100s and one of 8 A100s.
    fabric = str(tmp_path / "mix.json")
    code, _, err = run_cli(
        "platform", "hcsim-cxl", "--mix", "h100:8,a100:8", "--servers-per-tor", "1", "--graph-json", fabric
    )
    assert code == 0, err
    args = ["--model", "llama3-8b", "-g", "16", "--tp", "8", "--gbs", "16", "--seq", "2048", "-n", fabric]
    code, out, err = run_cli("train", *args, "--gpu", "h100:8,a100:8", "--json")
    assert code == 0, err
    assert [t["accelerator"] for t in json.loads(out)["per_type"]] == ["h100", "a100"]
    code, out, err = run_cli("train", *args, "--gpu", "a100:8,h100:8")
    assert code != 0 and out == ""
    assert err.strip().splitlines() == [
        f"clustersim: error: {fabric}: mix: rank 0 runs on H100 's0.x0' but the mix makes it a100"
    ]
