"""The corpus of public nccl-tests results (tests/data/nccl-tests/corpus.yaml, issue 28).

Each record must be complete and each log must be the table it claims to be: it parses with the
project's reader, its collective and rank count match the record, and every row obeys nccl-tests'
own arithmetic (busbw = factor(collective, ranks) × algbw, algbw = size / time, count × type size
× (ranks, for the gathering collectives) = size) within the table's printed rounding. A wrong rank
count, a mis-typed digit or a table whose columns were shifted fails here. The split is by source.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import yaml
from clustersim.measure.calibrate.nccl_log import read_nccl_log

HERE = Path(__file__).parent / "data" / "nccl-tests"
CORPUS = yaml.safe_load((HERE / "corpus.yaml").read_text(encoding="utf-8"))
ENTRIES: list[dict[str, Any]] = CORPUS["entries"]

GPUS = {"A100", "A100-PCIe", "A800", "H100", "H100-PCIe", "H800", "H20", "H200", "B200", "GB200"}
FABRICS = {"ib", "roce", "efa", "slingshot", "none"}
# nccl-tests' binary → the reader's name for it, and its busbw factor for n ranks.
OPS = {"all_reduce": "allreduce", "all_gather": "allgather", "reduce_scatter": "reducescatter",
       "alltoall": "alltoall", "broadcast": "broadcast", "reduce": "reduce"}  # fmt: skip
FACTOR = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "alltoall": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "reduce": lambda n: 1.0,
}
# Collectives whose printed `count` is per rank: size = count × type size × ranks.
PER_RANK_COUNT = {"all_gather", "reduce_scatter", "alltoall"}
TYPE_BYTES = {"int8": 1, "uint8": 1, "char": 1, "half": 2, "bfloat16": 2, "float": 4, "int32": 4,
              "uint32": 4, "int": 4, "double": 8, "int64": 8, "uint64": 8}  # fmt: skip
SOURCE_KEYS = {"source_id", "url", "date", "title"}
HARDWARE_KEYS = {"gpu", "gpus_per_node", "nodes", "nvlink", "nvswitch", "nics_per_node", "nic_gbps",
                 "fabric", "pcie_gen", "gpu_nic_placement", "switch_tiers"}  # fmt: skip
ENTRY_KEYS = {"id", "log", "collective", "source", "hardware", "nccl_version", "env", "command",
              "split", "flag", "notes"}  # fmt: skip
TAG = re.compile(r"^\[\d+,\d+\]<std(?:out|err)>:")


def ids(entry: dict[str, Any]) -> str:
    return str(entry.get("id"))


def ranks(entry: dict[str, Any]) -> int:
    return entry["hardware"]["nodes"] * entry["hardware"]["gpus_per_node"]


def rows(path: Path) -> tuple[list[str], list[list[str]]]:
    """The column header and the data rows under it, as nccl-tests printed them."""
    out: list[list[str]] = []
    header: list[str] = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = TAG.sub("", raw).strip()
        words = line.split()
        if line.startswith("#"):
            if line[1:].split()[:2] == ["size", "count"]:
                header = line[1:].split()
            continue
        if header and words and words[0].isdigit() and len(words) == len(header):
            out.append(words)
    return header, out


def decimals(text: str) -> int:
    return len(text.split(".")[1]) if "." in text else 0


def test_the_corpus_is_large_enough_and_ids_are_unique():
    assert len(ENTRIES) >= 60
    assert len({e["id"] for e in ENTRIES}) == len(ENTRIES)
    assert len({e["log"] for e in ENTRIES}) == len(ENTRIES)
    # every log in the folder belongs to a record
    assert {p.name for p in HERE.glob("*.txt")} == {e["log"] for e in ENTRIES}


@pytest.mark.parametrize("entry", ENTRIES, ids=ids)
def test_record_has_the_required_fields(entry):
    assert set(entry) >= ENTRY_KEYS, ENTRY_KEYS - set(entry)
    assert re.fullmatch(r"[a-z0-9][a-z0-9_.-]*", entry["id"])
    assert entry["collective"] in FACTOR
    assert set(entry["source"]) >= SOURCE_KEYS
    assert entry["source"]["url"].startswith("https://")
    assert re.fullmatch(r"\d{4}-\d{2}(-\d{2})?", str(entry["source"]["date"]))
    assert entry["source"]["title"]
    hw = entry["hardware"]
    assert set(hw) >= HARDWARE_KEYS, HARDWARE_KEYS - set(hw)
    assert hw["gpu"] in GPUS
    for key in ("gpus_per_node", "nodes"):
        assert isinstance(hw[key], int) and hw[key] >= 1, key
    assert hw["nodes"] * hw["gpus_per_node"] >= 2
    for key in ("nics_per_node", "pcie_gen", "nvlink", "switch_tiers"):
        assert hw[key] is None or (isinstance(hw[key], int) and hw[key] >= 0), key
    assert hw["nic_gbps"] is None or (isinstance(hw["nic_gbps"], (int, float)) and hw["nic_gbps"] > 0)
    assert hw["nvswitch"] in (True, False, None)
    assert hw["fabric"] in FABRICS or hw["fabric"] is None
    if hw["nodes"] > 1:
        assert hw["fabric"] != "none"
    assert entry["nccl_version"] is None or re.fullmatch(r"2\.\d+\.\d+", entry["nccl_version"])
    assert isinstance(entry["env"], dict)
    assert all(k.startswith(("NCCL_", "UCX_", "SHARP_", "CUDA_", "FI_", "OMPI_")) for k in entry["env"])
    assert entry["command"] is None or isinstance(entry["command"], str)
    assert entry["split"] in ("train", "validation")
    flag = entry["flag"]
    assert flag is None or (isinstance(flag, str) and flag.startswith("broken: ") and len(flag) > 20)
    assert isinstance(entry["notes"], list) and all(isinstance(n, str) for n in entry["notes"])


@pytest.mark.parametrize("entry", ENTRIES, ids=ids)
def test_log_parses_and_matches_its_record(entry):
    path = HERE / entry["log"]
    runs = read_nccl_log(path)
    assert len(runs) == 1, "one table per log"
    run = runs[0]
    assert run.op == OPS[entry["collective"]]
    assert run.ranks == ranks(entry)
    if not entry.get("restored"):  # the post's own Rank lines name the hosts
        assert len(set(run.hosts)) == entry["hardware"]["nodes"]
    assert len(rows(path)[1]) >= 5


@pytest.mark.parametrize("entry", ENTRIES, ids=ids)
def test_rows_obey_nccl_tests_arithmetic(entry):
    n = ranks(entry)
    factor = FACTOR[entry["collective"]](n)
    header, table = rows(HERE / entry["log"])
    assert len(table) >= 5
    groups = [i for i, w in enumerate(header) if w == "time"]
    for words in table:
        size, count, dtype = int(words[0]), int(words[1]), words[2]
        per = TYPE_BYTES[dtype] * (n if entry["collective"] in PER_RANK_COUNT else 1)
        assert count * per == size, f"{words}: count × {per} ≠ size (rank count {n}?)"
        if size == 0:
            continue
        for g in groups:  # out-of-place, then in-place: time, algbw, busbw
            t_text, alg_text, bus_text = words[g], words[g + 1], words[g + 2]
            t, alg, bus = float(t_text), float(alg_text), float(bus_text)
            alg_half = 0.5 * 10.0 ** -decimals(alg_text)
            bus_half = 0.5 * 10.0 ** -decimals(bus_text)
            assert abs(bus - factor * alg) <= bus_half + factor * alg_half + 1e-9, (
                f"{words}: busbw {bus} ≠ {factor:.4f} × algbw {alg} (rank count {n}?)"
            )
            t_half = 0.5 * 10.0 ** -decimals(t_text)
            ideal = size / (t * 1e3)  # B/µs → GB/s
            slack = alg_half + ideal * t_half / max(t - t_half, 1e-9) + 1e-9
            assert abs(alg - ideal) <= slack, f"{words}: algbw {alg} ≠ size/time {ideal:.3f}"


def test_split_is_by_source_and_at_most_half_is_train():
    by_source: dict[str, set[str]] = defaultdict(set)
    source_of_url: dict[str, set[str]] = defaultdict(set)
    for e in ENTRIES:
        by_source[e["source"]["source_id"]].add(e["split"])
        source_of_url[e["source"]["url"].split("#")[0]].add(e["source"]["source_id"])
    # one thread or page is one source (a source may span several pages of one author or cluster)
    assert all(len(s) == 1 for s in source_of_url.values())
    assert all(len(s) == 1 for s in by_source.values()), {u: s for u, s in by_source.items() if len(s) > 1}
    train = [e for e in ENTRIES if e["split"] == "train"]
    assert 2 * len(train) <= len(ENTRIES)
    train_sources = [u for u, s in by_source.items() if s == {"train"}]
    assert 2 * len(train_sources) <= len(by_source)
    # both halves span the GPU generations and both one node and several
    for split in ("train", "validation"):
        half = [e for e in ENTRIES if e["split"] == split]
        assert {"A100", "H100", "H200"} <= {e["hardware"]["gpu"] for e in half}, split
        assert {e["hardware"]["nodes"] == 1 for e in half} == {True, False}, split


def test_no_msccl_pp_readme_tables():
    for e in ENTRIES:
        url = e["source"]["url"].lower()
        assert "mscclpp" not in url and "msccl-pp" not in url, e["id"]


def test_readme_lists_every_entry_with_its_split():
    readme = (HERE / "README.md").read_text(encoding="utf-8")
    for e in ENTRIES:
        row = next((line for line in readme.splitlines() if line.startswith(f"| `{e['id']}` |")), None)
        assert row is not None, e["id"]
        assert f"| {e['split']}" in row, e["id"]


def test_flagged_entries_say_why():
    for e in ENTRIES:
        if e["flag"]:
            said = " ".join([e["flag"], *e["notes"]]).lower()
            assert any(w in said for w in ("resolution", "resolved", "fix", "thread")), e["id"]
