"""`clustersim search`: the batch path gives train's numbers plan by plan, the enumeration counts a
hand-checked space, the memory filter is train's, and bad input is a one-line error."""

from __future__ import annotations

import csv
import json

import pytest
from clustersim import api
from clustersim.errors import InputError
from clustersim.explore.search import PLAN_COLUMNS, SearchResult, part_column, search
from clustersim.table import Table
from conftest import run_clustersim

# 2 layers, 2 heads: small enough to count its plans by hand (see the Rust test
# training::search::tests::counts_a_hand_checked_space for the same count, axis by axis).
TINY = {"name": "tiny", "family": "gpt", "layers": 2, "hidden": 128, "heads": 2, "ffn": 512}
TINY |= {"vocab": 1024, "seq_len": 1024}
SMALL_MOE = dict(model="mixtral-8x7b", layers=4, hidden=1024, heads=16, kv_heads=4, ffn=2048, experts=8)


def train_options(row: dict) -> dict:
    """`train`'s keyword arguments for one plan of a search."""
    out = {k: row[k] for k in ("tp", "pp", "vpp", "ep", "cp", "mbs", "gbs", "sp", "recompute")}
    out |= {k: row[k] for k in ("overlap_grad_reduce", "overlap_param_gather", "tp_comm_overlap")}
    kind = row["optimizer"]
    if kind == "distributed_optimizer":
        out["dist_opt"] = True
    elif kind.startswith("zero"):
        out["zero"] = int(kind.removeprefix("zero"))
    return out


def pick(result: SearchResult, want, n: int) -> list[dict]:
    rows = [r for r in result.plans.rows() if want(r)]
    step = max(1, len(rows) // n)
    return rows[::step][:n]


def same_as_train(row: dict, **common) -> None:
    alone = api.train(gbs=row["gbs"], **common, **{k: v for k, v in train_options(row).items() if k != "gbs"})
    for key in ("iteration_s", "tokens_per_s", "mfu"):
        assert row[key] == alone.data[key], (key, row)
    for part, seconds in alone.breakdown_s.items():
        assert row[part_column(part)] == seconds, (part, row)
    assert row["memory_gb"] == alone.memory["total_gb"]


def test_the_batch_gives_trains_numbers_plan_by_plan():
    dense = dict(model="llama3-8b", gpus=16, layers=8, seq=2048)
    result = search(**dense, gbs=32, memory_gb=1e6, top=None)
    rows = pick(result, lambda r: r["cp"] > 1, 4) + pick(result, lambda r: r["vpp"] > 1, 4)
    rows += pick(result, lambda r: r["cp"] == 1 and r["vpp"] == 1, 2)
    rows += pick(result, lambda r: r["cp"] == 1 and r["vpp"] == 1 and r["optimizer"] == "ddp", 2)
    moe = search(**SMALL_MOE, gpus=16, gbs=32, memory_gb=1e6, seq=1024, top=None)
    rows_moe = pick(moe, lambda r: r["ep"] > 1, 6) + pick(moe, lambda r: r["ep"] == 1, 2)
    assert len(rows) == 12 and len(rows_moe) == 8
    assert {r["optimizer"] for r in rows + rows_moe} >= {"ddp", "distributed_optimizer", "zero3"}
    rows += pick(result, lambda r: r["overlap_param_gather"], 2) + pick(
        result, lambda r: r["tp_comm_overlap"], 2
    )
    for row in rows:
        same_as_train(row, allow_oom=True, **dense)
    for row in rows_moe:
        same_as_train(row, allow_oom=True, gpus=16, seq=1024, **SMALL_MOE)


# The overlaps held off: the space of the sizes, SP, recompute and the optimizer.
NO_OVERLAPS = dict(overlap_grad_reduce=[False], overlap_param_gather=[False], tp_comm_overlap=[False])


def test_counts_a_hand_checked_space():
    only = dict(cp=[1], recompute=["none"], optimizer=["ddp"])
    few = search(TINY, gpus=4, gbs=4, memory_gb=1e9, **only, **NO_OVERLAPS)
    assert (few.visited, few.candidates) == (22, 13), "the Rust test's counts"
    # The overlaps opened: 27 (the Rust test's count, overlap by overlap).
    assert search(TINY, gpus=4, gbs=4, memory_gb=1e9, **only).candidates == 27
    # Every axis open: 7·15 + 6·3 plans with CP 1 and 14·15 with CP > 1 (the Rust test's count).
    result = search(TINY, gpus=4, gbs=4, memory_gb=1e9, top=None, **NO_OVERLAPS)
    assert (result.candidates, result.feasible, len(result.plans)) == (333, 333, 333)
    # Each plan once.
    plans = {tuple(r[c] for c in PLAN_COLUMNS) for r in result.plans.rows()}
    assert len(plans) == 333


# Calculon's study (benchmarks/bench_search_bound.py), as the search ranked it before its speed-up
# (re-pinned after the per-kernel compute model, commit 165df14, after Megatron-LM's overlap
# defaults: without --overlap-grad-reduce ZeRO-3's 66 G-parameter reduce-scatter runs after the
# backward, +6.4 s, and after the GEMM model's tile choice and the A100 re-fit on the runs as run
# (ε_gemm 0.80, ε_hbm 0.65, launch 0.5 µs, fill/drain 3.3 µs per wave): same plans in the same
# order, 2.2 % faster), candidates, plans that fit, and the best five with their iteration times
# and tokens/s, bit for bit. Cheaper rejection, the kept catalog and the batch must change none of
# them (a deliberate change of the compute or network model changes these numbers: re-pin them).
STUDY_PIN = (90, 16)
STUDY_TOP = [
    ((8, 1, 1, 641, 3, 1923, True, "none", "zero3"), 22.181157840778063, 177551.7774261442),
    ((8, 1, 1, 641, 3, 1923, True, "selective", "zero3"), 22.22063093221867, 177236.3715509842),
    ((8, 1, 1, 641, 1, 1923, True, "none", "zero3"), 22.349786915670354, 176212.14980079714),
    ((8, 1, 1, 641, 1, 1923, True, "selective", "zero3"), 22.389365007111035, 175900.65634952864),
    ((8, 1, 1, 641, 1, 1923, False, "none", "zero3"), 22.655845894143557, 173831.6908757768),
]


def test_calculons_study_ranks_as_before_the_speed_up():
    study = dict(gpus=5128, gpu="a100", max_gbs=2520, cp=[1], **NO_OVERLAPS)
    result = search("turing-530b", **study, top=None)
    assert (result.candidates, result.feasible) == STUDY_PIN
    keys = ("tp", "pp", "vpp", "dp", "mbs", "gbs", "sp", "recompute", "optimizer")
    top = [(tuple(r[k] for k in keys), r["iteration_s"], r["tokens_per_s"]) for r in result.top(5).rows()]
    assert top == STUDY_TOP
    # Branch and bound finds the same five, simulating fewer plans.
    pruned = search("turing-530b", **study, top=5)
    assert [
        (tuple(r[k] for k in keys), r["iteration_s"], r["tokens_per_s"]) for r in pruned.top(5).rows()
    ] == top
    assert pruned.simulated < result.simulated


def test_the_memory_filter_is_trains():
    options = dict(model="llama3-8b", gpus=8, gbs=16, tp=[1, 2], cp=[1], pp=[1], mbs=[1, 4, 16])
    everything = search(**options, memory_gb=1e6, top=None)
    fitting = search(**options, top=None)
    assert 0 < fitting.feasible < everything.feasible == everything.candidates == fitting.candidates
    key = lambda r: tuple(r[c] for c in PLAN_COLUMNS)  # noqa: E731
    fit = {key(r) for r in fitting.plans.rows()}
    common = dict(model="llama3-8b", gpus=8)
    for row in everything.plans.rows():
        alone = api.train(allow_oom=True, **common, **train_options(row))
        assert row["memory_gb"] == alone.memory["total_gb"]
        assert (key(row) in fit) == alone.data["memory_fits"], row
        if key(row) not in fit:
            with pytest.raises(InputError, match="memory"):
                api.train(**common, **train_options(row))


def test_at_most_gbs_and_the_ranking():
    result = search("gpt-7b", gpus=24, max_gbs=50, tp=[1], pp=[1], cp=[1], memory_gb=1e6)
    assert set(result.plans["gbs"]) == {48}
    speeds = result.plans["tokens_per_s"]
    assert speeds == sorted(speeds, reverse=True)


def test_why_names_the_biggest_differences():
    columns = {c: [1, 1] for c in ("tp", "pp", "vpp", "ep", "cp", "mbs")}
    columns |= {
        "gbs": [8, 8],
        "sp": [False, False],
        "optimizer": ["ddp", "ddp"],
        "recompute": ["none", "none"],
    }
    columns["pp"] = [2, 4]
    columns |= {"tokens_per_s": [110.0, 100.0], "compute_s": [1.0, 1.0], "bubble_s": [0.1, 0.3]}
    columns["exposed_pp_comm_s"] = [0.06, 0.04]
    parts = ["compute", "exposed PP comm", "bubble"]
    result = SearchResult("m", "a", 8, 3, 2, 2, 80.0, Table(columns), parts, 1.0)
    why = result.why()
    assert "10 % in tokens/s" in why and "PP 2 instead of 4" in why
    assert why.endswith("bubble -0.2 s, exposed PP comm +0.02 s"), why


def test_cli_table_json_and_csv(tmp_path):
    args = ["search", "--model", "gpt-7b", "--gpus", "16", "--gbs", "32", "--only", "pp=1", "--only", "cp=1"]
    rc, out, err = run_clustersim(*args, "--top", "3", "--csv", "plans.csv", cwd=tmp_path)
    assert rc == 0, err
    assert "valid plans" in out and "the best beats the runner-up" in out
    rc, text, err = run_clustersim(*args, "--top", "3", "--json", "--progress", cwd=tmp_path)
    assert "searching" in err and "100%" in err
    doc = json.loads(text)
    assert rc == 0 and len(doc["plans"]) == 3
    with open(tmp_path / "plans.csv") as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    assert len(rows) == doc["feasible"]
    best = doc["plans"][0]
    assert float(rows[0]["tokens_per_s"]) == best["tokens_per_s"] and rows[0]["rank"] == "1"
    assert doc["candidates"] >= doc["feasible"] > 3
    # The CLI is the API: same plans, same numbers.
    api_doc = search("gpt-7b", gpus=16, gbs=32, pp=[1], cp=[1]).to_dict(top=3)
    assert api_doc["plans"] == doc["plans"] and api_doc["why"] == doc["why"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--model", "gpt-7b", "--gpus", "16", "--gbs", "32", "--only", "tp=3"], "no valid plan"),
        (["--model", "gpt-7b", "--gpus", "16", "--gbs", "32", "--memory-gb", "1"], "fits in 1 GB"),
        (["--model", "no-such-model", "--gpus", "16", "--gbs", "32"], "no-such-model: unknown name"),
        (["--model", "gpt-7b", "--gpus", "12", "--gbs", "32"], "whole servers"),
        (["--model", "gpt-7b", "--gpus", "16", "--gbs", "32", "--max-gbs", "32"], "not allowed with"),
        (["--model", "gpt-7b", "--gpus", "16", "--gbs", "32", "--only", "sp=maybe"], "'maybe' is not one of"),
        (["--model", "gpt-7b", "--gpus", "16", "--gbs", "32", "--only", "dp=2"], "unknown axis 'dp'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, message):
    rc, out, err = run_clustersim("search", *args, cwd=tmp_path)
    assert rc == 2 and message in err and err.count("\n") == 1, err
    assert "Traceback" not in err and out == ""


def gpt(name: str, hidden: int, layers: int, heads: int) -> dict:
    shape = {"name": name, "family": "gpt", "layers": layers, "hidden": hidden, "heads": heads}
    return shape | {"ffn": 4 * hidden, "vocab": 51200, "seq_len": 2048}


# Megatron-LM's published A100 runs (shared/data/calibration/megatron_a100.csv), each with the plan its
# authors ran and the options Megatron-LM then offered; no flash attention then.
# - Korthikanti et al. 2022 Table 5 (K4, K6): SP + selective recompute, DDP; micro-batch 1 and no
#   interleaving as the CSV assumes (no script of these runs is published).
# - Narayanan et al. 2021's weak-scaling table (N4–N6) as the paper's own scripts run it
#   (NVIDIA/Megatron-LM examples/sc21/run_table_1.sh, commit de7dc40): N4 TP 8 PP 1 MBS 8, N5 TP 8
#   PP 2 MBS 4, N6 TP 8 PP 4 MBS 2 with 5 layers per virtual stage (VPP 3); --checkpoint-activations
#   (full recompute), DDP. Megatron-LM then had no SP, selective recompute or distributed optimizer,
#   and refused interleaving unless PP > 2 (megatron/arguments.py at de7dc40); TP, PP, the
#   micro-batch and interleaving are searched.
MEGATRON = {
    "K4": (gpt("gpt-175b", 12288, 96, 96), 64, 64, "selective", True, (8, 8, 1, 1)),
    "K6": (gpt("gpt-530b", 20480, 105, 128), 280, 280, "selective", True, (8, 35, 1, 1)),
    "N4": (gpt("gpt-18.4b", 6144, 40, 48), 256, 1024, "full", False, (8, 1, 8, 1)),
    "N5": (gpt("gpt-39.1b", 8192, 48, 64), 512, 1536, "full", False, (8, 2, 4, 1)),
    "N6": (gpt("gpt-76.1b", 10240, 60, 80), 1024, 1792, "full", False, (8, 4, 2, 3)),
}
# Measured (benchmarks/RESULTS.md, "Search fidelity at the micro-batches as run"): the search
# prefers TP 2 with PP 4 (N4: PP 4, MBS 2, VPP 5, 15.9 % faster) and PP 8 (N5: MBS 1, VPP 3,
# 17.7 %); N6's best is the published plan. N4's parts, published minus best (s): LayerNorm, dropout
# and residual replicated on every TP rank without SP +0.73 (GEMMs and attention +0.04), TP
# all-reduces +0.84, the DP all-reduce after the flush +0.57 (Megatron's TP-DP-PP rank order puts
# four of TP 2's DP ranks in a server, so NCCL's rings use four NICs against TP 8's one), against
# PP 4's P2P 0.32, embedding 0.03 and bubble 0.58.
# The same paper measured TP against PP on the same cluster (§5.4, Fig. 13–15; RESULTS.md "Narayanan
# et al.'s measured trade-offs", tests/test_narayanan_tradeoffs.py). The model keeps every order its
# text states (TP 8 best for the 162B model at batch 32 and 128; throughput falling as PP or TP
# replaces DP). Where it disagrees, TP costs more than modelled: TP 2 × DP 32 at MBS 1 runs 16–38 %
# below the model, behind PP 2 × DP 32 at every batch, which moves N4/N5 further from TP 8. Of the
# 2021 code's mechanisms the model lacks, two favour the published plans: for PP 1 torch DDP's
# bucketed all-reduce under the last micro-batch's backward (run_table_1.sh DDP=torch for N4,
# schedules.py no_sync at de7dc40; N4 15.9 → 6.6 %) and fp16 gradient all-reduces (no
# --accumulate-allreduce-grads-in-fp32; N4 12.5 %, N5 15.3 %); the scatter/gather of pipeline
# tensors (Fig. 18) favours TP 2 + PP. All three (a scratch build): N4 9.7 %, N5 16.8 %. None closes
# the gap, and torch DDP's overlap alone would take N4's calibration error from +2.7 to +11 %, which
# the A100 fit now absorbs. The xfails stay.
GAP = {"N4", "N5"}
GAP_REASON = "the search prefers TP 2 + PP to the published TP 8 (15.9 %, 17.7 %); see the comment"


def megatron_space(row: str) -> dict:
    """The search options of a published run: its recompute and SP fixed, DDP; the micro-batch and
    interleaving searched for Narayanan's rows (Megatron-LM offered them), fixed for Korthikanti's."""
    _, _, _, recompute, sp, (_, _, mbs, vpp) = MEGATRON[row]
    only = dict(recompute=[recompute], sp=[sp], cp=[1], optimizer=["ddp"], **NO_OVERLAPS)
    # Megatron-LM then waited on every pipeline send and receive (no P2P overlap).
    return only | dict(overlap_p2p_comm=False) if row.startswith("N") else only | dict(mbs=[mbs], vpp=[vpp])


@pytest.mark.parametrize(
    "row",
    [
        pytest.param(k, marks=pytest.mark.xfail(strict=True, reason=GAP_REASON)) if k in GAP else k
        for k in MEGATRON
    ],
)
def test_the_best_plan_is_megatrons_published_one_or_within_3_percent(row):
    model, gpus, gbs, _, _, published = MEGATRON[row]
    result = search(
        model, gpus=gpus, gbs=gbs, gpu="a100", no_flash_attn=True, top=None, **megatron_space(row)
    )
    plan = lambda r: (r["tp"], r["pp"], r["mbs"], r["vpp"])  # noqa: E731
    # Megatron-LM then interleaved only with PP > 2.
    allowed = [r for r in result.plans.rows() if r["vpp"] == 1 or r["pp"] > 2 or row.startswith("K")]
    theirs = [r for r in allowed if plan(r) == published]
    assert theirs, "the published plan fits"
    assert allowed[0]["tokens_per_s"] <= 1.03 * theirs[0]["tokens_per_s"], allowed[0]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (dict(sp=[1]), "sp: 1 is not one of False, True"),
        (dict(recompute=["some"]), "recompute: 'some' is not one of none, selective, full"),
        (dict(tp=[0]), "tp: 0 is not a whole number"),
        (dict(optimizer=[]), "optimizer: give at least one value"),
        (dict(memory_gb=-1.0), "memory_gb: must be a positive number"),
        (dict(max_gbs=8), "exactly one of --gbs and --max-gbs"),
    ],
)
def test_bad_api_input_is_an_input_error(options, message):
    with pytest.raises(InputError, match=message):
        search("gpt-7b", gpus=8, **{"gbs": 8} | options)


def test_exclude_leaves_values_out_and_only_narrows():
    options = dict(model="gpt-7b", gpus=16, gbs=32, pp=[1], cp=[1], memory_gb=1e6)
    every = search(**options, top=None)
    less = search(**options, top=None, exclude={"tp": [1], "tp_comm_overlap": [True]})
    want = {
        key
        for key, r in ((tuple(r[c] for c in PLAN_COLUMNS), r) for r in every.plans.rows())
        if r["tp"] != 1 and not r["tp_comm_overlap"]
    }
    assert {tuple(r[c] for c in PLAN_COLUMNS) for r in less.plans.rows()} == want and less.candidates == len(
        want
    )
    with pytest.raises(InputError, match="exclude: unknown axis 'dp'"):
        search(**options, exclude={"dp": [1]})


def test_a_time_budget_or_ctrl_c_stops_with_the_best_so_far():
    options = dict(model="gpt-7b", gpus=16, gbs=32, memory_gb=1e6)
    whole = search(**options)
    cut = search(**options, time_budget=1e-9)
    assert cut.stopped == "time budget" and not cut.complete
    # One batch simulated, the highest ceilings first: the rest unexplored, none pruned yet.
    assert 0 < cut.simulated < whole.simulated and cut.unexplored > 0
    assert cut.checked + cut.unexplored + cut.pruned == cut.candidates
    assert cut.best["tokens_per_s"] <= whole.best["tokens_per_s"]
    assert "stopped (time budget)" in cut.summary() and f"{cut.unexplored} plans unexplored" in cut.summary()

    def interrupt(fraction: float, note: str) -> None:
        if "simulated" in note:
            raise KeyboardInterrupt

    stopped = search(**options, progress=interrupt)
    assert stopped.stopped == "interrupted" and 0 < stopped.simulated < whole.simulated
    assert stopped.unexplored > 0 and stopped.best is not None


def test_the_cli_says_how_the_search_went(tmp_path):
    args = ["search", "--model", "gpt-7b", "--gpus", "16", "--gbs", "32", "--exclude", "tp=1"]
    rc, out, err = run_clustersim(*args, "--time-budget", "0.000000001", cwd=tmp_path)
    assert rc == 0, err
    assert "stopped (time budget) with" in out and "plans unexplored" in out
    narrow = ["--only", "pp=1", "--only", "cp=1", "--only", "recompute=none", "--only", "optimizer=ddp,zero1"]
    rc, text, err = run_clustersim(*args, *narrow, "--json", cwd=tmp_path)
    doc = json.loads(text)
    assert rc == 0 and doc["stopped"] is None and doc["top_k"] == 10
    assert doc["checked"] + doc["pruned"] == doc["candidates"] and all(p["tp"] != 1 for p in doc["plans"])
    every = json.loads(run_clustersim(*args, *narrow, "--json", "--exhaustive", cwd=tmp_path)[1])
    assert every["pruned"] == 0 and every["plans"][:10] == doc["plans"]
