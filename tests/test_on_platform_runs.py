"""Reduction servers (Optcast) and in-network reduction (CollNet) in `run` and `train`: the
all-reduces across servers run on them, row by row as `collective` times them, and every other
collective as without them; the same flags on every command; bad input."""

from __future__ import annotations

import csv
import json

import pytest
from clustersim.api import collective, run, train
from clustersim.errors import InputError
from clustersim.reduction_server import ReductionServers
from conftest import ROOT

CROSSBAR = ROOT / "examples" / "optcast_4x4.platform"
MIB = 1 << 20
# One TP group of the 4 GPU clients (each its own server): every row crosses servers.
ROWS = [("grad_sync", "ALLREDUCE", 32 * MIB), ("gather", "ALLGATHER", 16 * MIB)]
ROWS += [("scatter", "REDUCESCATTER", 16 * MIB), ("small_sync", "ALLREDUCE", MIB)]
OP = {"ALLREDUCE": "allreduce", "ALLGATHER": "allgather", "REDUCESCATTER": "reducescatter"}
ON_4 = dict(gpus=4, gpus_per_server=1)


def write_workload(path, rows):
    """A SimAI workload of one TP group of 4 whose forward pass is `rows` (name, op, bytes)."""
    head = "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 4 ep: 1 pp: 1 vpp: 1 ga: 1 all_gpus: 4"
    lines = [head + " checkpoints: 0 checkpoint_initiates: 0", str(len(rows))]
    lines += [f"{name} -1 0 {op} {size} 0 NONE 0 0 NONE 0 0" for name, op, size in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def workload(tmp_path):
    return write_workload(tmp_path / "mix.txt", ROWS)


def row_us(result) -> dict[str, float]:
    return dict(zip(result.layers["layer_name"], result.layers["fwd total comm"], strict=True))


def collective_us(op: str, size: int, **kw) -> float:
    return collective(op, CROSSBAR, minbytes=size, maxbytes=size, **kw)["time_us"][0]


@pytest.mark.parametrize(
    ("options", "algorithm"),
    [
        (dict(reduction=ReductionServers()), "reduction_server"),
        (
            dict(reduction=ReductionServers("cpu0,cpu1", chunk_bytes=float(8 * MIB), nreq=1)),
            "reduction_server",
        ),
        (dict(reduction=ReductionServers(reduce_gbps=10.0)), "reduction_server"),
        (dict(algo="collnet_direct"), "collnet_direct"),
        (dict(algo="collnet_chain"), "collnet_chain"),
        # A slow switch caps the links into it, and so the other collectives on them too
        # (collnet.rs): only the all-reduce rows are compared.
        (dict(algo="collnet_direct", switch_reduce_gbps=40.0), "collnet_direct"),
    ],
)
def test_all_reduce_rows_take_collectives_time_and_the_others_do_not_move(workload, options, algorithm):
    base = row_us(run(workload, CROSSBAR, **ON_4))
    got = row_us(run(workload, CROSSBAR, **ON_4, **options))
    for name, op, size in ROWS:
        if op == "ALLREDUCE":
            t = collective("allreduce", CROSSBAR, minbytes=size, maxbytes=size, **options)
            assert t["algorithm"] == [algorithm]
            assert got[name] == pytest.approx(t["time_us"][0], rel=1e-12), name
            assert got[name] != pytest.approx(base[name], rel=1e-3), name
        elif "switch_reduce_gbps" not in options:
            assert got[name] == pytest.approx(base[name], rel=1e-12), name


def test_a_crossbar_run_meets_the_closed_form(workload, monkeypatch):
    # Bare timing, 4 clients and 4 servers at B = 25 GB/s: k = S/512 KiB chunks, k + 1 steps of
    # u/B each (one shard of u/4 to and from each server per step): T = (k + 1)·u/B.
    monkeypatch.setenv("AS_SEND_LAT", "0")
    got = row_us(run(workload, CROSSBAR, **ON_4, reduction=ReductionServers()))
    u = 512 * 1024
    for name, size in (("grad_sync", 32 * MIB), ("small_sync", MIB)):
        assert got[name] == pytest.approx((size / u + 1) * u / 25.0 / 1e3, rel=1e-12), name
    # With 2 servers each takes twice the data per step: T = (k + 1)·2u/B.
    got = row_us(run(workload, CROSSBAR, **ON_4, reduction=ReductionServers("2")))
    assert got["grad_sync"] == pytest.approx(65 * 2 * u / 25.0 / 1e3, rel=1e-12)


def trace_us(result) -> list[tuple[str, float]]:
    """(name, duration µs) of each collective of a train result's trace, in order."""
    events = json.loads(result.trace)
    events = events["traceEvents"] if isinstance(events, dict) else events
    return [(e["name"], e["dur"]) for e in events if e.get("ph") == "X" and e["name"].endswith(" B")]


def test_train_sends_its_data_parallel_all_reduces_to_the_servers():
    # DDP on the 4 clients: the gradient all-reduces (one per bucket) go to the servers, each as
    # long as `collective` says; the distributed optimizer's reduce-scatter and all-gather stay.
    plan = dict(gbs=4, seq=1024, layers=2, hidden=1024, heads=8, ffn=4096, vocab=32000, gpu="a100")
    plan |= dict(gpus=4, gpus_per_server=1, topology=CROSSBAR, trace=True)
    servers = ReductionServers()
    base, got = train(**plan), train(**plan, reduction=servers)
    reduces = [(n, d) for n, d in trace_us(got) if " allreduce " in n]
    assert reduces
    for name, dur in reduces:
        size = int(name.split()[-2])
        assert dur == pytest.approx(collective_us("allreduce", size, reduction=servers), abs=2e-3), name
    assert got.iteration_s < base.iteration_s
    dist = dict(plan, dist_opt=True)
    without, with_servers = train(**dist), train(**dist, reduction=servers)
    assert not [n for n, _ in trace_us(without) if " allreduce " in n]
    assert with_servers.data["iteration_s"] == without.data["iteration_s"]
    assert trace_us(with_servers) == trace_us(without)


def test_the_same_flags_on_run_train_and_collective(run_cli, tmp_path):
    one = write_workload(tmp_path / "one.txt", ROWS[:1])
    flags = ["--reduction-servers", "cpu0,cpu1,cpu2,cpu3", "--rs-chunk", "1M", "--rs-nreq", "3"]
    rc, out, err = run_cli(
        "collective", "allreduce", "-b", "32M", "-e", "32M", "-n", CROSSBAR, *flags, "--json"
    )
    assert rc == 0, err
    want = json.loads(out)["time_us"][0]
    rc, out, err = run_cli("run", "-w", one, "-n", CROSSBAR, "-g", "4", "-g_p_s", "1", *flags, "--json")
    assert rc == 0, err
    assert json.loads(out)["iteration_time_us"] == pytest.approx(want, rel=1e-12)
    servers = ReductionServers("cpu0,cpu1,cpu2,cpu3", chunk_bytes=float(MIB), nreq=3)
    assert run(one, CROSSBAR, **ON_4, reduction=servers).summary["total_us"] == pytest.approx(want, rel=1e-12)
    assert want != pytest.approx(collective_us("allreduce", 32 * MIB, reduction=ReductionServers()), rel=1e-3)
    plan = dict(gbs=4, seq=1024, layers=2, hidden=1024, heads=8, ffn=4096, vocab=32000, gpu="a100")
    args = [f"--{k}={v}" for k, v in plan.items()]
    rc, out, err = run_cli("train", "--gpus", "4", "-g_p_s", "1", *args, "-n", CROSSBAR, *flags, "--json")
    assert rc == 0, err
    api = train(**plan, gpus=4, gpus_per_server=1, topology=CROSSBAR, reduction=servers)
    assert json.loads(out)["iteration_s"] == api.data["iteration_s"]
    assert (
        api.data["iteration_s"]
        != train(**plan, gpus=4, gpus_per_server=1, topology=CROSSBAR).data["iteration_s"]
    )


NO_NIC = """node gpu0 gpu type=A100
node gpu1 gpu type=A100
node sw0 switch
node cpu0 cpu
link gpu0 sw0 200Gbps 0ns
link gpu1 sw0 200Gbps 0ns
link cpu0 sw0 200Gbps 0ns
"""


@pytest.mark.parametrize("command", ["run", "train"])
@pytest.mark.parametrize(
    ("fabric", "flags", "field", "want"),
    [
        (CROSSBAR, ["--reduction-servers", "0"], "reduction_servers", "selects 0 servers"),
        ("no_nic", ["--reduction-servers", "cpu0"], "reduction_servers", "server 'cpu0' has no NIC"),
        ("Spectrum-X:8", ["--reduction-servers", "all"], "reduction_servers", "platform has no cpu nodes"),
        (CROSSBAR, ["--reduction-servers", "9"], "reduction_servers", "platform has 4 cpu nodes"),
        (CROSSBAR, ["--reduction-servers", "all", "--reduce-gbps", "0"], "reduce_gbps", "positive"),
        (CROSSBAR, ["--reduce-gbps", "5"], "--reduce-gbps", "reduction servers only"),
        (CROSSBAR, ["--switch-reduce-gbps", "5"], "switch_reduce_gbps", "collnet_direct and collnet_chain"),
        (CROSSBAR, ["--algo", "collnet_chain", "--reduction-servers", "all"], "algorithm", "in switches"),
        (CROSSBAR, ["--algo", "reduction_server"], "reduction_servers", "needs servers"),
        (None, ["--reduction-servers", "all"], "--reduction-servers", "give the fabric (-n)"),
    ],
)
def test_bad_servers_are_one_line_errors(run_cli, workload, tmp_path, command, fabric, flags, field, want):
    if fabric == "no_nic":
        fabric = tmp_path / "bare.platform"
        fabric.write_text(NO_NIC)
    where = [] if fabric is None else ["-n", fabric]
    if command == "run":
        if fabric is None:
            return  # run always has a fabric (-n is required)
        gpus = "2" if "bare" in str(fabric) else "4"
        args = ["run", "-w", workload, "-g", gpus, "-g_p_s", "1", *where]
    else:
        gpus = "2" if "bare" in str(fabric) else "8" if "Spectrum" in str(fabric) else "4"
        args = ["train", "--gpus", gpus, "--gbs", "8", "--seq", "256", "--layers", "1", "--hidden", "256"]
        args += ["--heads", "4", "--ffn", "1024", "--vocab", "1000", "--gpu", "a100"]
        args += ["-g_p_s", "8" if "Spectrum" in str(fabric) else "1", *where]
    rc, out, err = run_cli(*args, *flags)
    assert rc != 0 and field in err and want in err and err.count("\n") == 1, err
    assert not list(tmp_path.glob("*EndToEnd.csv"))


def test_the_api_refuses_servers_without_a_fabric():
    with pytest.raises(InputError, match="give the fabric"):
        train(
            gpus=4,
            gbs=4,
            layers=1,
            hidden=256,
            heads=4,
            ffn=1024,
            vocab=1000,
            seq=256,
            reduction=ReductionServers(),
        )


def test_servers_as_text_are_the_default_split(workload):
    # A sweep spec gives options as plain values: `reduction: all` is ReductionServers("all").
    text = row_us(run(workload, CROSSBAR, **ON_4, reduction="cpu0,cpu1"))
    assert text == row_us(run(workload, CROSSBAR, **ON_4, reduction=ReductionServers("cpu0,cpu1")))
    with pytest.raises(InputError, match="reduction: expected ReductionServers"):
        run(workload, CROSSBAR, **ON_4, reduction=4)


def test_a_sweep_spec_varies_the_servers(run_cli, tmp_path):
    spec = tmp_path / "s.yaml"
    spec.write_text(
        "command: collective\n"
        f"fixed: {{op: allreduce, topology: '{CROSSBAR}', minbytes: 32M, maxbytes: 32M}}\n"
        "grid:\n  reduction: [all, '2']\n"
    )
    rc, out, err = run_cli("sweep", spec, "--csv", tmp_path / "s.csv")
    assert rc == 0, err
    lines = [r for r in (tmp_path / "s.csv").read_text().splitlines() if not r.startswith("# ")]
    head, *rows = csv.reader(lines)  # cells quoted where they hold commas (provenance.command)
    got = {r[head.index("reduction")]: float(r[head.index("time_us")]) for r in rows}
    for servers in ("all", "2"):
        assert got[servers] == pytest.approx(
            collective_us("allreduce", 32 * MIB, reduction=servers), rel=1e-12
        )
