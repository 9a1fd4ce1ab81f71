"""Sweep specs (clustersim.explore.spec): the points of a grid, a list and a seeded random sample,
their keys, and every kind of bad spec reported as one line naming file, line and field."""

from __future__ import annotations

import hashlib
import itertools
import json
import sqlite3

import pytest
from clustersim.errors import InputError
from clustersim.explore.spec import command_options, load_spec, point_key

TRAIN = "command: train\nfixed: {model: llama3-8b, gpus: 16, gbs: 32, seq: 2048}\n"


def spec(tmp_path, text, name="s.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_grid_is_every_combination_the_last_option_fastest(tmp_path):
    s = load_spec(spec(tmp_path, TRAIN + "grid:\n  tp: [1, 2, 4]\n  dist-opt: [false, true]\n"))
    assert s.command == "train" and s.varying == ["tp", "dist_opt"]
    assert [(p.options["tp"], p.options["dist_opt"]) for p in s.points] == list(
        itertools.product([1, 2, 4], [False, True])
    )
    assert [p.seq for p in s.points] == list(range(6))
    assert all(p.options["model"] == "llama3-8b" and p.options["gbs"] == 32 for p in s.points)


def test_a_point_key_is_the_sha256_of_its_canonical_options(tmp_path):
    s = load_spec(spec(tmp_path, TRAIN + "points:\n  - {tp: 2, dist_opt: true}\n"))
    options = {"dist_opt": True, "gbs": 32, "gpus": 16, "model": "llama3-8b", "seq": 2048, "tp": 2}
    text = '{"command":"train","options":' + json.dumps(options, separators=(",", ":")) + "}"
    assert s.points[0].key == hashlib.sha256(text.encode()).hexdigest()
    # The same point from a grid, spelled with '-', in another order: the same key.
    g = load_spec(spec(tmp_path, TRAIN + "grid: {dist-opt: [true], tp: [2]}\n", "g.yaml"))
    assert g.points[0].key == s.points[0].key == point_key("train", options)


def test_a_random_sample_is_distinct_points_of_its_grid_the_same_on_every_load(tmp_path):
    text = (
        TRAIN + "random:\n  samples: 7\n  seed: 3\n  grid: {tp: [1, 2, 4, 8], pp: [1, 2], mbs: [1, 2, 4]}\n"
    )
    a, b = load_spec(spec(tmp_path, text)), load_spec(spec(tmp_path, text, "b.yaml"))
    picked = [(p.options["tp"], p.options["pp"], p.options["mbs"]) for p in a.points]
    assert picked == [(p.options["tp"], p.options["pp"], p.options["mbs"]) for p in b.points]
    assert len(set(picked)) == 7
    assert set(picked) <= set(itertools.product([1, 2, 4, 8], [1, 2], [1, 2, 4]))
    other = load_spec(spec(tmp_path, text.replace("seed: 3", "seed: 4"), "c.yaml"))
    assert [p.key for p in other.points] != [p.key for p in a.points]
    every = load_spec(spec(tmp_path, text.replace("samples: 7", "samples: 24"), "d.yaml"))
    assert {p.key for p in every.points} == {
        p.key
        for p in load_spec(
            spec(tmp_path, TRAIN + ("grid: {tp: [1, 2, 4, 8], pp: [1, 2], mbs: [1, 2, 4]}\n"), "e.yaml")
        ).points
    }


def test_the_options_are_the_api_functions_keyword_arguments():
    assert {"tp", "dist_opt", "model", "gpus", "gbs", "topology"} <= set(command_options("train"))
    assert "progress" not in command_options("train") and "trace" not in command_options("train")
    # `run` takes simulate's options too, but not those it passes itself under its own names.
    run = command_options("run")
    assert {"workload", "topology", "algo", "gpus", "nic_busbw", "ecmp_seeds"} <= set(run)
    assert "algorithm" not in run
    assert {"op", "topology", "minbytes"} <= set(command_options("collective"))


BAD = [
    ("grid:\n  tp: [1, 2]\n  tpp: [1, 2]\n", 5, "grid.tpp: unknown option"),
    ("grid:\n  tp: []\n", 4, "grid.tp: empty list"),
    ("grid: {}\n", 3, "grid: empty"),
    ("points: []\n", 3, "points: empty"),
    ("grid:\n  tp: 2\n", 4, "grid.tp: expected a list of values"),
    ("grid:\n  tp: [1, two]\n", 4, "grid.tp.1: expected a whole number, got 'two'"),
    ("grid:\n  sp: [1]\n", 4, "grid.sp.0: expected true or false"),
    ("grid:\n  tp: [1, 1]\n", 4, "grid.tp: a value is repeated"),
    ("grid:\n  gpus: [8]\n", 4, "grid.gpus: also set in fixed"),
    ("points:\n  - {tp: 2}\n  - {tp: 2}\n", 5, "points.1: repeats point 0"),
    ("points:\n  - {tp: 2}\ngrid: {pp: [1]}\n", 5, "grid: give exactly one of grid, points or random"),
    ("", 1, "command: give exactly one of grid, points or random"),
    ("grid: {tp: [1]}\nsweeps: 3\n", 4, "sweeps: unknown section"),
    ("random: {samples: 9, grid: {tp: [1, 2]}}\n", 3, "random.samples: expected a whole number from 1 to 2"),
    ("random: {samples: 1, grid: {tp: [1]}, seeds: 2}\n", 3, "random.seeds: unknown field"),
    ("grid:\n  tp: [1\n", 5, "YAML: not valid YAML"),
]


@pytest.mark.parametrize(("tail", "line", "message"), BAD)
def test_a_bad_spec_is_one_line_naming_file_line_and_field(tmp_path, tail, line, message):
    path = spec(tmp_path, TRAIN + tail)
    with pytest.raises(InputError) as e:
        load_spec(path)
    assert str(e.value).startswith(f"{path}:{line}: {message}"), str(e.value)
    assert "\n" not in str(e.value)


def test_a_bad_command_a_missing_option_and_a_list_in_fixed(tmp_path):
    for text, start in (
        ("command: trian\ngrid: {tp: [1]}\n", ":1: command: unknown command 'trian'"),
        ("command: train\nfixed: {model: llama3-8b}\ngrid: {tp: [1]}\n", ":2: fixed: train needs gpus"),
        (TRAIN + "fixed_too: 1\n", ":3: fixed_too: unknown section"),
        (
            "command: train\nfixed: {model: m, gpus: 8, gbs: 8, dist_opt: true}\n"
            "grid:\n  tp: [1]\n  dist-opt: [false]\n",
            ":5: grid.dist-opt: also set in fixed",
        ),
        (
            "command: train\nfixed:\n  model: llama3-8b\n  tp: [1, 2]\ngrid: {pp: [1]}\n",
            ":4: fixed.tp: a list",
        ),
    ):
        with pytest.raises(InputError, match="^" + str(tmp_path / "s.yaml").replace(".", r"\.") + start):
            load_spec(spec(tmp_path, text))


def test_the_cli_reports_a_bad_spec_on_one_line_and_writes_nothing(tmp_path, run_cli):
    spec(tmp_path, TRAIN + "grid:\n  tp: [1, 2]\n  microbatch: [1]\n")
    code, out, err = run_cli("sweep", "s.yaml", "--csv", "s.csv")
    assert code == 2 and out == ""
    assert (
        err
        == "clustersim: error: s.yaml:5: grid.microbatch: unknown option (valid: "
        + ", ".join(command_options("train"))
        + ")\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.yaml"]


def test_a_store_of_another_format_or_spec_is_refused(tmp_path, run_cli):
    spec(tmp_path, TRAIN + "grid: {tp: [8]}\n")
    assert run_cli("sweep", "s.yaml")[0] == 0
    spec(tmp_path, TRAIN + "grid: {tp: [4]}\n", "other.yaml")
    code, _, err = run_cli("sweep", "other.yaml", "-o", "s.sqlite")
    assert code == 2 and err.startswith(
        "clustersim: error: s.sqlite:1: meta.spec: this store holds a sweep of"
    )
    with sqlite3.connect(tmp_path / "s.sqlite") as conn:
        conn.execute("UPDATE meta SET value = '99' WHERE name = 'format'")
    for args in (
        ("sweep", "s.yaml"),
        ("report", "s.sqlite", "-o", "r.html"),
        ("compare", "s.sqlite:0", "s.sqlite:0"),
    ):
        code, _, err = run_cli(*args)
        assert code == 2 and err.startswith(
            "clustersim: error: s.sqlite:1: meta.format: written by an incompatible"
        )
        assert err.count("\n") == 1
    assert not (tmp_path / "r.html").exists()
    (tmp_path / "junk.sqlite").write_text("not a database\n" * 100)
    code, _, err = run_cli("report", "junk.sqlite", "-o", "r.html")
    assert code == 2 and err.startswith("clustersim: error: junk.sqlite:") and err.count("\n") == 1
