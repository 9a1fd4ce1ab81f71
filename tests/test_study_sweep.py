"""`clustersim sweep`: every point stored once, equal to the API's own result for its options,
whichever executor ran it; a sweep killed with SIGKILL resumes with no point lost or repeated;
CSV and Parquet hold the stored rows."""

from __future__ import annotations

import csv
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import clustersim
import pytest
from clustersim import api
from clustersim.errors import InputError
from clustersim.explore import store
from clustersim.explore.execute import sweep
from clustersim.explore.spec import load_spec
from conftest import ROOT

SMALL = """\
command: train
fixed: {model: llama3-8b, gpus: 16, gbs: 32, seq: 2048}
grid:
  tp: [1, 2, 8]
  pp: [1, 2]
  dist-opt: [false, true]
"""
# 160 points, about 2 s: long enough to be killed half-way.
LONG = """\
command: train
fixed: {model: llama3-8b, gpus: 16, seq: 2048, dist-opt: true}
grid:
  gbs: [32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448, 480, 512, 544, 576, 608, 640]
  tp: [1, 2, 4, 8]
  mbs: [1, 2]
"""


def write(tmp_path, text, name="s.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def rows(path):
    return [(r.key, r.seq, r.options, r.status, r.result) for r in store.read(path).rows]


def test_every_point_is_the_api_result_for_its_options(tmp_path):
    table = clustersim.sweep(write(tmp_path, SMALL))
    assert (tmp_path / "s.sqlite").is_file() and len(table) == 12
    stored = store.read(tmp_path / "s.sqlite")
    assert [r.seq for r in stored.rows] == list(range(12))
    infeasible = 0
    for row, columns in zip(stored.rows, table.rows(), strict=True):
        try:
            expected = api.train(**row.options)
        except InputError as e:
            assert row.status == "infeasible" and row.result == {"error": str(e)}
            infeasible += 1
            continue
        assert row.status == "ok"
        assert row.result["iteration_s"] == expected.iteration_s
        assert dict(row.result["breakdown_s"]) == expected.breakdown_s
        assert columns["tokens_per_s"] == columns["throughput"] == expected.tokens_per_s
        assert columns["memory.total_gb"] == expected.memory["total_gb"]
    assert 0 < infeasible < 12  # tp 1 without the distributed optimizer does not fit in 80 GB


def test_a_second_run_simulates_nothing_and_changes_nothing(tmp_path):
    spec = load_spec(write(tmp_path, SMALL))
    first = sweep(spec, tmp_path / "s.sqlite")
    before = rows(tmp_path / "s.sqlite")
    again = sweep(spec, tmp_path / "s.sqlite")
    assert (first.simulated, first.skipped, again.simulated, again.skipped) == (12, 0, 0, 12)
    assert rows(tmp_path / "s.sqlite") == before


def test_worker_processes_give_the_same_rows_as_one_process(tmp_path):
    spec = load_spec(write(tmp_path, SMALL))
    sweep(spec, tmp_path / "one.sqlite")
    sweep(spec, tmp_path / "two.sqlite", workers=2)
    assert rows(tmp_path / "one.sqlite") == rows(tmp_path / "two.sqlite")


def test_a_local_ray_cluster_of_two_workers_gives_the_same_rows(tmp_path):
    pytest.importorskip("ray", reason="Ray is the optional extra clustersim[ray] (the dev extra installs it)")
    spec = load_spec(write(tmp_path, SMALL))
    sweep(spec, tmp_path / "one.sqlite")
    sweep(spec, tmp_path / "ray.sqlite", workers=2, ray="local")
    assert rows(tmp_path / "one.sqlite") == rows(tmp_path / "ray.sqlite")


def test_an_unreachable_ray_address_is_one_line_at_once(tmp_path):
    pytest.importorskip("ray", reason="Ray is the optional extra clustersim[ray] (the dev extra installs it)")
    import socket

    with socket.socket() as s:  # a port nothing listens on once closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    spec = load_spec(write(tmp_path, SMALL))
    start = time.perf_counter()
    with pytest.raises(InputError, match=rf"--ray 127.0.0.1:{port}: cannot reach a Ray cluster"):
        sweep(spec, tmp_path / "none.sqlite", ray=f"127.0.0.1:{port}")
    assert time.perf_counter() - start < 30
    assert not (tmp_path / "none.sqlite").exists()


def stored_count(path):
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
            return conn.execute("SELECT count(*) FROM points").fetchone()[0]
    except sqlite3.Error:  # not created yet
        return 0


def children(pid):
    """Process ids whose parent is `pid` (Linux /proc)."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


@pytest.mark.parametrize("workers", [1, 2])
def test_a_sweep_killed_with_sigkill_resumes_with_every_point_exactly_once(tmp_path, workers):
    write(tmp_path, LONG)
    command = [sys.executable, "-m", "clustersim", "sweep", "s.yaml", "-o", "killed.sqlite"]
    command += ["--workers", str(workers)]
    proc = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while stored_count(tmp_path / "killed.sqlite") < 10 and time.monotonic() < deadline:
        time.sleep(0.005)
    pool = children(proc.pid)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate()
    assert proc.returncode == -signal.SIGKILL
    kept = stored_count(tmp_path / "killed.sqlite")
    assert 10 <= kept < 160, "the sweep was not killed half-way"
    with sqlite3.connect(tmp_path / "killed.sqlite") as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    # Worker processes do not outlive the sweep.
    assert len(pool) >= (workers if workers > 1 else 0)
    deadline = time.monotonic() + 10
    while any(Path(f"/proc/{pid}").exists() for pid in pool) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [pid for pid in pool if Path(f"/proc/{pid}").exists()]

    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, check=True)
    assert f"160 points of train: {kept} already stored, {160 - kept} simulated" in done.stdout
    sweep(load_spec(tmp_path / "s.yaml"), tmp_path / "whole.sqlite")
    resumed = rows(tmp_path / "killed.sqlite")
    assert len({key for key, *_ in resumed}) == len(resumed) == 160
    assert resumed == rows(tmp_path / "whole.sqlite")


def test_csv_and_parquet_hold_every_stored_point(tmp_path, run_cli):
    write(tmp_path, SMALL)
    code, out, _ = run_cli("sweep", "s.yaml", "--csv", "s.csv", "--parquet", "s.parquet", "--workers", "2")
    assert code == 0 and out.splitlines()[-1] == "wrote s.sqlite, s.csv, s.parquet"
    stored = store.read(tmp_path / "s.sqlite")
    best = max((r for r in stored.rows if r.status == "ok"), key=lambda r: r.result["tokens_per_s"])
    plan = " ".join(f"{k}={best.options[k]}" for k in ("tp", "pp", "dist_opt"))
    assert f"best: point {best.seq} ({plan}), tokens_per_s {best.result['tokens_per_s']:.6g}\n" in out
    with open(tmp_path / "s.csv", newline="") as f:
        text = f.read().splitlines()
    # What made it: comment lines above the header; each row's own provenance in its columns.
    made_by = [line for line in text if line.startswith("# ")]
    assert made_by[0] == "# command: clustersim sweep s.yaml --csv s.csv --parquet s.parquet --workers 2"
    assert made_by[1].startswith("# version: ")
    lines = list(csv.DictReader(text[len(made_by) :]))
    assert [line["key"] for line in lines] == [r.key for r in stored.rows]
    ok = [line for line in lines if line["status"] == "ok"]
    assert ok and all(line["provenance.backend"] == "analytical" for line in ok)
    assert all(line["provenance.model.name"] == "llama3-8b" for line in ok)
    assert list(lines[0])[:7] == ["seq", "key", "status", "tp", "pp", "dist_opt", "error"]
    for line, row in zip(lines, stored.rows, strict=True):
        assert line["status"] == row.status and int(line["tp"]) == row.options["tp"]
        if row.status == "ok":
            assert float(line["tokens_per_s"]) == row.result["tokens_per_s"]
            assert float(line["breakdown_s.compute"]) == dict(row.result["breakdown_s"])["compute"]
        else:
            assert line["error"] == row.result["error"] and line["tokens_per_s"] == ""
    pq = pytest.importorskip("pyarrow.parquet", reason="Parquet is the optional extra clustersim[parquet]")
    parquet = pq.read_table(tmp_path / "s.parquet").to_pydict()
    assert parquet["key"] == [r.key for r in stored.rows]
    assert parquet["tokens_per_s"] == [r.result.get("tokens_per_s") for r in stored.rows]
    assert parquet["dist_opt"] == [r.options["dist_opt"] for r in stored.rows]


def test_collective_and_run_points(tmp_path, run_cli):
    write(
        tmp_path,
        "command: collective\nfixed: {op: allreduce, topology: 'Spectrum-X:16'}\n"
        "points:\n  - {minbytes: 1M, maxbytes: 1M}\n  - {minbytes: 1M, maxbytes: 4M, algo: ring}\n",
    )
    assert run_cli("sweep", "s.yaml", "--csv", "s.csv")[0] == 0
    stored = store.read(tmp_path / "s.sqlite")
    for row in stored.rows:
        table = api.collective(**row.options)
        last = list(table.rows())[-1]
        assert row.result["busbw_GBps"] == last["busbw_GBps"] and row.result["ranks"] == 16
    assert len(stored.rows[1].result["sizes"]) == 3  # 1M, 2M, 4M
    workload = str(ROOT / "examples" / "microAllReduce.txt")
    write(
        tmp_path,
        f"command: run\nfixed: {{workload: {json.dumps(workload)}, topology: 'Spectrum-X:8'}}\n"
        "grid: {algo: [ring, auto]}\n",
        "r.yaml",
    )
    assert run_cli("sweep", "r.yaml")[0] == 0
    for row in store.read(tmp_path / "r.sqlite").rows:
        assert row.result["iteration_time_us"] == api.run(**row.options).iteration_time_us


def test_a_failure_before_the_first_point_leaves_no_store_and_after_it_keeps_the_points(
    tmp_path, monkeypatch
):
    import clustersim.explore.execute as execute

    spec = load_spec(write(tmp_path, SMALL))
    real, calls = execute.evaluate, []

    def failing_at(n):
        def evaluate(command, point):
            calls.append(point.seq)
            if len(calls) == n:
                raise RuntimeError("simulated fault")
            return real(command, point)

        return evaluate

    monkeypatch.setattr(execute, "evaluate", failing_at(1))
    with pytest.raises(RuntimeError):
        sweep(spec, tmp_path / "first.sqlite")
    assert list(tmp_path.glob("first.sqlite*")) == []
    calls.clear()
    monkeypatch.setattr(execute, "evaluate", failing_at(3))
    with pytest.raises(RuntimeError):
        sweep(spec, tmp_path / "third.sqlite")
    assert [r.seq for r in store.read(tmp_path / "third.sqlite").rows] == [0, 1]
