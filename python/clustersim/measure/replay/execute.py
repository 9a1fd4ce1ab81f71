"""The replay over MPI: communicators from MPI_Comm_split, every step run blocking on NumPy
buffers, every result checked, every op timed.

A barrier starts each row's forward block and each row's backward block (ig and wg); an op's
time on a rank runs from just before its call to its return (MPI.Wtime), and the op's time is
the slowest rank's, averaged over the timed iterations after `warmup` untimed ones. A wrong
result on any rank stops every rank with the same one-line error (the ranks agree on it through
an all-gather after each op, outside the timed region).
"""

from __future__ import annotations

import os
import time
from typing import Any, NamedTuple

import numpy as np

from clustersim.errors import InputError
from clustersim.measure.replay import buffers
from clustersim.measure.replay.plan import Plan, Step

# Test hook: the world rank named here adds 1 to the first element of every buffer it sends,
# so the checks must catch it.
FAULT_ENV = "CLUSTERSIM_REPLAY_FAULT"
COMPUTE = ("sleep", "skip")


class Measured(NamedTuple):
    #: Per step of the plan, then per PP transfer: the slowest rank's time (s), mean over iterations.
    step_s: list[float]
    pp_s: list[float]
    #: Bytes each collective step moved (S after --scale, in whole elements); 0 for computes.
    step_bytes: list[int]
    pp_bytes: int
    #: Mean iteration time (s): the slowest rank's, barriers included.
    iteration_s: float
    hosts: list[str]
    #: Per rank, per op (steps then PP transfers): mean start since the iteration's first
    #: barrier and mean duration on that rank (s), shape (ranks, 2, ops).
    per_rank: np.ndarray


def mpi() -> Any:
    """The mpi4py MPI module (imported here only: other commands never load it)."""
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise InputError(
            f"clustersim replay needs mpi4py and an MPI library (pip install 'clustersim[mpi]'): {e}"
        ) from None
    return MPI


def fault_rank() -> int | None:
    text = os.environ.get(FAULT_ENV, "")
    return int(text) if text.strip().isdigit() else None


def communicators(plan: Plan, comm: Any) -> dict[str, Any]:
    """One communicator per group of the plan (every rank splits in the same order)."""
    rank = comm.Get_rank()
    return {g: comm.Split(color=plan.colour(g, rank), key=rank) for g in sorted(plan.group_axes)}


def _call(MPI: Any, sub: Any, collective: str, b: buffers.Buffers) -> None:
    if collective == "allreduce":
        sub.Allreduce(b.send, b.recv, op=MPI.SUM)
    elif collective == "allgather":
        sub.Allgather(b.send, b.recv)
    elif collective == "reducescatter":
        sub.Reduce_scatter_block(b.send, b.recv, op=MPI.SUM)
    elif collective == "alltoall":
        sub.Alltoall(b.send, b.recv)
    elif collective == "broadcast":
        sub.Bcast(b.send, root=buffers.ROOT)
    elif collective == "reduce":
        sub.Reduce(b.send, b.recv, op=MPI.SUM, root=buffers.ROOT)
    else:  # the IR knows no other collective
        raise InputError(f"replay: collective {collective!r} cannot be replayed")


def _agree(comm: Any, wrong: bool, what: str) -> None:
    """Every rank raises the same error if the result was wrong on any."""
    bad = [r for r, w in enumerate(comm.allgather(wrong)) if w]
    if bad:
        raise InputError(f"replay: {what}: wrong result on rank(s) {', '.join(map(str, bad))}")


def _describe(plan: Plan, s: Step, scale: float) -> str:
    return (
        f"{plan.path}: row {s.row + 1} ({plan.row_names[s.row]}) {s.phase} {s.collective} on {s.group}"
        f" of {s.bytes} B (--scale {scale:g})"
    )


def _collective(
    MPI: Any, plan: Plan, s: Step, sub: Any, scale: float, fault: bool
) -> tuple[float, float, int, bool]:
    """(start, duration, bytes moved, wrong) of one collective on this rank."""
    n, q = sub.Get_size(), sub.Get_rank()
    b = buffers.make(s.collective, s.bytes * scale, n, q)
    if fault:
        b.send[0] += 1.0
    # The group starts together: a rank still filling its buffers must not count in another's time.
    sub.Barrier()
    t0 = MPI.Wtime()
    _call(MPI, sub, s.collective, b)
    t = MPI.Wtime() - t0
    want = buffers.expected(s.collective, s.bytes * scale, n, q)
    wrong = want is not None and not np.array_equal(b.recv, want)
    return t0, t, b.size, wrong


def _pp_transfers(
    MPI: Any, plan: Plan, pp: Any, scale: float, fault: bool
) -> tuple[list[float], list[float], int, bool]:
    """The pipeline's 2·ga transfers of pp_comm bytes: forward to the next stage, backward to the
    previous one, each checked (the received words are the sender's stage's values)."""
    count = max(1, int(plan.header["pp_comm"] * scale) // buffers.ELEMENT)
    p, s = pp.Get_size(), pp.Get_rank()
    i = np.arange(count)
    send = s + 1.0 + (i % buffers.PERIOD)
    if fault:
        send[0] += 1.0
    recv = np.empty(count)
    starts, times, wrong = [], [], False
    for _ in range(plan.header["ga"]):
        for to, frm in ((s + 1, s - 1), (s - 1, s + 1)):
            dest = to if 0 <= to < p else MPI.PROC_NULL
            source = frm if 0 <= frm < p else MPI.PROC_NULL
            recv.fill(-1.0)
            t0 = MPI.Wtime()
            starts.append(t0)
            pp.Sendrecv(send, dest=dest, sendtag=11, recvbuf=recv, source=source, recvtag=11)
            times.append(MPI.Wtime() - t0)
            if source != MPI.PROC_NULL:
                wrong |= not np.array_equal(recv, frm + 1.0 + (i % buffers.PERIOD))
    return starts, times, count * buffers.ELEMENT, wrong


def replay(
    plan: Plan, comm: Any, *, scale: float, compute: str, iterations: int, warmup: int
) -> Measured | None:
    """Run the plan on `comm` (its size is plan.ranks); rank 0 gets the result, others None."""
    MPI = mpi()
    rank = comm.Get_rank()
    fault = fault_rank() == rank
    subs = communicators(plan, comm)
    pipelined = plan.header["pp"] > 1 and plan.header["pp_comm"] > 0
    n_pp = 2 * plan.header["ga"] if pipelined else 0
    times = np.zeros((iterations, len(plan.steps) + n_pp))
    starts = np.zeros_like(times)
    iteration = np.zeros(iterations)
    sizes = [0] * len(plan.steps)
    pp_bytes = 0
    for it in range(warmup + iterations):
        block = None
        comm.Barrier()
        start = MPI.Wtime()
        for k, s in enumerate(plan.steps):
            here = (s.row, s.phase == "fwd")
            if here != block:
                comm.Barrier()
                block = here
            if not s.collective:
                t0 = MPI.Wtime()
                if compute == "sleep" and s.ns > 0:
                    time.sleep(s.ns * 1e-9)
                t = MPI.Wtime() - t0
            else:
                t0, t, sizes[k], wrong = _collective(MPI, plan, s, subs[s.group], scale, fault)
                _agree(comm, wrong, _describe(plan, s, scale))
            if it >= warmup:
                times[it - warmup, k] = t
                starts[it - warmup, k] = t0 - start
        if pipelined:
            comm.Barrier()
            pp_t0, pp_t, pp_bytes, wrong = _pp_transfers(MPI, plan, subs["PP"], scale, fault)
            _agree(comm, wrong, f"{plan.path}: PP transfer of {plan.header['pp_comm']} B (--scale {scale:g})")
            if it >= warmup:
                times[it - warmup, len(plan.steps) :] = pp_t
                starts[it - warmup, len(plan.steps) :] = np.array(pp_t0) - start
        if it >= warmup:
            iteration[it - warmup] = MPI.Wtime() - start
    slowest = np.empty_like(times)
    comm.Reduce(times, slowest, op=MPI.MAX, root=0)
    step_max = np.empty_like(iteration)
    comm.Reduce(iteration, step_max, op=MPI.MAX, root=0)
    hosts = comm.gather(MPI.Get_processor_name(), root=0)
    mine = np.stack([starts.mean(axis=0), times.mean(axis=0)])
    per_rank = np.empty((comm.Get_size(), *mine.shape)) if rank == 0 else None
    comm.Gather(mine, per_rank, root=0)
    for sub in subs.values():
        sub.Free()
    if rank != 0:
        return None
    mean = slowest.mean(axis=0)
    return Measured(
        step_s=[float(x) for x in mean[: len(plan.steps)]],
        pp_s=[float(x) for x in mean[len(plan.steps) :]],
        step_bytes=sizes,
        pp_bytes=pp_bytes,
        iteration_s=float(step_max.mean()),
        hosts=hosts,
        per_rank=per_rank,
    )
