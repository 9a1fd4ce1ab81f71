"""A store's rows as flat columns — `seq`, `key`, `status`, the options that vary, then every
scalar of the result under its dotted path (`memory.total_gb`, `breakdown_s.compute`) — and
their CSV and Parquet files. Added columns: `throughput` (higher is better: tokens/s for train,
iterations/s for run and analytical, bus bandwidth GB/s for collective, tokens/s kept through
failures for goodput), `gpus` where the result
has no such field, and `error` for infeasible points.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from clustersim.errors import InputError
from clustersim.explore.store import Row, Stored
from clustersim.files import destination
from clustersim.files import write_csv as write
from clustersim.table import Table

THROUGHPUT = {"train": "tokens_per_s", "run": "iterations_per_s", "analytical": "iterations_per_s"}
THROUGHPUT["collective"] = "busbw_GBps"
THROUGHPUT["goodput"] = "effective_tokens_per_s"
# Where the time goes: the columns of these prefixes (parts that add up to the whole).
BREAKDOWN = {
    "train": "breakdown_s.",
    "run": "summary_us.",
    "analytical": "summary_us.",
    "goodput": "wall_fractions.",
}
NOT_PARTS = ("summary_us.total_us", "summary_us.exposed_comm_us")


def flatten(doc: Any, prefix: str = "") -> dict[str, Any]:
    """Scalars of a JSON document under dotted paths; a list of [name, value] pairs reads as a
    mapping, a list of scalars as text joined by '; ', other lists are left out."""
    if isinstance(doc, list) and all(
        isinstance(x, list) and len(x) == 2 and isinstance(x[0], str) for x in doc
    ):
        doc = dict(doc)
    if isinstance(doc, dict):
        out: dict[str, Any] = {}
        for k, v in doc.items():
            out |= flatten(v, f"{prefix}{k}.")
        return out
    if isinstance(doc, list):
        if all(not isinstance(x, (list, dict)) for x in doc):
            return {prefix[:-1]: "; ".join(map(str, doc))}
        return {}
    return {prefix[:-1]: doc}


def row_columns(command: str, row: Row, varying: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {"seq": row.seq, "key": row.key, "status": row.status}
    out |= {k: _cell(row.options.get(k)) for k in varying}
    # What made the point: its options are the plan (the spec's fixed ones and its own), so the
    # provenance's plan is left out; the rest (command, version, model, fabric, backend) stays.
    result = {k: v for k, v in flatten(row.result).items() if not k.startswith("provenance.plan.")}
    if row.status == "ok":
        if command in ("run", "analytical"):
            time_us = result["iteration_time_us"]
            result["iterations_per_s"] = 1e6 / time_us if time_us > 0 else float("nan")
            result.setdefault("gpus", row.result.get("plan", {}).get("gpus"))
        elif command == "collective":
            result.setdefault("gpus", result.get("ranks"))
        result["throughput"] = result[THROUGHPUT[command]]
    return out | result


def _cell(value: Any) -> Any:
    import json

    return json.dumps(value, sort_keys=True) if isinstance(value, dict) else value


def table(stored: Stored) -> Table:
    """Every row of the store as flat columns (missing cells are None)."""
    varying = stored.varying
    rows = [row_columns(stored.command, r, varying) for r in stored.rows]
    columns = list(dict.fromkeys(k for r in rows for k in r))
    return Table({c: [r.get(c) for r in rows] for c in columns})


def write_csv(t: Table, path: str | os.PathLike[str], comments: list[str] | None = None) -> None:
    """The table as CSV, below `comments` (`#` lines: what made it)."""
    rows = [t.columns, *([("" if v is None else v) for v in r.values()] for r in t.rows())]
    write(path, rows, comments or ())


def need_pyarrow(path: str | os.PathLike[str]) -> None:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise InputError(
            f"{path}: writing Parquet needs pyarrow: pip install 'clustersim[parquet]'"
        ) from None


def write_parquet(t: Table, path: str | os.PathLike[str]) -> None:
    need_pyarrow(path)
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns = {}
    for name in t.columns:
        values = t[name]
        kinds = {type(v) for v in values if v is not None}
        # A column of mixed types (an option that is a number in one point, text in another) as text.
        if len(kinds - {int, float}) > 1 or (kinds - {int, float} and kinds & {int, float}):
            values = [None if v is None else str(v) for v in values]
        columns[name] = values
    try:
        pq.write_table(pa.table(columns), path)
    except OSError as e:
        raise InputError(f"{destination(Path(path))}: cannot write: {e}") from None
