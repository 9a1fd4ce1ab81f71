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
    with pytest.raises(
        clustersim.InputError, match=r"vpp: VPP 4 must divide the layers of the first stage \(6\)"
    ):
        train("llama3-8b", **(plan | {"vpp": 4}))


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
