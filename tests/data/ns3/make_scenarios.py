"""Write the inputs of the SimAI ns-3 reference scenarios (documentation, not run by CI or tests).

For each scenario this writes, into ``tests/data/ns3/<scenario>/``:

- the topology file, made by SimAI's own generator (``gen_Topo_Template.py`` in the SimAI
  checkout given by ``SIMAI_DIR``), run in that folder with the flags listed below;
- ``SimAI.conf``: the values of SimAI's shipped ``inputs/config/SimAI.conf`` (SimAI 1.6) with
  every file path made relative to the run folder, the packet trace off and ``CC_MODE`` per
  scenario;
- ``workload.txt``: a one-row SimAI workload (current AICB header, TP 1, so the data-parallel
  group is every GPU) whose weight-gradient column holds the collective;
- ``flow.txt`` and ``trace.txt``: the flow and trace-node lists ns-3 opens, both empty (``0``).

Usage: ``SIMAI_DIR=/work/ns3build/SimAI python3 tests/data/ns3/make_scenarios.py [name ...]``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
MIB = 1 << 20


@dataclass(frozen=True)
class Scenario:
    name: str
    topo_flags: tuple[str, ...]
    collective: str  # SimAI workload comm type in the wg column (DP group = all GPUs)
    size: int  # bytes, nccl-tests convention (the whole buffer)
    cc_mode: int  # 1 DCQCN, 3 HPCC


def _ar(name: str, flags: tuple[str, ...], size: int, cc: int = 1) -> Scenario:
    return Scenario(name, flags, "ALLREDUCE", size, cc)


SPX16 = ("-topo", "Spectrum-X", "-g", "16")
SPX32 = ("-topo", "Spectrum-X", "-g", "32")
SPX64 = ("-topo", "Spectrum-X", "-g", "64")
SPX128 = ("-topo", "Spectrum-X", "-g", "128")
HPN32 = ("-topo", "AlibabaHPN", "-g", "32")
HPN64 = ("-topo", "AlibabaHPN", "-g", "64")
# DCN+ puts 64 NICs on one ASW by default, so 32-64 GPUs would sit on a single switch; with 16
# NICs per ASW the GPUs spread over ASWs and the traffic crosses the 8 PSWs (ECMP).
DCN32 = ("-topo", "DCN+", "-g", "32", "-npa", "16")
DCN64 = ("-topo", "DCN+", "-g", "64", "-npa", "16")

SCENARIOS = [
    _ar("spx16_ar_1m", SPX16, 1 * MIB),
    _ar("spx16_ar_16m", SPX16, 16 * MIB),
    _ar("spx16_ar_64m", SPX16, 64 * MIB),
    _ar("spx32_ar_1m", SPX32, 1 * MIB),
    _ar("spx32_ar_16m", SPX32, 16 * MIB),
    _ar("spx32_ar_64m", SPX32, 64 * MIB),
    _ar("hpn32_ar_1m", HPN32, 1 * MIB),
    _ar("hpn32_ar_16m", HPN32, 16 * MIB),
    _ar("dcn32_ar_1m", DCN32, 1 * MIB),
    _ar("dcn32_ar_16m", DCN32, 16 * MIB),
    _ar("hpn64_ar_16m", HPN64, 16 * MIB),
    _ar("dcn64_ar_16m", DCN64, 16 * MIB),
    _ar("spx32_ar_16m_hpcc", SPX32, 16 * MIB, cc=3),
    Scenario("spx16_a2a_16m", SPX16, "ALLTOALL", 16 * MIB, 1),
    Scenario("spx32_a2a_16m", SPX32, "ALLTOALL", 16 * MIB, 1),
    _ar("spx128_ar_16m", SPX128, 16 * MIB),
    Scenario("spx32_ag_16m", SPX32, "ALLGATHER", 16 * MIB, 1),
    Scenario("spx32_rs_16m", SPX32, "REDUCESCATTER", 16 * MIB, 1),
    _ar("dcn32_ar_16m_hpcc", DCN32, 16 * MIB, cc=3),
    Scenario("dcn32_a2a_16m", DCN32, "ALLTOALL", 16 * MIB, 1),
    Scenario("dcn32_a2a_16m_hpcc", DCN32, "ALLTOALL", 16 * MIB, 3),
    _ar("spx16_ar_1m_hpcc", SPX16, 1 * MIB, cc=3),
    _ar("spx16_ar_16m_hpcc", SPX16, 16 * MIB, cc=3),
    Scenario("dcn64_a2a_16m", DCN64, "ALLTOALL", 16 * MIB, 1),
    Scenario("hpn32_a2a_16m", HPN32, "ALLTOALL", 16 * MIB, 1),
    _ar("spx64_ar_16m", SPX64, 16 * MIB),
    _ar("dcn32_ar_64m", DCN32, 64 * MIB),
    _ar("hpn32_ar_64m", HPN32, 64 * MIB),
    Scenario("spx64_a2a_16m", SPX64, "ALLTOALL", 16 * MIB, 1),
    Scenario("spx128_a2a_16m", SPX128, "ALLTOALL", 16 * MIB, 1),
]

# (link rate bit/s, KMIN KB, KMAX KB, PMAX) as in SimAI's shipped file.
ECN = [
    (25000000000, 100, 400, "0.2"),
    (50000000000, 200, 800, "0.2"),
    (100000000000, 400, 1600, "0.2"),
    (200000000000, 300, 1200, "0.8"),
    (400000000000, 800, 3200, "0.2"),
    (1600000000000, 600, 2400, "0.2"),
]


def ecn_lines() -> str:
    def one(key: str, col: int) -> str:
        return f"{key} {len(ECN)} " + " ".join(f"{e[0]} {e[col]}" for e in ECN)

    return "\n".join([one("KMAX_MAP", 2), one("KMIN_MAP", 1), one("PMAX_MAP", 3)]) + "\n"


# SimAI 1.6 inputs/config/SimAI.conf, values unchanged except the file paths (relative to the
# run folder instead of /etc/astra-sim/simulation/), ENABLE_TRACE (off) and CC_MODE.
CONF = """\
ENABLE_QCN 1
USE_DYNAMIC_PFC_THRESHOLD 1

PACKET_PAYLOAD_SIZE 9000

FLOW_FILE flow.txt
TRACE_FILE trace.txt
TRACE_OUTPUT_FILE mix.tr
FCT_OUTPUT_FILE fct.txt
PFC_OUTPUT_FILE pfc.txt

SIMULATOR_STOP_TIME 40000000000000.00

CC_MODE {cc_mode}
ALPHA_RESUME_INTERVAL 1
RATE_DECREASE_INTERVAL 4
CLAMP_TARGET_RATE 0
RP_TIMER 900
EWMA_GAIN 0.00390625
FAST_RECOVERY_TIMES 1
RATE_AI 50Mb/s
RATE_HAI 100Mb/s
MIN_RATE 100Mb/s
DCTCP_RATE_AI 1000Mb/s

ERROR_RATE_PER_LINK 0.0000
L2_CHUNK_SIZE 4000
L2_ACK_INTERVAL 1
L2_BACK_TO_ZERO 0

HAS_WIN 1
GLOBAL_T 0
VAR_WIN 1
FAST_REACT 1
U_TARGET 0.95
MI_THRESH 0
INT_MULTI 1
MULTI_RATE 0
SAMPLE_FEEDBACK 0
PINT_LOG_BASE 1.05
PINT_PROB 1.0

RATE_BOUND 1

ACK_HIGH_PRIO 0

LINK_DOWN 0 0 0

ENABLE_TRACE 0

{ecn}
BUFFER_SIZE 32

QLEN_MON_FILE qlen.txt
BW_MON_FILE bw.txt
RATE_MON_FILE rate.txt
CNP_MON_FILE cnp.txt
MON_START 0
MON_END 20000
QP_MON_INTERVAL 100
QLEN_MON_INTERVAL 10000
BW_MON_INTERVAL 10000
"""


def gpus(s: Scenario) -> int:
    return int(s.topo_flags[s.topo_flags.index("-g") + 1])


def workload(s: Scenario) -> str:
    n = gpus(s)
    header = (
        "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 1 ep: 1 pp: 1 vpp: 1 ga: 1 "
        f"all_gpus: {n} checkpoints: 0 checkpoint_initiates: 0 pp_comm: 0"
    )
    row = f"dp_{s.collective.lower()} -1 1 NONE 0 1 NONE 0 1 {s.collective} {s.size} 1"
    return f"{header}\n1\n{row}\n"


def write(s: Scenario, simai_dir: Path) -> None:
    out = HERE / s.name
    out.mkdir(exist_ok=True)
    for old in out.glob("*"):
        if old.name not in ("fct.txt", "pfc.txt", "ncclFlowModel_EndToEnd.csv", "run.txt"):
            old.unlink()
    gen = simai_dir / "astra-sim-alibabacloud" / "inputs" / "topo" / "gen_Topo_Template.py"
    subprocess.run([sys.executable, str(gen), *s.topo_flags], cwd=out, check=True)
    (out / "SimAI.conf").write_text(CONF.format(cc_mode=s.cc_mode, ecn=ecn_lines()))
    (out / "workload.txt").write_text(workload(s))
    (out / "flow.txt").write_text("0\n")
    (out / "trace.txt").write_text("0\n")


def main() -> None:
    simai_dir = Path(os.environ.get("SIMAI_DIR", "/work/ns3build/SimAI"))
    names = set(sys.argv[1:])
    for s in SCENARIOS:
        if not names or s.name in names:
            write(s, simai_dir)


if __name__ == "__main__":
    main()
