"""The tester over MPI (mpi4py): each rank's buffers, one warm-up, then timed iterations.

Iteration i: a barrier, then every rank posts an Irecv and an Isend to each counterpart and
waits for all of them; its time t_r,i runs from the barrier's exit to its last completion. The
iteration's time is max_r t_r,i (the bulk-synchronous step), a group's time max over its ranks
(reduced on the group's communicator from MPI_Comm_split). Reported times are means over the
iterations, as the tester averages over its N.

Buffers: `host` NumPy arrays (CPU MPI); `device` CuPy arrays handed to a GPU-aware MPI;
`staged` CuPy arrays copied to host and back around each exchange (timed with it). The warm-up
checks that every counterpart's words arrived.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from clustersim.errors import InputError
from clustersim.measure.bwtest.pattern import WORD_BYTES, Pattern

BUFFERS = ("host", "device", "staged")


class Measured(NamedTuple):
    #: Mean iteration time (s) of each group, then of the whole step.
    group_s: list[float]
    iteration_s: float
    #: Fastest iteration (s) of the whole step.
    min_iteration_s: float
    hosts: list[str]


def mpi() -> Any:
    """The mpi4py MPI module (imported here only: other commands never load it)."""
    try:
        from mpi4py import MPI
    except ImportError as e:
        raise InputError(
            f"clustersim bwtest needs mpi4py and an MPI library (pip install 'clustersim[mpi]'): {e}"
        ) from None
    return MPI


def array_module(buffers: str) -> Any:
    if buffers == "host":
        import numpy

        return numpy
    try:
        import cupy

        cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # ImportError, or CUDA's own error when no GPU is present
        raise InputError(f"--buffers {buffers}: needs CuPy and a GPU ({type(e).__name__}: {e})") from None
    return cupy


def measure(pattern: Pattern, iters: int, buffers: str, comm: Any) -> Measured | None:
    """Run the pattern on `comm` (its size is pattern.ranks); rank 0 gets the result, others None."""
    MPI = mpi()
    import numpy as np

    xp = array_module(buffers)
    rank = comm.Get_rank()
    partners = pattern.partners(rank)
    doubles = pattern.count * WORD_BYTES // 8
    if buffers != "host":
        # One GPU per rank, shared round-robin among the ranks of a node.
        node = comm.Split_type(MPI.COMM_TYPE_SHARED)
        xp.cuda.Device(node.Get_rank() % xp.cuda.runtime.getDeviceCount()).use()
    send = xp.full((len(partners), doubles), float(rank))
    recv = xp.zeros((len(partners), doubles))
    staged = (np.empty_like(send.get()), np.empty_like(recv.get())) if buffers == "staged" else None

    def exchange() -> None:
        if buffers == "device":
            xp.cuda.get_current_stream().synchronize()
        out, into = (send, recv) if staged is None else staged
        if staged is not None:
            out[...] = send.get()
        reqs = [comm.Irecv(into[j], source=q, tag=7) for j, q in enumerate(partners)]
        reqs += [comm.Isend(out[j], dest=q, tag=7) for j, q in enumerate(partners)]
        MPI.Request.Waitall(reqs)
        if staged is not None:
            recv.set(into)

    exchange()  # warm-up
    got = recv.get() if buffers != "host" else recv
    wrong = [q for j, q in enumerate(partners) if not np.all(got[j] == q)]
    bad = comm.allreduce(len(wrong), op=MPI.SUM)
    if bad:
        mine = f"; rank {rank} from ranks {wrong}" if wrong else ""
        raise InputError(f"bwtest: the warm-up delivered wrong words on {bad} connection(s){mine}")
    times = np.empty(iters)
    for i in range(iters):
        comm.Barrier()
        t0 = MPI.Wtime()
        exchange()
        times[i] = MPI.Wtime() - t0
    group = comm.Split(color=pattern.group_of(rank), key=rank)
    group_max = np.empty(iters)
    group.Allreduce(times, group_max, op=MPI.MAX)
    step = np.empty(iters)
    comm.Allreduce(times, step, op=MPI.MAX)
    group_means = comm.gather(float(group_max.mean()) if group.Get_rank() == 0 else None, root=0)
    hosts = comm.gather(MPI.Get_processor_name(), root=0)
    group.Free()
    if rank != 0:
        return None
    return Measured(
        group_s=[t for t in group_means if t is not None],
        iteration_s=float(step.mean()),
        min_iteration_s=float(step.min()),
        hosts=hosts,
    )
