"""Two runs side by side: every field of each (dotted paths, as in the sweep's columns), with the
difference B − A and its relative change where both are numbers. A run is a JSON result (what
`--json`, `-o` or `summary.json` of train, run or analytical hold) or one point of a sweep store,
`STORE:N` (N its seq, as in the report and CSV, or the start of its key)."""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Any

from clustersim.errors import InputError
from clustersim.explore import store
from clustersim.explore.export import flatten


def load(what: str) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """A run's fields, flattened, less its provenance; and its provenance (None in a result
    written before results recorded it)."""
    m = re.fullmatch(r"(.+):([0-9a-f]+)", what)
    if m and not Path(what).exists() and Path(m.group(1)).is_file():
        fields = store_point(m.group(1), m.group(2))
    else:
        fields = json_result(what)
    made_by = fields.pop(PROVENANCE, None)
    return flatten(fields), made_by if isinstance(made_by, dict) else None


#: The key of a result's provenance (`clustersim.provenance`).
PROVENANCE = "provenance"


def json_result(what: str) -> dict[str, Any]:
    """A JSON result file's document."""
    try:
        doc = json.loads(Path(what).read_text(encoding="utf-8"))
    except OSError as e:
        raise InputError(f"{what}: cannot read: {e.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        line = getattr(e, "lineno", 1)
        raise InputError(
            f"{what}:{line}: JSON: not a JSON result (nor STORE:N, a point of a sweep): {e}"
        ) from None
    if not isinstance(doc, dict):
        raise InputError(
            f"{what}:1: (top level): expected a JSON object, a result of train, run or analytical"
        )
    return doc


def store_point(path: str | os.PathLike[str], which: str) -> dict[str, Any]:
    """A point of a sweep store: its options, status and result (not flattened)."""
    stored = store.read(path)
    rows = [r for r in stored.rows if str(r.seq) == which] or [
        r for r in stored.rows if r.key.startswith(which)
    ]
    if len(rows) != 1:
        what = "no point" if not rows else f"{len(rows)} points"
        raise InputError(f"{path}: point {which}: {what} of that seq or key in the store")
    row = rows[0]
    return {"options": row.options, "status": row.status} | row.result


def difference(a: Any, b: Any) -> tuple[str, str]:
    """(B − A, relative change) as text; blank where equal or not numbers."""
    if a == b:
        return "", ""
    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (a, b))
    if not numeric:
        return "differs", ""
    change = f"{(b - a) / abs(a) * 100:+.1f} %" if a else ""
    return shown(b - a), change


def shown(v: Any) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:.6g}" if math.isfinite(v) else str(v)
    return str(v)


def compare(a: dict[str, Any], b: dict[str, Any]) -> list[tuple[str, str, str, str, str]]:
    """(field, A, B, B − A, change) for every field of either run, A's order first."""
    fields = list(dict.fromkeys([*a, *b]))
    return [(f, shown(a.get(f)), shown(b.get(f)), *difference(a.get(f), b.get(f))) for f in fields]
