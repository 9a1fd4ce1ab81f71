"""clustersim: how long does one training iteration take on that cluster, and where does the time go?

One function per simulating command, with the command's long option names as keyword arguments:
`simulate` (clustersim analytical), `run`, `train`, `search`, `collective`; see `clustersim.api`.
"""

from clustersim.analytical import AnalyticalResult, simulate
from clustersim.api import CollectiveResult, SearchResult, TrainResult, collective, run, search, train
from clustersim.errors import InputError, InternalError
from clustersim.table import Table
from clustersim.workload import Workload

__all__ = [
    "AnalyticalResult",
    "CollectiveResult",
    "InputError",
    "InternalError",
    "SearchResult",
    "Table",
    "TrainResult",
    "Workload",
    "collective",
    "run",
    "search",
    "simulate",
    "train",
]
__version__ = "0.1.0"
