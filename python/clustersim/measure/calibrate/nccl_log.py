"""nccl-tests logs (all_reduce_perf, all_gather_perf, reduce_scatter_perf, alltoall_perf,
broadcast_perf, reduce_perf) in their standard text format.

A log holds `#  Rank  r [Group g] Pid p on HOST device d [...] NAME` lines, then a column header
`#  size  count  type  redop  [root]  time  algbw  busbw  #wrong|error  time  algbw  busbw  #wrong|error`
(out-of-place, then in-place; older versions have no root column and name the check `error`),
then one row per size. Lines that are neither (NCCL INFO, launcher noise, Open MPI's
`[1,0]<stdout>:` tags) are skipped. The collective comes from a `# Collective test starting:
X_perf` line, else from the file name (all_reduce…, allgather…). A file may hold several runs,
each under its own column header. Rows of 0 bytes carry no time and are skipped.
"""

from __future__ import annotations

import os
import re
from typing import NamedTuple, NoReturn

from clustersim.errors import InputError
from clustersim.files import read_text

# nccl-tests binary stems → the collective; longest first, so reduce_scatter is not read as reduce.
OPS = {
    "all_reduce": "allreduce",
    "all_gather": "allgather",
    "reduce_scatter": "reducescatter",
    "alltoall": "alltoall",
    "broadcast": "broadcast",
    "reduce": "reduce",
}
TAG = re.compile(r"^\[\d+,\d+\]<std(?:out|err)>:")
DIGITS = re.compile(r"[0-9]+")
# Sizes and ranks above 2^62 are no measurement (and would overflow floats downstream).
MAX_WHOLE = 2**62


class NcclRun(NamedTuple):
    path: str
    line: int
    op: str
    hosts: list[str]
    #: (size bytes, time s) per row and placement (out-of-place, then in-place where given).
    points: list[tuple[int, float]]

    @property
    def ranks(self) -> int:
        return len(self.hosts)


def op_of(name: str) -> str | None:
    squashed = name.lower().replace("-", "_")
    for stem, op in OPS.items():
        if stem in squashed or stem.replace("_", "") in squashed.replace("_", ""):
            return op
    return None


def read_nccl_log(path: str | os.PathLike[str]) -> list[NcclRun]:
    """Every run of the log; bad input raises InputError naming file, line and field."""
    return parse_nccl_log(read_text(path, "nccl-tests log"), os.fspath(path))


def parse_nccl_log(text: str, path: str) -> list[NcclRun]:
    runs: list[NcclRun] = []
    marker: str | None = None
    hosts: dict[int, str] = {}
    header: list[str] | None = None
    times: list[int] = []
    lines = text.splitlines()
    for n, raw in enumerate(lines, 1):
        line = TAG.sub("", raw).strip()
        if line.startswith("#"):
            words = line[1:].split()
            if line.startswith("# Collective test starting:") and len(words) > 3:
                marker = op_of(words[3]) or _fail(
                    path, n, "collective", f"unsupported test '{_cut(words[3])}'"
                )
            elif words[:1] == ["Rank"]:
                _rank_line(path, n, words, hosts)
            elif words[:2] == ["size", "count"]:
                header, times = _header(path, n, words, hosts, marker, runs)
            continue
        words = line.split()
        if header is None or not words or not DIGITS.fullmatch(words[0]):
            continue
        run = runs[-1]
        if len(words) != len(header):
            _fail(path, n, "row", f"expected {len(header)} fields ({' '.join(header)}), got {len(words)}")
        size = _whole(path, n, "size", words[0])
        for k, i in enumerate(times):
            where = ("out-of-place", "in-place")[k]
            check = header[i + 3] if i + 3 < len(header) else ""
            if check == "#wrong" and words[i + 3] not in ("0", "N/A"):
                wrong = words[i + 3]
                _fail(path, n, f"{where} #wrong", f"{_cut(wrong)} wrong elements: the run failed validation")
            if size == 0:
                continue
            try:
                us = float(words[i])
            except ValueError:
                us = float("nan")
            if not (us > 0 and us < float("inf")):
                _fail(path, n, f"{where} time", f"expected a positive number of µs, got '{_cut(words[i])}'")
            run.points.append((size, us * 1e-6))
    if not runs:
        _fail(path, len(lines), "header", "not an nccl-tests log: no column header ('#  size  count …')")
    for run in runs:
        if not run.points:
            _fail(path, run.line, "rows", "no measurements under this column header")
    return runs


def _rank_line(path: str, n: int, words: list[str], hosts: dict[int, str]) -> None:
    """`Rank r [Group g] Pid p on HOST device d …`: the rank's host."""
    rank = _whole(path, n, "Rank", words[1] if len(words) > 1 else "")
    if "on" not in words or words.index("on") + 1 >= len(words):
        _fail(path, n, "Rank", "expected '… on HOST device …'")
    if rank in hosts:
        _fail(path, n, "Rank", f"rank {rank} is listed twice (nccl-tests built without MPI=1?)")
    hosts[rank] = words[words.index("on") + 1]


def _header(
    path: str, n: int, words: list[str], hosts: dict[int, str], marker: str | None, runs: list[NcclRun]
) -> tuple[list[str], list[int]]:
    times = [i for i, w in enumerate(words) if w == "time"]
    if not 1 <= len(times) <= 2 or any(words[i + 1 : i + 3] != ["algbw", "busbw"] for i in times):
        _fail(path, n, "header", "expected 'time algbw busbw' for out-of-place (and in-place)")
    if not hosts:
        _fail(path, n, "ranks", "no '#  Rank r … on HOST device …' lines before the table: ranks unknown")
    if sorted(hosts) != list(range(len(hosts))):
        _fail(path, n, "ranks", f"ranks {sorted(hosts)} are not 0 … {len(hosts) - 1}")
    op = marker or op_of(os.path.basename(path))
    if op is None:
        _fail(path, n, "collective", "unknown: no '# Collective test starting:' line, none in the file name")
    runs.append(NcclRun(path, n, op, [hosts[r] for r in sorted(hosts)], []))
    hosts.clear()
    return words, times


def _whole(path: str, n: int, field: str, text: str) -> int:
    if not DIGITS.fullmatch(text) or len(text) > 19 or int(text) > MAX_WHOLE:
        _fail(path, n, field, f"expected a whole number up to 2^62, got '{_cut(text)}'")
    return int(text)


def _cut(text: str) -> str:
    return text if len(text) <= 40 else text[:37] + "..."


def _fail(path: str, n: int, field: str, message: str) -> NoReturn:
    raise InputError(f"{path}:{n}: {field}: {message}")
