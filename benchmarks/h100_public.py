"""The compute model on H100 against public BF16 training results (a sanity check, not fitted
data: the model is calibrated on A100 only).

Source: MosaicML llm-foundry, scripts/train/benchmarking/README.md, table "H100 80GB BF16"
(github.com/mosaicml/llm-foundry, commit 061f2c7): MPT models (GPT blocks with GeLU MLP 4h,
vocabulary 50368, flash attention) trained with PyTorch FSDP (FULL_SHARD) on 8-64 H100s, one row
per model at sequence length 2048. Simulated here as Megatron data parallelism with ZeRO-3 at
TP 1 / PP 1 (FSDP's sharding), the published micro-batch and global batch, full recompute where
the row has activation checkpointing. MFU as the table defines it: (6·N + 12·L·d·s) FLOPs per
token (N the published parameter count) over 989 TFLOP/s per GPU.

    python3 benchmarks/h100_public.py
"""

from __future__ import annotations

import argparse

from clustersim.api import train

# model: (d_model, layers, heads, parameters), from llm-foundry's yamls and the table.
MPT = {
    "mpt-1b": (2048, 24, 16, 1315950592),
    "mpt-3b": (2560, 32, 20, 2651837440),
    "mpt-7b": (4096, 32, 32, 6658859008),
    "mpt-13b": (5120, 40, 40, 12853954560),
    "mpt-30b": (7168, 48, 64, 29975214080),
    "mpt-70b": (8192, 80, 64, 64862437376),
}
# (model, GPUs, micro-batch, global batch, activation checkpointing, published MFU %), seq 2048.
ROWS = [
    ("mpt-1b", 8, 14, 112, False, 41.82),
    ("mpt-3b", 16, 10, 480, False, 43.73),
    ("mpt-7b", 8, 6, 48, False, 46.44),
    ("mpt-13b", 8, 2, 16, False, 39.79),
    ("mpt-30b", 8, 3, 504, True, 38.11),
    ("mpt-70b", 64, 8, 2048, True, 42.57),
]
SEQ = 2048


def predicted_mfu(name: str, gpus: int, mbs: int, gbs: int, ckpt: bool) -> float:
    d, layers, heads, params = MPT[name]
    model = {
        "name": name,
        "family": "gpt",
        "layers": layers,
        "hidden": d,
        "heads": heads,
        "ffn": 4 * d,
        "vocab": 50368,
        "seq_len": SEQ,
    }
    r = train(
        model, gpus=gpus, gbs=gbs, mbs=mbs, zero=3, recompute="full" if ckpt else "none", allow_oom=True
    )
    flops_per_token = 6 * params + 12 * layers * d * SEQ
    return 100 * flops_per_token * r.tokens_per_s / gpus / 989e12


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.parse_args()
    lines = [
        "| model | GPUs | mbs × GA | recompute | predicted MFU % | published MFU % | error |",
        "|---|---|---|---|---|---|---|",
    ]
    errors = []
    for name, gpus, mbs, gbs, ckpt, published in ROWS:
        mfu = predicted_mfu(name, gpus, mbs, gbs, ckpt)
        err = (mfu - published) / published * 100
        errors.append(abs(err))
        ga = gbs // (mbs * gpus)
        lines.append(
            f"| {name} | {gpus} | {mbs} × {ga} | {'full' if ckpt else 'none'} | {mfu:.1f} | {published:.1f}"
            f" | {err:+.1f}% |"
        )
    lines += ["", f"Mean absolute error {sum(errors) / len(errors):.1f}%; worst {max(errors):.1f}%."]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
