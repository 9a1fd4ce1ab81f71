"""The replay's plan: the workload file as IR, checked against the MPI world and the memory of
the node, and its ops as steps in the order SimAI runs them."""

from __future__ import annotations

import os
from typing import Any, NamedTuple

from clustersim import _engine
from clustersim.errors import InputError
from clustersim.files import read_text
from clustersim.measure.replay.buffers import ELEMENT, need_bytes
from clustersim.workload import Workload


class Step(NamedTuple):
    """One op of the iteration: a compute of `ns`, or a collective of `bytes` (S) on `group`."""

    row: int  # index into row_names (messages count rows from 1, as the file lists them)
    phase: str  # fwd, ig, wg
    ns: float
    collective: str  # "" for a compute
    group: str
    bytes: int


class Plan(NamedTuple):
    path: str
    header: dict[str, Any]
    row_names: list[str]
    #: (axis, size) fastest first, and each group's axes (the IR's layout groups).
    layout: list[tuple[str, int]]
    group_axes: dict[str, list[str]]
    steps: list[Step]
    warnings: list[str]

    @property
    def ranks(self) -> int:
        n = 1
        for _, size in self.layout:
            n *= size
        return n

    def group_size(self, group: str) -> int:
        sizes = dict(self.layout)
        n = 1
        for axis in self.group_axes[group]:
            n *= sizes[axis]
        return n

    def colour(self, group: str, rank: int) -> int:
        """The rank's coordinates on the axes `group` does not span, as one number: ranks of one
        instance of the group share it (MPI_Comm_split's colour)."""
        colour, stride = 0, 1
        for axis, size in self.layout:
            coord, rank = rank % size, rank // size
            if axis not in self.group_axes[group]:
                colour += coord * stride
                stride *= size
        return colour

    def stage(self, rank: int) -> int:
        """The rank's pipeline stage: its PP coordinate."""
        for axis, size in self.layout:
            if axis == "PP":
                return rank % size
            rank //= size
        return 0

    def per_rank_bytes(self, scale: float) -> tuple[int, Step | None]:
        """The most buffer bytes one rank holds at once after `scale`, and the step that needs them."""
        most, where = 3 * max(1, int(self.header["pp_comm"] * scale) // ELEMENT) * ELEMENT, None
        for s in self.steps:
            if s.collective:
                need = need_bytes(s.collective, s.bytes * scale, self.group_size(s.group))
                if need > most:
                    most, where = need, s
        return most, where


def load(path: str | os.PathLike[str]) -> Plan:
    """The plan of a SimAI workload file (InputError with file, line and field on bad input)."""
    text = read_text(path, "workload")
    header = _engine.inspect_workload(str(path), text)
    # One GPU per server: every world the plan fills is a valid shape (the server size only
    # prices links, and replay measures them).
    w = Workload.from_simai(path, gpus_per_server=1)
    if w.num_programs != 1:
        raise InputError(f"{path}: expected one program for every rank, got {w.num_programs}")
    rows = header["row_names"]
    n = len(rows)
    steps: list[Step] = []
    computes = 0
    row = 0
    for op in w.ops(0).rows():
        if op["kind"] == "COMP":
            # Compute k: forward row k for k < N, then backward ig and wg of rows N−1 … 0.
            k = computes
            row = k if k < n else n - 1 - (k - n) // 2
            computes += 1
        elif op["kind"] != "COMM_COLL":
            raise InputError(f"{path}: replay runs collectives and compute, not {op['kind']} ops")
        steps.append(Step(row, op["phase"], op["ns"], op["collective"], op["group"], op["bytes"]))
    groups = {g["name"]: g.get("axes") for g in w.groups}
    if any(axes is None for axes in groups.values()):
        raise InputError(
            f"{path}: gpus: the world does not divide into the plan's groups;"
            " replay needs all_gpus = TP·PP·DP"
        )
    return Plan(
        path=str(path),
        header=header,
        row_names=rows,
        layout=[(a, int(s)) for a, s in w.layout],
        group_axes=groups,  # type: ignore[arg-type]
        steps=steps,
        warnings=list(header["warnings"]),
    )


def check_world(plan: Plan, world: int) -> None:
    """The MPI world must be the workload's GPUs: one rank per GPU."""
    if world != plan.ranks:
        raise InputError(
            f"{plan.path}: all_gpus: the workload has {plan.ranks} GPUs, the MPI world {world} ranks"
            f" (run under mpirun -np {plan.ranks})"
        )


def available_bytes() -> int | None:
    """MemAvailable of this node (Linux), or None where it is unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def check_memory(plan: Plan, scale: float, local_ranks: int, available: int | None) -> None:
    """Refuse, before allocating, a workload whose largest op does not fit in this node's memory
    shared by its `local_ranks` ranks."""
    need, step = plan.per_rank_bytes(scale)
    if available is None or need * local_ranks <= available:
        return
    what = (
        "the PP transfers"
        if step is None
        else (
            f"row {step.row + 1} ({plan.row_names[step.row]}) {step.phase} {step.collective}"
            f" of {step.bytes} B"
        )
    )
    raise InputError(
        f"{plan.path}: --scale {scale:g}: {what} needs {need / 1e9:.3g} GB per rank,"
        f" {need * local_ranks / 1e9:.3g} GB for this node's {local_ranks} ranks,"
        f" more than its {available / 1e9:.3g} GB available (give a smaller --scale)"
    )
