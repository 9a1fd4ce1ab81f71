"""Every result records what made it (clustersim.provenance): the command, the version, the plan,
the model, the fabric (name and content hash) and the backend — in `--json`, `-o`, the summary
file, the CSV files' comment lines and each sweep row — and `compare` says what differs first."""

from __future__ import annotations

import hashlib
import json

import clustersim
import pytest
from clustersim.fabric import load_topology
from clustersim.provenance import FIELDS, comment_lines, digest, platform_digest
from conftest import ROOT

PLAN = "train --model llama3-8b --layers 2 --gpus 16 --gbs 16 --seq 1024 --tp 8"
MICRO = ROOT / "examples" / "microAllReduce.txt"


def short(fabric: str) -> str:
    return platform_digest(load_topology(fabric))[:16]


def test_compare_two_runs_that_differ_only_in_fabric_says_so_first(run_cli):
    for name, fabric in (("a", "Spectrum-X:16"), ("b", "DCN+:16")):
        code, _, err = run_cli(*PLAN.split(), "-n", fabric, "-o", f"{name}.json")
        assert code == 0, err
    code, out, err = run_cli("compare", "a.json", "b.json")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "what differs: fabric"
    assert (
        lines[1]
        == f"  fabric: Spectrum-X:16 (sha256 {short('Spectrum-X:16')}) → DCN+:16 (sha256 {short('DCN+:16')})"
    )
    assert lines[2] == f"  command of A: clustersim {PLAN} -n Spectrum-X:16 -o a.json"
    assert lines[3] == f"  command of B: clustersim {PLAN} -n DCN+:16 -o b.json"
    # The numbers follow; the provenance is not repeated among them.
    assert lines[4] == "" and lines[5].split()[0] == "field"
    assert not any(line.startswith("provenance.") for line in lines)


def test_the_same_inputs_differ_in_nothing_and_an_old_result_says_it_cannot_tell(run_cli, tmp_path):
    for name in ("a", "b"):
        assert run_cli(*PLAN.split(), "-o", f"{name}.json")[0] == 0
    out = run_cli("compare", "a.json", "b.json")[1].splitlines()
    assert out[:3] == [
        "what differs: nothing that made them (same inputs, same version)",
        f"  command of A: clustersim {PLAN} -o a.json",
        f"  command of B: clustersim {PLAN} -o b.json",
    ]
    old = json.loads((tmp_path / "a.json").read_text())
    del old["provenance"]
    (tmp_path / "old.json").write_text(json.dumps(old))
    out = run_cli("compare", "old.json", "b.json")[1].splitlines()
    assert out[0].startswith("what differs: unknown (A: no provenance recorded")


def test_train_records_command_version_plan_model_fabric_and_backend_everywhere(run_cli, tmp_path):
    args = [*PLAN.split(), "-n", "Spectrum-X:16", "-r", "r-", "-o", "o.json"]
    code, out, err = run_cli(*args, "--json")
    assert code == 0, err
    made_by = json.loads(out)["provenance"]
    assert list(made_by) == list(FIELDS)
    assert made_by["command"] == "clustersim " + " ".join(args + ["--json"])
    assert made_by["version"] == clustersim.__version__
    assert made_by["backend"] == "flow"
    assert made_by["fabric"] == {
        "name": "Spectrum-X:16",
        "sha256": platform_digest(load_topology("Spectrum-X:16")),
    }
    plan = made_by["plan"]
    assert (plan["gpus"], plan["tp"], plan["pp"], plan["gbs"], plan["seq"], plan["gpu"]) == (
        16,
        8,
        1,
        16,
        1024,
        "h100",
    )
    assert plan["fabric_options"]["algo"] == "auto"
    assert made_by["model"]["name"] == "llama3-8b" and len(made_by["model"]["sha256"]) == 64
    # The same record in the JSON file, the summary, and above each CSV's header.
    assert json.loads((tmp_path / "o.json").read_text())["provenance"] == made_by
    assert json.loads((tmp_path / "r-summary.json").read_text())["provenance"] == made_by
    for name in ("r-layers.csv", "r-stages.csv"):
        lines = (tmp_path / name).read_text().splitlines()
        assert lines[:6] == comment_lines(made_by)
        assert lines[4] == f"# fabric: Spectrum-X:16 (sha256 {short('Spectrum-X:16')})"
    # Without a fabric: the analytical model, no fabric; a changed model shape hashes otherwise.
    analytical = clustersim.train("llama3-8b", layers=2, gpus=16, gbs=16, seq=1024, tp=8).provenance
    assert (analytical["backend"], analytical["fabric"]) == ("analytical", None)
    assert analytical["model"] == made_by["model"]
    assert (
        analytical["command"]
        == "clustersim.train(model='llama3-8b', layers=2, gpus=16, gbs=16, seq=1024, tp=8)"
    )
    deeper = clustersim.train("llama3-8b", layers=4, gpus=16, gbs=16, seq=1024, tp=8).provenance
    assert deeper["model"]["sha256"] != made_by["model"]["sha256"]


def test_a_workload_run_records_its_file_and_a_collective_its_ranks(run_cli):
    code, out, err = run_cli("run", "-w", MICRO, "-g", "16", "-n", "DCN+:16", "--json")
    assert code == 0, err
    made_by = json.loads(out)["provenance"]
    assert made_by["model"] == {"name": str(MICRO), "sha256": hashlib.sha256(MICRO.read_bytes()).hexdigest()}
    assert (made_by["backend"], made_by["fabric"]["name"], made_by["plan"]["gpus"]) == ("flow", "DCN+:16", 16)
    code, out, err = run_cli("analytical", "-w", MICRO, "-g", "16", "--json")
    assert code == 0, err
    assert json.loads(out)["provenance"]["backend"] == "analytical"
    assert json.loads(out)["provenance"]["fabric"] is None
    result = clustersim.collective("allreduce", "Spectrum-X:16", gpus=8)
    assert result.provenance["plan"]["ranks"] == 8 and result.provenance["plan"]["minbytes"] == 32 << 20
    assert result.provenance["fabric"]["sha256"] == platform_digest(load_topology("Spectrum-X:16"))


def test_a_search_records_what_it_searched(run_cli, tmp_path):
    """`search --json` and its CSV say what made them: the command, the space (as the plan), the
    model by name and hash, the analytical backend."""
    args = ["search", "--model", "llama3-8b", "--gpus", "16", "--gbs", "32", "--exclude", "tp=1"]
    rc, out, err = run_cli(*args, "--csv", "plans.csv", "--json", "--no-progress")
    assert rc == 0, err
    made_by = json.loads(out)["provenance"]
    assert list(made_by) == list(FIELDS) and made_by["command"].startswith(
        "clustersim search --model llama3-8b"
    )
    assert made_by["plan"]["gbs"] == 32 and made_by["plan"]["exclude"] == {"tp": [1]}
    assert made_by["model"]["name"] == "llama3-8b" and made_by["backend"] == "analytical"
    lines = (tmp_path / "plans.csv").read_text().splitlines()
    assert lines[: len(FIELDS)] == comment_lines(made_by) and lines[len(FIELDS)].startswith("rank,")


@pytest.mark.parametrize("size", [0, 1000, 1 << 20])  # the built-in hash below 1 MB, OpenSSL's at it
def test_a_digest_is_the_sha256_of_the_canonical_json(size):
    value = {"text": "x" * size, "b": [1, 2.5]}
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    assert digest(value) == hashlib.sha256(text.encode()).hexdigest()
