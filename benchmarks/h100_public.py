"""The compute model on H100 against public BF16 training results (a check, not fitted data: the
model is fitted on A100 only and carried to Hopper by kernel-level measurements, see
crates/engine/src/catalog/accelerators.yaml and benchmarks/hopper_kernels.py).

Table 1, Megatron-Core (the framework the simulator models): NVIDIA/Megatron-LM README, "Training
Speed and Scalability", images/model_table.png, both added by commit f2e5db4 (2024-07-15): GPT
models of 1.7B-462B parameters on 48-6144 H100s, vocabulary 131072, sequence 4096, data
parallelism 48, throughput end to end ("data loading, optimizer steps, communication, and even
logging"). What those runs ran, from the README's text and Megatron-LM's code at f2e5db4
(`git show f2e5db4:megatron/training/arguments.py`, `training.py`), each row simulated so:

- Overlaps, stated by the README: "--overlap-grad-reduce --overlap-param-gather" (DP),
  "--tp-comm-overlap" (TP; needs --sequence-parallel, which arguments.py asserts, so sequence
  parallelism at TP > 1) and PP overlap "enabled by default" (`overlap_p2p_comm`, which
  arguments.py switches off without interleaving). --overlap-param-gather needs the distributed
  optimizer (asserted), so the distributed optimizer. Bucket size Megatron-Core's default.
- The parameter gather as f2e5db4 dispatches it: `DistributedOptimizer.zero_grad()` starts the first
  bucket's all-gather with the iteration (distrib_optimizer.py; moved away in 655a663, 2024-09), so
  later pipeline stages gather during the fill: the engine's overlap option `gather_at_zero_grad`.
- bf16: arguments.py at f2e5db4 forces `accumulate_allreduce_grads_in_fp32 = True` for bf16, so
  gradients accumulate and reduce-scatter in fp32 (the simulator's generator does so) while the
  parameter all-gather moves bf16.
- Model: parameter counts fit 12·L·h² + 2·V·h (1.745B, 7.11B, ...): GeLU MLPs of 4h (Megatron's
  default; SwiGLU of 8h/3 would give the same count but Megatron rounds its width to 64, which
  the counts do not show) with untied input and output embeddings (tied would make the first
  row 1.48B), so simulated untied (`tie_embeddings: false`, Megatron's
  --untie-embeddings-and-output-weights): the output layer's V·h/t gradient and optimizer state
  are 15 % of the 1.7B row's DP bytes, 1-6 % of the others'. Transformer Engine layers and its
  attention (`--transformer-impl` default `transformer_engine`; cuDNN fused attention on Hopper,
  the catalog's figure); the
  cross-entropy unfused (`--cross-entropy-loss-fusion` off by default) over fp32 logits.
- Not stated, Megatron-Core's defaults taken: micro-batch 1 (4 micro-batches per DP rank on the
  PP-1 rows), no interleaving, no activation recompute.
- TFLOP/s as the README counts them: megatron/training/training.py `num_floating_point_operations`
  at f2e5db4, 12·B·s·L·h²·((1 + 1 + s/h) + 4 + V/(2·L·h)) per iteration: causal attention
  counted as full (s/h), the logits layer included, GeLU (no SwiGLU factor), divided by the
  iteration time and the GPU count. Predicted TFLOP/s use the same formula over the simulated
  iteration, so the two columns compare like with like (MFU over 989).

The columns `exposed comm` and `bubble` show what the schedule adds to the compute, and
`compute alone` the rate with neither (the compute model by itself).

Not compared, and why: NeMo's performance summaries (docs/source/performance/performance_summary.md
of NVIDIA/NeMo, 24.07: GPT3 5B-175B, Llama 2/3, Nemotron on DGX-H100) and Megatron-Bridge's
(docs/performance-summary.md) give H100 rows in FP8 only (BF16 H100 rows there are MoE recipes
outside this table's GPT family); the compute model has no FP8 GEMMs, so those rows are skipped.

Table 2, MosaicML llm-foundry (scripts/train/benchmarking/README.md, table "H100 80GB BF16",
commit 061f2c7): MPT models (GPT blocks, GeLU MLP 4h, vocabulary 50368) at sequence 2048,
simulated as ZeRO-3 data parallelism at TP 1 / PP 1 with the published micro-batch and batch,
full recompute where the row checkpoints activations, MFU as that table defines it: (6·N +
12·L·d·s) FLOPs per token (N the published parameter count) over 989 TFLOP/s. **Not apples to
apples** with a Megatron-Core simulation: (1) attention is llm-foundry's `attn_impl: triton`
(submit_benchmarks.py default), the Triton flash-attention kernel of 2023, well below cuDNN's
fused attention on Hopper (the FlashAttention-3 paper measures Triton at 353-378 TFLOP/s forward
causal at head dim 128 where cuDNN reaches 518-539, FlashAttention-2 319-335); (2) PyTorch FSDP
FULL_SHARD all-gathers every layer's parameters in the forward and again in the backward and
reduce-scatters its gradients, with Composer's `DEFAULT` mixed precision (the table's "MP Mode")
in fp32 - twice the bytes of Megatron's bf16 - with FSDP's one-layer prefetch as the only
overlap; (3) eager PyTorch (1.13/2.0 images) with llm-foundry's own fused ops, not Transformer
Engine. The same stack reaches 55 % MFU on A100 for MPT-30B where it reaches 38 % on H100 (table
"A100 80GB"), a software gap the simulator's Megatron-Core model does not have; over-prediction
on these rows says more about that stack than about the GPU.

    python3 benchmarks/h100_public.py [--write]
"""

from __future__ import annotations

import argparse

from clustersim.api import train
from clustersim.training import train as simulate
from results import run_header, write_section

PEAK = 989e12

# Megatron-LM README (images/model_table.png): (size, heads, hidden, layers, TP, PP, DP, GPUs,
# global batch, published TFLOP/s per GPU, published MFU %).
MEGATRON = [
    ("1.7B", 16, 2048, 24, 1, 1, 48, 48, 192, 408.8, 41),
    ("7.1B", 32, 4096, 30, 2, 1, 48, 96, 192, 465.9, 47),
    ("16B", 48, 6144, 32, 4, 1, 48, 192, 192, 489.1, 49),
    ("32B", 56, 7168, 48, 8, 1, 48, 384, 192, 459.6, 46),
    ("70B", 64, 8192, 84, 8, 2, 48, 768, 384, 419.7, 42),
    ("119B", 80, 10240, 92, 8, 4, 48, 1536, 768, 420.5, 43),
    ("177B", 96, 12288, 96, 8, 6, 48, 2304, 1152, 432.8, 44),
    ("314B", 128, 16384, 96, 8, 8, 48, 3072, 1536, 474.4, 48),
    ("462B", 144, 18432, 112, 8, 16, 48, 6144, 3072, 459.9, 47),
]
MEGATRON_SEQ, MEGATRON_VOCAB = 4096, 131072

# MPT model: (d_model, layers, heads, parameters), from llm-foundry's yamls and the table.
MPT = {
    "mpt-1b": (2048, 24, 16, 1315950592),
    "mpt-3b": (2560, 32, 20, 2651837440),
    "mpt-7b": (4096, 32, 32, 6658859008),
    "mpt-13b": (5120, 40, 40, 12853954560),
    "mpt-30b": (7168, 48, 64, 29975214080),
    "mpt-70b": (8192, 80, 64, 64862437376),
}
# (model, GPUs, micro-batch, global batch, activation checkpointing, published MFU %), seq 2048.
MOSAIC = [
    ("mpt-1b", 8, 14, 112, False, 41.82),
    ("mpt-3b", 16, 10, 480, False, 43.73),
    ("mpt-7b", 8, 6, 48, False, 46.44),
    ("mpt-13b", 8, 2, 16, False, 39.79),
    ("mpt-30b", 8, 3, 504, True, 38.11),
    ("mpt-70b", 64, 8, 2048, True, 42.57),
]
MOSAIC_SEQ = 2048


def megatron_flops(hidden: int, layers: int, gbs: int) -> float:
    """Megatron's model FLOPs of one iteration (GeLU MLP 4h, multi-head attention)."""
    s, v = MEGATRON_SEQ, MEGATRON_VOCAB
    return 12 * gbs * s * layers * hidden * hidden * (6 + s / hidden + v / (2 * layers * hidden))


def megatron_model(heads: int, hidden: int, layers: int) -> dict[str, object]:
    """A README row's GPT: GeLU MLP of 4h, untied output layer (the parameter counts say so)."""
    model = {"name": f"gpt-h{hidden}", "family": "gpt", "layers": layers, "hidden": hidden, "heads": heads}
    return model | {
        "ffn": 4 * hidden,
        "vocab": MEGATRON_VOCAB,
        "seq_len": MEGATRON_SEQ,
        "tie_embeddings": False,
    }


def simulate_megatron(
    heads: int, hidden: int, layers: int, tp: int, pp: int, gpus: int, gbs: int
) -> tuple[float, dict[str, float]]:
    """Iteration seconds and their breakdown for one README row, with the options of f2e5db4."""
    model = megatron_model(heads, hidden, layers)
    # f2e5db4's distributed optimizer dispatches the first parameter gather from zero_grad().
    overlap = {"grad_reduce": True, "param_gather": True, "tp_comm": tp > 1, "gather_at_zero_grad": True}
    plan = {
        "gpus": gpus,
        "gbs": gbs,
        "tp": tp,
        "pp": pp,
        "mbs": 1,
        "sp": tp > 1,
        "dp": "distributed_optimizer",
    }
    r = simulate(model, accelerator="h100", overlap=overlap, allow_oom=True, **plan)
    return r["iteration_s"], dict(r["breakdown_s"])


def megatron_table() -> tuple[list[str], list[float]]:
    lines = [
        "| model | TP×PP×DP | GPUs | batch | predicted TFLOP/s | published TFLOP/s | error"
        " | predicted MFU % | exposed comm % | bubble % | compute alone TFLOP/s |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    errors = []
    for size, heads, hidden, layers, tp, pp, dp, gpus, gbs, tflops, _mfu in MEGATRON:
        iteration_s, parts = simulate_megatron(heads, hidden, layers, tp, pp, gpus, gbs)
        pred = megatron_flops(hidden, layers, gbs) / iteration_s / gpus / 1e12
        err = (pred - tflops) / tflops * 100
        errors.append(err)
        comm = sum(v for k, v in parts.items() if k.startswith("exposed"))
        alone = megatron_flops(hidden, layers, gbs) / parts["compute"] / gpus / 1e12
        lines.append(
            f"| {size} | {tp}×{pp}×{dp} | {gpus} | {gbs} | {pred:.1f} | {tflops} | {err:+.1f}%"
            f" | {100 * pred * 1e12 / PEAK:.1f} | {100 * comm / iteration_s:.0f} |"
            f" {100 * parts.get('bubble', 0.0) / iteration_s:.0f} | {alone:.0f} |"
        )
    return lines, errors


def mosaic_mfu(name: str, gpus: int, mbs: int, gbs: int, ckpt: bool) -> float:
    d, layers, heads, params = MPT[name]
    model = {"name": name, "family": "gpt", "layers": layers, "hidden": d, "heads": heads, "ffn": 4 * d}
    model |= {"vocab": 50368, "seq_len": MOSAIC_SEQ}
    recompute = "full" if ckpt else "none"
    r = train(model, gpus=gpus, gbs=gbs, mbs=mbs, zero=3, recompute=recompute, allow_oom=True)
    flops_per_token = 6 * params + 12 * layers * d * MOSAIC_SEQ
    return 100 * flops_per_token * r.tokens_per_s / gpus / PEAK


def mosaic_table() -> tuple[list[str], list[float]]:
    lines = [
        "| model | GPUs | mbs × GA | recompute | predicted MFU % | published MFU % | error |",
        "|---|---|---|---|---|---|---|",
    ]
    errors = []
    for name, gpus, mbs, gbs, ckpt, published in MOSAIC:
        mfu = mosaic_mfu(name, gpus, mbs, gbs, ckpt)
        err = (mfu - published) / published * 100
        errors.append(err)
        ga = gbs // (mbs * gpus)
        lines.append(
            f"| {name} | {gpus} | {mbs} × {ga} | {'full' if ckpt else 'none'} | {mfu:.1f} | {published:.1f}"
            f" | {err:+.1f}% |"
        )
    return lines, errors


def summary(errors: list[float]) -> str:
    absolute = [abs(e) for e in errors]
    return f"Mean absolute error {sum(absolute) / len(absolute):.1f}%; worst {max(absolute):.1f}%."


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--write", action="store_true", help="write the tables into benchmarks/RESULTS.md")
    args = ap.parse_args()
    megatron, m_err = megatron_table()
    mosaic, p_err = mosaic_table()
    text = "\n".join(
        ["Megatron-Core, Megatron-LM README (H100, BF16, sequence 4096):", "", *megatron, "", summary(m_err)]
        + ["", "MosaicML llm-foundry, FSDP (H100, BF16, sequence 2048; not apples to apples):", "", *mosaic]
        + ["", summary(p_err)]
    )
    print(text)
    if args.write:
        names = [row[0] for row in MOSAIC]
        per_row = ", ".join(f"{n} {e:+.1f}" for n, e in zip(names, p_err, strict=True))
        head = (
            f"{run_header()} Megatron-LM README rows: {summary(m_err)} MosaicML llm-foundry (FSDP, sequence"
            f" 2048; not apples to apples): {summary(p_err)[:-1]} ({per_row} %)."
        )
        write_section("h100_public", "\n".join([head, "", *megatron]))


if __name__ == "__main__":
    main()
