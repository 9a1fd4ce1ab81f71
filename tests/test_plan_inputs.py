"""Plan and model inputs as Megatron takes them (issue 14, item 5) and the memory headroom a real
process has (item 7)."""

from __future__ import annotations

import json
from pathlib import Path

import clustersim
import pytest
from clustersim.api import train
from clustersim.catalog import lookup
from clustersim.models import resolve

DATA = Path(__file__).parent / "data"
QWEN_MOE = DATA / "hf" / "qwen1.5-moe-a2.7b" / "config.json"
LLAMA3_8B_FLAGS = (
    "--layers 32 --hidden 4096 --heads 32 --kv-heads 8 --ffn 14336 --vocab 128256 --seq 2048".split()
)


def test_sp_at_tp1_is_switched_off_with_a_warning(run_cli):
    args = ["--model", "llama3-8b", "-g", "8", "--gbs", "8", "--seq", "2048", "--allow-oom", "--sp", "--json"]
    code, out, err = run_cli("train", *args)
    assert code == 0, err
    warning = "--sp at TP 1: sequence parallelism switched off, as Megatron does (it needs TP > 1)"
    assert err.splitlines() == [f"warning: {warning}"]
    doc = json.loads(out)
    assert doc["warnings"] == [warning]
    # The same iteration as without --sp: SP changes nothing at TP 1.
    plain = train("llama3-8b", gpus=8, gbs=8, seq=2048, allow_oom=True)
    assert doc["iteration_s"] == plain.iteration_s and plain.data["warnings"] == []


def test_a_model_by_flags_alone_is_named_custom(run_cli):
    code, out, err = run_cli("train", *LLAMA3_8B_FLAGS, "-g", "8", "--tp", "8", "--gbs", "8", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["model"] == "custom"
    # Shaped like Llama 3 8B (a llama block by default): its parameters and its iteration.
    same = train("llama3-8b", gpus=8, tp=8, gbs=8, seq=2048)
    assert doc["params"] == same.data["params"] == 8_030_261_248
    assert doc["iteration_s"] == same.iteration_s


def test_a_model_by_flags_alone_names_the_first_missing_flag(run_cli):
    code, _, err = run_cli(
        "train", "--layers", "32", "--hidden", "4096", "--heads", "32", "-g", "8", "--gbs", "8"
    )
    assert code != 0
    assert err.strip() == (
        "clustersim: error: command line: --ffn: missing (a model without --model needs --layers, --hidden,"
        " --heads, --ffn, --vocab and --seq; --kv-heads, --family, --experts and --topk are optional)"
    )
    code, _, err = run_cli("train", *LLAMA3_8B_FLAGS[:-2], "--kv-heads", "3", "-g", "8", "--gbs", "8")
    assert code != 0 and "command line: --seq: missing" in err
    args = [*LLAMA3_8B_FLAGS, "--kv-heads", "5", "-g", "8", "--gbs", "8"]
    code, _, err = run_cli("train", *args)
    assert code != 0 and "command line: --kv-heads: 5 KV heads must divide the 32 heads" in err


def test_gpt_family_by_flags():
    # GPT-3 175B's shape with the gpt block: its published 175 B parameters.
    shape = dict(layers=96, hidden=12288, heads=96, ffn=49152, vocab=51200, seq=2048)
    r = train(None, family="gpt", gpus=8, tp=8, gbs=8, allow_oom=True, **shape)
    assert r.data["params"] == train("gpt-175b", gpus=8, tp=8, gbs=8, allow_oom=True).data["params"]


def test_a_hidden_size_that_does_not_split_into_heads_is_refused(run_cli):
    code, _, err = run_cli(
        "train", "--model", "llama3-8b", "--hidden", "4100", "-g", "8", "--tp", "8", "--gbs", "8"
    )
    assert code != 0
    assert "hidden: 4100 is not divisible by the 32 heads" in err and "Traceback" not in err


def test_tp_must_divide_the_ffn():
    with pytest.raises(
        clustersim.InputError, match=r"plan: tp: TP 8 must divide the model's ffn width 14340"
    ):
        train("llama3-8b", gpus=8, tp=8, gbs=8, ffn=14340)


def test_topk_above_the_experts_is_refused(run_cli):
    code, _, err = run_cli(
        "train", "--model", "mixtral-8x7b", "--topk", "9", "-g", "16", "--tp", "2", "--sp", "--gbs", "8"
    )
    assert code != 0
    assert err.strip() == "clustersim: error: model: moe.topk: must be from 1 to 8, got 9"


def test_uneven_stages_with_interleaving():
    # 32 layers as 6 + 10 + 10 + 6 over 2 chunks (Megatron-Core: each stage's layers ÷ VPP).
    plan = dict(
        gpus=32, tp=8, pp=4, vpp=2, gbs=8, seq=2048, sp=True, first_stage_layers=6, last_stage_layers=6
    )
    r = train("llama3-8b", **plan)
    busy = [s["busy_s"] for s in r.data["stages"]]
    assert busy[1] > busy[0] and busy[2] > busy[3]
    assert [s["layers"] for s in r.data["stages"]] == [6, 10, 10, 6]
    with pytest.raises(
        clustersim.InputError, match=r"vpp: VPP 4 must divide the 6 layers of --first-stage-layers"
    ):
        train("llama3-8b", **(plan | {"vpp": 4}))


# Llama 3 405B as the Llama 3 paper trained it on 16K H100s (§3.3, Table 4): TP 8, PP 16, DP 128,
# 2048 sequences of 8192 tokens (16M tokens), interleaved with one layer fewer on the first and
# last stage: Megatron-Core's embedding and loss counted in the split, 128 / 16 / 8 = one layer
# a chunk, the first chunk holding only the embedding and the last only the output and loss.
LLAMA3_405B = dict(gpus=16384, tp=8, pp=16, vpp=8, gbs=2048, sp=True, dist_opt=True)
ACCOUNT_FOR = dict(account_for_embedding_in_pipeline_split=True, account_for_loss_in_pipeline_split=True)


def test_llama3_405b_at_its_published_plan():
    r = train("llama3-405b", **LLAMA3_405B, **ACCOUNT_FOR, allow_oom=True).data
    stages = r["stages"]
    assert [s["layers"] for s in stages] == [7] + [8] * 14 + [7]
    memory = [s["memory_gb"] for s in stages]
    # The plan needs its largest stage's memory; the first and last stage, a layer short, less.
    assert r["memory"]["total_gb"] == max(memory)
    assert memory[0] < memory[1] and memory[15] < memory[14]
    # Megatron-Core's schedule at 16 micro-batches = PP keeps every micro-batch of a middle stage
    # in flight: 8 layers × 16 micro-batches × (32 + 2·8/128)·s·b·h/t bytes (SP, flash attention).
    assert r["memory"]["activations_gb"] == pytest.approx(8 * 16 * 32.125 * 8192 * 16384 / 8 / 1e9)
    assert 0.3 < r["mfu"] < 0.6


def test_train_prints_every_stage_with_its_layers_and_memory(run_cli):
    args = [f"--{k.replace('_', '-')}={v}" for k, v in LLAMA3_405B.items() if k not in ("sp", "dist_opt")]
    flags = [f"--{k.replace('_', '-')}" for k in ACCOUNT_FOR]
    args += ["--sp", "--dist-opt", *flags, "--allow-oom"]
    code, out, err = run_cli("train", "--model", "llama3-405b", *args)
    assert code == 0, err
    lines = out.splitlines()
    head = next(i for i, line in enumerate(lines) if line.split()[:2] == ["stage", "layers"])
    rows = [line.split() for line in lines[head + 1 : head + 17]]
    assert [int(r[0]) for r in rows] == list(range(16))
    assert [int(r[1]) for r in rows] == [7] + [8] * 14 + [7]
    assert "DOES NOT FIT in 80 GB, stage 1" in out


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            "--vpp 8 --first-stage-layers 7 --last-stage-layers 7",
            "plan: vpp: VPP 8 must divide the 7 layers of --first-stage-layers, as Megatron-Core requires"
            " with uneven stages",
        ),
        (
            "--vpp 8 --first-stage-layers 8 --account-for-loss-in-pipeline-split",
            "plan: account_for: --account-for-embedding/loss-in-pipeline-split cannot be combined with"
            " --first-stage-layers / --last-stage-layers (Megatron-Core refuses it)",
        ),
        (
            "--vpp 4 --account-for-embedding-in-pipeline-split",
            "plan: pp: PP×VPP = 16×4 = 64 must divide the 126 layers plus the embedding counted by"
            " --account-for-*-in-pipeline-split (127; valid PP×VPP: 1, 127)",
        ),
        (
            "--first-stage-layers 7",
            "plan: first_stage_layers: the 119 layers left by --first-stage-layers must split evenly over"
            " the 15 other stages",
        ),
    ],
)
def test_impossible_layer_splits_are_refused_in_one_line(run_cli, flags, message):
    args = "train --model llama3-405b -g 16384 --tp 8 --pp 16 --gbs 2048 --sp --allow-oom".split()
    code, out, err = run_cli(*args, *flags.split())
    assert code != 0 and out == ""
    assert err == f"clustersim: error: {message}\n"


@pytest.mark.parametrize(("name", "links", "nvls"), [("h800", 8, 215), ("h20", 18, 475)])
def test_h800_and_h20_as_simai_has_them(name, links, nvls):
    acc = lookup("accelerators", name)
    # SimAI's calbusbw.cc: 20.6 GB/s per SM90 NVLink; NVLS 215 (H800) and 475 (H20) GB/s.
    assert acc["nvlink_busbw"] == pytest.approx(20.6 * links) and acc["nvls_busbw"] == nvls
    assert train("llama3-8b", gpu=name, gpus=8, tp=8, gbs=8, seq=2048).iteration_s > 0


def test_h20_computes_at_its_datasheet_rate():
    # The same GEMM-bound layer at 148 against 989 TFLOP/s: several times slower.
    t = {n: train("llama3-8b", gpu=n, gpus=8, tp=8, gbs=8, seq=2048).iteration_s for n in ("h100", "h20")}
    assert t["h20"] > 3 * t["h100"]


def test_qwen2_moe_config_reads_as_moe():
    m = resolve(str(QWEN_MOE))
    assert m["moe"] == {
        "experts": 60,
        "topk": 4,
        "expert_ffn": 1408,
        "shared_experts": 1,
        "shared_ffn": 5632,
        "dense_layers": 0,
    }
    r = train(str(QWEN_MOE), gpus=8, gbs=8, seq=2048, allow_oom=True)
    # Published: 14.3 B parameters, 2.7 B activated (Qwen1.5-MoE; attention biases not counted).
    assert r.data["params"] == pytest.approx(14.3e9, rel=0.01)
    assert r.data["active_params"] == pytest.approx(2.7e9, rel=0.02)


def test_moe_layers_only_as_the_first_ones(tmp_path):
    cfg = json.loads(QWEN_MOE.read_text()) | {"decoder_sparse_step": 2}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg, indent=2))
    with pytest.raises(clustersim.InputError, match=r"config.json:\d+: decoder_sparse_step: only 1"):
        resolve(str(path))


ACCELERATOR = """\
mygpu:
  matmul_tflops: 500
  vector_tflops: 30
  hbm_gb: 96
  hbm_tbps: 3.0
  nvlink_busbw: 300
  nic_busbw: 48.5
  sms: 100
  gemm_efficiency: 0.7
  hbm_efficiency: 0.8
  attention_efficiency: 0.5
"""


@pytest.mark.parametrize("field", ["hbm_tbps", "gemm_efficiency", "nic_busbw"])
def test_a_custom_accelerator_missing_a_field_names_file_line_and_field(run_cli, tmp_path, field):
    path = tmp_path / "gpus.yaml"
    path.write_text(
        "".join(line for line in ACCELERATOR.splitlines(True) if not line.startswith(f"  {field}:"))
    )
    code, _, err = run_cli(
        "train", "--model", "llama3-8b", "--gpu", "mygpu", "--accelerators", path, "-g", "8", "--gbs", "8"
    )
    assert code != 0
    assert err.strip() == f"clustersim: error: {path}:1: {field}: missing in accelerator 'mygpu'"


def test_an_accelerator_mapping_missing_a_field_is_an_input_error():
    from clustersim.training import layer_times

    acc = {"name": "mygpu", "matmul_tflops": 500, "vector_tflops": 30, "hbm_gb": 96, "hbm_tbps": 3.0}
    acc |= {"nvlink_busbw": 300, "nic_busbw": 48.5, "sms": 100, "gemm_efficiency": 0.7, "hbm_efficiency": 0.8}
    with pytest.raises(clustersim.InputError) as e:
        layer_times("llama3-8b", accelerator=acc, gpus=8, tp=8, gbs=8)
    assert str(e.value) == "accelerator: attention_efficiency: missing in accelerator 'mygpu'"


def test_memory_reports_the_headroom_of_a_real_run(run_cli):
    # Llama 3 70B, TP 4, PP 4, VPP 4 on 1024 H100s: 79.5 GB of tensors, more with the headroom.
    plan = dict(gpus=1024, tp=4, pp=4, vpp=4, gbs=1024, seq=8192, sp=True, dist_opt=True)
    r = train("llama3-70b", allow_oom=True, **plan)
    mem = r.memory
    tensors = mem["params_gb"] + mem["grads_and_optimizer_gb"] + mem["activations_gb"]
    assert tensors == pytest.approx(79.5, abs=0.05)
    assert mem["cuda_context_gb"] == 0.5
    assert mem["nccl_buffers_gb"] == pytest.approx(4 * 32 * 4 * 2**20 / 1e9)  # TP, DP, PP, embedding
    assert mem["fragmentation_gb"] == pytest.approx(0.05 * tensors)
    parts = tensors + mem["cuda_context_gb"] + mem["nccl_buffers_gb"] + mem["fragmentation_gb"]
    assert mem["total_gb"] == pytest.approx(parts) and not r.data["memory_fits"]
    with pytest.raises(clustersim.InputError, match=r"needs 84\.\d GB per GPU .* h100 has 80 GB"):
        train("llama3-70b", **plan)
    args = "--model llama3-70b -g 1024 --tp 4 --pp 4 --vpp 4 --gbs 1024 --sp --dist-opt --allow-oom".split()
    code, out, err = run_cli("train", *args)
    assert code == 0, err
    for line in ("CUDA context", "NCCL buffers", "allocator fragmentation"):
        assert any(row.strip().startswith(line) for row in out.splitlines()), out


def test_embedding_and_loss_in_the_split_on_both_backends():
    # 30 layers + embedding + loss = 32 split layers on PP 4 × VPP 2: chunks of 4, the first
    # stage's first and the last stage's last holding 3 layers.
    plan = dict(gpus=32, tp=8, pp=4, vpp=2, gbs=8, seq=2048, sp=True, layers=30, **ACCOUNT_FOR)
    analytical = train("llama3-8b", **plan).data
    flow = train("llama3-8b", topology="Spectrum-X:32", **plan).data
    for r in (analytical, flow):
        assert [s["layers"] for s in r["stages"]] == [7, 8, 8, 7]
    # The same generated iteration and compute; only communication is priced differently.
    assert flow["ops"] == analytical["ops"]
    compute = [dict(s["breakdown_s"])["compute"] for s in analytical["stages"]]
    assert [dict(s["breakdown_s"])["compute"] for s in flow["stages"]] == pytest.approx(compute)
    # A layer fewer on the first stage; the last stage's seven layers and LM head (128K vocabulary)
    # still outweigh a middle stage's eight.
    assert compute[1] == pytest.approx(compute[2])
    assert compute[0] < compute[1] < compute[3]


LLAMA32_1B = DATA / "hf" / "llama3.2-1b" / "config.json"


def test_a_tied_output_layer_as_hugging_face_and_megatron_say(run_cli):
    # Llama 3.2 1B ties its output layer (tie_word_embeddings): Hugging Face counts 1,235,814,400.
    assert resolve(str(LLAMA32_1B))["tie_embeddings"] is True
    assert resolve(str(LLAMA32_1B))["name"] == "llama3.2-1b"  # a config.json named by its folder
    tied = train(str(LLAMA32_1B), gpus=8, gbs=8, seq=2048)
    assert tied.data["params"] == 1_235_814_400
    # Untied (Megatron's --untie-embeddings-and-output-weights): a second 128256 × 2048 matrix.
    code, out, err = run_cli(
        "train",
        "--model",
        str(LLAMA32_1B),
        "--no-tie-embeddings",
        "-g",
        "8",
        "--gbs",
        "8",
        "--seq",
        "2048",
        "--json",
    )
    assert code == 0, err
    assert json.loads(out)["params"] == 1_235_814_400 + 128256 * 2048
    # A GPT ties by default: on PP 2 the last stage's copy is all-reduced with the first stage's
    # (the embedding group); untied, each stage reduces its own matrix with its DP group alone.
    plan = dict(gpus=16, pp=2, gbs=16, allow_oom=True)
    emb = {
        tie: dict(train("gpt-7b", tie_embeddings=tie, **plan).data["breakdown_s"])["exposed EMB comm"]
        for tie in (None, False)
    }
    assert emb[None] > 0 and emb[False] == 0


def test_a_tie_that_is_not_yes_or_no_names_file_line_and_field(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(
        LLAMA32_1B.read_text().replace('"tie_word_embeddings": true', '"tie_word_embeddings": "yes"')
    )
    with pytest.raises(clustersim.InputError) as e:
        resolve(str(path))
    assert str(e.value) == f"{path}:30: tie_word_embeddings: must be true or false, got 'yes'"
    path = tmp_path / "m.yaml"
    path.write_text(
        "family: gpt\nlayers: 2\nhidden: 64\nheads: 4\nffn: 256\nvocab: 100\nseq_len: 64\ntie_embeddings: 1\n"
    )
    with pytest.raises(clustersim.InputError) as e:
        resolve(str(path))
    assert str(e.value) == f"{path}:8: tie_embeddings: must be true or false, got 1"
