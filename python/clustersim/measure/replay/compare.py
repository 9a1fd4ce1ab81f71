"""`--compare-topology`: the same workload — its sizes times `--scale`, as replayed — simulated on
a described fabric with the flow model (`clustersim.run`), beside the measured times per row and
phase (total comm, µs) and for the iteration's summary. With `--calibration`, the fabric's link
classes are rescaled and each row's phase of one collective gets that collective's own fit
(`clustersim.calibration`); the summary is the rescaled fabric's."""

from __future__ import annotations

import os
import tempfile
from typing import TYPE_CHECKING, Any

from clustersim import _engine
from clustersim.analytical import AnalyticalResult
from clustersim.api import run
from clustersim.calibration import calibrated, collective_time
from clustersim.fabric import load_topology
from clustersim.files import read_text
from clustersim.measure.replay.plan import Plan
from clustersim.table import Table

if TYPE_CHECKING:
    from clustersim.calibration import CalibrationFile

# Byte fields of a row in the engine's normalised text (name, reserved, then per phase
# compute, type, bytes), and the header's pp_comm.
ROW_BYTES = (4, 7, 10)
PHASES = ("fwd", "wg", "ig")


def scaled_text(plan: Plan, scale: float) -> str:
    """The workload file with every size times `scale` (rounded down, as the replay's buffers)."""
    text, _ = _engine.rewrite_workload(plan.path, read_text(plan.path, "workload"))
    header, count, *rows = text.splitlines()
    words = header.split(" ")
    if "pp_comm" in words:
        k = words.index("pp_comm") + 1
        words[k] = str(int(int(words[k]) * scale))
    out = [" ".join(words), count]
    for row in rows:
        fields = row.split("\t")
        for k in ROW_BYTES:
            fields[k] = str(int(int(fields[k]) * scale))
        out.append("\t".join(fields))
    return "\n".join(out) + "\n"


def simulate(
    plan: Plan, scale: float, topology: str, cal: CalibrationFile | None = None, **flow: Any
) -> AnalyticalResult:
    """The flow model's iteration of the scaled workload on `topology`, one rank per GPU."""
    platform = load_topology(topology) if cal is None else calibrated(topology, cal)
    fd, path = tempfile.mkstemp(suffix=".txt", prefix="replay-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(scaled_text(plan, scale))
        got = run(path, platform, gpus=plan.ranks, gpus_per_server=platform.gpus_per_server, **flow)
    finally:
        os.unlink(path)
    got = got._replace(workload=plan.path)
    return got if cal is None else per_collective(plan, got, cal)


def per_collective(plan: Plan, got: AnalyticalResult, cal: CalibrationFile) -> AnalyticalResult:
    """Each row's phase of exactly one collective with that collective's fit applied."""
    ops: dict[tuple[int, str], list[str]] = {}
    for s in plan.steps:
        if s.collective:
            ops.setdefault((s.row, s.phase), []).append(s.collective)
    columns = {c: list(got.layers[c]) for c in got.layers.columns}
    for (row, phase), names in ops.items():
        if len(names) == 1:
            key = f"{phase} total comm"
            columns[key][row] = collective_time(cal, names[0], columns[key][row] * 1e-6) * 1e6
    return got._replace(layers=Table(columns))


def rows(measured: AnalyticalResult, simulated: AnalyticalResult) -> list[list[object]]:
    """Per workload row, then the summary: measured and simulated µs side by side, header first."""
    head: list[object] = ["layer_name"]
    for ph in PHASES:
        head += [f"{ph} comm measured (us)", f"{ph} comm simulated (us)"]
    out = [head]
    for m, s in zip(measured.layers.rows(), simulated.layers.rows(), strict=True):
        line: list[object] = [m["layer_name"]]
        for ph in PHASES:
            line += [f"{m[f'{ph} total comm']:.3f}", f"{s[f'{ph} total comm']:.3f}"]
        out.append(line)
    out.append(["summary", "measured (us)", "simulated (us)"])
    for key, value in measured.summary.items():
        out.append([key, f"{value:.3f}", f"{simulated.summary[key]:.3f}"])
    return out
