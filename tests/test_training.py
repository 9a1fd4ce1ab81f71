"""Training workloads: presets, plan checks, the `train` command."""

from __future__ import annotations

import csv
import json
import re

import clustersim
import pytest
from clustersim.provenance import comment_lines
from clustersim.training import train

# Published sizes (shared/reference/megatron.md §1 and §10).
PUBLISHED = {
    "gpt-7b": 7.5e9,
    "gpt-13b": 13.0e9,
    "gpt-22b": 22e9,
    "gpt-175b": 175e9,
    "llama-7b": 6.7e9,
    "llama-13b": 13.0e9,
    "llama-65b": 65.2e9,
    "llama2-13b": 13.0e9,
    "llama3-8b": 8.03e9,
    "llama3-70b": 70.6e9,
    "llama3-405b": 405e9,
    "mixtral-8x7b": 46.7e9,
    "deepseek-v3": 671e9,
}
ACTIVE = {"mixtral-8x7b": 12.9e9, "deepseek-v3": 37e9}


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_preset_parameter_counts_match_published_sizes(name):
    r = train(name, gpus=8, tp=8, gbs=8, seq=2048, sp=True, allow_oom=True)
    assert r["params"] == pytest.approx(PUBLISHED[name], rel=0.01)
    # "Active" figures are published rounded (DeepSeek-V3's 37 B); 2% covers the rounding.
    assert r["active_params"] == pytest.approx(ACTIVE.get(name, PUBLISHED[name]), rel=0.02)


@pytest.mark.parametrize(
    ("kwargs", "field", "valid"),
    [
        ({"tp": 3}, "tp:", "valid: 1, 2, 4, 8"),
        ({"pp": 7, "gpus": 56}, "pp:", "valid PP×VPP"),
        ({"gbs": 6, "tp": 2}, "gbs:", "multiples of 4"),
        ({"ep": 2}, "ep:", "valid: 1"),
    ],
)
def test_bad_plans_list_valid_choices(kwargs, field, valid):
    plan = {"gpus": 8, "tp": 8, "gbs": 8, "allow_oom": True} | kwargs
    with pytest.raises(clustersim.InputError) as e:
        train("llama3-8b", **plan)
    assert field in str(e.value) and valid in str(e.value)


def test_expert_parallelism_must_divide_experts():
    with pytest.raises(clustersim.InputError, match="EP 3 must divide the 8 experts"):
        train("mixtral-8x7b", gpus=48, tp=2, ep=3, gbs=24, sp=True, allow_oom=True)


def test_unknown_model_and_accelerator_list_the_catalog():
    with pytest.raises(clustersim.InputError, match="valid: .*llama3-70b"):
        train("llama9", gpus=8, gbs=8)
    with pytest.raises(clustersim.InputError, match="valid: .*h100"):
        train("llama3-8b", gpus=8, gbs=8, accelerator="tpu9")


def test_a_plan_that_does_not_fit_is_refused_unless_allowed():
    with pytest.raises(clustersim.InputError, match="memory"):
        train("llama3-70b", gpus=8, tp=8, gbs=8)
    r = train("llama3-70b", gpus=8, tp=8, gbs=8, allow_oom=True)
    assert not r["memory_fits"] and r["memory"]["total_gb"] > 80


def test_breakdown_sums_to_the_iteration_and_mfu_is_sane():
    r = train("llama3-8b", gpus=64, tp=2, pp=2, gbs=128, seq=4096, sp=True, dp="distributed_optimizer")
    assert sum(v for _, v in r["breakdown_s"]) == pytest.approx(r["iteration_s"], rel=1e-9)
    assert 0.2 < r["mfu"] < 0.8
    assert r["tokens_per_s"] == pytest.approx(128 * 4096 / r["iteration_s"])


def test_more_micro_batches_shrink_the_bubble_share():
    def bubble_share(gbs):
        r = train("llama3-8b", gpus=32, tp=8, pp=4, gbs=gbs, seq=4096)
        return dict(r["breakdown_s"])["bubble"] / r["iteration_s"]

    assert bubble_share(64) < bubble_share(8)


def test_hf_config_and_flag_overrides(tmp_path):
    cfg = {
        "model_type": "llama",
        "num_hidden_layers": 32,
        "hidden_size": 4096,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "intermediate_size": 14336,
        "vocab_size": 128256,
        "max_position_embeddings": 8192,
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    r = train(str(path), gpus=8, tp=8, gbs=8, allow_oom=True)
    assert r["params"] == 8_030_261_248


def test_train_command(run_cli):
    rc, out, err = run_cli(
        "train", "--model", "llama3-8b", "--gpus", "16", "--tp", "8", "--gbs", "16", "--seq", "4096", "--json"
    )
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["model"] == "llama3-8b" and doc["iteration_s"] > 0
    rc, out, err = run_cli("train", "--model", "llama3-8b", "--gpus", "16", "--tp", "3", "--gbs", "16")
    assert rc == 2 and err.startswith("clustersim: error: plan: tp:") and len(err.splitlines()) == 1


def test_train_writes_summary_layers_trace_and_charts(run_cli, tmp_path):
    args = "train --model llama3-8b --gpus 16 --tp 4 --pp 2 --gbs 16 --seq 4096 --sp -r out/r- -v"
    code, _, err = run_cli(*args.split())
    assert code == 0, err
    out = tmp_path / "out"
    summary = json.loads((out / "r-summary.json").read_text())
    trace = json.loads((out / "r-trace.json").read_text())
    events = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    # Two stage classes, and every op of each is an event.
    assert {e["pid"] for e in events} == {0, 1}
    assert len(events) == summary["ops"]
    # Each CSV: what made it as comment lines (the summary's provenance), then the header.
    made_by = comment_lines(summary["provenance"])
    lines = (out / "r-layers.csv").read_text().splitlines()
    assert lines[:6] == made_by and made_by[0] == "# command: clustersim " + args
    lines = lines[6:]
    assert lines[0] == "layer,compute_s,exposed_comm_s,comm_s"
    compute = sum(float(line.split(",")[1]) for line in lines[1:])
    assert compute == pytest.approx(dict(summary["breakdown_s"])["compute"], rel=1e-6)
    assert (out / "r-chart.png").stat().st_size > 10_000
    assert "<svg" in (out / "r-chart.html").read_text()
    # Every stage: its breakdown sums to the iteration; the CSV holds what the JSON holds.
    stages_csv = (out / "r-stages.csv").read_text().splitlines()
    assert stages_csv[:6] == made_by
    stages = list(csv.DictReader(stages_csv[6:]))
    assert [int(r["stage"]) for r in stages] == [0, 1] == [s["stage"] for s in summary["stages"]]
    for row, stage in zip(stages, summary["stages"], strict=True):
        parts = [float(v) for k, v in row.items() if k.endswith("_s") and k not in ("end_s", "busy_s")]
        assert sum(parts) == pytest.approx(summary["iteration_s"], rel=1e-6)
        assert float(row["busy_s"]) == pytest.approx(stage["busy_s"], rel=1e-6)
        assert float(row["busy_s"]) == pytest.approx(sum(parts) - float(row["bubble_s"]), rel=1e-6)
    assert summary["critical_stage"] in (0, 1) and summary["critical_bound"]


def test_train_names_the_critical_stage_of_an_expert_parallel_pipeline(run_cli):
    # DeepSeek-V3's first three layers are dense: stage 0 has no all-to-all, and it finishes
    # last, mostly waiting; the MoE stages are busy longest, bounded by their expert all-to-all.
    # The headline is the busiest stage's (issue 29: it was stage 0's "83 % bubble", no EP line).
    args = (
        "train --model deepseek-v3 --gpus 2048 --tp 1 --pp 16 --ep 64 --first-stage-layers 3"
        " --last-stage-layers 2 --gbs 2048 --seq 4096 --recompute full --dist-opt"
    )
    code, out, err = run_cli(*args.split(), "--json")
    assert code == 0, err
    doc = json.loads(out)
    busiest = max(doc["stages"], key=lambda s: s["busy_s"])
    assert doc["breakdown_stage"] == doc["critical_stage"] == busiest["stage"] == 1
    assert doc["breakdown_s"] == busiest["breakdown_s"] and doc["critical_bound"] == "exposed EP comm"
    parts = dict(doc["breakdown_s"])
    # Bound by EP: its exposed all-to-all outweighs its compute; the stage waits on DP, DP_EP and PP too.
    assert parts["exposed EP comm"] > parts["compute"] > 0
    waits_on = [k for k, v in doc["breakdown_s"] if k.startswith("exposed ") and v > 0]
    assert waits_on == ["exposed EP comm", "exposed DP comm", "exposed DP_EP comm", "exposed PP comm"]
    code, out, err = run_cli(*args.split())
    assert code == 0, err
    lines = out.splitlines()
    head = lines.index("where the time goes (stage 1, the busiest: it bounds the iteration):")
    shown = [line[:28].strip() for line in lines[head + 1 : head + 7]]
    assert shown == ["compute", *waits_on, "bubble"]
    ep = next(line for line in lines[head:] if line.strip().startswith("exposed EP comm"))
    assert float(ep.split()[3]) == round(parts["exposed EP comm"], 3)
    critical = next(line for line in out.splitlines() if line.startswith("critical stage"))
    assert "bounded by exposed EP comm" in critical and critical.split()[2] == "1"
    rows = [line.split() for line in out.splitlines() if re.fullmatch(r"\s+\d+\s+[\d.]+.*", line)]
    # Stage 0's most exposed part: its embedding's gradient reduce-scatter after the backward
    # (without --overlap-grad-reduce, Megatron-LM's default).
    assert len(rows) == 16 and rows[0][-2:] == ["DP", "comm"] and rows[5][-2:] == ["EP", "comm"]


def test_train_visual_needs_a_prefix(run_cli, tmp_path):
    code, _, err = run_cli(*"train --model llama3-8b --gpus 8 --tp 8 --gbs 8 -v".split())
    assert code == 2 and "-r PREFIX" in err
    assert list(tmp_path.iterdir()) == []


def test_moe_with_tensor_parallelism_needs_sequence_parallelism():
    # Megatron-Core refuses MoE with TP but without SP; so do `train` and `workload generate`.
    with pytest.raises(clustersim.InputError, match="sequence parallelism"):
        train("mixtral-8x7b", gpus=16, tp=2, ep=8, gbs=8, allow_oom=True)


def test_tp_comm_overlap_needs_sp_and_each_tp_group_inside_a_server(run_cli):
    # Megatron asserts SP under --tp-comm-overlap; TE v1.9's userbuffers keep TP on one node.
    base = "train --model gpt-22b --gpus 32 --gbs 16 --tp-comm-overlap --allow-oom"
    code, _, err = run_cli(*f"{base} --tp 8".split())
    assert code == 2
    assert err.strip() == (
        "clustersim: error: overlap: tp_comm: TP communication overlap needs sequence parallelism (--sp),"
        " as in Megatron"
    )
    code, _, err = run_cli(*f"{base} --tp 16 --sp".split())
    assert code == 2
    assert err.strip() == (
        "clustersim: error: overlap: tp_comm: Transformer Engine's userbuffers need each TP group inside"
        " one server: TP 16 spans servers of 8 GPUs"
    )
