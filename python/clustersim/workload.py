"""The workload IR from Python: ranks, communicator groups, programs of ops and dependencies.

A `Workload` is built in bulk (ops are columns, never one Python object per op), inspected,
saved and loaded as the versioned JSON of docs/workload-ir.md, obtained from the existing front
ends (a SimAI workload file, a Megatron plan as `clustersim train` generates it), and run
through the engine's executor. Ranks that run the same ops share a *program*; a *rank class*
is the set of ranks running one program in lock step.

    w = Workload(ranks=4)
    tp = w.group("TP", [[0, 1], [2, 3]])
    p = w.program()
    w.assign(p, range(4))
    a = w.comp(p, ns=100.0)
    w.coll(p, "allreduce", tp, 1 << 20, deps=[a])
    w.save("w.json")
"""

from __future__ import annotations

import operator
import os
from collections.abc import Iterable, Sequence
from itertools import accumulate
from pathlib import Path
from typing import Any

import numpy as np

from clustersim import _engine
from clustersim.errors import InputError
from clustersim.files import atomic_outputs, read_text, write_text
from clustersim.table import Table
from clustersim.training import engine_input

KINDS: tuple[str, ...] = tuple(_engine.OP_KINDS)
COLLECTIVES: tuple[str, ...] = tuple(_engine.COLLECTIVES)
PHASES: tuple[str, ...] = tuple(_engine.PHASES)
DTYPES: tuple[str, ...] = tuple(_engine.DTYPES)
# The JSON Schema of the IR's JSON form.
SCHEMA = Path(__file__).parent / "schema" / "workload-ir.schema.json"
# Per-op columns of a program besides the dependencies. A COMP op's work: its FLOPs, its memory
# traffic (`mem_bytes`) and `dtype`, 1 + an index of DTYPES (0: the op states no work).
OP_COLUMNS = (
    "kind",
    "ns",
    "flops",
    "mem_bytes",
    "dtype",
    "collective",
    "group",
    "offset",
    "bytes",
    "copy",
    "row",
    "phase",
)
# Most groups a workload may have (the IR numbers them in 16 bits).
MAX_GROUPS = 1 << 16
# Most ranks a workload may have: past the largest clusters built, and a list of it still fits
# in memory (a typo of 4e9 ranks would otherwise allocate 32 GB before any check).
MAX_RANKS = 1 << 24


def _code(names: tuple[str, ...], value: str | int, what: str) -> int:
    if isinstance(value, int) and 0 <= value < len(names):
        return value
    if isinstance(value, str) and value in names:
        return names.index(value)
    raise InputError(f"workload: {what}: unknown {what} {value!r} (valid: {', '.join(names)})")


def _whole(values: Iterable[Any], lo: int, hi: int, what: str) -> list[int]:
    """`values` as whole numbers (ints, NumPy's too) from `lo` to `hi`, or an error naming `what`."""
    out = list(values)
    if not all(type(v) is int for v in out):
        out = [_index(v, what) for v in out]
    if out and not lo <= min(out) <= max(out) <= hi:
        bad = min(out) if min(out) < lo else max(out)
        raise InputError(f"workload: {what}: must be whole numbers from {lo} to {hi}, got {bad}")
    return out


def _index(v: Any, what: str) -> int:
    try:
        if not isinstance(v, bool):
            return operator.index(v)
    except TypeError:
        pass
    raise InputError(f"workload: {what}: must be whole numbers, got {v!r}")


def _floats(values: Iterable[Any], what: str) -> list[float]:
    try:
        return [float(v) for v in values]
    except (TypeError, ValueError):
        raise InputError(f"workload: {what}: must be numbers, got {list(values)!r}") from None


def _flags(values: Sequence[bool], what: str) -> list[bool]:
    if not all(isinstance(v, bool) for v in values):
        raise InputError(f"workload: {what}: must be true or false, got {list(values)!r}")
    return list(values)


# The engine's element type of each bulk column (workload::columns).
DTYPE_OF = {
    "rank_class": np.uint32,
    "class_program": np.uint32,
    "program_start": np.uint32,
    "kind": np.uint8,
    "ns": np.float64,
    "flops": np.float64,
    "mem_bytes": np.float64,
    "dtype": np.uint8,
    "collective": np.uint8,
    "group": np.uint16,
    "offset": np.int32,
    "bytes": np.uint64,
    "copy": np.bool_,
    "row": np.uint32,
    "phase": np.uint8,
    "dep_start": np.uint32,
    "deps": np.uint32,
}


def _column(values: Any, name: str) -> np.ndarray:
    """A bulk column as a NumPy array of the engine's element type (DTYPE_OF), refusing what that
    type cannot hold exactly: a fraction in a whole-number column, a value out of its range, a
    non-number."""
    dtype = np.dtype(DTYPE_OF[name])
    a = np.asarray(values)
    if a.dtype == dtype:
        return a
    if a.size == 0:
        return a.astype(dtype)
    if a.dtype == object and not all(isinstance(v, (int, float)) for v in a.flat):
        # Python ints past 64 bits are kept as objects; anything else is not a number.
        raise InputError(f"workload: columns: {name}: must hold numbers only")
    bad = None
    if dtype.kind == "b":
        bad = None if a.dtype.kind == "b" else "must be true or false"
    elif dtype.kind == "f":
        bad = None if a.dtype.kind in "iuf" or a.dtype == object else "must hold numbers"
    elif a.dtype.kind not in "iuO" or (a.dtype == object and any(isinstance(v, float) for v in a.flat)):
        bad = f"must be whole numbers ({dtype.name})"
    else:
        info = np.iinfo(dtype)
        lo, hi = int(min(a.flat)), int(max(a.flat))
        if lo < info.min or hi > info.max:
            bad = f"must be whole numbers from {info.min} to {info.max}, got {lo if lo < info.min else hi}"
    if bad is not None:
        raise InputError(f"workload: columns: {name}: {bad}")
    return a.astype(dtype)


def _plain(column: Any) -> list[Any]:
    """A column as a list of Python numbers."""
    return column.tolist() if isinstance(column, np.ndarray) else list(column)


class _Program:
    """One program's ops as columns; op i's dependencies are deps[dep_start[i]:dep_start[i+1]].
    Columns read from the engine are NumPy arrays; the first op added turns them into lists."""

    def __init__(self) -> None:
        self.cols: dict[str, Any] = {name: [] for name in OP_COLUMNS}
        self.dep_start: Any = [0]
        self.deps: Any = []

    def __len__(self) -> int:
        return len(self.cols["kind"])

    def extendable(self) -> None:
        if not isinstance(self.deps, list):
            self.cols = {k: v.tolist() for k, v in self.cols.items()}
            self.dep_start = self.dep_start.tolist()
            self.deps = self.deps.tolist()


class Workload:
    """A workload of `ranks` ranks. Ops are checked when the workload is saved, converted or run
    (`InputError` naming the op's path, e.g. `programs[0].ops[7].deps[1]`)."""

    def __init__(self, ranks: int) -> None:
        if not isinstance(ranks, int) or isinstance(ranks, bool) or not 1 <= ranks <= MAX_RANKS:
            raise InputError(f"workload: ranks: must be a whole number from 1 to {MAX_RANKS}, got {ranks!r}")
        self.layout: list[tuple[str, int]] = []
        self._groups: list[tuple[str, list[str] | None, list[list[int]] | None]] = []
        self._rows: list[str] = []
        self._rank_class: list[int | None] = [None] * ranks
        self._class_program: list[int] = []
        self._programs: list[_Program] = []

    # Building.

    def group(
        self,
        name: str,
        instances: Iterable[Iterable[int]] | None = None,
        *,
        axes: Sequence[str] | None = None,
    ) -> int:
        """Add a communicator group: its instances as member lists (each rank in at most one; a
        rank in none is a group of its own), or the layout `axes` its members vary along.
        Returns the group's index."""
        if (instances is None) == (axes is None):
            raise InputError(f"workload: group '{name}': give exactly one of instances and axes")
        if len(self._groups) == MAX_GROUPS:
            raise InputError(f"workload: group '{name}': a workload holds at most {MAX_GROUPS} groups")
        members = None if instances is None else [[int(r) for r in inst] for inst in instances]
        self._groups.append((name, None if axes is None else list(axes), members))
        return len(self._groups) - 1

    def program(self) -> int:
        """Add an empty program; returns its index."""
        self._programs.append(_Program())
        return len(self._programs) - 1

    def assign(self, program: int, ranks: Iterable[int]) -> int:
        """Make `ranks` a rank class running `program`; returns the class's index."""
        self._program_index(program, "assign")
        cls = len(self._class_program)
        members = _whole(ranks, 0, len(self._rank_class) - 1, "assign: ranks")
        seen: set[int] = set()
        for r in members:
            if self._rank_class[r] is not None:
                raise InputError(f"workload: assign: rank {r} is already in class {self._rank_class[r]}")
            if r in seen:
                raise InputError(f"workload: assign: rank {r} is listed twice")
            seen.add(r)
        # Checked first: a refused class leaves the workload as it was.
        self._class_program.append(program)
        for r in members:
            self._rank_class[r] = cls
        return cls

    def _program_index(self, program: int, what: str) -> int:
        if not isinstance(program, int) or not 0 <= program < len(self._programs):
            raise InputError(f"workload: {what}: program {program!r} does not exist ({len(self._programs)})")
        return program

    def _row(self, label: str | None) -> int:
        if label is None:
            return 0
        if label not in self._rows:
            self._rows.append(label)
        return self._rows.index(label)

    def _group_indices(self, groups: Iterable[int | str]) -> list[int]:
        out = list(groups)
        if all(type(g) is int for g in out) and (not out or 0 <= min(out) <= max(out) < len(self._groups)):
            return out
        return [self._group_index(g) for g in out]

    def _group_index(self, group: int | str) -> int:
        if type(group) is int and 0 <= group < len(self._groups):
            return group
        names = [g[0] for g in self._groups]
        if not isinstance(group, str):
            raise InputError(f"workload: group: {group!r} does not exist ({len(names)} groups)")
        if group not in names:
            raise InputError(f"workload: group: no group named '{group}' (have: {', '.join(names)})")
        return names.index(group)

    def add_ops(
        self,
        program: int,
        kind: Sequence[str | int],
        *,
        ns: Sequence[float] | None = None,
        flops: Sequence[float] | None = None,
        mem_bytes: Sequence[float] | None = None,
        dtype: Sequence[str | None] | None = None,
        collective: Sequence[str | int] | None = None,
        group: Sequence[int | str] | None = None,
        offset: Sequence[int] | None = None,
        bytes: Sequence[int] | None = None,
        copy: Sequence[bool] | None = None,
        deps: Sequence[Sequence[int]] | None = None,
        row: Sequence[str | None] | None = None,
        phase: Sequence[str | int] | None = None,
    ) -> range:
        """Append ops in bulk, one entry per op in each given column (COMP uses ns, and flops,
        mem_bytes and dtype where it states its work; COMM_COLL collective, group, bytes;
        SEND/RECV group, offset, bytes and copy: a userbuffers copy, no NCCL call). Returns the
        ops' indices."""
        p = self._programs[self._program_index(program, "add_ops")]
        n = len(kind)
        given = {"ns": ns, "flops": flops, "mem_bytes": mem_bytes, "dtype": dtype}
        given |= {"collective": collective, "group": group, "offset": offset, "bytes": bytes}
        given |= {"copy": copy, "deps": deps, "row": row, "phase": phase}
        for name, col in given.items():
            if col is not None and len(col) != n:
                raise InputError(f"workload: add_ops: {name} has {len(col)} entries for {n} ops")
        zeros = [0] * n
        new = {
            "kind": [_code(KINDS, k, "op kind") for k in kind],
            "ns": _floats(ns, "ns") if ns is not None else [0.0] * n,
            "flops": _floats(flops, "flops") if flops is not None else [0.0] * n,
            "mem_bytes": _floats(mem_bytes, "mem_bytes") if mem_bytes is not None else [0.0] * n,
            "dtype": [0 if d is None else 1 + _code(DTYPES, d, "dtype") for d in dtype] if dtype else zeros,
            "collective": [_code(COLLECTIVES, c, "collective") for c in collective] if collective else zeros,
            "group": self._group_indices(group) if group is not None else zeros,
            "offset": _whole(offset, 1 - (1 << 31), (1 << 31) - 1, "offset") if offset is not None else zeros,
            "bytes": _whole(bytes, 0, (1 << 64) - 1, "bytes") if bytes is not None else zeros,
            "copy": _flags(copy, "copy") if copy is not None else [False] * n,
            "phase": [_code(PHASES, x, "phase") for x in phase] if phase is not None else [3] * n,
        }
        op_deps = deps if deps is not None else [()] * n
        flat = _whole([d for ds in op_deps for d in ds], 0, (1 << 32) - 1, "deps")
        # Everything is checked before anything is added: a refused call leaves the program as it was.
        new["row"] = [self._row(r) for r in row] if row is not None else zeros
        start = len(p)
        p.extendable()
        for name in OP_COLUMNS:
            p.cols[name] += new[name]
        base = len(p.deps)
        p.dep_start += [base + end for end in accumulate(len(ds) for ds in op_deps)]
        p.deps += flat
        return range(start, start + n)

    def comp(
        self,
        program: int,
        ns: float | None = None,
        *,
        flops: float = 0.0,
        flops_per_s: float | None = None,
        bytes: float = 0.0,
        bytes_per_s: float | None = None,
        dtype: str | None = None,
        deps: Sequence[int] = (),
        row: str | None = None,
        phase: str = "other",
    ) -> int:
        """A compute op of `ns`, or of `flops` at `flops_per_s` and `bytes` of memory traffic at
        `bytes_per_s` (the compute model's roofline: the slower of the two). With `dtype` the op
        records its work (flops, bytes, dtype) for another device to price it again. Returns its
        index."""
        if ns is None:
            if flops_per_s is None and bytes_per_s is None:
                raise InputError(
                    "workload: comp: give ns, or flops with flops_per_s and/or bytes with bytes_per_s"
                )
            ns = _engine.roofline_ns(flops, flops_per_s or None, bytes, bytes_per_s or None)
        return self.add_ops(
            program,
            ["COMP"],
            ns=[ns],
            flops=[flops],
            mem_bytes=[bytes],
            dtype=[dtype],
            deps=[deps],
            row=[row],
            phase=[phase],
        )[0]

    def coll(
        self,
        program: int,
        collective: str,
        group: int | str,
        bytes: int,
        *,
        deps: Sequence[int] = (),
        row: str | None = None,
        phase: str = "other",
    ) -> int:
        """A collective of `bytes` (nccl-tests S) on `group`. Returns its index."""
        return self.add_ops(
            program, ["COMM_COLL"], collective=[collective], group=[group], bytes=[bytes], deps=[deps],
            row=[row], phase=[phase],
        )[0]  # fmt: skip

    def send(self, program: int, group: int | str, offset: int, bytes: int, **op: Any) -> int:
        """Send `bytes` to the rank `offset` places on in this rank's instance of `group`;
        `copy=True`: a userbuffers copy inside the rank class (no NCCL call), its recv marked too."""
        return self._p2p(program, "SEND", group, offset, bytes, **op)

    def recv(self, program: int, group: int | str, offset: int, bytes: int, **op: Any) -> int:
        """Receive `bytes` from the rank `offset` places on (negative: before) in `group`."""
        return self._p2p(program, "RECV", group, offset, bytes, **op)

    def _p2p(
        self,
        program: int,
        kind: str,
        group: int | str,
        offset: int,
        nbytes: int,
        copy: bool = False,
        deps: Sequence[int] = (),
        row: str | None = None,
        phase: str = "other",
    ) -> int:
        return self.add_ops(
            program,
            [kind],
            group=[group],
            offset=[offset],
            bytes=[nbytes],
            copy=[copy],
            deps=[deps],
            row=[row],
            phase=[phase],
        )[0]

    # Inspecting.

    @property
    def ranks(self) -> int:
        return len(self._rank_class)

    @property
    def num_programs(self) -> int:
        return len(self._programs)

    @property
    def rank_class(self) -> list[int | None]:
        return list(self._rank_class)

    @property
    def class_program(self) -> list[int]:
        return list(self._class_program)

    @property
    def rows(self) -> list[str]:
        return list(self._rows)

    @property
    def groups(self) -> list[dict[str, Any]]:
        """Each group's name and its layout axes or member lists."""
        return [
            {"name": n} | ({"axes": a} if a is not None else {"instances": i}) for n, a, i in self._groups
        ]

    def counts(self) -> dict[str, int]:
        """Ops of each kind over all programs, and totals."""
        out = dict.fromkeys(KINDS, 0)
        for p in self._programs:
            for k, n in enumerate(
                np.bincount(np.asarray(p.cols["kind"], dtype=np.uint8), minlength=len(KINDS))
            ):
                out[KINDS[k]] += int(n)
        total = sum(len(p) for p in self._programs)
        return out | {"ops": total, "programs": len(self._programs), "classes": len(self._class_program)}

    def ops(self, program: int) -> Table:
        """A program's ops as a table: names for enumerations, deps as lists."""
        p = self._programs[self._program_index(program, "ops")]
        c = {k: _plain(v) for k, v in p.cols.items()}
        dep_start, deps = _plain(p.dep_start), _plain(p.deps)
        names = [g[0] for g in self._groups]
        kinds = [KINDS[k] for k in c["kind"]]
        return Table(
            {
                "kind": kinds,
                "ns": c["ns"],
                "flops": c["flops"],
                "mem_bytes": c["mem_bytes"],
                "dtype": [DTYPES[d - 1] if d else "" for d in c["dtype"]],
                "collective": [
                    COLLECTIVES[x] if k == "COMM_COLL" else ""
                    for x, k in zip(c["collective"], kinds, strict=True)
                ],
                "group": [
                    names[g] if k != "COMP" and g < len(names) else ""
                    for g, k in zip(c["group"], kinds, strict=True)
                ],
                "offset": c["offset"],
                "bytes": c["bytes"],
                "copy": c["copy"],
                "deps": [deps[a:b] for a, b in zip(dep_start, dep_start[1:], strict=False)],
                "row": [self._rows[r] if r < len(self._rows) else "" for r in c["row"]],
                "phase": [PHASES[x] for x in c["phase"]],
            }
        )

    def __repr__(self) -> str:
        n = self.counts()
        return (
            f"Workload({self.ranks} ranks, {len(self._groups)} groups, {n['programs']} programs, "
            f"{n['classes']} classes, {n['ops']} ops)"
        )

    # Converting.

    def columns(self) -> dict[str, Any]:
        """The engine's columnar form: every program's ops concatenated, bulk columns as NumPy
        arrays of the engine's element types."""
        if None in self._rank_class:
            raise InputError(f"workload: rank {self._rank_class.index(None)} is in no class (use assign)")
        programs = self._programs
        sizes = [len(p) for p in programs]
        dep_base = np.cumsum([0] + [len(p.deps) for p in programs])
        out: dict[str, Any] = {
            "layout": list(self.layout),
            "group_names": [g[0] for g in self._groups],
            "group_axes": [g[1] for g in self._groups],
            "group_instances": [g[2] for g in self._groups],
            "rows": list(self._rows),
            "rank_class": self._rank_class,
            "class_program": self._class_program,
            "program_start": np.cumsum([0, *sizes]),
            "dep_start": np.concatenate(
                [[0]]
                + [
                    np.asarray(p.dep_start[1:], dtype=np.int64) + b
                    for p, b in zip(programs, dep_base, strict=False)
                ]
            ),
            "deps": np.concatenate(
                [np.zeros(0, np.int64)] + [np.asarray(p.deps, dtype=np.int64) for p in programs]
            ),
        }
        for name in OP_COLUMNS:
            out[name] = np.concatenate([_column(p.cols[name], name) for p in programs] or [[]])
        return {k: _column(v, k) if k in DTYPE_OF else v for k, v in out.items()}

    def __eq__(self, other: object) -> bool:
        """Two workloads are equal when they hold the same ranks, classes, groups, rows and ops
        (whatever form their columns are kept in)."""
        if not isinstance(other, Workload):
            return NotImplemented
        head = ("layout", "_groups", "_rows", "_rank_class", "_class_program")
        if any(getattr(self, k) != getattr(other, k) for k in head):
            return False
        return len(self._programs) == len(other._programs) and all(
            all(_plain(p.cols[k]) == _plain(q.cols[k]) for k in OP_COLUMNS)
            and _plain(p.dep_start) == _plain(q.dep_start)
            and _plain(p.deps) == _plain(q.deps)
            for p, q in zip(self._programs, other._programs, strict=True)
        )

    __hash__ = None  # type: ignore[assignment]

    @classmethod
    def from_columns(cls, columns: dict[str, Any]) -> Workload:
        """A workload from the engine's columnar form (NumPy arrays or lists)."""
        w = cls(len(columns["rank_class"]))
        w.layout = [tuple(a) for a in columns["layout"]]  # type: ignore[misc]
        w._groups = list(
            zip(columns["group_names"], columns["group_axes"], columns["group_instances"], strict=True)
        )
        w._rows = list(columns["rows"])
        w._rank_class = _column(columns["rank_class"], "rank_class").tolist()
        w._class_program = _column(columns["class_program"], "class_program").tolist()
        cols = {k: _column(columns[k], k) for k in (*OP_COLUMNS, "dep_start", "deps")}
        starts = [int(s) for s in columns["program_start"]]
        dep_start = cols["dep_start"]
        for a, b in zip(starts, starts[1:], strict=False):
            p = _Program()
            p.cols = {name: cols[name][a:b] for name in OP_COLUMNS}
            first = int(dep_start[a])
            p.dep_start = dep_start[a : b + 1] - first
            p.deps = cols["deps"][first : int(dep_start[b])]
            w._programs.append(p)
        return w

    def to_json(self) -> str:
        """The workload as IR JSON (docs/workload-ir.md), after checking it."""
        return _engine.workload_to_json(self.columns())

    @classmethod
    def from_json(cls, text: str, path: str = "workload") -> Workload:
        """A workload from IR JSON text; `path` names it in errors."""
        return cls.from_columns(_engine.workload_from_json(path, text))

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the IR JSON to `path` (all or nothing)."""
        text = self.to_json()
        with atomic_outputs() as stage:
            write_text(stage(path), text)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Workload:
        """Read IR JSON from `path`."""
        return cls.from_json(read_text(path, "workload"), str(path))

    @classmethod
    def from_simai(
        cls,
        path: str | os.PathLike[str],
        *,
        gpus: int | None = None,
        gpus_per_server: int = 8,
        overlap: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 0.0),
        lenient: bool = False,
    ) -> Workload:
        """The IR a SimAI workload file becomes in `clustersim analytical`'s default mode
        (`overlap`: its dp_o, tp_o, ep_o, pp_o)."""
        text = read_text(path, "workload")
        return cls.from_columns(
            _engine.workload_from_simai(
                str(path), text, gpus=gpus, gpus_per_server=gpus_per_server, overlap=overlap, lenient=lenient
            )
        )

    @classmethod
    def from_training(cls, model: str | dict[str, Any], **plan: Any) -> Workload:
        """One Megatron-Core iteration as `clustersim train` generates it (arguments as for
        `clustersim.training.train`)."""
        return cls.from_columns(_engine.workload_from_training(engine_input(model, **plan)))

    # Running.

    def simulate(
        self,
        *,
        busbw: str | os.PathLike[str] | None = None,
        compat: bool = False,
        **server: Any,
    ) -> dict[str, Any]:
        """Run the workload through the executor on the analytical model on `server`'s servers
        (`_engine.ServerSpec`'s keywords: gpus_per_server, nics_per_server, gpu_type, nic_type,
        nvlink_busbw, nic_busbw, as in `clustersim.simulate`; `compat` prices as
        SimAI-Analytical does). Returns `end_ns` (the iteration time), `events`, and `start` /
        `end` (ns) of every op of each class."""
        table = None if busbw is None else (str(busbw), read_text(busbw, "busbw"))
        spec = _engine.ServerSpec(**server)
        return _engine.simulate_workload(self.columns(), server=spec, busbw=table, compat=compat)
