"""Where the compute model spends one micro-batch of the Megatron-LM README's small H100 rows
(benchmarks/h100_public.py: GPT 1.7B, h 2048, TP 1; GPT 7.1B, h 4096, TP 2 with sequence
parallelism; sequence 4096, vocabulary 131072, micro-batch 1), per op class, with each class's
effective rate: TFLOP/s for GEMMs and attention, GB/s of HBM traffic for the rest.

Beside each class, the published H100 kernel measurement at (or nearest) the shape, where one
exists, as a rate and as the model's rate over it (above 1: the model is faster than the kernel):

- [X] GEMMs: OpenXLA's measured cuBLAS bf16 table (xla/service/gpu/model/
  matmul_interpolator_data.h, key sm_90; benchmarks/hopper_kernels.py), shapes with every side
  1024, 2048 or 4096 only.
- [F] attention: cuDNN fused attention, causal, head dim 128, 4k tokens: forward 518 TFLOP/s
  (FlashAttention-3 paper, arXiv 2407.08608, Fig. 5); backward 499 without the mask (Fig. 6)
  times cuDNN's causal / no-mask backward ratio 443.6 / 517.3 (NVIDIA/cudnn-frontend
  benchmark/benchmark_results.csv) = 428.
- [L] cross-entropy: Megatron-Core's unfused `vocab_parallel_cross_entropy` over bf16 logits on
  H100 80GB HBM3, 8192 tokens x 131072 (Liger-Kernel benchmark/data/all_benchmark_data.csv,
  `megatron_cross_entropy`, provider `megatron-unfused`, TP 1): forward 15.81 ms, forward +
  backward 21.25 ms, so 14.7 ps per logit forward and 5.1 backward; GB/s here are the model's
  bytes (38 and 14 per logit) over that time. Megatron-Core of 2026, not f2e5db4's.

The kernels and their model times come from the engine (`iteration_kernels`, the op lists the
simulator times). How often each runs per micro-batch: a layer's kernels once per layer; the head
(final norm, the logits GEMMs over the vocabulary shard, cross-entropy) and the embedding once;
Adam once per iteration. The script checks that this adds up to the simulator's own compute time
(`breakdown_s["compute"]`) and stops if it does not.

    python3 benchmarks/h100_breakdown.py [--write]
"""

from __future__ import annotations

import argparse
from collections import defaultdict

from clustersim.measure.kernels import KernelRow, iteration_kernels
from h100_public import MEGATRON, MEGATRON_SEQ, MEGATRON_VOCAB, megatron_model, simulate_megatron
from hopper_kernels import CAUSAL_BWD, GEMMS
from results import run_header, write_section

ROWS = ("1.7B", "7.1B")
# HBM bytes per element of the element-wise classes, as the model counts them (compute/kernel.rs
# `Pointwise::bytes`): forward, backward.
EW_BYTES = {
    "norm": (4, 8),
    "dropout_add": (6, 12),
    "gelu": (4, 8),
    "embedding": (4, 8),
    "cross_entropy": (38, 14),
}


def flops(row: KernelRow) -> float:
    """FLOPs of a GEMM or (causal) flash attention kernel; 0 for the others."""
    dims = [int(x) for x in row.shape.split("x")]
    if row.kernel == "gemm":
        *batch, m, n, k = dims
        return 2.0 * m * n * k * (batch[0] if batch else 1)
    if row.kernel.startswith("flash_attention"):
        bh, sq, sk, dqk, dv = dims
        fwd = bh * sq * sk * (dqk + dv)  # 4·bh·s²·d / 2 (causal)
        return 2.5 * fwd if row.kernel.endswith("_bwd") else fwd
    return 0.0


def hbm_bytes(row: KernelRow) -> float:
    """HBM bytes of an element-wise or optimizer kernel as the model counts them."""
    dims = [int(x) for x in row.shape.split("x")]
    if row.kernel == "adam":
        return 34.0 * dims[0]
    base = row.kernel.removesuffix("_bwd")
    fwd, bwd = EW_BYTES[base]
    return (bwd if row.kernel.endswith("_bwd") else fwd) * dims[0] * dims[1]


# Published H100 rates (see the module doc): GEMMs by m×n×k (TFLOP/s), attention (TFLOP/s),
# cross-entropy as seconds per logit.
XLA_GEMM = {f"{m}x{n}x{k}": h100 for m, n, k, h100, _ in GEMMS}
ATTENTION = {"flash_attention": 518.0, "flash_attention_bwd": 499.0 * CAUSAL_BWD}
LIGER_LOGITS = 8192 * 131072
CE_S_PER_LOGIT = {
    "cross_entropy": 15.81e-3 / LIGER_LOGITS,
    "cross_entropy_bwd": (21.25 - 15.81) * 1e-3 / LIGER_LOGITS,
}


def published(name: str, shape: str) -> tuple[float, str] | None:
    """The published rate of a class (TFLOP/s, or GB/s of the model's bytes for cross-entropy)
    and its source tag."""
    if name == "gemm" and shape in XLA_GEMM:
        return XLA_GEMM[shape], "X"
    if name in ATTENTION:
        return ATTENTION[name], "F"
    if name in CE_S_PER_LOGIT:
        return EW_BYTES["cross_entropy"][name.endswith("_bwd")] / CE_S_PER_LOGIT[name] / 1e9, "L"
    return None


def per_micro_batch(rows: list[KernelRow], layers: int, tp: int) -> list[tuple[KernelRow, float]]:
    """Each kernel with how often it runs in one micro-batch (Adam: once per iteration, kept
    apart by the caller)."""
    vshard = MEGATRON_VOCAB // tp
    out = []
    for r in rows:
        if r.kernel == "adam":
            continue
        dims = [int(x) for x in r.shape.split("x")]
        head = 0
        if r.kernel.startswith("cross_entropy") or (r.kernel == "gemm" and vshard in dims):
            head = r.uses
        elif r.kernel in ("norm", "norm_bwd"):
            head = 1  # the final norm; the layer holds the other two
        embedding = r.uses if r.kernel.startswith("embedding") else 0
        out.append((r, head + embedding + (r.uses - head - embedding) * layers))
    return out


def breakdown(size: str, checked: dict[str, dict[str, list[float]]] | None = None) -> list[str]:
    _, heads, hidden, layers, tp, pp, _dp, gpus, gbs, *_ = next(r for r in MEGATRON if r[0] == size)
    model = megatron_model(heads, hidden, layers)
    plan = {"gpus": gpus, "gbs": gbs, "tp": tp, "pp": pp, "mbs": 1, "sp": tp > 1}
    rows = iteration_kernels(model, accelerator="h100", dp="distributed_optimizer", **plan)
    micro_batches = gbs // (gpus // (tp * pp))
    counted = per_micro_batch(rows, layers, tp)
    adam = next(r for r in rows if r.kernel == "adam")
    total = sum(r.model_s * n for r, n in counted)
    _, parts = simulate_megatron(heads, hidden, layers, tp, pp, gpus, gbs)
    iteration = micro_batches * total + adam.model_s
    if abs(iteration - parts["compute"]) > 1e-3 * parts["compute"]:
        simulated = parts["compute"]
        raise SystemExit(f"{size}: kernels sum to {iteration:.4f} s, simulated compute {simulated:.4f} s")

    classes: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])  # s, FLOPs, bytes
    for r, n in counted:
        c = classes[(r.kernel, r.shape if r.kernel == "gemm" else "")]
        c[0] += r.model_s * n
        c[1] += flops(r) * n
        c[2] += (0.0 if r.kernel == "gemm" or r.kernel.startswith("flash") else hbm_bytes(r)) * n
    lines = [
        f"GPT {size} (h {hidden}, {layers} layers, TP {tp}{' + SP' if tp > 1 else ''}): one micro-batch of"
        f" {MEGATRON_SEQ} tokens = {1e3 * total:.1f} ms ({micro_batches} per iteration; Adam"
        f" {1e3 * adam.model_s:.2f} ms per iteration)",
        "",
        "| op class | ms per micro-batch | share | model rate | published kernel | model / published |",
        "|---|---|---|---|---|---|",
    ]
    for (name, shape), (s, f, b) in sorted(classes.items(), key=lambda kv: -kv[1][0]):
        value = f / s / 1e12 if f else b / s / 1e9
        unit = "TFLOP/s" if f else "GB/s"
        pub = published(name, shape)
        cells = f"{pub[0]:.0f} {unit} [{pub[1]}] | {value / pub[0]:.2f}" if pub else "| "
        label = f"gemm {shape.replace('x', '×')}" if shape else name
        lines.append(f"| {label} | {1e3 * s:.2f} | {100 * s / total:.1f}% | {value:.0f} {unit} | {cells} |")
        if pub and checked is not None:
            kind = f"{name} [{pub[1]}]" if not shape else f"GEMMs of OpenXLA's shapes [{pub[1]}]"
            share, ratio = 100 * s / total, value / pub[0]
            if kind in checked and size in checked[kind]:  # several GEMM shapes: the sum and the range
                old_share, *ratios = checked[kind][size]
                checked[kind][size] = [old_share + share, *ratios, ratio]
            else:
                checked.setdefault(kind, {})[size] = [share, ratio]
    adam_rate = hbm_bytes(adam) / adam.model_s / 1e9
    lines.append(f"| adam (per iteration) | {1e3 * adam.model_s:.2f} | | {adam_rate:.0f} GB/s | | |")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--write", action="store_true", help="write the tables into benchmarks/RESULTS.md")
    args = ap.parse_args()
    checked: dict[str, dict[str, list[float]]] = {}
    parts = [breakdown(size, checked) for size in ROWS]
    text = "\n".join(line for lines in parts for line in [*lines, ""]).rstrip()
    print(text)
    if args.write:
        heads = "; ".join(lines[0].split(":", 1)[0] + ":" + lines[0].split("=", 1)[1] for lines in parts)
        rows = [
            f"{run_header()} One micro-batch of 4096 tokens: {heads}.",
            "",
            "| op class with a published kernel | "
            + " | ".join(f"GPT {s}: share, model / published" for s in ROWS)
            + " |",
            "|---|" + "---|" * len(ROWS),
        ]
        for kind, by_size in checked.items():
            cells = []
            for s in ROWS:
                share, *ratios = by_size[s]
                spread = f"{min(ratios):.2f}" + (f"–{max(ratios):.2f}" if len(ratios) > 1 else "")
                cells.append(f"{share:.1f} %, {spread}")
            rows.append(f"| {kind} | " + " | ".join(cells) + " |")
        write_section("h100_breakdown", "\n".join(rows))


if __name__ == "__main__":
    main()
