"""The sweep store: one SQLite file, one row per point, each committed in its own transaction as
the point finishes (WAL journal), so that a sweep killed at any moment — `kill -9` included —
keeps every finished point, and re-running it simulates only the others. A row's key is its
point's (spec.point_key), its primary key: no point can be stored twice.

Tables: `meta(name, value)` holds `format` (STORE_FORMAT), `command`, `spec` (canonical JSON)
`varying` (the options that vary, in the spec's order) and `clustersim` (the version
that created it); `points(key, seq, options, status, result)` with
options and result as canonical JSON, status `ok` or `infeasible` (the point's input error,
e.g. a plan that does not fit in memory, in result.error).
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clustersim import __version__
from clustersim.errors import InputError
from clustersim.explore.spec import Spec, canonical

STORE_FORMAT = 1

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS points (
    key TEXT PRIMARY KEY, seq INTEGER NOT NULL, options TEXT NOT NULL,
    status TEXT NOT NULL, result TEXT NOT NULL
);
"""


@dataclass(frozen=True)
class Row:
    key: str
    seq: int
    options: dict[str, Any]
    status: str
    result: dict[str, Any]


@dataclass(frozen=True)
class Stored:
    """A store as read back: its command, spec, the options that vary and rows in the spec's order."""

    path: str
    command: str
    spec: dict[str, Any]
    varying: list[str]
    rows: list[Row]


def connect(path: str | os.PathLike[str], *, create: bool) -> sqlite3.Connection:
    if not create and not Path(path).is_file():
        raise InputError(f"{path}: no such store (clustersim sweep writes one)")
    if create:
        try:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise InputError(f"{Path(path).parent}: cannot create the store's folder: {e.strerror}") from None
    try:
        conn = sqlite3.connect(path, isolation_level=None, timeout=30)
        conn.execute("PRAGMA journal_mode=WAL")
        # Every commit survives the process being killed (what resuming needs); NORMAL, not FULL:
        # a power cut may lose the last points, which a re-run then simulates again.
        conn.execute("PRAGMA synchronous=NORMAL")
        if create:
            conn.executescript(SCHEMA)
        return conn
    except sqlite3.DatabaseError as e:
        raise InputError(f"{path}: cannot open as a clustersim store: {e}") from None


def meta(conn: sqlite3.Connection, path: str | os.PathLike[str]) -> dict[str, str]:
    try:
        values = dict(conn.execute("SELECT name, value FROM meta").fetchall())
        conn.execute("SELECT key, seq, options, status, result FROM points LIMIT 0")
    except sqlite3.DatabaseError:
        raise InputError(f"{path}:1: meta: not a clustersim store (no meta and points tables)") from None
    fmt = values.get("format")
    if fmt != str(STORE_FORMAT):
        raise InputError(
            f"{path}:1: meta.format: written by an incompatible clustersim (store format {fmt},"
            f" this one reads {STORE_FORMAT}): sweep again into a new store"
        )
    return values


@contextlib.contextmanager
def open_for(spec: Spec, path: str | os.PathLike[str]) -> Iterator[sqlite3.Connection]:
    """The store at `path` for `spec`: created if new; if it exists, it must have been written
    for the same spec (then its points are kept and the sweep resumes). A store created here and
    left without a point by an error is removed (nothing half-written)."""
    created = not Path(path).exists()
    conn = connect(path, create=True)
    try:
        with conn:
            conn.execute("BEGIN IMMEDIATE")
            if not conn.execute("SELECT 1 FROM meta LIMIT 1").fetchone():
                rows = {"format": str(STORE_FORMAT), "command": spec.command, "spec": spec.canonical}
                rows |= {"varying": json.dumps(spec.varying), "clustersim": __version__}
                conn.executemany("INSERT INTO meta VALUES (?, ?)", rows.items())
        values = meta(conn, path)
        if values.get("spec") != spec.canonical:
            raise InputError(
                f"{path}:1: meta.spec: this store holds a sweep of another spec than {spec.path}:"
                " give another store (-o) to start afresh"
            )
        yield conn
    except BaseException:
        if created and not conn.execute("SELECT 1 FROM points LIMIT 1").fetchone():
            conn.close()
            for suffix in ("", "-wal", "-shm"):
                with contextlib.suppress(OSError):
                    os.remove(f"{path}{suffix}")
        raise
    finally:
        conn.close()


def done(conn: sqlite3.Connection) -> set[str]:
    return {k for (k,) in conn.execute("SELECT key FROM points")}


def put(
    conn: sqlite3.Connection, seq: int, key: str, options: dict[str, Any], status: str, result: Any
) -> None:
    """One finished point, committed at once (its own transaction)."""
    with conn:
        conn.execute(
            "INSERT INTO points VALUES (?, ?, ?, ?, ?)",
            (key, seq, canonical(options), status, canonical(result)),
        )


def read(path: str | os.PathLike[str]) -> Stored:
    """Every row of the store at `path`, in the spec's order."""
    conn = connect(path, create=False)
    try:
        values = meta(conn, path)
        rows = [
            Row(key, seq, json.loads(options), status, json.loads(result))
            for key, seq, options, status, result in conn.execute(
                "SELECT key, seq, options, status, result FROM points ORDER BY seq"
            )
        ]
    except sqlite3.DatabaseError as e:
        raise InputError(f"{path}: cannot read the store: {e}") from None
    finally:
        conn.close()
    spec, varying = json.loads(values["spec"]), json.loads(values["varying"])
    return Stored(os.fspath(path), values["command"], spec, varying, rows)
