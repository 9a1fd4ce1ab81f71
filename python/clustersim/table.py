"""A small column-oriented table: what clustersim returns instead of requiring pandas."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any


class Table:
    """Named columns of equal length. Index a column by name; iterate rows as dicts."""

    def __init__(self, columns: dict[str, Sequence[Any]]) -> None:
        lengths = {len(v) for v in columns.values()}
        if len(lengths) > 1:
            raise ValueError(f"columns differ in length: {sorted(lengths)}")
        self._columns = {k: list(v) for k, v in columns.items()}

    @property
    def columns(self) -> list[str]:
        return list(self._columns)

    def __len__(self) -> int:
        return len(next(iter(self._columns.values()), []))

    def __getitem__(self, column: str) -> list[Any]:
        return self._columns[column]

    def rows(self) -> Iterator[dict[str, Any]]:
        names = self.columns
        for values in zip(*self._columns.values(), strict=True):
            yield dict(zip(names, values, strict=True))

    def to_dict(self) -> dict[str, list[Any]]:
        """Columns as JSON-ready lists (NaN becomes None)."""
        return {
            k: [None if isinstance(x, float) and not math.isfinite(x) else x for x in v]
            for k, v in self._columns.items()
        }

    def to_pandas(self) -> Any:
        """The table as a pandas DataFrame (needs pandas installed)."""
        try:
            import pandas as pd
        except ImportError as e:  # pragma: no cover - depends on the environment
            raise ImportError("to_pandas() needs pandas: pip install 'clustersim[pandas]'") from e
        return pd.DataFrame(self._columns)

    def __repr__(self) -> str:
        return f"Table({len(self)} rows × {len(self._columns)} columns: {', '.join(self.columns)})"
