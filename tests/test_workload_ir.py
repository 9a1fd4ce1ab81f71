"""The workload IR from Python: built in bulk, run to a hand-computed time, saved and loaded as
JSON that round-trips exactly and matches the shipped JSON Schema, taken from the SimAI and
Megatron front ends; bad IR JSON and engine faults reported as the CLI promises."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from clustersim import InputError, InternalError, Workload, cli
from clustersim.errors import EnginePanic
from clustersim.workload import SCHEMA
from test_bad_input import assert_clean_error

GIB = 1 << 30
DOC = Path(__file__).resolve().parents[1] / "docs" / "workload-ir.md"


def two_stages() -> Workload:
    """Two pipeline stages of two TP ranks: stage 0 computes, all-reduces in TP, sends on."""
    w = Workload(ranks=4)
    tp = w.group("TP", [[0, 1], [2, 3]])
    pp = w.group("PP", [[0, 2], [1, 3]])
    s0, s1 = w.program(), w.program()
    w.assign(s0, [0, 1])
    w.assign(s1, [2, 3])
    a = w.comp(s0, 1000.0, row="layer", phase="fwd")
    b = w.coll(s0, "allreduce", tp, GIB, deps=[a], row="layer")
    w.send(s0, pp, 1, 8 << 20, deps=[b])
    r = w.recv(s1, "PP", -1, 8 << 20)
    w.comp(
        s1, flops=1e9, flops_per_s=2e15, bytes=1e6, bytes_per_s=4e12, dtype="bf16", deps=[r], row="layer"
    )  # 500 ns
    return w


def test_a_built_workload_runs_to_its_hand_computed_time(tmp_path):
    busbw = tmp_path / "busbw.yaml"
    busbw.write_text("test\nTP:\nallreduce,: 100\n")
    r = two_stages().simulate(busbw=busbw, compat=True)
    # SimAI's busbw pricing: S / 2^30 / busbw · 1e9 · 2 (n−1)/n = 1e7 ns for 1 GiB on 2 ranks at
    # 100; transfers are free in it. Stage 0: 0–1000 compute, 1000–10 001 000 all-reduce, send;
    # stage 1: the recv completes with the send, then 500 ns of compute.
    assert r["end"] == [[1000.0, 10_001_000.0, 10_001_000.0], [10_001_000.0, 10_001_500.0]]
    assert r["end_ns"] == 10_001_500.0


def test_building_inspecting_and_saving(tmp_path):
    w = two_stages()
    assert w.counts() == {
        "COMP": 2,
        "COMM_COLL": 1,
        "SEND": 1,
        "RECV": 1,
        "ops": 5,
        "programs": 2,
        "classes": 2,
    }
    ops = w.ops(0)
    assert ops["kind"] == ["COMP", "COMM_COLL", "SEND"]
    assert ops["group"] == ["", "TP", "PP"]
    assert ops["deps"] == [[], [0], [1]]
    assert w.ops(1)["ns"] == [0.0, 500.0]
    assert w.groups == [
        {"name": "TP", "instances": [[0, 1], [2, 3]]},
        {"name": "PP", "instances": [[0, 2], [1, 3]]},
    ]
    path = tmp_path / "w.json"
    w.save(path)
    back = Workload.load(path)
    assert back == w
    assert back.to_json() == path.read_text() == w.to_json()


def test_bulk_columns_build_the_same_workload():
    w = two_stages()
    bulk = Workload(ranks=4)
    bulk.group("TP", [[0, 1], [2, 3]])
    bulk.group("PP", [[0, 2], [1, 3]])
    s0, s1 = bulk.program(), bulk.program()
    bulk.assign(s0, [0, 1])
    bulk.assign(s1, [2, 3])
    bulk.add_ops(
        s0,
        ["COMP", "COMM_COLL", "SEND"],
        ns=[1000.0, 0, 0],
        collective=["allreduce", "allreduce", "allreduce"],
        group=[0, "TP", "PP"],
        offset=[0, 0, 1],
        bytes=[0, GIB, 8 << 20],
        deps=[[], [0], [1]],
        row=["layer", "layer", None],
        phase=["fwd", "other", "other"],
    )
    bulk.add_ops(
        s1,
        ["RECV", "COMP"],
        ns=[0, 500.0],
        flops=[0, 1e9],
        mem_bytes=[0, 1e6],
        dtype=[None, "bf16"],
        group=[1, 0],
        offset=[-1, 0],
        bytes=[8 << 20, 0],
        deps=[[], [0]],
    )
    bulk.add_ops(s1, [], ns=[])
    assert bulk == w
    assert bulk.to_json() == w.to_json()


def test_generated_iterations_round_trip_exactly(example_workload):
    megatron = Workload.from_training(
        "mixtral-8x7b", gpus=32, tp=2, pp=2, vpp=2, ep=2, gbs=32, sp=True, allow_oom=True
    )
    simai = Workload.from_simai(example_workload)
    for w in (megatron, simai):
        text = w.to_json()
        back = Workload.from_json(text)
        assert back == w
        assert back.to_json() == text
    assert megatron.counts()["SEND"] > 0 and megatron.counts()["programs"] == 2
    assert {g["name"] for g in megatron.groups} >= {"TP", "PP", "EP"}
    assert simai.ranks == 9216 and simai.counts()["ops"] > 1000


def test_generated_compute_ops_carry_the_iterations_flops_by_hand():
    """Every compute op of a Megatron iteration states its work; summed over all ranks, the FLOPs
    are 3 × (2 · matmul parameters + the LM head's 2·h·V) per token, plus causal flash attention's
    2·s·h per layer and token forward and 2.5 times that backward."""
    w = Workload.from_training(
        "llama3-8b", gpus=16, tp=2, pp=2, gbs=16, seq=2048, recompute="none", allow_oom=True
    )
    c = w.columns()
    runs = [0] * len(c["program_start"])
    for k in c["rank_class"]:
        runs[c["class_program"][k]] += 1
    starts = c["program_start"]
    total = sum(
        sum(c["flops"][a:b]) * runs[p] for p, (a, b) in enumerate(zip(starts, starts[1:], strict=False))
    )
    layers, h, ffn, vocab, seq, tokens = 32, 4096, 14336, 128256, 2048, 16 * 2048
    matmul = layers * (h * (h + 2 * 1024) + h * h + 3 * h * ffn)
    assert total == 3 * (2 * matmul + 2 * h * vocab) * tokens + 7 * seq * h * layers * tokens
    comp = [d for k, d in zip(c["kind"], c["dtype"], strict=True) if k == 0]
    assert comp and all(d for d in comp)
    text = w.to_json()
    assert '"flops":' in text and Workload.from_json(text) == w


def test_ir_json_matches_the_shipped_schema(example_workload):
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    megatron = Workload.from_training("llama3-8b", gpus=16, tp=2, pp=2, gbs=16, seq=2048, allow_oom=True)
    simai = json.loads(Workload.from_simai(example_workload).to_json())
    simai["programs"][0]["ops"] = simai["programs"][0]["ops"][:300]  # jsonschema is slow: a sample
    for doc in (json.loads(two_stages().to_json()), json.loads(megatron.to_json()), simai):
        jsonschema.validate(doc, schema)
    bad = json.loads(two_stages().to_json())
    bad["programs"][0]["ops"][0]["kind"] = "MEM_LOAD"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)


def bad_document(tmp_path, edit):
    doc = json.loads(two_stages().to_json())
    edit(doc)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    return path


def op(doc, p, i):
    return doc["programs"][p]["ops"][i]


BAD = {
    "missing field": (lambda d: op(d, 0, 1).pop("bytes"), "programs[0].ops[1]: missing field `bytes`"),
    "unknown kind": (
        lambda d: op(d, 0, 0).update(kind="MEM_LOAD"),
        "programs[0].ops[0]: unknown variant `MEM_LOAD`",
    ),
    "missing op": (
        lambda d: op(d, 0, 2).update(deps=[9]),
        "programs[0].ops[2].deps[0]: depends on op 9, which does not exist (3 ops)",
    ),
    "cycle": (
        lambda d: op(d, 0, 0).update(deps=[2]),
        "programs[0].ops[0].deps: dependency cycle: op 0 -> op 2 -> op 1 -> op 0",
    ),
    "member out of range": (
        lambda d: d["groups"][1]["instances"][1].__setitem__(1, 7),
        "groups[1].instances[1][1]: rank 7 is outside the workload's 0..4",
    ),
    "unknown group": (
        lambda d: op(d, 1, 0).update(group=4),
        "programs[1].ops[0].group: group 4 does not exist",
    ),
    # Two such computes end at infinity: an internal error in the executor, not an input error.
    "work in part": (
        lambda d: op(d, 1, 1).pop("dtype"),
        "programs[1].ops[1].dtype: missing: give flops, bytes and dtype together, or none of them",
    ),
    "negative work": (
        lambda d: op(d, 1, 1).update(flops=-1.0),
        "programs[1].ops[1].flops: must be from 0 to 1e30, got -1.0",
    ),
    "unknown data type": (
        lambda d: op(d, 1, 1).update(dtype="fp7"),
        "programs[1].ops[1]: unknown variant `fp7`, expected one of `fp64`, `fp32`",
    ),
    "endless compute": (
        lambda d: op(d, 1, 1).update(ns=1e308),
        "programs[1].ops[1].ns: must be from 0 to 1e18 ns, got 1e308",
    ),
}


@pytest.mark.parametrize("case", BAD)
def test_bad_ir_json_is_one_line_naming_file_path_and_problem(run_cli, tmp_path, case):
    edit, message = BAD[case]
    path = bad_document(tmp_path, edit)
    rc, out, err = run_cli("workload", "check", path)
    # The document is on one line (json.dumps), so every error is at line 1.
    assert_clean_error(rc, out, err, f"{path}:1: {message}")
    with pytest.raises(InputError, match=re.escape(message)):
        Workload.load(path)


def test_workload_export_and_check(run_cli, tmp_path, example_workload):
    rc, out, err = run_cli("workload", "export", example_workload, "-o", "w.json", "--json")
    assert rc == 0, err
    exported = json.loads(out)
    rc, out, err = run_cli("workload", "check", "w.json", "--json")
    assert rc == 0, err
    checked = json.loads(out)
    assert checked["format"] == "workload IR JSON"
    assert checked["ops"] == exported["ops"] == Workload.from_simai(example_workload).counts()["ops"]
    assert (tmp_path / "w.json").read_text() == Workload.from_simai(example_workload).to_json()


def test_workload_generate_ir(run_cli, tmp_path):
    plan = ["--model", "llama3-8b", "--gpus", "16", "--tp", "2", "--pp", "2", "--gbs", "16", "--seq", "2048"]
    rc, out, err = run_cli("workload", "generate", *plan, "--ir", "-o", "it.json", "--json")
    assert rc == 0, err
    w = Workload.load(tmp_path / "it.json")
    assert w.to_json() == Workload.from_training("llama3-8b", gpus=16, tp=2, pp=2, gbs=16, seq=2048).to_json()
    assert json.loads(out)["programs"] == 2
    # One pipeline stage: each rank is its own embedding group (was [r, r], which reading refused).
    rc, out, err = run_cli("workload", "generate", *plan[:4], "--gbs", "16", "--ir", "-o", "one.json")
    assert rc == 0, err
    emb = next(g for g in Workload.load(tmp_path / "one.json").groups if g["name"] == "EMB")
    assert emb["instances"] == [[r] for r in range(16)]


@pytest.mark.parametrize(
    "fault", [InternalError("internal error in executor: op 3 ran twice"), EnginePanic("boom")]
)
def test_an_engine_fault_is_a_bug_with_its_own_exit_code(monkeypatch, tmp_path, capsys, fault):
    path = tmp_path / "w.json"
    two_stages().save(path)

    def broken(*args, **kwargs):
        raise fault

    monkeypatch.setattr(Workload, "from_json", broken)
    assert cli.main(["workload", "check", str(path)]) == cli.EX_SOFTWARE == 70
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert lines[0].startswith("clustersim: internal error"), lines
    assert "this is a bug in clustersim; please report it" in lines[1]
    assert "Traceback" not in captured.err and captured.out == ""


def test_the_documented_example_is_what_its_python_builds(tmp_path, monkeypatch):
    doc = DOC.read_text()
    document = re.search(r"```json\n(.*?)```", doc, re.S).group(1)
    snippet = re.search(r"```python\n(.*?)```", doc, re.S).group(1)
    (tmp_path / "busbw.yaml").write_text("test\nTP:\nallreduce,: 100\n")
    monkeypatch.chdir(tmp_path)
    scope: dict = {}
    exec(snippet, scope)
    assert Workload.from_json(document).to_json() == scope["w"].to_json()
    assert (tmp_path / "two_stages.json").read_text() == scope["w"].to_json()
    # Same hand computation as above: 1000 + 1e7 + 500 ns.
    assert scope["w"].simulate(busbw="busbw.yaml", compat=True)["end_ns"] == 10_001_500.0


def test_odd_python_input_is_refused_by_name_and_leaves_the_workload_as_it_was():
    for ranks in (0, True, 4_000_000_000, 2.0):
        with pytest.raises(InputError, match="ranks: must be a whole number from 1 to"):
            Workload(ranks=ranks)
    w = two_stages()
    before = Workload.from_columns(w.columns())
    refused = [
        (lambda: w.add_ops(0, ["COMP", "COMM_COLL"], collective=[0, "allreduse"]), "unknown collective"),
        (lambda: w.add_ops(0, ["SEND"], group=[-1], offset=[1], bytes=[8]), "group: -1 does not exist"),
        (lambda: w.add_ops(0, ["SEND"], group=[1], offset=[1], bytes=[-8]), "bytes: must be whole numbers"),
        (lambda: w.add_ops(0, ["SEND"], group=[1], offset=[-(1 << 31)], bytes=[8]), "offset: must be whole"),
        (lambda: w.add_ops(0, ["COMP", "COMP"], ns=[1.0, "x"]), "ns: must be numbers"),
        (lambda: w.add_ops(0, ["COMP"], deps=[[-1]]), "deps: must be whole numbers"),
        (lambda: w.add_ops(-1, ["COMP"], ns=[1.0]), "add_ops: program -1 does not exist"),
        (lambda: w.ops(2), "ops: program 2 does not exist"),
    ]
    for call, message in refused:
        with pytest.raises(InputError, match=re.escape(message)):
            call()
        assert w == before
    fresh = Workload(ranks=3)
    p = fresh.program()
    with pytest.raises(InputError, match="rank 1 is listed twice"):
        fresh.assign(p, [0, 1, 1])
    assert fresh.class_program == [] and fresh.rank_class == [None, None, None]


def test_one_rank_and_empty_programs_run():
    w = Workload(ranks=1)
    alone = w.group("DP", [[0]])
    p = w.program()
    w.assign(p, [0])
    a = w.comp(p, 250.0)
    w.coll(p, "allreduce", alone, GIB, deps=[a])
    # A collective of one rank moves nothing: only the compute takes time.
    assert w.simulate()["end_ns"] == 250.0
    empty = Workload(ranks=2)
    empty.assign(empty.program(), [0, 1])
    assert empty.simulate()["end_ns"] == 0.0
    assert Workload.from_json(empty.to_json()) == empty


def test_a_ring_inside_one_class_is_nccl_unless_marked_a_copy():
    # Two TP ranks in one class send to each other: NCCL sends pay their call latency; marked
    # copy=True (Transformer Engine's userbuffers) they pay only the bytes.
    def ring(send_copy: bool, recv_copy: bool) -> Workload:
        w = Workload(ranks=2)
        tp = w.group("TP", [[0, 1]])
        p = w.program()
        w.assign(p, [0, 1])
        w.send(p, tp, 1, 8 << 20, copy=send_copy)
        w.recv(p, tp, -1, 8 << 20, copy=recv_copy)
        return w

    nccl, copy = ring(False, False), ring(True, True)
    assert '"copy"' not in nccl.to_json() and copy.to_json().count('"copy":true') == 2
    back = Workload.from_json(copy.to_json())
    assert back == copy and back.ops(0).to_dict()["copy"] == [True, True]
    assert nccl.simulate()["end_ns"] > copy.simulate()["end_ns"] > 0
    with pytest.raises(InputError, match="a copy pair marks both ops"):
        ring(True, False).simulate()
    with pytest.raises(InputError, match="copy: must be true or false"):
        copy.add_ops(0, ["SEND"], group=[0], offset=[1], bytes=[8], copy=[1])
