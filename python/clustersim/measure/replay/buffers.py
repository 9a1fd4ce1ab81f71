"""Buffers of one collective on one rank, and the result it must hold (nccl-tests' `-c`).

Elements are float64 holding small whole numbers, so every sum is exact. Rank q of a group of n
contributes v(q, i) = q + 1 + (i mod 251) at element i; a reduction's element i is then
n(n+1)/2 + n·(i mod 251). All-to-all sends block p (to rank p) as q·n + p + n²·(j mod 251), so
rank p's block q must hold exactly that. Sizes follow nccl-tests: S bytes is the all-reduce,
broadcast and reduce buffer, the all-gather output, the reduce-scatter input, and the all-to-all
buffer (n blocks); at least one element per rank.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

ELEMENT = 8  # bytes of float64
PERIOD = 251
ROOT = 0


class Buffers(NamedTuple):
    send: np.ndarray
    recv: np.ndarray
    #: Bytes the collective moves, as nccl-tests counts S (after rounding to whole elements).
    size: int


def elements(collective: str, nbytes: float, n: int) -> tuple[int, int]:
    """(send, recv) element counts of a collective of `nbytes` (S) on n ranks."""
    if collective in ("allreduce", "broadcast", "reduce"):
        count = max(1, int(nbytes) // ELEMENT)
        return count, count
    chunk = max(1, int(nbytes) // ELEMENT // n)
    return {
        "allgather": (chunk, chunk * n),
        "reducescatter": (chunk * n, chunk),
        "alltoall": (chunk * n, chunk * n),
    }[collective]


def need_bytes(collective: str, nbytes: float, n: int) -> int:
    """Bytes of the send and receive buffers, and of the expected result."""
    s, r = elements(collective, nbytes, n)
    return (s + 2 * r) * ELEMENT


def _v(q: int, i: np.ndarray) -> np.ndarray:
    return q + 1.0 + (i % PERIOD)


def make(collective: str, nbytes: float, n: int, q: int) -> Buffers:
    """Rank q's buffers, filled, for a collective of `nbytes` on n ranks."""
    s, r = elements(collective, nbytes, n)
    if collective == "alltoall":
        chunk = s // n
        j = np.arange(chunk) % PERIOD
        send = np.concatenate([q * n + p + n * n * j for p in range(n)]).astype(np.float64)
    elif collective == "broadcast":
        send = _v(ROOT, np.arange(s)) if q == ROOT else np.full(s, -1.0)
    else:
        send = _v(q, np.arange(s))
    recv = send if collective == "broadcast" else np.full(r, -1.0)
    size = {"allgather": r, "reducescatter": s, "alltoall": s}.get(collective, s) * ELEMENT
    return Buffers(send, recv, size)


def expected(collective: str, nbytes: float, n: int, q: int) -> np.ndarray | None:
    """What rank q's receive buffer must hold afterwards (None: nothing, the reduce's non-roots)."""
    s, r = elements(collective, nbytes, n)
    total = n * (n + 1) / 2
    if collective in ("allreduce", "reduce"):
        if collective == "reduce" and q != ROOT:
            return None
        return total + n * (np.arange(r) % PERIOD)
    if collective == "broadcast":
        return _v(ROOT, np.arange(r))
    if collective == "allgather":
        return np.concatenate([_v(p, np.arange(r // n)) for p in range(n)])
    if collective == "reducescatter":
        return total + n * ((q * r + np.arange(r)) % PERIOD)
    chunk = r // n  # alltoall: block p came from rank p
    j = np.arange(chunk) % PERIOD
    return np.concatenate([p * n + q + n * n * j for p in range(n)]).astype(np.float64)
