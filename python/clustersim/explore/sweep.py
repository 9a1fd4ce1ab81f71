"""`sweep()`: the Python API of `clustersim sweep` — a sweep spec's points simulated and stored."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from clustersim.explore import export
from clustersim.explore import store as stores
from clustersim.explore.execute import sweep as run_sweep
from clustersim.explore.spec import load_spec
from clustersim.table import Table


def sweep(
    spec: str | os.PathLike[str],
    store: str | os.PathLike[str] | None = None,
    *,
    workers: int = 1,
    ray: str | None = None,
    progress: Callable[[float], None] | None = None,
) -> Table:
    """Every point of the sweep spec `spec` (YAML; see clustersim.explore.spec) simulated and stored
    in the SQLite store `store` (default: `spec` with the suffix .sqlite) as it finishes, on
    `workers` processes or on the Ray cluster at `ray`; points already stored are not simulated
    again. Returns every stored point as flat columns (clustersim.explore.export). Worker processes
    are spawned (they inherit no state), so a script that calls this with `workers` > 1 must do
    so under `if __name__ == "__main__":`, as with any `multiprocessing` pool."""
    path = Path(spec).with_suffix(".sqlite") if store is None else store
    run_sweep(load_spec(spec), path, workers=workers, ray=ray, progress=progress)
    return export.table(stores.read(path))
