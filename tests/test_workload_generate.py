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


def wg_bytes(r: list[tuple[str, ...]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for x in r:
        if x[5] != "NONE":
            out[x[5]] = out.get(x[5], 0) + int(x[6])
    return out


def test_megatron_data_parallel_rows_follow_the_plan():
    # Gradients reduced layer by layer in the weight-gradient column, as the generator issues them.
    ddp, dist = wg_bytes(plan_rows()), wg_bytes(plan_rows(dp="distributed_optimizer"))
    p = ddp["ALLREDUCE"] // 4
    assert set(ddp) == {"ALLREDUCE"}
    assert dist == {"REDUCESCATTER": 4 * p, "ALLGATHER": 2 * p}
    # Parameters per GPU of GPT-175B at TP 8 (PP 1): 175 B / 8 within 1%.
    assert p == pytest.approx(175e9 / 8, rel=0.01)


GOLDEN = Path(__file__).parent / "data" / "workload_generate"
# Rows of the data-parallel reductions and the optimizer step, written once before the derivation.
DP_ROWS = ("_params_all_gather", "_grads_reduce_scatter", "_grads_all_reduce", "optimizer_step")


def comm_rows(r: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """Rows carrying TP/EP communication: name and fwd, ig type and size."""
    return [x[:5] for x in r if not x[0].endswith(DP_ROWS) and (x[1] != "NONE" or x[3] != "NONE")]


def golden(name: str) -> tuple[list[str], str, list[tuple[str, ...]]]:
    lines = (GOLDEN / name).read_text().splitlines()
    return lines[0].split("generate ")[1].split(), lines[1], [tuple(x.split("\t")) for x in lines[2:]]


@pytest.mark.parametrize("name", sorted(p.name for p in GOLDEN.glob("*-aicb.tsv")))
def test_aicb_rows_unchanged(name):
    args, header, want = golden(name)
    got_header, got = rows(workload_text_from(args))
    assert got_header == header
    assert [(x[0], x[1], x[2], x[3], x[4], x[5], x[6]) for x in got] == want


def workload_text_from(args: list[str]) -> str:
    import argparse

    from clustersim.cli.common import add_options, option_values
    from clustersim.plan import OPTIONS
    from clustersim.training import resolve_plan

    parser = argparse.ArgumentParser()
    add_options(parser, OPTIONS)
    parser.add_argument("--aicb-compat", action="store_true")
    ns = parser.parse_args(args)
    options = option_values(ns, OPTIONS)
    model, _, plan, _ = resolve_plan(options.pop("model"), options)
    return workload_text(model, aicb_compat=ns.aicb_compat, **plan)


@pytest.mark.parametrize(
    "name", sorted(p.name for p in GOLDEN.glob("*.tsv") if not p.name.endswith("-aicb.tsv"))
)
def test_rows_derived_from_the_generator_equal_todays(name):
    """Rows derived from the generator's ops against the rows written before (same plan): the
    TP/EP rows row for row (names, types, groups, sizes), the DP bytes per collective. Three
    documented fixes: full recompute now replays each layer's forward collectives in backward,
    ZeRO-3 has no parameter all-gather after the optimizer step (it gathers per layer), and the
    gradients of an untied LM head at PP 1, the final norm and GPT's position embeddings are
    reduced too (the files' dense-gradient bytes were raised by exactly those)."""
    args, header, before = golden(name)
    got_header, after = rows(workload_text_from(args))
    assert got_header == header
    if "recompute" in name:
        # Each layer's forward collectives once more, in the backward of every micro-batch.
        def fwd(r: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
            return [x[1:3] for x in comm_rows(r) if x[1] != "NONE"]

        def ig(r: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
            return sorted(x[3:5] for x in comm_rows(r) if x[3] != "NONE")

        assert fwd(after) == fwd(before)
        layer = ("attention", "mlp")
        layers = [x[1:3] for x in comm_rows(before) if x[1] != "NONE" and x[0].startswith(layer)]
        assert ig(after) == sorted(ig(before) + layers)
    else:
        assert comm_rows(after) == comm_rows(before)
    want = wg_bytes(before)
    if "zero3" in name:
        want.pop("ALLGATHER")
    assert wg_bytes(after) == want


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


@pytest.mark.parametrize("dp_opt", ["", "--dist-opt"])
def test_one_micro_batch_writes_the_rows_of_several(dp_opt, run_cli, tmp_path):
    # With one micro-batch the gradient reductions fall in the only backward (a panic before).
    base = "--model llama3-8b --layers 2 -g 4 --seq 1024 --gpu a100".split() + dp_opt.split()
    texts = []
    for gbs in ("4", "8"):
        code, _, err = run_cli("workload", "generate", *base, "--gbs", gbs, "-o", f"w{gbs}.txt")
        assert code == 0, err
        texts.append(rows((tmp_path / f"w{gbs}.txt").read_text()))
    (h1, one), (h2, two) = texts
    assert "ga: 1 " in h1 and "ga: 2 " in h2
    # The file lists every micro-batch; the first carries the gradient reductions.
    assert one == two[: len(one)] and len(two) > len(one) and any(r[5] != "NONE" for r in one)
