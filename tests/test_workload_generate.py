"""`clustersim workload generate`: AICB's rows with --aicb-compat, Megatron's collectives without."""

from __future__ import annotations

from pathlib import Path

import pytest
from clustersim.training import workload_text
from conftest import DATA

AICB = DATA / "aicb" / "generated"

# Each AICB file (by the start of its name) and the command line that reproduces its rows.
CASES = {
    "Ex-gpt_13B-": "--model aicb-gpt-13b --gpus 128 --tp 8 --gbs 128 --seq 2048",
    "Ex-gpt_13B_sp-": "--model aicb-gpt-13b --gpus 128 --tp 8 --gbs 128 --seq 2048 --sp",
    "Ex-gpt_175B-": "--model aicb-gpt-175b --gpus 1024 --tp 8 --pp 8 --gbs 1024 --seq 2048 --sp",
    "Ex-Mixtral_8x7B-": "--model aicb-mixtral-8x7b --gpus 128 --tp 2 --ep 8 --gbs 256 --seq 4096 --sp",
    "Ex-DeepSeek_671B-": "--model deepseek-v3 --gpus 2048 --tp 1 --ep 64 --gbs 4096 --seq 4096",
}


def rows(text: str) -> tuple[str, list[tuple[str, ...]]]:
    """Header, and per row its name and the (type, size) of fwd, ig and wg communication."""
    lines = text.splitlines()
    assert int(lines[1]) == len(lines) - 2
    out = []
    for line in lines[2:]:
        f = line.split("\t")
        assert len(f) == 12
        out.append((f[0], f[3], f[4], f[6], f[7], f[9], f[10]))
    return lines[0], out


@pytest.mark.parametrize("name", sorted(CASES))
def test_aicb_compat_matches_aicb_files_row_for_row(name, run_cli, tmp_path):
    code, _, err = run_cli("workload", "generate", *CASES[name].split(), "--aicb-compat", "-o", "w.txt")
    assert code == 0, err
    header, ours = rows((tmp_path / "w.txt").read_text())
    (ref,) = AICB.glob(name + "world_size*")
    ref_header, theirs = rows(ref.read_text())
    assert header == ref_header
    assert len(ours) == len(theirs)
    for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        assert a == b, f"row {i + 3}: {a} != {b}"


def test_aicb_compat_compute_times_come_from_our_model():
    """AICB's files carry AIOB's measured times; ours come from the roofline (GEMM rows > 0)."""
    text = workload_text("aicb-gpt-13b", gpus=128, tp=8, gbs=128, seq=2048, sp=True, aicb_compat=True)
    col = next(line.split("\t") for line in text.splitlines() if line.startswith("mlp_column"))
    assert all(int(col[i]) > 1000 for i in (2, 5, 8))


def plan_rows(**plan: object) -> list[tuple[str, ...]]:
    base = dict(gpus=16, tp=8, gbs=4, seq=2048)
    return rows(workload_text("gpt-175b", **(base | plan)))[1]


T = 2 * 1 * 2048 * 12288  # 2·b·s·h


def test_megatron_without_sp_all_reduces_forward_and_backward():
    r = plan_rows()
    layer = [x for x in r if x[0] == "attention_layer"]
    assert layer and all(x[1:5] == ("ALLREDUCE", str(T), "ALLREDUCE", str(T)) for x in layer)
    # The LM head's input gradient is all-reduced; cross-entropy runs every micro-batch.
    head = [x for x in r if x[0] == "final_column"]
    assert len(head) == 2 and head[0][1:5] == ("NONE", "0", "ALLREDUCE", str(T))
    assert sum(x[0] == "cross_entropy1" for x in r) == 2


def test_megatron_with_sp_reduce_scatters_and_regathers():
    r = plan_rows(sp=True)
    cols = [x for x in r if x[0] == "mlp_column"]
    # Per micro-batch: the column row (AG fwd, RS of T bwd) and its re-gather row (AG bwd).
    assert cols[0][1:5] == ("ALLGATHER", str(T), "REDUCESCATTER", str(T))
    assert cols[1][1:5] == ("NONE", "0", "ALLGATHER", str(T))
    emb = next(x for x in r if x[0] == "embedding_layer")
    assert emb[1:5] == ("REDUCESCATTER", str(T), "ALLGATHER", str(T))


def test_megatron_data_parallel_rows_follow_the_plan():
    ddp = {x[0]: x for x in plan_rows()}
    dist = {x[0]: x for x in plan_rows(dp="distributed_optimizer")}
    p = int(ddp["dense_grads_all_reduce"][6]) // 4
    assert ddp["dense_grads_all_reduce"][5] == "ALLREDUCE"
    assert dist["dense_grads_reduce_scatter"][5:] == ("REDUCESCATTER", str(4 * p))
    assert dist["dense_params_all_gather"][5:] == ("ALLGATHER", str(2 * p))
    # Parameters per GPU of GPT-175B at TP 8 (PP 1): 175 B / 8 within 1%.
    assert p == pytest.approx(175e9 / 8, rel=0.01)


def test_generated_file_runs_through_the_analytical_model(run_cli, tmp_path):
    code, _, err = run_cli(
        *"workload generate --model llama3-8b --gpus 16 --tp 8 --pp 2 --gbs 8 --sp -o w.txt".split()
    )
    assert code == 0, err
    head = (tmp_path / "w.txt").read_text().splitlines()[0]
    assert "pp: 2 vpp: 1" in head and f"pp_comm: {2 * 8192 * 4096 // 8}" in head
    code, _, err = run_cli("analytical", "-w", "w.txt", "-g", "16", "-g_p_s", "8", "--json")
    assert code == 0, err


def test_context_parallelism_cannot_be_written(run_cli, tmp_path: Path):
    code, _, err = run_cli(
        *"workload generate --model llama3-8b --gpus 16 --tp 8 --cp 2 --gbs 8 -o w.txt".split()
    )
    assert code == 2
    assert "cp" in err and "context parallelism" in err
    assert not (tmp_path / "w.txt").exists()


def test_aicb_compat_requires_sp_for_moe_with_tp(run_cli):
    args = "--model aicb-mixtral-8x7b --gpus 128 --tp 2 --ep 8 --gbs 256 --aicb-compat -o w.txt"
    code, _, err = run_cli("workload", "generate", *args.split())
    assert code == 2 and "sequence parallelism" in err
