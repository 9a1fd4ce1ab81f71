"""Kernel table files: CSV with a header row `kernel,shape,dtype,device,measured_us,model_us`.

`measured_us` may be empty (the row only lists the kernel and the model's time); `train --kernels`
uses the rows that have one. Bad rows are one-line errors naming file, line and field."""

from __future__ import annotations

import csv
import math
import os
from collections.abc import Iterable
from typing import Any

from clustersim import _engine
from clustersim.errors import InputError
from clustersim.files import read_text

COLUMNS = ("kernel", "shape", "dtype", "device", "measured_us", "model_us")
REQUIRED = ("kernel", "shape", "dtype", "measured_us")
DTYPES = ("bf16", "fp16", "fp32", "fp8")


def rows_text(rows: Iterable[dict[str, Any]]) -> list[list[object]]:
    """A kernel table as CSV rows, header first (times in µs, empty where not measured)."""
    out: list[list[object]] = [list(COLUMNS)]
    for r in rows:
        measured = r.get("measured_us")
        out.append(
            [
                r["kernel"],
                r["shape"],
                r["dtype"],
                r.get("device", ""),
                "" if measured is None else f"{measured:.6g}",
                f"{r['model_us']:.6g}",
            ]
        )
    return out


def read_table(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The measured rows of kernel table `path`, as the engine takes them: kernel, shape, dtype
    and ns."""
    text = read_text(path)
    reader = csv.reader(text.splitlines())
    header = next(reader, None)
    if header is None:
        raise InputError(f"{path}:1: header: empty file (expected {','.join(COLUMNS)})")
    header = [h.strip() for h in header]
    for col in REQUIRED:
        if col not in header:
            raise InputError(f"{path}:1: {col}: missing column (expected {','.join(COLUMNS)})")
    at = {col: header.index(col) for col in REQUIRED}
    seen: dict[tuple[str, str, str], int] = {}
    rows = []
    for line, cells in enumerate(reader, start=2):
        if not cells or all(not c.strip() for c in cells):
            continue

        def bad(field: str, problem: str, line: int = line) -> InputError:
            return InputError(f"{path}:{line}: {field}: {problem}")

        if len(cells) != len(header):
            raise bad("row", f"{len(cells)} fields, the header has {len(header)}")
        kernel, shape, dtype, measured = (cells[at[c]].strip() for c in REQUIRED)
        if not _engine.is_kernel_class(kernel):
            raise bad("kernel", f"unknown kernel class {kernel!r}")
        dims = shape.split("x")
        if not all(d.isdigit() and int(d) > 0 for d in dims):
            raise bad("shape", f"expected positive whole numbers joined by x, got {shape!r}")
        if dtype not in DTYPES:
            raise bad("dtype", f"expected one of {', '.join(DTYPES)}, got {dtype!r}")
        key = (kernel, shape, dtype)
        if key in seen:
            raise bad("kernel", f"{kernel} {shape} {dtype} is already on line {seen[key]}")
        seen[key] = line
        if not measured:
            continue
        try:
            us = float(measured)
        except ValueError:
            raise bad("measured_us", f"expected a time in µs, got {measured!r}") from None
        if not (math.isfinite(us) and us >= 0):
            raise bad("measured_us", f"must be a finite time ≥ 0 µs, got {measured!r}")
        rows.append({"kernel": kernel, "shape": shape, "dtype": dtype, "ns": us * 1e3})
    return rows
