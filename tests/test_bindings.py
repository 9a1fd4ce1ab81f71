"""The bindings' one convention (docs/architecture.md, "Bindings"): typed engine objects in, built
once from a document's Python objects with a bad field named by its path; results out as Python
objects; a workload's bulk columns as NumPy arrays of the engine's element types, and text only
where it is a file's content."""

from __future__ import annotations

import ast
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from clustersim import _engine
from clustersim.errors import InputError
from clustersim.training import input_document
from clustersim.workload import DTYPE_OF, Workload

STUB = Path(__file__).resolve().parents[1] / "python" / "clustersim" / "_engine.pyi"


def test_a_training_input_names_the_path_of_a_bad_field():
    doc = input_document("llama3-8b", gpus=8, gbs=8, tp=2)
    doc["plan"]["tp"] = "two"
    with pytest.raises(_engine.InputError, match=r"^training input: plan\.tp: .*integer"):
        _engine.TrainingInput(doc)
    doc["plan"]["tp"] = 2
    del doc["model"]["layers"]
    with pytest.raises(_engine.InputError, match=r"^training input: model: missing field `layers`"):
        _engine.TrainingInput(doc)


def test_one_typed_input_serves_every_training_binding():
    """Built once, the input is read by the run, the layer times, the kernels, the SimAI file
    and the IR; the run's report comes back as Python objects (no JSON text)."""
    job = _engine.TrainingInput(input_document("llama3-8b", gpus=8, gbs=8, tp=2, seq=2048, allow_oom=True))
    report = _engine.run_training(job)
    assert isinstance(report, dict) and report["iteration_s"] > 0
    # The objects of the report's JSON form: pairs are lists, as `json.loads` gives them.
    assert report == json.loads(json.dumps(report)) and isinstance(report["breakdown_s"][0], list)
    fwd, bwd = _engine.layer_seconds(job)
    assert 0 < fwd < bwd
    assert _engine.iteration_kernels(job)
    assert _engine.generate_workload(job).startswith("HYBRID_TRANSFORMER_FWD_IN_BCKWD")
    columns = _engine.workload_from_training(job)
    assert columns["kind"].dtype == np.uint8 and columns["ns"].dtype == np.float64


def test_workload_columns_are_numpy_arrays_of_the_engines_types_and_lists_still_read():
    w = Workload.from_training("llama3-8b", gpus=8, tp=2, gbs=8, seq=2048, allow_oom=True)
    c = w.columns()
    for name, dtype in DTYPE_OF.items():
        assert isinstance(c[name], np.ndarray) and c[name].dtype == dtype, name
    as_lists = {k: v.tolist() if isinstance(v, np.ndarray) else v for k, v in c.items()}
    assert _engine.workload_to_json(as_lists) == _engine.workload_to_json(c)
    # An op added after loading extends the loaded arrays.
    ops = len(w.ops(0))
    w.comp(0, 125.0, deps=[ops - 1])
    again = Workload.from_json(w.to_json())
    assert again == w and len(again.ops(0)) == ops + 1 and again.ops(0)["ns"][-1] == 125.0
    # A column of the wrong element type is read as numbers; a wrong value is refused by name.
    bad = dict(c, kind=c["kind"].astype(np.float64) + 0.5)
    with pytest.raises(_engine.InputError, match="columns: kind"):
        _engine.workload_to_json(bad)


def test_no_binding_takes_a_document_as_json_text():
    """Documents cross as Python objects: a parameter that carries one (input, doc, document,
    fabric, columns) is never annotated `str` in the stub."""
    carriers = {"input", "doc", "document", "fabric", "columns"}
    offending = []
    for node in ast.walk(ast.parse(STUB.read_text())):
        if isinstance(node, ast.FunctionDef):
            for a in node.args.args + node.args.kwonlyargs:
                shown = "" if a.annotation is None else ast.unparse(a.annotation)
                if a.arg in carriers and "str" in (t.strip() for t in shown.split("|")):
                    offending.append(f"{node.name}({a.arg}: {shown})")
    assert not offending, offending


@pytest.mark.parametrize(
    ("column", "values", "message"),
    [
        ("kind", lambda n: np.full(n, 0.5), "kind: must be whole numbers (uint8)"),
        ("offset", lambda n: np.full(n, 2**32 + 1), "offset: must be whole numbers from -2147483648"),
        ("bytes", lambda n: -np.ones(n, dtype=np.int64), "bytes: must be whole numbers from 0 to"),
        (
            "bytes",
            lambda n: [2**64] * n,
            "bytes: must be whole numbers from 0 to 18446744073709551615, got 1844",
        ),
        ("ns", lambda n: ["a"] * n, "ns: must hold numbers"),
    ],
)
def test_a_column_the_engines_type_cannot_hold_is_refused_not_wrapped(column, values, message):
    c = Workload.from_training("llama3-8b", gpus=8, tp=2, gbs=8, seq=2048, allow_oom=True).columns()
    with pytest.raises(InputError, match=re.escape(f"workload: columns: {message}")):
        Workload.from_columns(dict(c, **{column: values(len(c[column]))}))


def test_groups_past_the_irs_16_bits_are_refused_and_equality_needs_no_assignment():
    w = Workload(ranks=2)
    for i in range(1 << 16):
        w.group(f"g{i}", [[0], [1]])
    with pytest.raises(InputError, match="at most 65536 groups"):
        w.group("one more", [[0], [1]])
    assert Workload(ranks=2) == Workload(ranks=2) and Workload(ranks=2) != Workload(ranks=3)


def test_goodput_trials_come_as_numpy_columns_their_spread_summarises():
    run = _engine.GoodputRun(
        names=["gpu"], effects=["swap"], rates_per_s=[1 / 3600], interval_s=1800.0, checkpoint_s=60.0,
        restart_s=600.0, restore_s=60.0, spare_servers=None, repair_s=0.0, window_s=30 * 86400.0,
        work_s=math.inf, trials=200, seed=1,
    )  # fmt: skip
    trials = run.simulate()
    goodput = trials.column("goodput")
    assert isinstance(goodput, np.ndarray) and goodput.dtype == np.float64 and len(goodput) == 200
    assert trials.spread("goodput")[0] == pytest.approx(goodput.mean(), rel=1e-12)
    assert trials.column("interruptions").sum() == sum(trials.by_cause)
    with pytest.raises(InputError, match="no quantity 'walls'"):
        trials.column("walls")
