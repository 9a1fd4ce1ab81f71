"""`--algo` per kind of collective (`all_reduce=coherent_ring,all_gather=ring`): on HCSim's coherent
system every row of `run` and `train` takes the time `collective` gives its kind's algorithm at its
size, the kinds not named keep the tuner's or the bare name's; the same text in the CLI, the API
and sweeps; bad items are one-line errors naming `--algo` and the item."""

from __future__ import annotations

import json

import pytest
from clustersim import sweep
from clustersim.api import collective, run, train
from clustersim.errors import InputError
from clustersim.platform import hcsim

MIB = 1 << 20
# One TP group of all 16 XPUs (two servers of 8): every row crosses servers.
ROWS = [("grad_sync", "ALLREDUCE", 32 * MIB), ("gather", "ALLGATHER", 16 * MIB)]
ROWS += [("scatter", "REDUCESCATTER", 16 * MIB), ("small_sync", "ALLREDUCE", MIB)]
OP = {"ALLREDUCE": "allreduce", "ALLGATHER": "allgather", "REDUCESCATTER": "reducescatter"}
RING_REST = {"allgather": "ring", "reducescatter": "ring"}
# (--algo, the algorithm each kind runs: None for NCCL's tuner)
FORMS = [
    ("coherent_ring", {"allreduce": "coherent_ring", "allgather": None, "reducescatter": None}),
    ("all_reduce=coherent_ring,all_gather=ring", {"allreduce": "coherent_ring", "allgather": "ring"}),
    ("ring,all_reduce=coherent_ring", {"allreduce": "coherent_ring", **RING_REST}),
    ("ring", {"allreduce": "ring", "allgather": "ring", "reducescatter": "ring"}),
    ("tree,allgather=ring", {"allreduce": "tree", "allgather": "ring", "reducescatter": None}),
]
PLAN = dict(gbs=4, seq=1024, layers=2, hidden=1024, heads=8, ffn=4096, vocab=32000, gpu="h100")


@pytest.fixture(scope="module")
def cxl():
    return hcsim("hcsim-cxl", [("h100", 16)])


def write_workload(path, rows, group=16):
    head = f"HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: {group} ep: 1 pp: 1 vpp: 1 ga: 1"
    lines = [head + " all_gpus: 16 checkpoints: 0 checkpoint_initiates: 0", str(len(rows))]
    lines += [f"{name} -1 0 {op} {size} 0 NONE 0 0 NONE 0 0" for name, op, size in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def row_us(result) -> dict[str, float]:
    return dict(zip(result.layers["layer_name"], result.layers["fwd total comm"], strict=True))


@pytest.mark.parametrize(("algo", "kinds"), FORMS)
def test_run_rows_take_their_kinds_algorithm(tmp_path, cxl, algo, kinds):
    w = write_workload(tmp_path / "mix.txt", ROWS)
    got = row_us(run(w, cxl, algo=algo, gpus=16, gpus_per_server=8))
    for name, op, size in ROWS:
        want = kinds.get(OP[op])
        t = collective(OP[op], cxl, minbytes=size, maxbytes=size, algo=want or "auto")
        if want is not None:
            assert t["algorithm"] == [want], name
        assert got[name] == pytest.approx(t["time_us"][0], rel=1e-12), (algo, name)


def trace_us(result) -> list[tuple[str, float]]:
    """(name, µs) of each collective of a train result's trace, in order."""
    events = json.loads(result.trace)
    events = events["traceEvents"] if isinstance(events, dict) else events
    return [(e["name"], e["dur"]) for e in events if e.get("ph") == "X" and e["name"].endswith(" B")]


@pytest.mark.parametrize(("algo", "kinds"), FORMS[:3])
def test_train_with_sp_and_dist_opt_runs_the_coherent_ring_on_its_all_reduces(cxl, algo, kinds):
    # TP 8 with sequence parallelism (all-gathers, reduce-scatters and the loss's all-reduces in
    # a server) and DP 2 with the distributed optimizer (reduce-scatter, all-gather across the
    # two servers): before, --algo coherent_ring forced every collective and failed here.
    plan = dict(PLAN, gpus=16, tp=8, sp=True, dist_opt=True, topology=cxl, trace=True)
    got = trace_us(train(**plan, algo=algo))
    # Each kind as the bare name of its algorithm runs it (every collective of the kind alike).
    bare = {*kinds.values(), None} - {"coherent_ring"}
    alone = {a: trace_us(train(**plan, algo=a or "auto")) for a in bare}
    assert [n for n, _ in got] == [n for n, _ in alone[None]]
    kinds_seen = set()
    for i, (name, dur) in enumerate(got):
        kind, size = name.split()[-3], int(name.split()[-2])
        kinds_seen.add(kind)
        a = kinds.get(kind)
        if a == "coherent_ring":
            # The loss's all-reduce over the TP group: the first 8 XPUs, one server.
            t = collective("allreduce", cxl, minbytes=size, maxbytes=size, gpus=8, algo=a)
            assert dur == pytest.approx(t["time_us"][0], abs=2e-3), name
            ring = collective("allreduce", cxl, minbytes=size, maxbytes=size, gpus=8, algo="ring")
            assert dur < ring["time_us"][0], name
        else:
            assert dur == alone[a][i][1], (algo, name)
    assert kinds_seen == {"allreduce", "allgather", "reducescatter"}


def test_the_cli_the_api_and_sweeps_read_one_syntax(run_cli, tmp_path):
    code, _, err = run_cli("platform", "hcsim-cxl", "--xpus", "16", "--graph-json", tmp_path / "cxl.json")
    assert code == 0, err
    algo = "all_reduce=coherent_ring,all_gather=ring"
    code, out, err = run_cli("train", *plan_args(16), "-n", tmp_path / "cxl.json", "--algo", algo, "--json")
    assert code == 0, err
    api = train(**PLAN, gpus=16, tp=8, sp=True, dist_opt=True, topology=str(tmp_path / "cxl.json"), algo=algo)
    assert json.loads(out)["iteration_s"] == api.data["iteration_s"]
    (tmp_path / "s.yaml").write_text(
        "command: collective\nfixed: {topology: cxl.json, minbytes: 1M, maxbytes: 1M}\n"
        "points:\n"
        + "".join(f"  - {{op: {op}, algo: '{algo}'}}\n" for op in ("allreduce", "allgather", "reducescatter"))
        + "  - {op: allreduce, algo: coherent_ring}\n"
    )
    code, _, err = run_cli("sweep", "s.yaml", cwd=tmp_path)
    assert code == 0, err
    got = {(r["op"], r["algo"]): (r["algorithm"], r["time_us"]) for r in sweep(tmp_path / "s.yaml").rows()}
    for (op, a), (name, us) in got.items():
        t = collective(op, tmp_path / "cxl.json", minbytes=MIB, maxbytes=MIB, algo=a)
        assert (name, us) == (t["algorithm"][0], t["time_us"][0]), (op, a)
    assert got["allreduce", algo][0] == got["allreduce", "coherent_ring"][0] == "coherent_ring"
    assert got["allgather", algo][0] == "ring"


def test_bad_items_are_one_line_errors_naming_the_flag_and_the_item(run_cli, tmp_path):
    fabric = tmp_path / "cxl.json"
    code, _, err = run_cli("platform", "hcsim-cxl", "--xpus", "16", "--graph-json", fabric)
    assert code == 0, err
    for algo, want in [
        ("all_gather=coherent_ring", "coherent_ring cannot run allgather (it runs allreduce)"),
        ("gather=ring", "unknown collective 'gather' (valid: allreduce, allgather,"),
        ("all_reduce=bruck", "unknown algorithm 'bruck' (valid: auto, ring,"),
        ("alltoall=tree", "tree cannot run alltoall (it runs allreduce)"),
        ("allreduce=ring,all-reduce=tree", "a second algorithm for allreduce"),
    ]:
        for command in (["collective", "allreduce", "-b", "1M", "-e", "1M"], ["train", *plan_args(16)]):
            code, out, err = run_cli(*command, "-n", fabric, "--algo", algo)
            assert code == 2 and out == "", err
            assert err.count("\n") == 1 and f"--algo item '{algo.split(',')[-1]}': {want}" in err, err
        with pytest.raises(InputError, match="--algo item"):
            collective("allreduce", fabric, minbytes=MIB, maxbytes=MIB, algo=algo)


def plan_args(gpus: int) -> list[str]:
    return [f"--{k}={v}" for k, v in PLAN.items()] + ["--gpus", str(gpus), "--tp", "8", "--sp", "--dist-opt"]


def test_collective_refuses_a_bare_name_that_cannot_run_it_and_runs_a_kinds_own(cxl):
    with pytest.raises(InputError, match="coherent_ring cannot run allgather"):
        collective("allgather", cxl, minbytes=MIB, maxbytes=MIB, algo="coherent_ring")
    auto = collective("allgather", cxl, minbytes=MIB, maxbytes=MIB)
    own = collective("allgather", cxl, minbytes=MIB, maxbytes=MIB, algo="all_reduce=coherent_ring")
    assert (own["time_us"], own["algorithm"]) == (auto["time_us"], auto["algorithm"])
