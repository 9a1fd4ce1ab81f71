"""The compute model's kernels on H100 and B200 against published kernel measurements (no GPU here).

The catalog's Hopper and B200 efficiencies are the A100 fit carried over by kernel-level ratios
(crates/engine/src/catalog/accelerators.yaml). This script checks the model's kernel rates, shape
by shape, against measurements it was not derived from:

- GEMMs (bf16, one product): OpenXLA's measured cuBLAS table that XLA's GPU cost model
  interpolates (`xla/service/gpu/model/matmul_interpolator_data.h`, keys `sm_90` and
  `sm_100_B200`; here as in ROCm/xla commit d02afb4), its 27 shapes with m, n, k each 1024, 2048
  or 4096, TFLOP/s rounded.
- Attention (bf16, head dim 128, batch x sequence = 16k tokens, 16 heads): cuDNN fused attention,
  the kernel Transformer Engine runs for Megatron-Core on Hopper, from the FlashAttention-3 paper
  (Shah et al. 2024, arXiv 2407.08608) Fig. 5 (forward, causal) and Fig. 6 (backward; the paper
  shows it without the causal mask only). The causal backward that training runs is that figure
  times cuDNN's measured causal / no-mask backward ratio at 4k tokens, 443.6 / 517.3 = 0.858
  (NVIDIA/cudnn-frontend benchmark/benchmark_results.csv, cuDNN 9.1, BF16, 4 x 16 heads x 4096 x
  128; a Hopper GPU at locked clocks, so the ratio, not the rates), the catalog's
  `attention_bwd_efficiency`.

The model's time for each kernel comes from the engine (`iteration_kernels` of a one-layer model
whose first MLP GEMM, or attention, has the shape), so this checks the code, not a copy of it.
The model carries the A100 fit's non-kernel share: the catalog's A100 ε_gemm (read at run time)
over the A100's measured fraction of peak on its best GEMM (271.2 of 312 TFLOP/s, 86.9 %, the
catalog's MAMF figure); a model rate about that share of the standalone kernel's is what
"consistent with the kernel measurements" means for GEMMs. Attention's efficiency is a kernel
figure itself (ratio about 1 expected).

    python3 benchmarks/hopper_kernels.py [--write]
"""

from __future__ import annotations

import argparse
import statistics

from clustersim.catalog import lookup
from clustersim.measure.kernels import iteration_kernels
from results import run_header, write_section

# The A100's largest measured bf16 matmul rate and peak, TFLOP/s (catalog/accelerators.yaml, MAMF).
A100_BEST_GEMM, A100_PEAK = 271.2, 312.0


def non_kernel_share() -> float:
    """The GEMM model rate expected over a standalone kernel's: the A100 fit's ε_gemm over the
    fraction of peak the A100's best GEMM reaches (the fit keeps what the kernel rate does not see)."""
    return float(lookup("accelerators", "a100")["gemm_efficiency"]) / (A100_BEST_GEMM / A100_PEAK)


# (m, n, k, H100 TFLOP/s, B200 TFLOP/s) measured, OpenXLA's table (see the module doc).
GEMMS = [
    (1024, 1024, 1024, 253, 288),
    (1024, 1024, 2048, 360, 468),
    (1024, 1024, 4096, 473, 675),
    (1024, 2048, 1024, 384, 493),
    (1024, 2048, 2048, 529, 760),
    (1024, 2048, 4096, 666, 1015),
    (1024, 4096, 1024, 494, 723),
    (1024, 4096, 2048, 639, 981),
    (1024, 4096, 4096, 752, 1214),
    (2048, 1024, 1024, 387, 496),
    (2048, 1024, 2048, 535, 760),
    (2048, 1024, 4096, 664, 1018),
    (2048, 2048, 1024, 498, 725),
    (2048, 2048, 2048, 641, 986),
    (2048, 2048, 4096, 752, 1208),
    (2048, 4096, 1024, 597, 911),
    (2048, 4096, 2048, 726, 1173),
    (2048, 4096, 4096, 752, 1343),
    (4096, 1024, 1024, 498, 716),
    (4096, 1024, 2048, 644, 990),
    (4096, 1024, 4096, 752, 1205),
    (4096, 2048, 1024, 605, 914),
    (4096, 2048, 2048, 727, 1170),
    (4096, 2048, 4096, 759, 1344),
    (4096, 4096, 1024, 685, 1076),
    (4096, 4096, 2048, 736, 1278),
    (4096, 4096, 4096, 780, 1417),
]
# (sequence, cuDNN forward causal, cuDNN backward without mask) TFLOP/s on H100 SXM5,
# FlashAttention-3 paper.
ATTENTION = [
    (512, 315, 305),
    (1024, 410, 408),
    (2048, 484, 465),
    (4096, 518, 499),
    (8192, 529, 518),
    (16384, 539, 516),
]
TOKENS, HEADS, HEAD_DIM = 16384, 16, 128
# cuDNN's causal backward over its backward without mask, 4k tokens (cudnn-frontend's benchmark).
CAUSAL_BWD = 443.6 / 517.3


def model_seconds(model: dict, kernel: str, shape: str, accelerator: str, mbs: int = 1) -> float:
    """The engine's model time of one kernel of a one-GPU iteration of `model`."""
    rows = iteration_kernels(model, gpus=1, gbs=mbs, mbs=mbs, accelerator=accelerator)
    return next(r.model_s for r in rows if r.kernel == kernel and r.shape == shape)


def gemm_rate(m: int, n: int, k: int, accelerator: str) -> float:
    """Model TFLOP/s of C[m×n] = A[m×k]·B[k×n]: the first MLP GEMM of a layer with hidden k,
    FFN n and m tokens."""
    model = {"name": "g", "family": "gpt", "layers": 1, "hidden": k, "heads": k // 128, "ffn": n}
    model |= {"vocab": 1024, "seq_len": m}
    return 2 * m * n * k / model_seconds(model, "gemm", f"{m}x{n}x{k}", accelerator) / 1e12


def attention_rates(seq: int) -> tuple[float, float]:
    """Model TFLOP/s of causal flash attention forward and backward on H100 (FLOPs as the
    FlashAttention papers count them: 4·b·h·s²·d forward, halved by the causal mask, 2.5×
    backward)."""
    batch = TOKENS // seq
    model = {"name": "a", "family": "gpt", "layers": 1, "hidden": HEADS * HEAD_DIM, "heads": HEADS}
    model |= {"ffn": 4 * HEADS * HEAD_DIM, "vocab": 1024, "seq_len": seq}
    shape = f"{batch * HEADS}x{seq}x{seq}x{HEAD_DIM}x{HEAD_DIM}"
    fwd_flops = 4 * batch * HEADS * seq * seq * HEAD_DIM / 2
    fwd = model_seconds(model, "flash_attention", shape, "h100", mbs=batch)
    bwd = model_seconds(model, "flash_attention_bwd", shape, "h100", mbs=batch)
    return fwd_flops / fwd / 1e12, 2.5 * fwd_flops / bwd / 1e12


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--write", action="store_true", help="write the tables into benchmarks/RESULTS.md")
    args = ap.parse_args()
    lines = [
        "| GEMM m×n×k | H100 model | H100 measured | ratio | B200 model | B200 measured | ratio |",
        "|---|---|---|---|---|---|---|",
    ]
    ratios: dict[str, list[float]] = {"h100": [], "b200": []}
    share = non_kernel_share()
    for m, n, k, h100, b200 in GEMMS:
        cells = []
        for acc, measured in (("h100", h100), ("b200", b200)):
            rate = gemm_rate(m, n, k, acc)
            ratios[acc].append(rate / measured)
            cells.append(f"{rate:.0f} | {measured} | {rate / measured:.2f}")
        lines.append(f"| {m}×{n}×{k} | " + " | ".join(cells) + " |")
    for acc, r in ratios.items():
        lines.append(
            f"\n{acc.upper()} GEMMs: model / measured rate median {statistics.median(r):.2f}, "
            f"from {min(r):.2f} to {max(r):.2f} ({share:.2f} expected: the A100 fit's non-kernel share)."
        )
    lines += [
        "",
        "| attention, s | H100 model fwd | cuDNN fwd (causal) | ratio | H100 model bwd | cuDNN bwd (no mask)"
        " | causal (× 0.858) | ratio |",
        "|---|---|---|---|---|---|---|---|",
    ]
    attention: dict[str, list[str]] = {"fwd": [], "bwd": []}
    for seq, fwd_pub, bwd_pub in ATTENTION:
        fwd, bwd = attention_rates(seq)
        causal = bwd_pub * CAUSAL_BWD
        fwd_cells = f"{fwd:.0f} | {fwd_pub} | {fwd / fwd_pub:.2f}"
        lines.append(f"| {seq} | {fwd_cells} | {bwd:.0f} | {bwd_pub} | {causal:.0f} | {bwd / causal:.2f} |")
        attention["fwd"].append(f"{seq} {fwd / fwd_pub:.2f}")
        attention["bwd"].append(f"{seq} {bwd / causal:.2f}")
    table = "\n".join(lines)
    print(table)
    if args.write:
        rows = [
            run_header() + f" Expected GEMM ratio (the A100 fit's non-kernel share): {share:.2f}.",
            "",
            "| kernels | model / measured rate |",
            "|---|---|",
        ]
        for acc, r in ratios.items():
            rows.append(
                f"| {acc.upper()} GEMMs, {len(r)} shapes 1024–4096 | median {statistics.median(r):.2f},"
                f" {min(r):.2f} – {max(r):.2f} |"
            )
        rows.append(
            "| H100 attention forward vs cuDNN causal, by tokens | " + ", ".join(attention["fwd"]) + " |"
        )
        rows.append(
            "| H100 attention backward vs cuDNN causal (no-mask × 0.858), by tokens | "
            + ", ".join(attention["bwd"])
            + " |"
        )
        write_section("hopper_kernels", "\n".join(rows))


if __name__ == "__main__":
    main()
