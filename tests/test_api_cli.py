"""One API: `clustersim.simulate`, `run`, `train` and `collective` take the CLI's long option names
as keyword arguments and give exactly what the CLI gives for the same inputs."""

from __future__ import annotations

import json
import sys

import clustersim
import pytest
from conftest import ROOT, run_clustersim

MICRO = ROOT / "examples" / "microAllReduce.txt"
EXAMPLE = ROOT / "examples" / "workload_analytical.txt"


def cli_json(tmp_path, *args):
    rc, out, err = run_clustersim(*args, "--json", cwd=tmp_path)
    assert rc == 0, err
    return json.loads(out)


def same_provenance(api: dict, cli: dict) -> None:
    """Both record the same plan, model, fabric, backend and version; the CLI its command line,
    the API its call (each taken out of the documents)."""
    a, c = api.pop("provenance"), cli.pop("provenance")
    assert a["command"].startswith("clustersim.") and c["command"].startswith("clustersim ")
    for field in ("version", "plan", "model", "fabric", "backend"):
        assert a[field] == c[field], field


def same_run(api: dict, cli: dict) -> None:
    """Equal, apart from the wall-clock time the engine measured, the files the CLI wrote and the
    command each records."""
    for doc in (api, cli):
        doc.pop("simulate_seconds")
        doc.pop("outputs", None)
    same_provenance(api, cli)
    assert api == cli


def test_simulate_is_clustersim_analytical(tmp_path):
    cli = cli_json(
        tmp_path, "analytical", "-w", EXAMPLE, "--gpus", "9216", "--nvlink-busbw", "360",
        "--nic-busbw", "48.5", "--nics-per-server", "8", "--gpus-per-server", "8", "--tp-overlap", "0.5",
        "-r", "x-",
    )  # fmt: skip
    api = clustersim.simulate(
        EXAMPLE, gpus=9216, nvlink_busbw=360, nic_busbw=48.5, nics_per_server=8, gpus_per_server=8,
        tp_overlap=0.5, run_name="x-",
    )  # fmt: skip
    same_run(api.to_dict(), cli)
    assert (tmp_path / "x-EndToEnd.csv").read_text() == api.csv


def test_run_is_clustersim_run(tmp_path):
    options = dict(gpus=16, topology="DCN+:16", algo="ring", channels=2, seed=3, qps=2, ecmp_seeds=2)
    cli = cli_json(
        tmp_path, "run", "-w", MICRO, "--gpus", "16", "--topology", "DCN+:16", "--algo", "ring",
        "--channels", "2", "--seed", "3", "--qps", "2", "--ecmp-seeds", "2", "-r", "m-",
    )  # fmt: skip
    api = clustersim.run(MICRO, run_name="m-", **options)
    assert api.ecmp_seeds is not None and api.ecmp_seeds["seeds"] == [3, 4]
    same_run(api.to_dict(), cli)


def test_train_is_clustersim_train(tmp_path):
    cli = cli_json(
        tmp_path, "train", "--model", "llama3-8b", "--gpus", "16", "--tp", "4", "--pp", "2", "--gbs", "16",
        "--seq", "2048", "--sp", "--dist-opt", "--recompute", "selective", "--topology", "Spectrum-X:16",
    )  # fmt: skip
    api = clustersim.train(
        "llama3-8b", gpus=16, tp=4, pp=2, gbs=16, seq=2048, sp=True, dist_opt=True, recompute="selective",
        topology="Spectrum-X:16",
    )  # fmt: skip
    assert isinstance(api, clustersim.TrainResult)
    doc = api.to_dict()
    same_provenance(doc, cli)
    assert doc == cli
    assert api.iteration_s == cli["iteration_s"] > 0
    assert list(api.layers["layer"]) == [x["name"] for x in cli["layers"]]


def test_collective_is_clustersim_collective(tmp_path):
    cli = cli_json(
        tmp_path, "collective", "alltoall", "--minbytes", "64K", "--maxbytes", "1M", "--stepfactor", "4",
        "--topology", "DCN+:32", "--proto", "Simple", "--gpus", "16", "--ecmp-seeds", "2",
    )  # fmt: skip
    api = clustersim.collective(
        "alltoall", "DCN+:32", minbytes="64K", maxbytes=1 << 20, stepfactor=4, proto="Simple", gpus=16,
        ecmp_seeds=2,
    )  # fmt: skip
    assert (api.op, api.ranks, len(api)) == ("alltoall", 16, 3 * 2 + 3 * 3)
    doc = api.to_dict()
    same_provenance(doc, cli)
    assert doc == cli


def test_results_to_pandas():
    pd = pytest.importorskip("pandas")
    r = clustersim.train("llama3-8b", gpus=8, tp=8, gbs=8, seq=2048)
    frame = r.to_pandas()
    assert isinstance(frame, pd.DataFrame) and list(frame.columns) == [
        "layer",
        "compute_s",
        "exposed_comm_s",
        "comm_s",
    ]
    c = clustersim.collective("allreduce", "Spectrum-X:8", minbytes="1M", maxbytes="1M").to_pandas()
    assert c["busbw_GBps"].iloc[0] > 0


def test_to_pandas_without_pandas_says_how_to_get_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match=r"pip install 'clustersim\[pandas\]'"):
        clustersim.collective("allreduce", "Spectrum-X:8", minbytes="1M", maxbytes="1M").to_pandas()


def test_bad_keyword_values_are_input_errors():
    with pytest.raises(clustersim.InputError, match="--dist-opt"):
        clustersim.train("llama3-8b", gpus=8, gbs=8, dist_opt=True, zero=1)
    with pytest.raises(clustersim.InputError, match="ecmp_seeds"):
        clustersim.run(MICRO, "Spectrum-X:8", ecmp_seeds=0)
    with pytest.raises(clustersim.InputError, match="unknown collective"):
        clustersim.collective("allsum", "Spectrum-X:8")


def test_train_takes_every_plan_option_the_cli_has():
    import inspect

    from clustersim.plan import PLAN_OPTIONS

    assert set(PLAN_OPTIONS) <= set(inspect.signature(clustersim.train).parameters)
