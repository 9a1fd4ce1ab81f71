"""`clustersim collective` against real NCCL: bus bandwidth at ≥ 1 GiB against the nccl-tests
measurements of shared/reference/hardware.md §3, and small-message time (8 B … 64 KiB) against
NCCL's own tuning-model prediction (tests/nccl_tuning_model.py, written from hardware.md §4).

Fabrics are described by their hardware, not by NCCL's figures: NVLink at its line rate (A100
12 × 25 GB/s = 2400 Gbps, H100 18 × 25 = 3600 Gbps), NICs at theirs (HDR 200 Gbps, CX7 400 Gbps),
SimAI's default link latencies. The one-node cases are SimAI templates; the two multi-node ones
are InfiniBand fabrics (their measurements are on IB: DGX A100, NDR CX-7), platform files of the
nccl-tests corpus runner's shape with `transport=ib`, so their NICs carry what NCCL achieves
through a NIC of their line rate (docs/platform-format.md). Targets (issue 9): busbw within 10 %
at ≥ 1 GiB; small messages within 25 % of NCCL's prediction.

    python3 benchmarks/bench_nccl.py [--write]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from clustersim.nccl_tests import sweep
from clustersim.topology import simai_template
from nccl_corpus import PlatformSpec
from results import run_header, write_section

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from nccl_tuning_model import predict_us  # noqa: E402

GIB = 1 << 30
SMALL = [8, 64, 512, 4096, 32768, 65536]
A100 = {"gpu_type": "A100", "nvlink_bw": "2400Gbps", "bandwidth": "200Gbps"}
H100 = {"gpu_type": "H100", "nvlink_bw": "3600Gbps", "bandwidth": "400Gbps"}
# The InfiniBand fabrics: 2 DGX A100 (8 GPUs on NVSwitch, one 200 Gb/s HDR NIC each) and 2
# one-GPU servers with a 400 Gb/s NDR NIC each, every NIC on one leaf declared transport=ib.
DGX_A100_HDR = PlatformSpec(2, 8, "A100", 2400, True, False, 8, 200, "ib")
ONE_GPU_NDR = PlatformSpec(2, 1, "H100", None, False, False, 1, 400, "ib")
# (label, template overrides or an IB platform, collective, algorithm, NVLS offered, nodes, GPUs per node,
#  NCCL's bus bandwidth for its tuning model (GB/s), measured busbw (GB/s), its source)
CASES = [
    (
        "8×A100 NVSwitch",
        dict(gpu=8, gpu_per_server=8, **A100),
        "allreduce",
        "auto",
        False,
        1,
        8,
        240,
        230,
        "nccl-tests#149",
    ),
    (
        "8×A100 NVSwitch",
        dict(gpu=8, gpu_per_server=8, **A100),
        "allgather",
        "auto",
        False,
        1,
        8,
        240,
        230,
        "nccl-tests#149",
    ),
    (
        "8×H100 ring",
        dict(gpu=8, gpu_per_server=8, **H100),
        "allreduce",
        "ring",
        False,
        1,
        8,
        370.8,
        370,
        "nccl-tests#212, #290",
    ),
    (
        "8×H100 NVLS",
        dict(gpu=8, gpu_per_server=8, **H100),
        "allreduce",
        "nvls",
        True,
        1,
        8,
        370.8,
        480,
        "nccl-tests#212, #290",
    ),
    (
        "2×8 A100, 8×HDR 200G",
        DGX_A100_HDR,
        "allreduce",
        "auto",
        False,
        2,
        8,
        200,
        192,
        "nccl#812",
    ),
    (
        "2×8 A100, 8×HDR 200G (ring)",
        DGX_A100_HDR,
        "allreduce",
        "ring",
        False,
        2,
        8,
        200,
        192,
        "nccl#812",
    ),
    (
        "2×1 GPU, one CX7 400G each",
        ONE_GPU_NDR,
        "allreduce",
        "auto",
        False,
        2,
        1,
        50,
        47,
        "nccl-tests#290, #267 (46–48)",
    ),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--write", action="store_true", help="record the result in benchmarks/RESULTS.md")
    args = ap.parse_args()
    big = [
        "| fabric | collective | algorithm | busbw 1 GiB | busbw 4 GiB | NCCL measured | off | ≤ 10 % "
        "| 8 B–64 KiB vs NCCL's model (≤ 25 %) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    small = [
        "| fabric | collective | size B | ours µs | algorithm/protocol | NCCL model µs | choice | off |",
        "|---|---|---|---|---|---|---|---|",
    ]
    worst_small = 0.0
    platforms = tempfile.TemporaryDirectory()  # the IB fabrics' platform files
    folder = platforms.name
    for label, kw, op, algo, nvls, nodes, ppn, bus, measured, source in CASES:
        if isinstance(kw, PlatformSpec):
            path = Path(folder) / f"case{len(big)}.platform"
            path.write_text(kw.text(), encoding="utf-8")
            topo = str(path)
        else:
            topo = simai_template(None, **kw)
        env = {"AS_NVLS_ENABLE": "1"} if nvls else {}
        t = sweep(topo, op, [GIB, 4 * GIB], algorithm=algo, env=env)
        off = max(abs(b / measured - 1) for b in t["busbw_GBps"])
        picked = "/".join(sorted(set(t["algorithm"])))
        big.append(
            f"| {label} | {op} | {picked} | {t['busbw_GBps'][0]:.1f} | {t['busbw_GBps'][1]:.1f} "
            f"| {measured} ({source}) | {off:.1%} | {'✅' if off <= 0.10 else '❌'} |"
        )
        if algo != "auto":
            big[-1] += " – |"
            print(big[-1], flush=True)
            continue
        s = sweep(topo, op, SMALL, env=env)
        rels, picks = [], set()
        for size, us, a, p in zip(SMALL, s["time_us"], s["algorithm"], s["protocol"], strict=True):
            ref, ref_algo, ref_proto = predict_us(op, size, nodes, ppn, bus, nvls=nvls)
            rel = us / ref - 1
            rels.append(rel)
            picks.add(
                f"{a}/{p}" + ("" if (a, p) == (ref_algo, ref_proto) else f" (NCCL {ref_algo}/{ref_proto})")
            )
            worst_small = max(worst_small, abs(rel))
            small.append(
                f"| {label} | {op} | {size} | {us:.2f} | {a}/{p} | {ref:.2f} | {ref_algo}/{ref_proto}"
                f" | {rel:+.1%} |"
            )
        big[-1] += f" {min(rels):+.1%} … {max(rels):+.1%}, {', '.join(sorted(picks))} |"
        print(big[-1], flush=True)
    platforms.cleanup()
    summary = f"Worst small-message difference: {worst_small:.1%} (target ≤ 25 %)."
    print("\n".join([*small, "", summary]))
    body = "\n".join([run_header() + " " + summary, "", *big])
    print(body)
    if args.write:
        write_section("nccl", body)


if __name__ == "__main__":
    main()
