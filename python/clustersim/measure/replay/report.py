"""The replay's result in the simulator's shape: an `AnalyticalResult` (summary in µs, one row
per workload row, SimAI's EndToEnd CSV) built from measured times, so `clustersim replay` writes
the same EndToEnd.csv and summary.json as `analytical` and `run`.

Per row and phase (fwd, wg, ig): compute = the measured compute steps, total comm = Σ of its
collectives' times, exposed = total (the replay runs every op blocking), algbw = S / t and
busbw = algbw · factor (GB/s, of the first collective as the simulator reports). Summary:
exposed comm per group (DP, DP_EP, TP and NONE, EP), PP = Σ of the measured PP transfers,
bubble = (p−1)/ga × Σ over rows other than embedding_layer of (compute + fwd/ig comm), total =
compute + exposed comm + bubble + PP.
"""

from __future__ import annotations

import json
import math
from typing import Any

from clustersim import _engine
from clustersim.analytical import SUMMARY_KEYS, AnalyticalResult
from clustersim.measure.replay.execute import Measured
from clustersim.measure.replay.plan import Plan
from clustersim.nccl_tests import busbw_factor
from clustersim.table import Table

# Layer columns in the simulator's order (`AnalyticalResult.layers`).
LAYER_COLUMNS = [
    "fwd compute", "wg compute", "ig compute",
    "fwd exposed comm", "wg exposed comm", "ig exposed comm",
    "fwd total comm", "fwd algbw", "fwd busbw",
    "wg total comm", "wg algbw", "wg busbw",
    "ig total comm", "ig algbw", "ig busbw",
]  # fmt: skip
PHASES = ("fwd", "wg", "ig")
# Exposed-comm summary key of each group, as the simulator classifies collectives.
GROUP_KEY = {"DP": "exposed_dp_us", "DP_EP": "exposed_dp_ep_us", "EP": "exposed_ep_us"}


def result(plan: Plan, m: Measured, *, run_name: str, seconds: float) -> AnalyticalResult:
    """The measured iteration as the simulator reports one."""
    rows = len(plan.row_names)
    comp = [dict.fromkeys(PHASES, 0.0) for _ in range(rows)]
    comm = [dict.fromkeys(PHASES, 0.0) for _ in range(rows)]
    moved = [dict.fromkeys(PHASES, 0) for _ in range(rows)]
    first: list[dict[str, tuple[str, str]]] = [{} for _ in range(rows)]
    summary = {key: 0.0 for key in SUMMARY_KEYS.values()}
    for s, t, size in zip(plan.steps, m.step_s, m.step_bytes, strict=True):
        us = t * 1e6
        if not s.collective:
            comp[s.row][s.phase] += us
            continue
        comm[s.row][s.phase] += us
        moved[s.row][s.phase] += size
        first[s.row].setdefault(s.phase, (s.collective, s.group))
        summary[GROUP_KEY.get(s.group, "exposed_tp_us")] += us
    columns: dict[str, list[Any]] = {"layer_name": list(plan.row_names)} | {c: [] for c in LAYER_COLUMNS}
    pre_bubble = 0.0
    for r in range(rows):
        for ph in PHASES:
            columns[f"{ph} compute"].append(comp[r][ph])
            columns[f"{ph} exposed comm"].append(comm[r][ph])
            columns[f"{ph} total comm"].append(comm[r][ph])
            alg = bus = math.nan
            if ph in first[r] and comm[r][ph] > 0:
                collective, group = first[r][ph]
                alg = moved[r][ph] / (comm[r][ph] * 1e3)  # bytes per ns = GB/s
                bus = alg * busbw_factor(collective, plan.group_size(group))
            columns[f"{ph} algbw"].append(alg)
            columns[f"{ph} busbw"].append(bus)
        if plan.row_names[r] != "embedding_layer":
            pre_bubble += sum(comp[r].values()) + comm[r]["fwd"] + comm[r]["ig"]
    h = plan.header
    summary["compute_us"] = sum(sum(c.values()) for c in comp)
    summary["exposed_comm_us"] = sum(sum(c.values()) for c in comm)
    summary["exposed_pp_us"] = sum(m.pp_s) * 1e6
    summary["bubble_us"] = pre_bubble * (h["pp"] - 1) / h["ga"]
    summary["total_us"] = sum(
        summary[k] for k in ("compute_us", "exposed_comm_us", "bubble_us", "exposed_pp_us")
    )
    layers = Table(columns)
    plan_doc = {"gpus": plan.ranks} | {k: h[k] for k in ("tp", "ep", "pp")}
    plan_doc |= {"dp": plan.group_size("DP"), "ga": h["ga"], "vpp": h["vpp"], "pp_comm": h["pp_comm"]}
    return AnalyticalResult(
        run_name=run_name,
        mode="replay",
        workload=plan.path,
        plan=plan_doc,
        summary=summary,
        layers=layers,
        csv=end_to_end_csv(run_name, summary, layers),
        warnings=list(plan.warnings),
        simulate_seconds=seconds,
        events=len(plan.steps) + len(m.pp_s),
    )


def end_to_end_csv(run_name: str, summary: dict[str, float], layers: Table) -> str:
    """SimAI's EndToEnd layout, written by the engine's own writer."""
    return _engine.end_to_end_csv(
        run_name,
        [summary[key] for key in SUMMARY_KEYS.values()],
        layers["layer_name"],
        [[row[c] for c in LAYER_COLUMNS] for row in layers.rows()],
    )


FORMAT = "clustersim-replay/1"


def document(plan: Plan, m: Measured, *, scale: float, compute: str, iterations: int, warmup: int) -> dict:
    """Every measured op, for calibration: each collective's group size, bytes (the workload's S,
    and S as moved after --scale) and time (s, the slowest rank's mean), then the PP transfers."""
    ops = []
    for k, (s, t, size) in enumerate(zip(plan.steps, m.step_s, m.step_bytes, strict=True)):
        op = {"op": k, "row": s.row + 1, "layer_name": plan.row_names[s.row], "phase": s.phase}
        if s.collective:
            op |= {"collective": s.collective, "group": s.group, "ranks": plan.group_size(s.group)}
            op |= {"workload_bytes": s.bytes, "bytes": size}
        else:
            op |= {"compute_ns": s.ns}
        ops.append(op | {"time_s": t})
    return {
        "format": FORMAT,
        "workload": plan.path,
        "ranks": plan.ranks,
        "scale": scale,
        "compute": compute,
        "iterations": iterations,
        "warmup": warmup,
        "hosts": m.hosts,
        "iteration_s": m.iteration_s,
        "ops": ops,
        "pp_transfers": [{"bytes": m.pp_bytes, "ranks": 2, "time_s": t} for t in m.pp_s],
    }


def trace(plan: Plan, m: Measured) -> str:
    """The measured iteration as a Chrome / Perfetto trace, as the simulator writes one: one
    process per rank, one thread per stream (compute, each group's communicator, the PP
    transfers), every op a complete event at its mean start and mean duration on that rank (µs)."""
    groups = sorted(plan.group_axes)
    threads = ["compute", *(f"{g} comm" for g in groups), "send/recv"]
    events: list[dict[str, Any]] = []
    for rank, (starts, durations) in enumerate(m.per_rank):
        events.append({"ph": "M", "name": "process_name", "pid": rank, "args": {"name": f"rank {rank}"}})
        events += [
            {"ph": "M", "name": "thread_name", "pid": rank, "tid": tid, "args": {"name": name}}
            for tid, name in enumerate(threads)
        ]
        for k, (t0, t) in enumerate(zip(starts, durations, strict=True)):
            if k < len(plan.steps):
                s = plan.steps[k]
                tid = 1 + groups.index(s.group) if s.collective else 0
                what = f"{s.collective} {s.bytes} B" if s.collective else "compute"
                name, cat = f"{plan.row_names[s.row]} {what}", s.phase
            else:
                tid, name, cat = len(threads) - 1, f"PP send/recv {m.pp_bytes} B", "pp"
            events.append(
                {"ph": "X", "pid": rank, "tid": tid, "ts": round(float(t0) * 1e6, 3)}
                | {"dur": round(float(t) * 1e6, 3), "name": name, "cat": cat, "args": {"op": k}}
            )
    return json.dumps({"displayTimeUnit": "ns", "traceEvents": events}) + "\n"
