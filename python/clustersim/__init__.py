"""clustersim: how long does one training iteration take on that cluster, and where does the time go?

One function per simulating command, with the command's long option names as keyword arguments:
`simulate` (clustersim analytical), `run`, `train`, `collective` (see `clustersim.api`), `search`,
`sweep` and `goodput` (see `clustersim.explore`).

The package is layered (pyproject.toml's import-linter contracts), bottom to top:
base (errors, table, files, plan, catalog, models, kernel_table) < fabrics (platform, topology,
reduction_server, fabric) < models (analytical, training, workload, workload_graph,
nccl_tests, calibration) < api < measure/ | explore/ | charts < cli/. The names below load when
first used, so importing one module (the CLI, at every command's start) loads only what it needs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from clustersim.analytical import AnalyticalResult, simulate
    from clustersim.api import CollectiveResult, TrainResult, collective, run, train
    from clustersim.errors import InputError, InternalError
    from clustersim.explore.goodput import GoodputResult, goodput
    from clustersim.explore.search import SearchResult, search
    from clustersim.explore.sweep import sweep
    from clustersim.table import Table
    from clustersim.workload import Workload

# Each public name and the module that defines it.
_PUBLIC = {
    "AnalyticalResult": "analytical",
    "simulate": "analytical",
    "CollectiveResult": "api",
    "TrainResult": "api",
    "collective": "api",
    "run": "api",
    "train": "api",
    "InputError": "errors",
    "InternalError": "errors",
    "GoodputResult": "explore.goodput",
    "goodput": "explore.goodput",
    "SearchResult": "explore.search",
    "search": "explore.search",
    "sweep": "explore.sweep",
    "Table": "table",
    "Workload": "workload",
}
__all__ = [
    "AnalyticalResult",
    "CollectiveResult",
    "GoodputResult",
    "InputError",
    "InternalError",
    "SearchResult",
    "Table",
    "TrainResult",
    "Workload",
    "collective",
    "goodput",
    "run",
    "search",
    "simulate",
    "sweep",
    "train",
]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    if name not in _PUBLIC:
        raise AttributeError(f"module 'clustersim' has no attribute '{name}'")
    value = getattr(importlib.import_module(f"clustersim.{_PUBLIC[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))
