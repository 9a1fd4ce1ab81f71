"""clustersim replay: the buffers' expected values against an independent reduction of every
rank's buffers, the plan's groups against the Megatron layout, the report's arithmetic, and real
runs under mpirun -np 4 (skipped, with the reason, where mpirun or mpi4py is missing): results
written in the simulator's shape, an injected fault caught on every rank, a wrong world size and
a workload too large for memory refused."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest
from clustersim import _engine, run, simulate
from clustersim.errors import InputError
from clustersim.measure.replay import buffers, compare
from clustersim.measure.replay.execute import FAULT_ENV, Measured
from clustersim.measure.replay.plan import check_memory, check_world, load
from clustersim.measure.replay.report import busbw_factor, result
from conftest import DATA
from test_bwtest import CROSSBAR, mpirun, needs_mpi

TP2_DP2 = DATA / "replay" / "tp2_dp2.txt"  # TP 2, DP 2: all-gather, reduce-scatter, all-reduce rows
EP2_PP2 = DATA / "replay" / "ep2_pp2.txt"  # EP 2, PP 2, ga 2: all-to-all, broadcast, PP transfers


def run_collective(collective, sends, n):
    """What each rank's receive buffer holds after the collective of the ranks' `sends`, computed
    directly (independent of `expected`)."""
    if collective in ("allreduce", "reduce"):
        return [sum(sends)] * n
    if collective == "broadcast":
        return [sends[0]] * n
    if collective == "allgather":
        return [np.concatenate(sends)] * n
    if collective == "reducescatter":
        return np.split(sum(sends), n)
    return [np.concatenate([np.split(sends[p], n)[q] for p in range(n)]) for q in range(n)]  # alltoall


def wrong_ranks(collective, nbytes, n, sends):
    got = run_collective(collective, sends, n)
    return [
        q
        for q in range(n)
        if (want := buffers.expected(collective, nbytes, n, q)) is not None
        and not np.array_equal(got[q], want)
    ]


@pytest.mark.parametrize(
    "collective", ["allreduce", "allgather", "reducescatter", "alltoall", "broadcast", "reduce"]
)
@pytest.mark.parametrize("n, nbytes", [(1, 8), (2, 1000), (4, 65536), (3, 5)])
def test_expected_values_are_the_collectives_result(collective, n, nbytes):
    sends = [buffers.make(collective, nbytes, n, q).send for q in range(n)]
    assert wrong_ranks(collective, nbytes, n, sends) == []
    if n > 1:  # a reduce leaves the non-roots' buffers as they were
        assert (buffers.expected(collective, nbytes, n, 1) is None) == (collective == "reduce")
    # A one-element fault in the last rank's input shows in some rank's result (a broadcast
    # reads the root's alone).
    sends[-1][0] += 1.0
    assert (wrong_ranks(collective, nbytes, n, sends) != []) == (collective != "broadcast" or n == 1)


def test_sizes_follow_nccl_tests():
    # S bytes: the all-reduce buffer, the all-gather output, the reduce-scatter input, n blocks of all-to-all.
    assert buffers.make("allreduce", 800, 4, 0).size == 800
    b = buffers.make("allgather", 800, 4, 1)
    assert (b.send.size, b.recv.size, b.size) == (25, 100, 800)
    b = buffers.make("reducescatter", 800, 4, 1)
    assert (b.send.size, b.recv.size, b.size) == (100, 25, 800)
    assert buffers.make("alltoall", 1, 4, 0).size == 4 * 8  # at least one element per rank


def test_groups_are_the_megatron_layout():
    plan = load(TP2_DP2)
    assert plan.ranks == 4 and plan.group_size("TP") == 2 and plan.group_size("DP") == 2
    # TP pairs consecutive ranks, DP strides by TP (Megatron's order tp-cp-ep-dp-pp).

    def instances(g):
        return sorted(
            {tuple(r for r in range(4) if plan.colour(g, r) == plan.colour(g, s)) for s in range(4)}
        )

    assert instances("TP") == [(0, 1), (2, 3)] and instances("DP") == [(0, 2), (1, 3)]
    plan = load(EP2_PP2)
    assert plan.group_size("EP") == 2 and plan.group_size("PP") == 2 and plan.group_size("DP_EP") == 1
    assert [plan.stage(r) for r in range(4)] == [0, 0, 1, 1]


def test_steps_are_simais_order():
    plan = load(TP2_DP2)
    rows = [(s.row, s.phase) for s in plan.steps if not s.collective]
    n = 5
    assert rows == [(r, "fwd") for r in range(n)] + [
        (r, ph) for r in reversed(range(n)) for ph in ("ig", "wg")
    ]
    colls = [
        (plan.row_names[s.row], s.phase, s.collective, s.group, s.bytes) for s in plan.steps if s.collective
    ]
    assert colls[0] == ("embedding_layer", "fwd", "allreduce", "TP", 262144)
    assert ("grad_param_comm", "wg", "reducescatter", "DP", 131072) in colls


def test_world_and_memory_are_checked_before_anything_runs():
    plan = load(TP2_DP2)
    check_world(plan, 4)
    with pytest.raises(InputError, match=r"tp2_dp2.txt: all_gpus: the workload has 4 GPUs, the MPI world 2"):
        check_world(plan, 2)
    need, step = plan.per_rank_bytes(1.0)
    assert step is not None and step.bytes == 1048576 and need == 3 * 1048576  # the DP all-reduce
    check_memory(plan, 1.0, 4, 4 * need)
    with pytest.raises(
        InputError, match=r"--scale 1: row 3 \(embedding_layer\) wg allreduce .* smaller --scale"
    ):
        check_memory(plan, 1.0, 4, 4 * need - 1)
    check_memory(plan, 0.5, 4, 4 * need // 2)


def test_report_is_the_sum_of_the_measured_ops():
    plan = load(EP2_PP2)
    # Every op 1 ms, each PP transfer 2 ms.
    k = len(plan.steps)
    sizes = [
        buffers.make(s.collective, s.bytes, plan.group_size(s.group), 0).size if s.collective else 0
        for s in plan.steps
    ]
    m = Measured([1e-3] * k, [2e-3] * 4, sizes, 65536, 0.05, ["h"] * 4, np.zeros((4, 2, k + 4)))
    r = result(plan, m, run_name="x-", seconds=1.0)
    comps = sum(1 for s in plan.steps if not s.collective)
    colls = k - comps
    s = r.summary
    assert s["compute_us"] == pytest.approx(comps * 1000) and s["exposed_comm_us"] == pytest.approx(
        colls * 1000
    )
    assert s["exposed_pp_us"] == pytest.approx(4 * 2000)  # 2·ga transfers
    # Bubble: (p−1)/ga × (compute + fwd/ig comm) of the rows other than embedding_layer.
    assert s["bubble_us"] == pytest.approx((2 - 1) / 2 * (3 * 1000 + 2 * 1000 + 3 * 1000))
    assert s["total_us"] == pytest.approx(
        s["compute_us"] + s["exposed_comm_us"] + s["bubble_us"] + s["exposed_pp_us"]
    )
    moe = list(r.layers.rows())[1]
    assert moe["fwd algbw"] == pytest.approx(262144 / 1e6) and moe["fwd busbw"] == pytest.approx(
        262144 / 1e6 / 2
    )
    assert busbw_factor("allreduce", 4) == 1.5 and busbw_factor("broadcast", 4) == 1.0


def test_csv_has_the_simulators_layout(tmp_path):
    plan = load(TP2_DP2)
    sizes = [0] * len(plan.steps)
    m = Measured([1e-3] * len(plan.steps), [], sizes, 0, 0.02, ["h"] * 4, np.zeros((4, 2, len(sizes))))
    ours = list(csv.reader(io.StringIO(result(plan, m, run_name="r-", seconds=0.0).csv)))
    sim = list(csv.reader(io.StringIO(simulate(TP2_DP2, run_name="r-").csv)))
    assert ours[0] == sim[0] and ours[2] == sim[2]  # both headers
    assert [row[0] for row in ours[3:]] == [row[0] for row in sim[3:]]  # the rows, in order
    assert len(ours[1]) == len(sim[1]) and all(
        len(a) == len(b) for a, b in zip(ours[3:], sim[3:], strict=True)
    )


@needs_mpi
@pytest.mark.parametrize("workload", [TP2_DP2, EP2_PP2])
def test_replay_under_mpirun_writes_the_simulators_files(tmp_path, workload):
    proc = mpirun(
        4,
        "replay",
        "-w",
        workload,
        "-r",
        "out/r-",
        "--iterations",
        "2",
        "--compute",
        "skip",
        "--json",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)  # rank 0 alone reports
    assert doc["mode"] == "replay" and doc["plan"]["gpus"] == 4
    on_disk = json.loads((tmp_path / "out" / "r-summary.json").read_text())
    assert on_disk["summary_us"] == doc["summary_us"]
    s = doc["summary_us"]
    assert s["exposed_comm_us"] > 0 and s["total_us"] == pytest.approx(
        s["compute_us"] + s["exposed_comm_us"] + s["bubble_us"] + s["exposed_pp_us"]
    )
    assert (s["exposed_pp_us"] > 0) == (workload == EP2_PP2)
    plan = load(workload)
    rows = list(csv.reader((tmp_path / "out" / "r-EndToEnd.csv").open()))
    assert [r[0] for r in rows[3:]] == plan.row_names
    # replay.json: every op, its size as the workload gives it and as moved, its time.
    ops = json.loads((tmp_path / "out" / "r-replay.json").read_text())
    assert ops["format"] == "clustersim-replay/1" and ops["iterations"] == 2 and len(ops["hosts"]) == 4
    assert len(ops["ops"]) == len(plan.steps)
    for op, step in zip(ops["ops"], plan.steps, strict=True):
        assert op["layer_name"] == plan.row_names[step.row] and op["phase"] == step.phase
        if step.collective:
            n = plan.group_size(step.group)
            assert (op["collective"], op["ranks"], op["workload_bytes"]) == (step.collective, n, step.bytes)
            assert op["bytes"] == buffers.make(step.collective, step.bytes, n, 0).size and op["time_s"] > 0
    assert len(ops["pp_transfers"]) == (2 * 2 if workload == EP2_PP2 else 0)  # 2·ga
    # trace.json: every rank's ops in order, none longer than the slowest rank's time.
    events = json.loads((tmp_path / "out" / "r-trace.json").read_text())["traceEvents"]
    slowest = [op["time_s"] * 1e6 for op in ops["ops"]] + [t["time_s"] * 1e6 for t in ops["pp_transfers"]]
    for rank in range(4):
        mine = [e for e in events if e["ph"] == "X" and e["pid"] == rank]
        assert [e["args"]["op"] for e in mine] == list(range(len(slowest)))
        assert all(a["ts"] + a["dur"] <= b["ts"] + 1e-3 for a, b in zip(mine, mine[1:], strict=False))
        assert all(e["dur"] <= t + 1e-3 for e, t in zip(mine, slowest, strict=True))
    # The summary is the ops' sum: exposed comm = Σ collective times.
    colls = sum(op["time_s"] for op in ops["ops"] if "collective" in op) * 1e6
    assert s["exposed_comm_us"] == pytest.approx(colls, rel=1e-9)


@needs_mpi
def test_injected_fault_fails_every_rank(tmp_path, monkeypatch):
    monkeypatch.setenv(FAULT_ENV, "1")
    proc = mpirun(4, "replay", "-w", TP2_DP2, "-r", "out/f-", "--compute", "skip", cwd=tmp_path)
    assert proc.returncode != 0
    error = (
        f"clustersim: error: replay: {TP2_DP2}: row 3 (embedding_layer) fwd allreduce on TP of 262144 B"
        " (--scale 1): wrong result on rank(s) 0, 1"
    )
    assert 1 <= proc.stderr.count(error) == proc.stderr.count("clustersim: error:") <= 4, proc.stderr
    assert not (tmp_path / "out").exists()


@needs_mpi
@pytest.mark.parametrize(
    "np_, extra, error",
    [
        (2, [], "all_gpus: the workload has 4 GPUs, the MPI world 2 ranks (run under mpirun -np 4)"),
        (4, ["--scale", "1e12"], "wg allreduce of 1048576 B needs 3.15e+09 GB per rank"),
    ],
)
def test_refusals_under_mpirun_fail_every_rank_without_hanging(tmp_path, np_, extra, error):
    proc = mpirun(np_, "replay", "-w", TP2_DP2, "-r", "out/x-", *extra, cwd=tmp_path, timeout=60)
    assert proc.returncode != 0
    assert 1 <= proc.stderr.count(error) == proc.stderr.count("clustersim: error:") <= np_, proc.stderr
    assert not (tmp_path / "out").exists()


def test_malformed_workload_names_file_line_and_field(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text(TP2_DP2.read_text().replace("ALLREDUCE\t262144", "ALLREDUCE\tmany"))
    with pytest.raises(InputError, match=r"bad.txt:5: "):
        load(bad)


def test_scaled_workload_is_the_file_with_sizes_times_scale():
    plan = load(EP2_PP2)
    text = compare.scaled_text(plan, 0.5)
    assert "pp_comm 32768" in text.splitlines()[0]
    assert (
        "mlp_moelayer\t-1\t3000\tALLTOALL_EP\t131072\t1500\tALLTOALL_EP\t131072\t1500\tALLREDUCE_DP_EP\t65536\t100"
        in text
    )
    assert compare.scaled_text(plan, 1.0) == _engine.rewrite_workload(str(EP2_PP2), EP2_PP2.read_text())[0]


@needs_mpi
def test_compare_topology_puts_the_flow_model_beside_the_measurement(tmp_path):
    proc = mpirun(
        4, "replay", "-w", EP2_PP2, "-r", "out/c-", "--compute", "skip", "--scale", "0.5",
        "--compare-topology", CROSSBAR, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.reader((tmp_path / "out" / "c-compare.csv").open()))
    # The simulated columns are `clustersim run` of the halved workload on the same fabric.
    scaled = tmp_path / "half.txt"
    scaled.write_text(compare.scaled_text(load(EP2_PP2), 0.5))
    sim = run(scaled, CROSSBAR, gpus=4, gpus_per_server=1)
    by_name = {r[0]: r for r in rows}
    for layer in sim.layers.rows():
        got = by_name[layer["layer_name"]]
        assert [float(got[2]), float(got[4]), float(got[6])] == pytest.approx(
            [layer["fwd total comm"], layer["wg total comm"], layer["ig total comm"]], abs=1e-3
        )
        assert float(got[1]) >= 0 and float(got[3]) >= 0
    assert float(by_name["total_us"][2]) == pytest.approx(sim.summary["total_us"], abs=1e-3)
    measured = json.loads((tmp_path / "out" / "c-summary.json").read_text())
    assert float(by_name["total_us"][1]) == pytest.approx(measured["summary_us"]["total_us"], abs=1e-3)


@needs_mpi
def test_a_bad_fabric_is_refused_on_every_rank_before_the_replay(tmp_path):
    proc = mpirun(
        4, "replay", "-w", EP2_PP2, "-r", "out/c-", "--compare-topology", "fat-tree:2", cwd=tmp_path
    )
    assert proc.returncode != 0
    error = "clustersim: error: fat-tree: gpu_per_server (-gps): a k=2 fat-tree has 2 GPUs"
    assert 1 <= proc.stderr.count(error) == proc.stderr.count("clustersim: error:") <= 4, proc.stderr
    assert not (tmp_path / "out").exists()
