"""busbw of the packet backend against SimAI's ns-3 on the reference runs of tests/data/ns3.

Each scenario runs `clustersim.collective` with `backend="packet"` on the scenario's own topology
file, as the reference was made (README there: AS_SEND_LAT=3, NVLS and PXN off, ring all-reduce /
all-gather, all-to-all as direct sends, the scenario's SimAI.conf: SimAI's shipped settings, with
CC_MODE 3 (HPCC) in the `_hpcc` scenarios). ns-3's busbw is the README's: S / rank 0's EndToEnd
time × nccl-tests' factor. Issue 27 asks for 5 %; the scenarios that are not there yet are strict
xfails with the reason, so each one fails the suite the day it starts to hold.
"""

from __future__ import annotations

import re
from pathlib import Path

import clustersim
import pytest

NS3 = Path(__file__).parent / "data" / "ns3"
OPS = {"ar": "allreduce", "ag": "allgather", "rs": "reducescatter", "a2a": "alltoall"}
ENV = {"AS_SEND_LAT": "3", "AS_NVLS_ENABLE": "0", "AS_PXN_ENABLE": "0"}

RING = (
    "ours faster: our rings keep each server-to-server hop on one rail (NCCL's rings); SimAI's "
    "leave a server from local rank c-1 and enter the next at c, crossing rails through the spine"
)
DCQCN_TAIL = (
    "ours slower: on 2:1 oversubscribed uplinks DCQCN cuts more of our queue pairs to rates that "
    "wait for the 900 us rate-increase timer (p99 FCT 1.59 against 1.13 ms on dcn32_a2a_16m)"
)
SCENARIOS = [
    ("spx16_a2a_16m", None),
    ("spx32_a2a_16m", None),
    ("spx64_a2a_16m", None),
    ("spx16_ar_1m", None),
    ("dcn32_ar_1m", None),
    ("spx16_ar_16m", RING),
    ("spx32_ar_16m", RING),
    ("spx32_ag_16m", RING),
    ("dcn32_ar_16m", RING),
    ("hpn32_ar_16m", RING),
    ("dcn32_a2a_16m", DCQCN_TAIL),
    ("dcn64_a2a_16m", DCQCN_TAIL),
    ("hpn32_a2a_16m", DCQCN_TAIL),
    # HPCC (CC_MODE 3 in the scenario's SimAI.conf; ns-3 with its INT offset fixed: README).
    ("spx16_ar_1m_hpcc", None),
    ("spx16_ar_16m_hpcc", RING + " (HPCC: +6.3 %)"),
    ("spx32_ar_16m_hpcc", RING + " (HPCC: +9.8 %)"),
    ("dcn32_ar_16m_hpcc", RING + " (HPCC: +8.1 %)"),
    (
        "dcn32_a2a_16m_hpcc",
        "ours slower: -23.9 % (ours ends at 585 us, ns-3's rank 0 at 445, its last flow at 458) while "
        "per-flow FCT median and p99 are within 8 and 14 % of ns-3's (ns3_tests.rs): a tail of a few "
        "queue pairs (our last five end at 545-585 us); one network-wide T of 16-32 us for every queue "
        "pair, as SimAI takes its maxRtt, only moves our end to 530 us",
    ),
]


def ns3_busbw(folder: Path, op: str, size: int, n: int) -> float:
    """GB/s from rank 0's EndToEnd time (the CSV's last line: ..., total time, µs)."""
    last = (folder / "ncclFlowModel_EndToEnd.csv").read_text().strip().splitlines()[-1].split(",")
    assert last[4].strip() == "total time", last
    factor = 2 * (n - 1) / n if op == "allreduce" else (n - 1) / n
    return size / (float(last[5]) * 1e3) * factor


@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=r)) if r else n for n, r in SCENARIOS],
)
def test_packet_busbw_within_5_percent_of_ns3(name):
    folder = NS3 / name
    topology = next(p for p in folder.iterdir() if re.match(r"(Spectrum-X|AlibabaHPN|DCN\+)", p.name))
    n = int(re.search(r"_(\d+)g_", topology.name).group(1))
    op = OPS[name.split("_")[1]]
    size = int(name.split("_")[2].rstrip("m")) << 20
    result = clustersim.collective(
        op,
        str(topology),
        minbytes=size,
        maxbytes=size,
        algo="direct" if op == "alltoall" else "ring",
        env=ENV,
        backend=f"packet:conf={folder / 'SimAI.conf'}",
    )
    ours = float(next(result.rows())["busbw_GBps"])
    ref = ns3_busbw(folder, op, size, n)
    assert abs(ours / ref - 1) <= 0.05, f"{name}: packet {ours:.2f} GB/s, ns-3 {ref:.2f} GB/s"
