"""The Python API: Table, simulate(), AnalyticalResult, InputError."""

from __future__ import annotations

import json
import math

import clustersim
import pytest
from clustersim import AnalyticalResult, InputError, Table
from conftest import EXAMPLE_BUSBW, EXAMPLE_WORKLOAD

NAN = float("nan")


@pytest.fixture
def table():
    return Table({"name": ["a", "b", "c"], "x": [1.0, NAN, 3.0], "n": [1, 2, 3]})


@pytest.fixture(scope="module")
def result():
    return clustersim.simulate(
        EXAMPLE_WORKLOAD, gpus=9216, nvlink_busbw=360, nic_busbw=48.5, nics_per_server=8, gpus_per_server=8
    )


def test_table_basics(table):
    assert table.columns == ["name", "x", "n"]
    assert len(table) == 3
    assert table["name"] == ["a", "b", "c"]
    assert table["n"][2] == 3
    assert math.isnan(table["x"][1])
    with pytest.raises(KeyError):
        table["missing"]


def test_table_rows(table):
    rows = list(table.rows())
    assert len(rows) == 3
    assert rows[0] == {"name": "a", "x": 1.0, "n": 1}
    assert rows[2] == {"name": "c", "x": 3.0, "n": 3}
    assert list(rows[1]) == ["name", "x", "n"]


def test_table_to_dict_replaces_nan(table):
    d = table.to_dict()
    assert d == {"name": ["a", "b", "c"], "x": [1.0, None, 3.0], "n": [1, 2, 3]}
    json.dumps(d, allow_nan=False)
    assert math.isnan(table["x"][1]), "to_dict() must not change the table"
    inf = Table({"v": [math.inf, -math.inf, 0.0]}).to_dict()
    assert inf == {"v": [None, None, 0.0]}


def test_table_copies_its_input():
    cols = {"a": [1, 2]}
    t = Table(cols)
    cols["a"].append(3)
    assert len(t) == 2


def test_table_rejects_ragged_columns():
    with pytest.raises(ValueError):
        Table({"a": [1, 2], "b": [1]})


def test_empty_table():
    t = Table({})
    assert len(t) == 0 and t.columns == [] and list(t.rows()) == []


def test_table_to_pandas(table):
    pd = pytest.importorskip("pandas")
    df = table.to_pandas()
    assert isinstance(df, pd.DataFrame)
    assert df.shape == (3, 3)
    assert list(df.columns) == table.columns
    assert df["n"].tolist() == [1, 2, 3]


def test_result_layers_to_pandas(result):
    pytest.importorskip("pandas")
    df = result.layers.to_pandas()
    assert df.shape == (len(result.layers), len(result.layers.columns))
    assert df.shape[0] == 1789


def test_result_layers_json_ready(result):
    layers = result.layers
    assert layers.columns[0] == "layer_name"
    assert "fwd compute" in layers.columns
    assert any(isinstance(x, float) and math.isnan(x) for col in layers.columns for x in layers[col])
    json.dumps(layers.to_dict(), allow_nan=False)


def test_result_to_dict_is_json(result):
    assert isinstance(result, AnalyticalResult)
    d = result.to_dict()
    text = json.dumps(d, allow_nan=False)
    back = json.loads(text)
    assert back["iteration_time_us"] == result.iteration_time_us
    assert back["plan"]["dp"] == 384
    assert back["mode"] == "default"
    assert back["summary_us"]["total_us"] == result.summary["total_us"]


def test_breakdown_sums_to_100(result):
    pct = result.breakdown()
    # The disjoint parts only: neither the total nor the exposed-comm subtotal.
    assert "total_pct" not in pct and "exposed_comm_pct" not in pct
    assert math.isclose(sum(pct.values()), 100.0, rel_tol=1e-6)
    assert all(0 <= v <= 100 for v in pct.values())
    # Percentages are keyed as such; each is its part of the summary (µs) over the total.
    assert all(k.endswith("_pct") for k in pct)
    total = result.summary["total_us"]
    assert pct["compute_pct"] == pytest.approx(result.summary["compute_us"] / total * 100)
    # The old keys (percentages under `_us` names) fail with the new name.
    with pytest.raises(KeyError, match="'compute_pct'"):
        pct["compute_us"]
    with pytest.raises(KeyError):
        pct["no_such_part"]


def test_busbw_file_api():
    r = clustersim.simulate(
        EXAMPLE_WORKLOAD, gpus=9216, gpus_per_server=8, busbw=EXAMPLE_BUSBW, compat="simai"
    )
    assert math.isclose(r.iteration_time_us, 7234189, rel_tol=0.005)


def test_simulate_missing_file(tmp_path):
    with pytest.raises(InputError) as e:
        clustersim.simulate(tmp_path / "missing.txt")
    assert "missing.txt" in str(e.value)


def test_simulate_bad_file(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text(
        "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 2 ep: 1 pp: 1 vpp: 1 ga: 1 all_gpus: 4 "
        "checkpoints: 0 checkpoint_initiates: 0 pp_comm: 0\n1\n"
        "mlp -1 1000 ALLSUM 0 1000 NONE 0 1000 NONE 0 100\n"
    )
    with pytest.raises(InputError) as e:
        clustersim.simulate(bad)
    msg = str(e.value)
    assert "bad.txt:3:" in msg and "fwd_comm" in msg and "ALLSUM" in msg
    assert isinstance(e.value, Exception)


def test_simulate_bad_options(tmp_path):
    with pytest.raises(InputError):
        clustersim.simulate(EXAMPLE_WORKLOAD, compat="astra")
    with pytest.raises(InputError):
        clustersim.simulate(EXAMPLE_WORKLOAD, gpus=100)
    with pytest.raises(InputError):
        clustersim.simulate(EXAMPLE_WORKLOAD, gpu_type="Z100")


def test_public_names():
    assert set(clustersim.__all__) >= {"AnalyticalResult", "InputError", "Table", "simulate"}
    assert issubclass(InputError, Exception)
